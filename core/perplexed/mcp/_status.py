"""What ``perplexed mcp`` says about itself: the one start-up line for its operator (the chain, the index and its
document count, the fetch chain, ``answer``, each member that cannot run and why), and the texts a model reads
when a call failed, which say whose problem it is: the server's configuration (the operator's to fix; retrying
will not help), a passing failure (retrying later may help), or the request. Nothing here touches the network.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from perplexed._errors import ConfigError, InvalidRequest, PerplexedError, UpstreamError
from perplexed._logs import get_logger
from perplexed._models import Attempt

__all__ = ["OPERATOR_REASONS", "RETRY_REASONS", "describe_members", "failure_text", "private_refusal"]

#: failures of the server's own set-up: the operator fixes them, retrying will not help
OPERATOR_REASONS = frozenset({"config", "auth", "payment"})
#: failures that pass: retrying later may help
RETRY_REASONS = frozenset({"rate_limited", "timeout", "connection", "upstream", "malformed", "soft_failure",
                           "cancelled"})

log = get_logger("perplexed.mcp")

_PRIVATE_HINT = re.compile(r"\s*\(pass allow_private=True[^)]*\)")
_OPERATOR_FIX = "start the server with --allow-private, or --allow-network CIDR, to allow it"


# --- the start-up line -------------------------------------------------------------------------------------


def _member(provider: Any) -> str:
    """One chain member as the start-up line shows it: its label, and why it cannot run when it cannot."""
    label = str(getattr(provider, "label", None) or getattr(provider, "name", None) or provider)
    index_path = getattr(provider, "index_path", None)
    if index_path is not None:
        return f"{label} ({_index_state(index_path)})"
    from perplexed.providers._credentials import missing_setup

    try:
        missing = missing_setup(provider)
    except Exception:  # a provider of the caller's: its own business
        return label
    if missing is not None:
        return f"{label} (CANNOT RUN: {_operator_words(missing[1])})"
    if getattr(provider, "name", None) == "http" and hasattr(provider, "extra_options"):
        import importlib.util

        if importlib.util.find_spec("trafilatura") is None:  # looked up, not imported
            from perplexed.extract._extract import FETCH_HINT

            return f"{label} (CANNOT READ HTML PAGES: {FETCH_HINT})"
    return label


def _index_state(path: Any) -> str:
    from perplexed.index import check_index

    try:
        found = check_index(path)
    except Exception as exc:  # pragma: no cover - a checker bug must not stop the server
        return f"CANNOT RUN: the index {path} could not be checked ({type(exc).__name__})"
    if not found.exists:
        return f"CANNOT RUN: no local index at {path}; pass --index FILE or set PERPLEXED_LOCAL_INDEX"
    if not found.ok:
        return f"CANNOT RUN: {found.problem or 'the index is not usable'}" + (
            f"; {found.remedy}" if found.remedy else "")
    if not found.documents:
        return f"CANNOT RUN: no documents in {path}; run `perplexed index FOLDER --index {path}`"
    return f"index {path}, {found.documents} document{'s' if found.documents != 1 else ''}"


def describe_members(providers: Iterable[Any]) -> str:
    """``local (index /x/index.db, 12 documents), searxng, tavily (CANNOT RUN: set TAVILY_API_KEY)``."""
    return ", ".join(_member(p) for p in providers) or "none"


def _operator_words(text: str) -> str:
    from perplexed._cli_options import cli_words

    return cli_words(_PRIVATE_HINT.sub("", text)).removeprefix("config: ")


# --- what a model reads when a call failed -----------------------------------------------------------------


def private_refusal(exc: PerplexedError) -> str:
    """The text for a refused private or local address: no advice the model cannot follow; the operator's fix
    goes to the server's log."""
    what = _PRIVATE_HINT.sub("", str(exc))
    log.warning("perplexed mcp: web_fetch %s; %s", what, _OPERATOR_FIX)
    return (f"This server does not fetch private or local addresses ({what}). Read a public http(s) URL "
            "instead; asking again for this address will not work.")


def _attempt_part(a: Attempt) -> str:
    why = a.error or a.reason or a.outcome.value
    if a.reason == "private_address":
        why = "this server does not fetch private or local addresses"
    elif a.reason in OPERATOR_REASONS:
        why = _operator_words(why)
    return f"{a.provider}: {a.outcome.value}" + (f" ({why})" if why != a.outcome.value else "")


def failure_text(exc: PerplexedError) -> str:
    """What a model reads when the call failed: what happened, per provider, and whether retrying can help."""
    attempts: Sequence[Attempt] = list(getattr(exc, "attempts", None) or [])
    if isinstance(exc, InvalidRequest) and exc.reason == "private_address":
        return private_refusal(exc)
    if isinstance(exc, UpstreamError) and attempts:
        failed = [a for a in attempts if a.outcome.value != "ok"]
        parts = "; ".join(_attempt_part(a) for a in attempts)
        text = f"Every provider in the chain failed; nothing was found. {parts}."
        operator = [a.provider for a in failed if a.reason in OPERATOR_REASONS]
        passing = [a.provider for a in failed if a.reason in RETRY_REASONS]
        if any(a.reason == "private_address" for a in failed):
            log.warning("perplexed mcp: a fetch was refused (a private or local address); %s", _OPERATOR_FIX)
        if operator:
            log.warning("perplexed mcp: %s cannot run as configured: %s", ", ".join(operator),
                        "; ".join(_attempt_part(a) for a in failed if a.reason in OPERATOR_REASONS))
        if operator and not passing:
            return (f"{text} This is the server's configuration, not the request: its operator must fix it "
                    f"({', '.join(operator)}); retrying will not help.")
        if operator:
            return (f"{text} Part of this is the server's configuration ({', '.join(operator)}: its operator "
                    f"must fix it); {', '.join(passing)} failed for a reason that passes: retrying later may help.")
        if passing:
            return f"{text} These failures pass: retrying later may help."
        return text
    if isinstance(exc, InvalidRequest) and exc.param is not None and exc.reason is None:
        return str(exc)  # a tool argument: the message says what to send instead
    if isinstance(exc, ConfigError):
        log.warning("perplexed mcp: %s", _operator_words(str(exc)))
        return (f"This is the server's configuration, not the request: {_operator_words(str(exc))}. Its "
                "operator must fix it; retrying will not help.")
    if isinstance(exc, InvalidRequest):
        return f"The request was not accepted: {exc}"
    return f"The call failed: {exc}"

"""The README's provider tables, generated from the provider classes (so they cannot drift from the code).

:func:`support_table` says, for every common option and every web provider, whether the provider's API
does it (``API``), the engine does it on the hits (``client``) or it is ignored with a debug log (``-``).
:func:`price_table` lists the default prices and where they come from; :func:`provider_table` the names,
classes, environment variables and extra options.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from perplexed.policy._options import COMMON_OPTIONS
from perplexed.providers._registry import get

if TYPE_CHECKING:  # pragma: no cover
    from perplexed.providers._base import Provider

__all__ = ["PRICE_SOURCES", "WEB_PROVIDERS", "price_table", "provider_table", "support_table"]

#: the web-search providers, in the README's order (cheapest first)
WEB_PROVIDERS = ("searxng", "ceramic", "firecrawl", "perplexity", "tavily", "exa", "brave", "linkup")

#: how each provider charges, and the source of its default price (checked 2026-11 against the reference)
PRICE_SOURCES = {
    "searxng": "free (your own instance)",
    "ceramic": "flat per call; x402 list price 0.001 USDC per search (API-key plan price unknown ⚠)",
    "firecrawl": "credits times `usd_per_credit` (default $0.001 ≈ Standard plan ⚠; 0 when self-hosted): "
    "`creditsUsed` when reported, else 2 per 10 results + 1 per scraped page",
    "perplexity": "flat per call; $5 per 1,000 requests (docs.perplexity.ai pricing)",
    "tavily": "`usage.credits` times `usd_per_credit` (default $0.008, pay-as-you-go); "
    "1 credit basic, 2 advanced",
    "exa": "the reported `costDollars.total`; else $0.007 + $0.001 per result beyond 10 (exa.ai, 2026-03)",
    "brave": "flat per call; $5 per 1,000 requests (third-party report of Brave's dashboard, 2026-09 ⚠)",
    "linkup": 'flat per call; $0.005 standard/fast/flash, $0.05 `depth="deep"`; no-result answers '
    "are not billed (linkup.so, 2026-05)",
}

_MARK = {"native": "API", "client": "client", "ignored": "-"}


def _classes() -> list[tuple[str, type[Provider]]]:
    return [(name, get(name)) for name in WEB_PROVIDERS]


def support(cls: type[Provider]) -> dict[str, str]:
    """``{option: "native" | "client" | "ignored"}`` for one provider class."""
    native = cls.native_options
    client = cls.client_side_options
    out = {}
    for option in COMMON_OPTIONS:
        if option in native:
            out[option] = "native"
        elif option in client:
            out[option] = "client"
        else:
            out[option] = "ignored"
    return out


def support_table() -> str:
    """The option-by-provider support table as markdown (``API`` / ``client`` / ``-``)."""
    classes = _classes()
    lines = [
        "| option | " + " | ".join(f"`{name}`" for name, _ in classes) + " |",
        "|---|" + "---|" * len(classes),
    ]
    columns = [support(cls) for _, cls in classes]
    for option in COMMON_OPTIONS:
        lines.append(f"| `{option}` | " + " | ".join(_MARK[col[option]] for col in columns) + " |")
    return "\n".join(lines)


def price_table() -> str:
    """The default prices (USD per call of a 10-result search) and how each provider is charged."""
    lines = ["| provider | default USD per call | how it is charged |", "|---|---|---|"]
    for name, cls in _classes():
        lines.append(f"| `{name}` | {cls.default_price:.4f} | {PRICE_SOURCES.get(name, '')} |")
    return "\n".join(lines)


def provider_table() -> str:
    """Names, classes, environment variables and extra options of the web providers."""
    lines = ["| name | class | key (env) | base URL (env) | extra options |", "|---|---|---|---|---|"]
    for name, cls in _classes():
        key = f"`{cls.env_key}`" if cls.env_key else "none"
        url = f"`{cls.env_base_url}`" if cls.env_base_url else "-"
        extras: tuple[str, ...] = getattr(cls, "extra_options", None) or _SEARXNG_EXTRAS.get(name, ())
        lines.append(
            f"| `{name}` | `{cls.__name__}` | {key} | {url} | " + ", ".join(f"`{e}`" for e in extras) + " |"
        )
    return "\n".join(lines)


# SearXNG's class (not generated here) documents its extras in its docstring only.
_SEARXNG_EXTRAS: dict[str, tuple[str, ...]] = {
    "searxng": ("categories", "engines", "pageno", "timeout_limit")
}

"""Grounding, with no I/O: the citation instructions, source packing, the prompt, and the tool policy.

:func:`perplexed.answer` runs a search, then asks the Agent API to answer from the hits. Everything here is
a pure function of its arguments, so the exact text the model receives is testable without a network:

- :func:`pack_sources` fits the hits into a character budget (``max_source_chars``): the longest texts are
  cut first, no source is dropped, order and numbering ``1..N`` stay stable;
- :func:`build_input` renders the numbered sources and the question as the request's ``input``;
- :data:`CITATION_INSTRUCTION` / :data:`AGENT_CITATION_INSTRUCTION` go in ``instructions`` (a caller's
  ``instructions=`` replaces them);
- :data:`SEARCH_OFF` is the one place that says how the model is kept from searching on its own;
- :func:`web_search_tool` maps perplexed's search options onto the Agent API's ``web_search`` filters
  (the ``provider="perplexity-agent"`` mode).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perplexed._errors import InvalidRequest
from perplexed._logs import get_logger
from perplexed._models import Hit
from perplexed.policy._options import SearchOptions

__all__ = [
    "AGENT_CITATION_INSTRUCTION",
    "AGENT_PROVIDER",
    "CITATION_INSTRUCTION",
    "DEFAULT_MAX_SOURCE_CHARS",
    "NO_SOURCES_INSTRUCTION",
    "SEARCH_OFF",
    "TRUNCATION_MARK",
    "build_input",
    "first_by_id",
    "format_sources",
    "pack_sources",
    "search_off",
    "web_search_tool",
]

logger = get_logger("perplexed.answer")

#: The ``provider=`` value that lets the Agent API search by itself instead of running a chain.
AGENT_PROVIDER = "perplexity-agent"

#: Default cap on the characters of source text given to the model (about 6k tokens).
DEFAULT_MAX_SOURCE_CHARS = 24_000

#: Appended to a source text that was cut to fit the budget (counted in the budget).
TRUNCATION_MARK = " …"

#: Instructions for answers grounded in our own numbered sources. The brief asks for the Agent API migration
#: guide's citation instruction, adapted; its exact wording was not in the reference material we had, so this
#: is our own text with that intent: inline ``[n]`` markers that map to the numbered sources (the API's
#: ``annotations`` are often empty, so markers in the text are what can be resolved).
CITATION_INSTRUCTION = (
    "You answer questions using only the numbered sources given in the input. "
    "Cite the sources inline with their number in square brackets, like [1], right after the sentence or "
    "clause they support; cite several sources as [1][3]. "
    "Use only the numbers of the sources given and never invent a source, a number or a URL. "
    "If the sources do not contain the answer, say so plainly instead of guessing. "
    "Do not add a list of references at the end: the numbers are the references."
)

#: Instructions for the ``provider="perplexity-agent"`` mode: the model searches and cites its results.
AGENT_CITATION_INSTRUCTION = (
    "Search the web to answer the question. "
    "Cite your search results inline with their id in square brackets, like [1], right after the sentence "
    "or clause they support; cite several results as [1][3]. "
    "Use only ids of search results you received and never invent a source, an id or a URL. "
    "If the results do not contain the answer, say so plainly instead of guessing. "
    "Do not add a list of references at the end: the ids are the references."
)

#: Instructions used with ``on_empty="answer"`` when the search found nothing.
NO_SOURCES_INSTRUCTION = (
    "The search found no sources for this question. Answer briefly from general knowledge, say that no "
    "sources were found, and do not write any citation markers like [1]."
)

#: How a grounded answer keeps the model from searching on its own, by what selects the model:
#:
#: - ``"preset"`` (a ``preset``, ``effort`` or ``profile``): presets bundle tools that stay attached whatever
#:   ``tools`` says, and ``max_tool_calls: 0`` is the only off switch (reference §2.4);
#: - ``"model"`` (a bare ``model``/``models``): web search is not automatic, so sending no tools suffices.
#:
#: Edit this mapping (e.g. if the API stops accepting ``max_tool_calls``) to change the policy everywhere.
SEARCH_OFF: dict[str, dict[str, Any]] = {
    "preset": {"max_tool_calls": 0},
    "model": {},
}


def search_off(params: Mapping[str, Any]) -> dict[str, Any]:
    """The request fields that stop the model from searching, for agent ``params`` (see :data:`SEARCH_OFF`).

    Also refuses search tools in ``params['tools']``: a grounded answer must only use our sources.
    """
    for tool in params.get("tools") or ():
        kind = tool.get("type") if isinstance(tool, Mapping) else getattr(tool, "type", None)
        if kind in ("web_search", "fetch_url", "people_search", "finance_search", "image_search"):
            raise InvalidRequest(
                f"a grounded answer cannot give the model the {kind!r} tool: it answers from the chain's hits "
                f"(use provider={AGENT_PROVIDER!r} to let the Agent API search)",
                param="tools",
            )
    bundled = any(params.get(k) for k in ("preset", "effort", "profile"))
    return dict(SEARCH_OFF["preset" if bundled else "model"])


# --- sources --------------------------------------------------------------------------------------------


def _cap(lengths: Sequence[int], budget: int) -> int | None:
    """The largest per-source cap ``c`` with ``sum(min(n, c)) <= budget``; None when nothing needs cutting."""
    if sum(lengths) <= budget:
        return None
    ordered = sorted(lengths)
    prefix = 0  # sum of the lengths below the current candidate
    count = len(ordered)
    for i, n in enumerate(ordered):
        remaining = count - i
        # cap every source from i on at c: prefix + remaining * c <= budget
        c = (budget - prefix) // remaining
        if c < n:
            return max(c, 0)
        prefix += n
    return ordered[-1]  # pragma: no cover - unreachable: the sum exceeds the budget


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    keep = limit - len(TRUNCATION_MARK)
    if keep <= 0:
        return text[: max(limit, 0)]
    cut = text.rfind(" ", 0, keep + 1)
    if cut < keep * 0.8:  # no word boundary near the end: cut mid-word
        cut = keep
    return text[:cut].rstrip() + TRUNCATION_MARK


def pack_sources(hits: Sequence[Hit], max_chars: int | None = DEFAULT_MAX_SOURCE_CHARS) -> list[Hit]:
    """Number ``hits`` 1..N and cut their texts to fit ``max_chars`` in total.

    The text of a hit is its ``content`` when known, else its ``snippet`` (:attr:`Hit.text`). When the total
    exceeds the budget, every text longer than a common cap is cut to it (the longest go first, a short
    snippet keeps every character); no hit is dropped and the order does not change. ``None`` disables the
    cap. Returns new hits; the inputs are not modified.
    """
    numbered = [h if h.id == n else h.model_copy(update={"id": n}) for n, h in enumerate(hits, start=1)]
    if max_chars is None or not numbered:
        return numbered
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 0:
        raise InvalidRequest(
            f"max_source_chars must be a non-negative integer or None, got {max_chars!r}",
            param="max_source_chars",
        )
    lengths = [len(h.text) for h in numbered]
    cap = _cap(lengths, max_chars)
    if cap is None:
        return numbered
    out: list[Hit] = []
    cut = 0
    for hit, length in zip(numbered, lengths, strict=True):
        if length <= cap:
            out.append(hit)
            continue
        cut += 1
        field = "content" if hit.content else "snippet"
        out.append(hit.model_copy(update={field: _truncate(hit.text, cap)}))
    logger.debug("sources cut to %d characters each (%d of %d sources) to fit %d", cap, cut, len(out), max_chars)
    return out


def format_sources(hits: Sequence[Hit]) -> str:
    """Render numbered sources as the model sees them: ``[n] title``, ``URL:``, ``Published:``, text."""
    blocks: list[str] = []
    for hit in hits:
        lines = [f"[{hit.id}] {hit.title.strip() or hit.url}", f"URL: {hit.url}"]
        if hit.published is not None:
            lines.append(f"Published: {hit.published.isoformat()}")
        text = hit.text.strip()
        if text:
            lines.append(text)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def build_input(query: str, hits: Sequence[Hit]) -> str:
    """The request ``input``: the numbered sources, then the question."""
    if not hits:
        return f"No sources were found.\n\nQuestion: {query}"
    return f"Sources:\n\n{format_sources(hits)}\n\nQuestion: {query}"


# --- perplexity-agent mode -------------------------------------------------------------------------------


def web_search_tool(options: SearchOptions) -> dict[str, Any]:
    """The ``web_search`` tool carrying the same filters as a chain search would use.

    ``include_domains``/``exclude_domains`` become ``search_domain_filter`` (deny entries with ``-``),
    ``recency`` ``search_recency_filter``, ``published_after``/``published_before`` the date filters,
    ``max_results`` the tool's ``max_results`` (capped at 50), a two-letter ``country`` the user location.
    Options the Agent API has no equivalent for (``language``, ``safe_search``, provider-specific ones)
    are ignored with a debug log.
    """
    tool: dict[str, Any] = {"type": "web_search"}
    filters: dict[str, Any] = {}
    domains = [*(options.include_domains or ()), *(f"-{d}" for d in options.exclude_domains or ())]
    if domains:
        filters["search_domain_filter"] = domains
    if options.recency is not None:
        filters["search_recency_filter"] = options.recency
    if options.published_after is not None:
        filters["search_after_date_filter"] = options.published_after
    if options.published_before is not None:
        filters["search_before_date_filter"] = options.published_before
    if filters:
        tool["filters"] = filters
    if "max_results" in options.model_fields_set:
        tool["max_results"] = min(options.max_results, 50)
    if options.country and len(options.country) == 2:
        tool["user_location"] = {"country": options.country.upper()}
    ignored = [k for k in ("language", "safe_search") if getattr(options, k) is not None]
    ignored += sorted(options.extra)
    if options.country and len(options.country) != 2:
        ignored.append("country")
    if ignored:
        logger.debug("%s ignores options it has no equivalent for: %s", AGENT_PROVIDER, ", ".join(ignored))
    return tool


def first_by_id(hits: Sequence[Hit]) -> list[Hit]:
    """Keep the first hit of every id (the Agent API may repeat a result across search rounds)."""
    seen: set[int] = set()
    out: list[Hit] = []
    for hit in hits:
        if hit.id in seen:
            continue
        seen.add(hit.id)
        out.append(hit)
    return out

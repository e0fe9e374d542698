"""What the doctor knows of each vendor, declared as data: the shape of a well-formed key
(:data:`KEY_FORMATS`) and the response fields each parser relies on (:data:`SHAPES`).

The pure checks over these declarations are in :mod:`perplexed.doctor._checks`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["KEY_FORMATS", "SHAPES", "CostField", "Field", "Shape"]

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"

#: provider -> (regular expression a well-formed key matches, how it looks, for the message). A key that
#: does not match is a warning (the vendor may have changed its format), never printed.
KEY_FORMATS: dict[str, tuple[str, str]] = {
    "perplexity": (r"pplx-[A-Za-z0-9]{16,}", "pplx-…"),
    "tavily": (r"tvly-[A-Za-z0-9_-]{16,}", "tvly-…"),
    "firecrawl": (r"fc-[A-Za-z0-9]{16,}", "fc-…"),
    "exa": (_UUID, "a UUID"),
    "linkup": (_UUID, "a UUID"),
    "brave": (r"[A-Za-z0-9_-]{20,64}", "20-64 letters and digits"),
}


@dataclass(frozen=True)
class Field:
    """A field the parser relies on. ``path`` is dotted (``costDollars.total``), relative to the response
    for :attr:`Shape.top` and to each hit for :attr:`Shape.item`. ``types`` are JSON types joined by ``|``:
    ``str``, ``num``, ``int``, ``bool``, ``list``, ``dict``, ``null``. ``level``: ``required`` (must be
    there: in every hit for item fields), ``expected`` (item fields: in at least one hit, so a renamed field
    is caught; top fields: as required) or ``optional`` (only its type is checked when present)."""

    path: str
    types: str
    level: str = "required"


@dataclass(frozen=True)
class CostField:
    """Where a provider reports what a call cost, and in which unit (``usd`` or ``credits``, converted with
    the provider's ``usd_per_credit``)."""

    path: str
    unit: str = "usd"


@dataclass(frozen=True)
class Shape:
    """What one provider's parser relies on: the hit list (``items``, a dotted path), the fields of the
    response (``top``) and of each hit (``item``), the keys known per object (``known``: ``""`` is the
    response, ``"a.b"`` a nested object, ``"a.b[]"`` each element of a list; keys outside are listed as new)
    and the reported cost (``cost``)."""

    items: str
    top: tuple[Field, ...]
    item: tuple[Field, ...]
    known: Mapping[str, frozenset[str]]
    cost: CostField | None = None


def _keys(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: provider -> what its parser relies on (from the parsers in perplexed.providers and agent._response)
SHAPES: dict[str, Shape] = {
    "searxng": Shape(
        items="results",
        top=(
            Field("results", "list"),
            Field("unresponsive_engines", "list", "optional"),
            Field("answers", "list", "optional"),
            Field("infoboxes", "list", "optional"),
            Field("number_of_results", "num", "optional"),
        ),
        item=(
            Field("url", "str"),
            Field("title", "str|null", "expected"),
            Field("content", "str|null", "optional"),  # legacy (engine-built) results may leave it out
            Field("publishedDate", "str|null", "optional"),
            Field("pubdate", "str|null", "optional"),
            Field("score", "num", "optional"),
        ),
        known={
            "": _keys("query number_of_results results answers corrections infoboxes suggestions unresponsive_engines"),
            "results[]": _keys(
                "url title content publishedDate pubdate score engine engines positions category thumbnail "
                "img_src parsed_url template iframe_src priority author metadata length views thumbnail_src "
                "open_group close_group address"
            ),
        },
    ),
    "ceramic": Shape(
        items="result.results",
        top=(Field("result", "dict"), Field("result.results", "list")),
        item=(
            Field("url", "str"),
            Field("title", "str|null", "expected"),
            Field("description", "str|null", "expected"),
            Field("score", "num|null", "optional"),
        ),
        known={
            "": _keys("requestId result"),
            "result": _keys("results totalResults searchMetadata"),
            "result.results[]": _keys("title url description score"),
        },
    ),
    "firecrawl": Shape(
        items="data.web",
        top=(
            Field("success", "bool"),
            Field("data", "dict"),
            Field("data.web", "list"),
            Field("data.news", "list", "optional"),
            Field("creditsUsed", "num", "optional"),  # a self-hosted instance may not report it
            Field("warning", "str|null", "optional"),
        ),
        item=(
            Field("url", "str"),
            Field("title", "str|null", "expected"),
            Field("description", "str|null", "expected"),
            Field("markdown", "str|null", "optional"),
            Field("metadata", "dict", "optional"),
        ),
        known={
            "": _keys("success data warning id creditsUsed"),
            "data": _keys("web news images"),
            "data.web[]": _keys(
                "url title description position category markdown metadata html rawHtml links screenshot summary"
            ),
        },
        cost=CostField("creditsUsed", "credits"),
    ),
    "perplexity": Shape(
        items="results",
        top=(Field("results", "list"), Field("id", "str", "optional")),
        item=(
            Field("url", "str"),
            Field("title", "str|null", "expected"),
            Field("snippet", "str|null", "expected"),
            Field("date", "str|null", "expected"),
            Field("last_updated", "str|null", "expected"),
        ),
        known={"": _keys("id results server_time"), "results[]": _keys("title url snippet date last_updated")},
    ),
    "tavily": Shape(
        items="results",
        top=(Field("results", "list"), Field("usage", "dict"), Field("usage.credits", "num")),
        item=(
            Field("url", "str"),
            Field("title", "str|null", "expected"),
            Field("content", "str|null", "expected"),
            Field("raw_content", "str|null", "optional"),
            Field("published_date", "str|null", "optional"),
            Field("score", "num", "optional"),
        ),
        known={
            "": _keys(
                "query answer images follow_up_questions results response_time usage request_id auto_parameters"
            ),
            "results[]": _keys("title url content score raw_content favicon published_date images"),
        },
        cost=CostField("usage.credits", "credits"),
    ),
    "exa": Shape(
        items="results",
        top=(Field("results", "list"), Field("costDollars", "dict"), Field("costDollars.total", "num")),
        item=(
            Field("url", "str"),
            Field("title", "str|null", "expected"),
            Field("text", "str", "expected"),  # asked for by default (contents.text)
            Field("highlights", "list", "expected"),  # asked for by default (contents.highlights)
            Field("publishedDate", "str|null", "optional"),
            Field("summary", "str", "optional"),
            Field("score", "num", "optional"),
            Field("author", "str|null", "optional"),
        ),
        known={
            "": _keys("requestId resolvedSearchType searchType results costDollars searchTime context autoDate"),
            "results[]": _keys(
                "id url title score publishedDate author image favicon text highlights highlightScores summary "
                "subpages extras"
            ),
        },
        cost=CostField("costDollars.total", "usd"),
    ),
    "brave": Shape(
        items="web.results",
        top=(Field("web", "dict"), Field("web.results", "list")),
        item=(
            Field("url", "str"),
            Field("title", "str|null", "expected"),
            Field("description", "str|null", "expected"),
            Field("page_age", "str|null", "optional"),
            Field("page_fetched", "str|null", "optional"),
            Field("age", "str|null", "optional"),
        ),
        known={
            "": _keys("type query web news videos mixed faq infobox discussions locations summarizer rich"),
            "web": _keys("type results family_friendly"),
            "web.results[]": _keys(
                "type subtype title url description page_age page_fetched age language profile meta_url "
                "extra_snippets thumbnail is_source_local is_source_both family_friendly is_live deep_results "
                "cluster cluster_type content_type article video location faq schemas product recipe review "
                "book creative_work music_recording movie software rating qa"
            ),
        },
    ),
    "linkup": Shape(
        items="results",
        top=(Field("results", "list"),),
        item=(
            Field("url", "str"),
            Field("name", "str|null", "expected"),
            Field("content", "str|null", "expected"),
            Field("type", "str", "optional"),
        ),
        known={"": _keys("results"), "results[]": _keys("type name url content favicon")},
    ),
    "agent": Shape(
        items="output",
        top=(
            Field("id", "str"),
            Field("status", "str"),
            Field("output", "list"),
            Field("model", "str|null", "optional"),
            Field("usage", "dict"),
            Field("usage.cost", "dict"),
            Field("usage.cost.total_cost", "num"),
        ),
        item=(Field("type", "str"),),
        known={
            "": _keys(
                "id object created_at completed_at model status output usage error incomplete_details background "
                "store effort preset previous_response_id instructions max_output_tokens max_steps reasoning "
                "tools tool_choice metadata temperature top_p text truncation parallel_tool_calls "
                "max_tool_calls user service_tier prompt_cache_key"
            ),
            "usage": _keys(
                "input_tokens output_tokens total_tokens input_tokens_details output_tokens_details cost "
                "tool_calls_details"
            ),
            "usage.cost": _keys(
                "currency input_cost output_cost tool_calls_cost cache_read_cost cache_creation_cost total_cost "
                "tool_calls_cost_details"
            ),
            "output[]": _keys(
                "type id status role content results queries name arguments call_id summary code language"
            ),
        },
        cost=CostField("usage.cost.total_cost", "usd"),
    ),
}

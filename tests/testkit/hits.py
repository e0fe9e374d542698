"""The test hits every suite shares: SearXNG-shaped JSON answers, and hit lists for function providers.

One module instead of a copy per suite: change a shape here and every test that fakes a provider sees it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from perplexed import Hit

__all__ = ["WEB_HITS", "ZONING_HITS", "searxng_json"]


def searxng_json(
    n: int = 3,
    *,
    prefix: str = "https://example.com/page",
    unresponsive: Sequence[Sequence[str]] = (),
    title: str = "Result {i}",
    content: str = "Snippet {i}",
    published: str = "2024-05-0{d}",
    score: Callable[[int, int], float] = lambda i, n: float(n - i + 1),
) -> dict[str, Any]:
    """A SearXNG ``format=json`` answer with ``n`` results (urls ``{prefix}{i}``, i = 1..n). ``title``,
    ``content`` and ``published`` are templates of ``i`` (and ``d = 1 + i % 9``, a day); ``score(i, n)``."""
    return {
        "query": "q",
        "results": [
            {
                "url": f"{prefix}{i}",
                "title": title.format(i=i),
                "content": content.format(i=i),
                "score": score(i, n),
                "publishedDate": published.format(i=i, d=1 + i % 9),
            }
            for i in range(1, n + 1)
        ],
        "unresponsive_engines": [list(x) for x in unresponsive],
    }


#: a function provider's web hits (dicts, as a user's function would return)
WEB_HITS = [
    {"url": "https://web.example/a", "title": "Web A", "snippet": "alpha snippet", "content": "alpha full text"},
    {"url": "https://web.example/b", "title": "Web B", "snippet": "beta snippet"},
    {"url": "https://web.example/c", "title": "Web C", "snippet": "gamma snippet", "published": "2024-05-01"},
]

#: three hits about zoning setbacks, as Hit objects (the answer tests ground on them)
ZONING_HITS = [
    Hit(
        title="Zoning setbacks explained",
        url="https://docs.example.org/zoning-setbacks",
        snippet="A setback is the minimum distance between a building and the property line.",
    ),
    Hit(
        title="Residential zoning setback requirements",
        url="https://docs.example.org/residential-setbacks",
        snippet="Front setbacks of 20 to 25 feet and side setbacks of 5 to 10 feet are typical.",
    ),
    Hit(
        title="Variance applications for zoning",
        url="https://docs.example.org/zoning-variance",
        snippet="How to apply for a variance when a lot cannot meet the zoning rules.",
    ),
]

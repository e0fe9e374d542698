"""What ``perplexed.evaluate`` measures: the query file's entries (:class:`EvalQuery`), one row per query and
provider (:class:`EvalRow`), the scores (:class:`ProviderScore`) and the report (:class:`EvalReport`).

Pure: no I/O besides what the caller asks for (``to_json``, ``to_html``). The metrics (see
docs/eval.md):

* a hit is correct when its URL matches an expected URL after :func:`normalize_url`, or when the query's
  ``answer`` (NFKC, case-folded, whitespace collapsed: :func:`normalize_text`) occurs in its title, snippet or
  content;
* hit@k: share of the labelled queries with a correct hit in the top k; MRR: mean of 1/rank of the first
  correct hit (0 when none); nDCG@k with binary relevance (ideal DCG for the query's number of expected URLs,
  capped at k; 1 for an answer); answer recall@k: share of the queries with an ``answer`` whose answer occurs
  in the top k;
* cost per correct answer: total cost / the number of queries with a correct hit;
* a failure is a query whose call ended in ``error`` or ``timeout``; ``skipped`` queries (over the run's
  budget) count for nothing but ``skipped``;
* Wilson 95 % intervals for hit@k (a few dozen queries cannot rank providers).
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field

from perplexed._errors import InvalidRequest
from perplexed.policy._routing import ProviderPrior, Routing

__all__ = [
    "EvalQuery",
    "EvalReport",
    "EvalRow",
    "ProviderScore",
    "answer_found",
    "first_correct",
    "ndcg_at_k",
    "normalize_text",
    "normalize_url",
    "percentile",
    "wilson",
]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_SPACE = re.compile(r"\s+")
FAILED = ("error", "timeout")


def normalize_url(url: str) -> str:
    """A URL as evaluation compares it: scheme and host lower-cased, a leading ``www.`` dropped, the default
    port, the fragment, a trailing slash and ``utm_*`` parameters dropped."""
    text = url.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return text.rstrip("/")
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower().removeprefix("www.")
    netloc = host
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        netloc = f"{host}:{port}"
    if parts.username is not None:
        netloc = f"{parts.username}@{netloc}"
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                       if not k.lower().startswith("utm_")])
    path = parts.path.rstrip("/")
    return urlunsplit((scheme, netloc, path, query, ""))


def normalize_text(text: str) -> str:
    """NFKC, case-folded, whitespace collapsed to single spaces (and stripped)."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


class EvalQuery(BaseModel):
    """One entry of a query file: ``query``, and optionally an ``id``, the ``expected_urls`` and the ``answer``
    that make it labelled."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = ""
    query: str
    expected_urls: list[str] | None = None
    answer: str | None = None

    @property
    def labelled(self) -> bool:
        return bool(self.expected_urls) or bool(self.answer)


def _hit_fields(hit: Any) -> tuple[str, str, str, str]:
    if isinstance(hit, Mapping):
        return (str(hit.get("url") or ""), str(hit.get("title") or ""), str(hit.get("snippet") or ""),
                str(hit.get("content") or ""))
    return hit.url, hit.title or "", hit.snippet or "", hit.content or ""


def answer_found(answer: str, hits: Sequence[Any]) -> int | None:
    """The rank (1-based) of the first hit whose title, snippet or content contains ``answer`` (normalised)."""
    needle = normalize_text(answer)
    if not needle:
        return None
    for rank, hit in enumerate(hits, start=1):
        _url, title, snippet, content = _hit_fields(hit)
        if any(needle in normalize_text(field) for field in (title, snippet, content) if field):
            return rank
    return None


def _relevance(query: EvalQuery, hits: Sequence[Any]) -> list[bool]:
    """Per hit, whether it is correct (each expected URL counts once)."""
    expected = {normalize_url(u) for u in query.expected_urls or ()}
    needle = normalize_text(query.answer) if query.answer else ""
    seen: set[str] = set()
    out = []
    for hit in hits:
        url, title, snippet, content = _hit_fields(hit)
        norm = normalize_url(url)
        good = False
        if norm in expected and norm not in seen:
            seen.add(norm)
            good = True
        elif needle and any(needle in normalize_text(f) for f in (title, snippet, content) if f):
            good = True
        out.append(good)
    return out


def first_correct(query: EvalQuery, hits: Sequence[Any], k: int) -> int | None:
    """The rank of the first correct hit in the top ``k`` (None: none, or the query is not labelled)."""
    if not query.labelled:
        return None
    for rank, good in enumerate(_relevance(query, hits[:k]), start=1):
        if good:
            return rank
    return None


def ndcg_at_k(query: EvalQuery, hits: Sequence[Any], k: int) -> float | None:
    """nDCG@k with binary relevance (None for an unlabelled query)."""
    if not query.labelled:
        return None
    relevant = _relevance(query, hits[:k])
    dcg = sum(1.0 / math.log2(i + 1) for i, good in enumerate(relevant, start=1) if good)
    wanted = len({normalize_url(u) for u in query.expected_urls or ()}) or 1
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(wanted, k) + 1))
    return min(1.0, dcg / ideal) if ideal else 0.0


def percentile(values: Sequence[float], share: float) -> float | None:
    """The nearest-rank percentile (``share`` in [0, 1]); None without values."""
    if not values:
        return None
    ordered = sorted(values)
    return float(ordered[max(0, math.ceil(share * len(ordered)) - 1)])


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion (95 % by default); None when ``n`` is 0."""
    if n <= 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


class EvalRow(BaseModel):
    """One query through one evaluated entry: ``outcome`` (``ok``, ``empty``, ``error``, ``timeout``,
    ``skipped``), the failure ``reason``, the ``rank`` of the first correct hit (None: none, or unlabelled),
    the latency, the cost and the top-k URLs; ``ndcg`` and ``answer_hit`` for the metrics, ``cached`` when the
    answer came from the cache."""

    model_config = ConfigDict(frozen=True)

    query_id: str
    provider: str
    outcome: str
    reason: str | None = None
    rank: int | None = None
    latency_ms: float = 0.0
    cost_usd: float = 0.0
    urls: list[str] = Field(default_factory=list)
    query: str = ""
    labelled: bool = False
    ndcg: float | None = None
    answer_hit: bool | None = None
    cached: bool = False


class ProviderScore(BaseModel):
    """The scores of one evaluated entry (a provider, or a chain named ``"a,b,c"``)."""

    model_config = ConfigDict(frozen=True)

    name: str
    queries: int
    labelled: int
    hit_at_k: float | None
    mrr: float | None
    ndcg_at_k: float | None
    answer_recall_at_k: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    failure_rate: float
    failures: dict[str, int]
    cost_usd: float
    cost_per_query_usd: float | None
    cost_per_correct_usd: float | None
    correct: int = 0
    skipped: int = 0
    hit_at_k_interval: tuple[float, float] | None = None
    """Wilson 95 % interval of ``hit_at_k``."""

    @classmethod
    def from_rows(cls, name: str, rows: Iterable[EvalRow]) -> ProviderScore:
        mine = list(rows)
        run = [r for r in mine if r.outcome != "skipped"]
        labelled = [r for r in run if r.labelled]
        correct = sum(1 for r in labelled if r.rank is not None)
        answered = [r for r in run if r.answer_hit is not None]
        failed = [r for r in run if r.outcome in FAILED]
        failures: dict[str, int] = {}
        for r in failed:
            key = r.reason or r.outcome
            failures[key] = failures.get(key, 0) + 1
        cost = math.fsum(r.cost_usd for r in mine)
        latencies = [r.latency_ms for r in run]
        n = len(labelled)
        return cls(
            name=name,
            queries=len(run),
            labelled=n,
            hit_at_k=correct / n if n else None,
            mrr=math.fsum(1.0 / r.rank for r in labelled if r.rank) / n if n else None,
            ndcg_at_k=math.fsum(r.ndcg or 0.0 for r in labelled) / n if n else None,
            answer_recall_at_k=(sum(1 for r in answered if r.answer_hit) / len(answered)) if answered else None,
            latency_p50_ms=percentile(latencies, 0.5),
            latency_p95_ms=percentile(latencies, 0.95),
            failure_rate=len(failed) / len(run) if run else 0.0,
            failures=dict(sorted(failures.items(), key=lambda item: (-item[1], item[0]))),
            cost_usd=cost,
            cost_per_query_usd=cost / len(run) if run else None,
            cost_per_correct_usd=cost / correct if correct else None,
            correct=correct,
            skipped=len(mine) - len(run),
            hit_at_k_interval=wilson(correct, n),
        )


class EvalReport(BaseModel):
    """An evaluation: one :class:`ProviderScore` per entry (``providers``, in the order given), one
    :class:`EvalRow` per query and entry (``rows``), and ``overlap``: for each pair of entries the mean
    Jaccard overlap of their top-k URL sets (``overlap["a"]["b"]``, symmetric)."""

    model_config = ConfigDict(frozen=True)

    k: int
    providers: list[ProviderScore]
    rows: list[EvalRow]
    overlap: dict[str, dict[str, float]] = Field(default_factory=dict)
    metric: str = "hit_at_k"
    """What ``routing`` ranks by: ``hit_at_k``, or ``answer_recall_at_k`` when answers are the only label."""

    @classmethod
    def build(cls, k: int, names: Sequence[str], rows: Sequence[EvalRow], answers_only: bool = False) -> EvalReport:
        by_name: dict[str, list[EvalRow]] = {n: [] for n in names}
        for row in rows:
            by_name.setdefault(row.provider, []).append(row)
        scores = [ProviderScore.from_rows(n, by_name[n]) for n in names]
        return cls(k=k, providers=scores, rows=list(rows), overlap=_overlap(names, by_name),
                   metric="answer_recall_at_k" if answers_only else "hit_at_k")

    def score(self, name: str) -> ProviderScore:
        """The score of the entry named ``name``."""
        for s in self.providers:
            if s.name == name:
                return s
        raise InvalidRequest(f"no evaluated provider is named {name!r}", param="name")

    def ranked(self) -> list[ProviderScore]:
        """The scores by hit@k (then cost per correct answer, then p50 latency)."""
        def key(s: ProviderScore) -> tuple[float, float, float]:
            quality = self._quality(s)
            return (-(quality if quality is not None else -1.0),
                    s.cost_per_correct_usd if s.cost_per_correct_usd is not None else math.inf,
                    s.latency_p50_ms if s.latency_p50_ms is not None else math.inf)
        return sorted(self.providers, key=key)

    def _quality(self, s: ProviderScore) -> float | None:
        return s.answer_recall_at_k if self.metric == "answer_recall_at_k" else s.hit_at_k

    def routing(self, min_quality: float | None = None) -> Routing:
        """A routing file from this report: per provider its measured quality (hit@k, or answer recall when
        that is the label), cost and latency, and the order that gives the most correct answers per dollar
        among those at or above ``min_quality``."""
        if min_quality is not None and (isinstance(min_quality, bool) or not isinstance(min_quality, int | float)
                                        or not 0 <= min_quality <= 1):
            raise InvalidRequest(f"min_quality must be a share between 0 and 1, got {min_quality!r}",
                                 param="min_quality")
        priors = {
            s.name: ProviderPrior(
                quality=self._quality(s), cost_per_query_usd=s.cost_per_query_usd or 0.0,
                cost_per_correct_usd=s.cost_per_correct_usd, latency_p50_ms=s.latency_p50_ms,
                latency_p95_ms=s.latency_p95_ms, failure_rate=s.failure_rate, queries=s.queries)
            for s in self.providers
        }
        return Routing.build(priors, metric=self.metric, k=self.k,
                             min_quality=None if min_quality is None else float(min_quality))

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON: ``k``, ``metric``, ``providers``, ``rows``, ``overlap``."""
        return json.dumps(self.to_dict(), indent=indent)

    def to_html(self) -> str:
        """One self-contained HTML page (inline SVG, no script, font or other external reference): a
        quality-vs-cost scatter, the latency distributions and the per-query table."""
        from perplexed.evaluation._eval_html import render

        return render(self)


def _overlap(names: Sequence[str], by_name: Mapping[str, Sequence[EvalRow]]) -> dict[str, dict[str, float]]:
    sets = {n: {r.query_id: {normalize_url(u) for u in r.urls} for r in by_name.get(n, ())
                if r.outcome != "skipped"} for n in names}
    out: dict[str, dict[str, float]] = {n: {} for n in names}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            values = []
            for qid, urls_a in sets[a].items():
                urls_b = sets[b].get(qid)
                if urls_b is None:
                    continue
                union = urls_a | urls_b
                values.append(len(urls_a & urls_b) / len(union) if union else 1.0)
            if values:
                out[a][b] = out[b][a] = math.fsum(values) / len(values)
    return out

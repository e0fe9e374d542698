"""The live probes (paid; :func:`check_live` / :func:`acheck_live`): one cheap real query per provider, and the
Agent API with its cheapest preset, each checked against :data:`~perplexed.doctor.SHAPES`, its reported or
billed cost compared with the price table, and timed. Each row is ``ok``, ``drift`` or ``error``.
:func:`estimate` gives the expected cost before anything is sent."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from perplexed._errors import InvalidRequest, PerplexedError, ProviderError, redact
from perplexed._models import ProviderAnswer
from perplexed.doctor._cassettes import Exchange, Recorder, record_exchanges
from perplexed.doctor._checks import (
    DRIFT,
    ERROR,
    OK,
    ShapeCheck,
    check_shape,
    compare_cost,
    reported_cost,
)
from perplexed.doctor._shapes import SHAPES, Shape
from perplexed.engine.chain import drive_flow
from perplexed.net import _portal
from perplexed.policy._failures import classify_exception
from perplexed.policy._options import SearchOptions
from perplexed.providers import CallableProvider, Provider, get
from perplexed.providers._table import WEB_PROVIDERS

__all__ = [
    "AGENT_ESTIMATE_USD",
    "LIVE_MAX_RESULTS",
    "LIVE_QUERY",
    "LiveReport",
    "LiveRow",
    "acheck_live",
    "check_live",
    "estimate",
    "live_options",
    "live_targets",
]

#: the query and size of the live check: common words (every provider has hits), few results (cheapest)
LIVE_QUERY = "python programming language"
LIVE_MAX_RESULTS = 3
#: estimated USD of one Agent API call with the cheapest preset ("fast": a small model, at most one search)
AGENT_ESTIMATE_USD = 0.01
AGENT_PRESET = "fast"
AGENT_INPUT = "In one word: what is the capital of France?"
#: the label the Agent API's spend is recorded under (as answer() does)
AGENT_SPEND_LABEL = "perplexity-agent"
#: seconds allowed to each live call
LIVE_TIMEOUT_S = 60.0
#: the chain's default per-provider timeout: a live call slower than this is noted
DEFAULT_PROVIDER_TIMEOUT_MS = 15000


@dataclass
class LiveRow:
    """One live check: ``status`` ``ok`` / ``drift`` / ``error``, the HTTP ``http_status``, ``ms`` taken,
    ``hits`` parsed, the ``cost`` (reported or table) and ``table_cost``, what drifted (``missing``,
    ``wrong_type``, ``cost_note``), the ``unknown`` new fields, an ``error`` message and where the exchange was
    recorded (``cassette``)."""

    provider: str
    status: str
    http_status: int | None = None
    ms: int = 0
    hits: int = 0
    cost: float | None = None
    table_cost: float | None = None
    cost_note: str = ""
    missing: list[str] = field(default_factory=list)
    wrong_type: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    error: str | None = None
    cassette: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LiveReport:
    """The live rows, the estimate made first and the cost of the calls actually made."""

    rows: list[LiveRow]
    estimated_cost: float

    @property
    def cost(self) -> float:
        return float(sum(r.cost or 0.0 for r in self.rows))

    @property
    def exit_code(self) -> int:
        return 0 if self.rows and all(r.status == OK for r in self.rows) else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimated_cost": self.estimated_cost,
            "cost": self.cost,
            "ok": self.exit_code == 0,
            "rows": [r.to_dict() for r in self.rows],
        }


# --- what to call, and what it will cost ---------------------------------------------------------------------


def live_options() -> SearchOptions:
    """The options of the live query (few results: the cheapest call of each provider)."""
    return SearchOptions.build(max_results=LIVE_MAX_RESULTS)


def setup_variables() -> list[str]:
    """The variables that configure a web provider for a live check (``SEARXNG_URL``, ``TAVILY_API_KEY``, ...),
    for the message that says there is none."""
    found = [getattr(get(name), "env_key", None) or getattr(get(name), "env_base_url", None) for name in WEB_PROVIDERS]
    return list(dict.fromkeys(v for v in found if v))


def live_targets(names: Sequence[str] = ()) -> list[Provider]:
    """The providers a live check calls: ``names`` (ConfigError for an unknown one), else every configured
    web provider (free ones too: a configured SearXNG is checked)."""
    for name in names:
        get(name)  # ConfigError for an unknown name, with "did you mean" ('Tavily' -> 'tavily')
    if names:
        return [get(n)() for n in dict.fromkeys(names)]
    out = []
    for name in WEB_PROVIDERS:
        instance = get(name)()
        if instance.configured:
            out.append(instance)
    return out


def _table_price(provider: Provider, options: SearchOptions) -> float | None:
    """The price table's USD for one call, None when the provider cannot price it."""
    try:
        return float(provider.price(options))
    except PerplexedError:
        return None


def estimate(providers: Iterable[Provider], *, agent: bool = False) -> dict[str, float]:
    """Expected USD per check (provider label -> USD; ``agent`` for the Agent API), before anything is sent."""
    options = live_options()
    out = {provider.label: _table_price(provider, options) or 0.0 for provider in providers}
    if agent:
        out["agent"] = AGENT_ESTIMATE_USD
    return out


def _usd_per_credit(provider: Provider, options: SearchOptions) -> float | None:
    method = getattr(provider, "usd_per_credit", None)
    if not callable(method):
        return None
    value = method(options)
    return float(value) if isinstance(value, int | float) else None


# --- judging a row -------------------------------------------------------------------------------------------


def _json_body(exchange: Exchange | None) -> Any:
    """The parsed body of a 2xx response, else None."""
    if exchange is None or not 200 <= exchange.status < 300:
        return None
    try:
        return json.loads(exchange.response_body)
    except (ValueError, UnicodeDecodeError):
        return None


def _judge(
    row: LiveRow, shape: Shape | None, exchange: Exchange | None, failure: BaseException | None, table: float | None,
    usd_per_credit: float | None = None,
) -> LiveRow:
    """Fill ``row`` from what came back (shared by the provider and Agent API checks)."""
    if exchange is not None:
        row.http_status = exchange.status
    data = _json_body(exchange)
    found: ShapeCheck | None = None
    reported: float | None = None
    if shape is not None and data is not None:
        found = check_shape(shape, data)
        row.missing, row.wrong_type, row.unknown = list(found.missing), list(found.wrong_type), list(found.unknown)
        reported = reported_cost(shape, data, usd_per_credit)
        if reported is not None:
            row.cost = reported
    row.table_cost = table
    if row.cost is None and failure is None:
        row.cost = table
    if failure is not None:
        row.error = redact(str(failure))
        row.status = DRIFT if found is not None and found.drift else ERROR
        return row
    if found is not None and found.drift:
        row.status = DRIFT
        return row
    row.status, row.cost_note = compare_cost(reported, table)
    return row


def _finish(row: LiveRow, recorder: Recorder, record: Path | None, name: str, *, agent: bool) -> None:
    """Write the row's exchanges as a cassette under ``record`` (when given and something was sent)."""
    if record is not None and recorder.exchanges:
        row.cassette = str(record_exchanges(record, name, recorder.exchanges, agent=agent))


# --- the provider check --------------------------------------------------------------------------------------


def _not_checkable(provider: Provider) -> str | None:
    """Why ``provider`` cannot be checked live (a function, or not configured), else None."""
    if isinstance(provider, CallableProvider):
        return "not an HTTP API (nothing to check live; `perplexed doctor` checks it offline)"
    if not provider.configured:
        env = " or ".join(v for v in (provider.env_key, provider.env_base_url) if v)
        return f"not configured (set {env})" if env else "not configured"
    return None


async def _run_flow(
    provider: Provider, query: str, options: SearchOptions, recorder: Recorder, timeout_s: float = LIVE_TIMEOUT_S
) -> tuple[ProviderAnswer | None, BaseException | None]:
    """Drive the provider's sans-io flow through the chain's one driver (``chain.drive_flow``) over
    ``recorder`` (a transport that keeps each exchange): its answer, or the failure (never raised), classified
    by the failure map as a chain attempt would be."""
    failure: BaseException | None = None
    answer = None
    async with httpx.AsyncClient(transport=recorder, timeout=timeout_s, follow_redirects=False) as client:
        try:
            # httpx's timeout bounds each read: a server dripping a byte a second would never end. This bounds
            # the whole call.
            async with asyncio.timeout(timeout_s):
                answer = await drive_flow(provider, provider.flow(query, options), client)
        except TimeoutError:
            failure = ProviderError("timeout", f"no complete answer within {timeout_s:g} s",
                                    provider=provider.label)
        except PerplexedError as exc:
            failure = exc
        except Exception as exc:  # the transport, or a provider bug: a row, not a crash of the whole report
            reason = classify_exception(exc).reason
            failure = ProviderError(reason, f"{type(exc).__name__}: {exc}", provider=provider.label)
    return answer, failure


async def _check_provider(provider: Provider, query: str, record: Path | None,
                          timeout_s: float = LIVE_TIMEOUT_S) -> LiveRow:
    options = live_options()
    row = LiveRow(provider=provider.label, status=ERROR)
    row.error = _not_checkable(provider)
    if row.error is not None:
        return row
    recorder = Recorder(provider.transport, provider.max_body_bytes)
    started = time.monotonic()
    answer, failure = await _run_flow(provider, query, options, recorder, timeout_s)
    row.ms = int((time.monotonic() - started) * 1000)
    if answer is not None:
        row.hits = len(answer.hits)
        if answer.cost is not None:
            row.cost = answer.cost
    table = _table_price(provider, options)
    row = _judge(row, SHAPES.get(provider.name), recorder.last, failure, table, _usd_per_credit(provider, options))
    if row.status == OK and answer is not None and not answer.hits:
        row.cost_note += "; no hits, so the hit fields were not checked"
    if row.ms > DEFAULT_PROVIDER_TIMEOUT_MS:
        row.cost_note += f"; slower than the default provider timeout ({DEFAULT_PROVIDER_TIMEOUT_MS} ms)"
    _finish(row, recorder, record, provider.name, agent=False)
    return row


# --- the Agent API check -------------------------------------------------------------------------------------


async def _check_agent(record: Path | None, transport: httpx.AsyncBaseTransport | None,
                       timeout_s: float = LIVE_TIMEOUT_S) -> LiveRow:
    from perplexed.agent import AsyncAgentClient

    row = LiveRow(provider="agent", status=ERROR)
    recorder = Recorder(transport, 8 * 1024 * 1024)
    failure: BaseException | None = None
    started = time.monotonic()
    try:
        async with httpx.AsyncClient(transport=recorder, timeout=timeout_s) as http, asyncio.timeout(timeout_s):
            client = AsyncAgentClient(http_client=http, max_retries=0, timeout=timeout_s)
            response = await client.create(preset=AGENT_PRESET, input=AGENT_INPUT)
            row.cost = response.cost
    except TimeoutError:
        failure = ProviderError("timeout", f"no complete answer within {timeout_s:g} s", provider="agent")
    except (PerplexedError, httpx.HTTPError) as exc:
        failure = exc
    row.ms = int((time.monotonic() - started) * 1000)
    row = _judge(row, SHAPES["agent"], recorder.last, failure, None)
    if not row.cost_note and row.status == OK:
        row.cost_note = f"reported ${row.cost or 0:.4f} (estimate ${AGENT_ESTIMATE_USD:.4f})"
    _finish(row, recorder, record, "agent", agent=True)
    return row


# --- the report ----------------------------------------------------------------------------------------------


async def acheck_live(
    providers: Sequence[Provider],
    *,
    agent: bool = False,
    record: str | os.PathLike[str] | None = None,
    query: str = LIVE_QUERY,
    agent_transport: httpx.AsyncBaseTransport | None = None,
    timeout_s: float = LIVE_TIMEOUT_S,
) -> LiveReport:
    """One real query per provider (and the Agent API with ``agent=True``), one after the other; never raises
    for a provider's failure (its row says ``error``). ``record``: a folder for redacted cassettes. What the
    calls cost is recorded in the state store's spend (:func:`perplexed.spend`), as a search's would be.
    ``timeout_s`` (default 60) bounds each check as a whole, however slowly a server sends its answer."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not 0 < timeout_s <= 600:
        raise InvalidRequest(f"timeout_s must be a number of seconds in (0, 600], got {timeout_s!r}",
                             param="timeout_s")
    from perplexed.engine._governance import arecord_spend

    folder = None if record is None else Path(record)
    rows = []
    for provider in providers:
        rows.append(await _check_provider(provider, query, folder, float(timeout_s)))
        if rows[-1].http_status is not None:  # a call was made: its cost counts in perplexed.spend()
            await arecord_spend(provider.label, rows[-1].cost)
    if agent:
        rows.append(await _check_agent(folder, agent_transport, float(timeout_s)))
        if rows[-1].http_status is not None:
            await arecord_spend(AGENT_SPEND_LABEL, rows[-1].cost)
    return LiveReport(rows, sum(estimate(providers, agent=agent).values()))


def check_live(
    providers: Sequence[Provider],
    *,
    agent: bool = False,
    record: str | os.PathLike[str] | None = None,
    query: str = LIVE_QUERY,
    timeout_s: float = LIVE_TIMEOUT_S,
) -> LiveReport:
    """Sync :func:`acheck_live`."""
    return _portal.run(acheck_live, providers, agent=agent, record=record, query=query, timeout_s=timeout_s)

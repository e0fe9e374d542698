"""``EvalReport.to_html()``: one self-contained page (inline SVG and CSS; no script, font, image or link to
anything outside it): the ranking table, a quality-vs-cost scatter, the latency distributions and the
per-query table. Text is escaped, and ``//`` is written as ``&#47;&#47;`` so no URL in the page (a hit's, a
query's) is a reference a browser or a checker would follow."""

from __future__ import annotations

import html
import math
from typing import Any

__all__ = ["render"]

_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
_CSS = """body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f3f3f3}td.l{text-align:left}
.ok{color:#2a7}.bad{color:#c33}.dim{color:#888}svg{background:#fafafa;border:1px solid #ddd}"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True).replace("//", "&#47;&#47;")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


def _scatter(report: Any) -> str:
    width, height, pad = 520, 320, 48
    points = [(s, s.cost_per_query_usd or 0.0, report._quality(s) or 0.0) for s in report.providers]
    top_cost = max([c for _, c, _ in points] + [1e-6]) * 1.15
    parts = [f'<svg role="img" aria-label="quality versus cost" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}">',
             f'<line x1="{pad}" y1="{height - pad}" x2="{width - 10}" y2="{height - pad}" stroke="#444"/>',
             f'<line x1="{pad}" y1="10" x2="{pad}" y2="{height - pad}" stroke="#444"/>',
             f'<text x="{width // 2}" y="{height - 10}" text-anchor="middle">cost per query (USD)</text>',
             f'<text x="14" y="{height // 2}" transform="rotate(-90 14 {height // 2})" text-anchor="middle">'
             f'{_e(report.metric)}</text>']
    for tick in range(0, 6):
        y = height - pad - tick / 5 * (height - pad - 10)
        parts.append(f'<text x="{pad - 6}" y="{y + 4:.0f}" text-anchor="end" font-size="11">{tick * 20}%</text>')
        x = pad + tick / 5 * (width - pad - 10)
        parts.append(f'<text x="{x:.0f}" y="{height - pad + 16}" text-anchor="middle" font-size="11">'
                     f'{top_cost * tick / 5:.4f}</text>')
    for i, (score, cost, quality) in enumerate(points):
        x = pad + cost / top_cost * (width - pad - 10)
        y = height - pad - quality * (height - pad - 10)
        colour = _COLOURS[i % len(_COLOURS)]
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{colour}"><title>{_e(score.name)}: '
                     f'{_pct(quality)} at {_usd(cost)}</title></circle>')
        parts.append(f'<text x="{x + 9:.1f}" y="{y - 6:.1f}" font-size="12">{_e(score.name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _latencies(report: Any) -> str:
    names = [s.name for s in report.providers]
    samples = {n: sorted(r.latency_ms for r in report.rows if r.provider == n and r.outcome != "skipped")
               for n in names}
    top = max([v[-1] for v in samples.values() if v] + [1.0])
    row_h, pad, width = 34, 150, 560
    height = row_h * len(names) + 40
    parts = [f'<svg role="img" aria-label="latency distributions" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}">']
    scale = (width - pad - 20) / top
    for i, name in enumerate(names):
        y = 20 + i * row_h
        colour = _COLOURS[i % len(_COLOURS)]
        parts.append(f'<text x="{pad - 8}" y="{y + 5}" text-anchor="end" font-size="12">{_e(name)}</text>')
        values = samples[name]
        if not values:
            continue
        buckets: dict[int, int] = {}
        for v in values:  # a strip of counts per pixel column: the distribution's shape
            col = int(v * scale)
            buckets[col] = buckets.get(col, 0) + 1
        peak = max(buckets.values())
        for col, count in sorted(buckets.items()):
            h = max(1.0, 24 * count / peak)
            parts.append(f'<rect x="{pad + col}" y="{y + 12 - h:.1f}" width="2" height="{h:.1f}" '
                         f'fill="{colour}" opacity="0.7"/>')
        for share, dash in ((0.5, ""), (0.95, ' stroke-dasharray="3,2"')):
            v = values[max(0, math.ceil(share * len(values)) - 1)]
            parts.append(f'<line x1="{pad + v * scale:.1f}" y1="{y - 14}" x2="{pad + v * scale:.1f}" y2="{y + 14}" '
                         f'stroke="#000"{dash}><title>p{int(share * 100)} {v:.0f} ms</title></line>')
    axis_y = height - 12
    parts.append(f'<text x="{pad}" y="{axis_y}" font-size="11">0 ms</text>')
    parts.append(f'<text x="{width - 20}" y="{axis_y}" font-size="11" text-anchor="end">{top:.0f} ms</text>')
    parts.append("</svg>")
    return "".join(parts)


def _ranking(report: Any) -> str:
    head = ("provider", report.metric.replace("_", " "), "95% interval", "MRR", "nDCG@k", "cost/correct", "cost",
            "p50", "p95", "failures", "queries")
    rows = []
    for s in report.ranked():
        interval = "-" if s.hit_at_k_interval is None else (
            f"{s.hit_at_k_interval[0] * 100:.0f}-{s.hit_at_k_interval[1] * 100:.0f}%")
        cells = (_pct(report._quality(s)), interval, "-" if s.mrr is None else f"{s.mrr:.3f}",
                 "-" if s.ndcg_at_k is None else f"{s.ndcg_at_k:.3f}", _usd(s.cost_per_correct_usd),
                 _usd(s.cost_usd), _ms(s.latency_p50_ms), _ms(s.latency_p95_ms), _pct(s.failure_rate),
                 str(s.queries))
        rows.append(f'<tr><td class="l">{_e(s.name)}</td>' + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    return ("<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>" + "".join(rows) + "</table>")


def _per_query(report: Any) -> str:
    names = [s.name for s in report.providers]
    by_query: dict[str, dict[str, Any]] = {}
    texts: dict[str, str] = {}
    for row in report.rows:
        by_query.setdefault(row.query_id, {})[row.provider] = row
        texts.setdefault(row.query_id, row.query)
    out = ['<table><tr><th>id</th><th>query</th>' + "".join(f"<th>{_e(n)}</th>" for n in names) + "</tr>"]
    for qid, cells in by_query.items():
        tds = []
        for name in names:
            row = cells.get(name)
            if row is None:
                tds.append('<td class="dim">-</td>')
            elif row.outcome in ("error", "timeout"):
                tds.append(f'<td class="bad">{_e(row.reason or row.outcome)}</td>')
            elif row.outcome == "skipped":
                tds.append(f'<td class="dim">skipped ({_e(row.reason or "")})</td>')
            elif row.rank is not None:
                tds.append(f'<td class="ok">#{row.rank} · {row.latency_ms:.0f} ms</td>')
            else:
                miss = "miss" if row.labelled else row.outcome
                tds.append(f'<td class="dim">{miss} · {row.latency_ms:.0f} ms</td>')
        out.append(f'<tr><td class="l">{_e(qid)}</td><td class="l">{_e(texts.get(qid, ""))}</td>{"".join(tds)}</tr>')
    out.append("</table>")
    return "".join(out)


def render(report: Any) -> str:
    """The page (see the module docstring)."""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>perplexed eval</title>'
        f"<style>{_CSS}</style></head><body><h1>Search evaluation (k = {report.k})</h1>"
        f"{_ranking(report)}<h2>Quality versus cost</h2>{_scatter(report)}"
        f"<h2>Latency</h2><p class=\"dim\">each bar counts queries; solid line p50, dashed p95</p>{_latencies(report)}"
        f"<h2>Per query</h2>{_per_query(report)}</body></html>\n"
    )

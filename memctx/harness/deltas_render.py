"""Deltas between two runs as a terminal table, Markdown and HTML.

The input is :func:`memctx.harness.compare_runs`' list of :class:`~memctx.harness.Delta`
and, optionally, :func:`memctx.harness.comparison_notes`' lines and the one-line
:class:`~memctx.harness.deltas.Verdict` a comparison opens with (:func:`verdict_md`,
:func:`verdict_html`; in a terminal it is its text). Every format shows, per
metric, the before value, the after value and the change, with full names:

- shares of probes (``recall_accuracy``, ...) in percent with their 95 % interval, the
  change in percentage points and ``*`` when it is beyond the noise
  (:mod:`memctx.harness.noise`); ``cached_share`` in percent, without an interval;
- token counts with thousands separators, the change also relative; costs in dollars.

The terminal and Markdown show one table per metric (narrow, readable); the HTML one table
with a column group per metric, which scrolls sideways with suite, strategy and embedding
kept in view (:data:`DELTAS_CSS`; :func:`format_deltas_html` is a fragment a report can
embed, :func:`deltas_html_page` a self-contained page).
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Sequence

from .deltas import Delta, MetricChange, Verdict
from .noise import SHARE_METRICS
from .schema import ALL_SUITES

__all__ = [
    "DELTAS_CSS",
    "deltas_html_page",
    "format_change",
    "format_deltas_html",
    "format_deltas_md",
    "format_deltas_text",
    "format_value",
    "paired_note",
    "verdict_html",
    "verdict_md",
]

_PERCENT = (*SHARE_METRICS, "cached_share")
_UNITS = {
    "tokens_per_call": "input tokens per call",
    "recall_tokens": "recall-block tokens per call",
    "llm_tokens": "tokens of summaries and extraction",
    "cost_usd": "USD, whole run",
    "cost_per_call": "USD per call",
    "cached_share": "share of input tokens read from the cache",
    "violations": "invariant violations, must be 0",
    "hook_p50_ms": "ms",
    "hook_p95_ms": "ms",
}
_LEGEND = (
    "Shares of fitted probes in percent with their 95 % interval (bootstrap, widened to "
    "Wilson); changes in percentage points (pts); * = the change is beyond the noise (the "
    "difference's 95 % interval excludes 0: probe by probe where both runs' probe rows cover "
    "the same scenarios, else from the two intervals). n = fitted probes. "
    "all = pooled over the suites; all† = the before figure pooled from its per-suite rows "
    "over the suites both runs ran."
)
_KEYS = ("suite", "strategy", "embedding")


def format_value(change: MetricChange, which: str) -> str:
    """The before (``which == "before"``) or after value of a change, with its interval."""
    value = change.before if which == "before" else change.after
    interval = change.before_ci if which == "before" else change.after_ci
    if value is None:
        return "n/a"
    metric = change.metric
    if metric in _PERCENT:
        text = f"{value * 100:.1f} %"
        if interval is not None:
            text += f" ({interval[0] * 100:.1f}–{interval[1] * 100:.1f})"
        return text
    return _number(metric, value)


def _number(metric: str, value: float, sign: str = "") -> str:
    if metric == "cost_per_call":
        return f"{'-' if value < 0 else sign}${abs(value):.5f}"
    if metric == "cost_usd":
        return f"{'-' if value < 0 else sign}${abs(value):,.2f}"
    if metric.endswith("_ms"):
        return f"{value:{sign}.1f} ms"
    if float(value).is_integer():
        return f"{int(value):{sign},}"
    return f"{value:{sign},.1f}"


def paired_note(deltas: Sequence[Delta]) -> str:
    """How the shares' changes were judged: how many probe by probe, how many not."""
    shares = [c for d in deltas for c in d.changes if c.significant is not None]
    paired = sum(c.paired for c in shares)
    if not shares:
        return "no shares compared."
    which = "the share change" if len(shares) == 1 else f"all {len(shares)} share changes"
    if paired == len(shares):
        return f"{which} judged probe by probe (paired, same scenarios)."
    if not paired:
        return (
            f"{which} judged from the two intervals (no probe rows of both runs over the "
            "same scenarios to pair)."
        )
    return (
        f"{paired} of {len(shares)} share changes judged probe by probe (paired, same "
        "scenarios); the others from the two intervals."
    )


def format_change(change: MetricChange) -> str:
    """The change: points and ``*`` for shares, absolute and relative for the others."""
    delta = change.delta
    if delta is None:
        return "n/a"
    mark = " *" if change.significant else ""
    if change.metric in _PERCENT:
        points = f"{delta * 100:+.1f}"
        return f"{'0.0' if float(points) == 0 else points} pts{mark}"
    text = _number(change.metric, delta, "+")
    if not any(ch.isdigit() and ch != "0" for ch in text):
        return "0"  # nothing left at the precision shown
    if change.before:
        text += f" ({delta / abs(change.before):+.1%})"
    return text


def _suite(delta: Delta) -> str:
    return f"{ALL_SUITES}†" if delta.pooled and delta.note else delta.suite


def _n(delta: Delta) -> str:
    def one(n: int | None) -> str:
        return "n/a" if n is None else str(n)

    return f"{one(delta.fit_before)} → {one(delta.fit_after)}"


def _metrics(deltas: Sequence[Delta]) -> list[str]:
    return [c.metric for c in deltas[0].changes] if deltas else []


def _title(metric: str) -> str:
    unit = _UNITS.get(metric)
    return f"{metric} ({unit})" if unit else metric


def _rows(deltas: Sequence[Delta], metric: str) -> list[list[str]]:
    rows = []
    for delta in deltas:
        change = delta.change(metric)
        if change is None:
            continue
        rows.append(
            [
                _suite(delta),
                delta.strategy,
                delta.embedding,
                _n(delta),
                format_value(change, "before"),
                format_value(change, "after"),
                format_change(change),
            ]
        )
    return rows


def _text_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(c)) for c in column) for column in zip(headers, *rows, strict=False)]
    left = len(_KEYS)  # key columns left-aligned, figures right-aligned

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def format_deltas_text(
    deltas: Sequence[Delta],
    notes: Sequence[str] = (),
    *,
    before: str = "before",
    after: str = "after",
) -> str:
    """A terminal table per metric, then the legend and the notes (full names throughout).

    Args:
        deltas: :func:`memctx.harness.compare_runs`' result.
        notes: :func:`memctx.harness.comparison_notes`' lines.
        before: Column title of the before values (e.g. ``"A"``).
        after: Column title of the after values.
    """
    headers = [*_KEYS, "n", before, after, "change"]
    blocks = [
        f"{_title(metric)}\n{_text_table(headers, _rows(deltas, metric))}"
        for metric in _metrics(deltas)
    ]
    if not blocks:
        blocks.append("no rows in common: nothing to compare")
    tail = [textwrap.fill(_LEGEND, 100), *(f"note: {n}" for n in notes)]
    return "\n\n".join(blocks) + "\n\n" + "\n".join(tail)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def format_deltas_md(
    deltas: Sequence[Delta],
    notes: Sequence[str] = (),
    *,
    before: str = "before",
    after: str = "after",
    level: int = 3,
) -> str:
    """Markdown: a heading (of ``level``) and a table per metric, the legend, the notes."""
    headers = [*_KEYS, "n", before, after, "change"]
    align = "|" + "|".join([":--"] * len(_KEYS) + ["--:"] * 4) + "|"
    parts = []
    for metric in _metrics(deltas):
        lines = [
            f"{'#' * level} {_title(metric)}",
            "",
            "| " + " | ".join(map(_md_cell, headers)) + " |",
            align,
        ]
        lines += ["| " + " | ".join(map(_md_cell, row)) + " |" for row in _rows(deltas, metric)]
        parts.append("\n".join(lines))
    if not parts:
        parts.append("No rows in common: nothing to compare.")
    parts.append(_LEGEND)
    if notes:
        parts.append("\n".join(f"- {_md_cell(n)}" for n in notes))
    return "\n\n".join(parts) + "\n"


DELTAS_CSS = """
.memctx-deltas { font: 14px/1.4 system-ui, sans-serif; color: #1d2430; }
.memctx-deltas .scroll { overflow-x: auto; max-width: 100%; border: 1px solid #d5dae1; }
.memctx-deltas table { border-collapse: separate; border-spacing: 0; }
.memctx-deltas th, .memctx-deltas td { padding: 4px 10px; white-space: nowrap;
  border-bottom: 1px solid #e4e7ec; text-align: right; background: #fff; }
.memctx-deltas thead th { background: #f3f5f8; }
.memctx-deltas th.group { text-align: center; border-left: 1px solid #d5dae1; }
.memctx-deltas td.first, .memctx-deltas th.first { border-left: 1px solid #d5dae1; }
.memctx-deltas .key { position: sticky; z-index: 1; text-align: left;
  font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  box-sizing: border-box; padding: 4px 1ch; overflow: hidden; }
.memctx-deltas thead .key { z-index: 3; }
.memctx-deltas .key.last { border-right: 2px solid #b9c0ca; }
.memctx-deltas td.worse { color: #a3121e; font-weight: 600; }
.memctx-deltas td.better { color: #0b6b2f; font-weight: 600; }
.memctx-deltas .legend, .memctx-deltas ul { color: #4a5565; max-width: 1100px; }
.memctx-deltas p.verdict { font-weight: 600; padding: 6px 10px; max-width: 1100px;
  border-left: 4px solid #b9c0ca; background: #f3f5f8; }
.memctx-deltas p.verdict.better { border-color: #0b6b2f; }
.memctx-deltas p.verdict.worse, .memctx-deltas p.verdict.cannot { border-color: #a3121e; }
.memctx-deltas p.verdict.mixed { border-color: #b7791f; }
"""


def verdict_md(verdict: Verdict) -> str:
    """The verdict as a Markdown paragraph."""
    return f"**Verdict: {_md_cell(verdict.text)}**"


def verdict_html(verdict: Verdict) -> str:
    """The verdict as an HTML paragraph (``<p class="verdict TONE">``, :data:`DELTAS_CSS`)."""
    return f'<p class="verdict {verdict.tone}">Verdict: {html.escape(verdict.text)}</p>'


def _key_styles(deltas: Sequence[Delta]) -> list[str]:
    """Inline styles that pin the three key columns: widths in ``ch`` of a monospace font,
    so each column's left offset is the sum of the widths before it."""
    texts = [[_suite(d), d.strategy, d.embedding] for d in deltas]
    widths = [
        max(len(_KEYS[i]), *(len(t[i]) for t in texts)) + 2 if texts else len(_KEYS[i]) + 2
        for i in range(len(_KEYS))
    ]
    styles, left = [], 0
    for width in widths:
        styles.append(f"left:{left}ch;width:{width}ch;min-width:{width}ch;max-width:{width}ch")
        left += width
    return styles


def _html_change_class(change: MetricChange) -> str:
    if change.metric == "violations" and change.verdict:
        return change.verdict
    return change.verdict if change.significant else ""


def format_deltas_html(
    deltas: Sequence[Delta],
    notes: Sequence[str] = (),
    *,
    before: str = "before",
    after: str = "after",
) -> str:
    """An HTML fragment (``<div class="memctx-deltas">``): one table, a column group per
    metric, suite/strategy/embedding pinned while it scrolls; style it with
    :data:`DELTAS_CSS`."""
    esc = html.escape
    metrics = _metrics(deltas)
    styles = _key_styles(deltas)
    keys = "".join(
        f'<th rowspan="2" class="key{" last" if i == 2 else ""}" style="{styles[i]}">{esc(k)}</th>'
        for i, k in enumerate(_KEYS)
    )
    head1 = keys + '<th rowspan="2" class="first">n</th>'
    head1 += "".join(f'<th colspan="3" class="group">{esc(_title(m))}</th>' for m in metrics)
    head2 = "".join(
        f'<th class="first">{esc(before)}</th><th>{esc(after)}</th><th>change</th>' for _ in metrics
    )
    body = []
    for delta in deltas:
        names = [_suite(delta), delta.strategy, delta.embedding]
        cells = "".join(
            f'<td class="key{" last" if i == 2 else ""}" style="{styles[i]}">{esc(name)}</td>'
            for i, name in enumerate(names)
        )
        cells += f'<td class="first">{esc(_n(delta))}</td>'
        for change in delta.changes:
            cells += (
                f'<td class="first">{esc(format_value(change, "before"))}</td>'
                f"<td>{esc(format_value(change, 'after'))}</td>"
                f'<td class="{_html_change_class(change)}">{esc(format_change(change))}</td>'
            )
        body.append(f"<tr>{cells}</tr>")
    table = (
        f'<div class="scroll"><table><thead><tr>{head1}</tr><tr>{head2}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
        if deltas
        else "<p>No rows in common: nothing to compare.</p>"
    )
    items = "".join(f"<li>{esc(n)}</li>" for n in notes)
    return (
        f'<div class="memctx-deltas">{table}<p class="legend">{esc(_LEGEND)}</p>'
        f"{f'<ul>{items}</ul>' if items else ''}</div>"
    )


def deltas_html_page(
    deltas: Sequence[Delta],
    notes: Sequence[str] = (),
    *,
    before: str = "before",
    after: str = "after",
    title: str = "memctx compare",
    subtitle: str = "",
    verdict: Verdict | None = None,
    refusal: Sequence[str] = (),
) -> str:
    """A self-contained HTML page (no external files) around :func:`format_deltas_html`,
    opening with ``verdict``; ``refusal`` (why the runs cannot be compared, one item per
    line) replaces the table."""
    esc = html.escape
    opening = verdict_html(verdict) if verdict is not None else ""
    items = "".join(f"<li>{esc(line)}</li>" for line in refusal)
    body = (
        f'<div class="memctx-deltas"><ul>{items}</ul></div>'
        if refusal
        else format_deltas_html(deltas, notes, before=before, after=after)
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>body {{ margin: 24px; }}{DELTAS_CSS}</style>"
        f'</head><body><div class="memctx-deltas"><h1>{esc(title)}</h1>'
        f"{opening}{f'<p>{esc(subtitle)}</p>' if subtitle else ''}</div>"
        f"{body}</body></html>\n"
    )

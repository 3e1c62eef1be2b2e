"""``report.html``: the report's parts as one self-contained page (charts inlined as PNG
data URIs, no script, no external file).

Wide tables never cut a column off: each sits in a box that scrolls sideways
(``overflow-x: auto``) with its key columns (suite, or strategy and embedding) pinned
(``position: sticky``) at widths computed from their text, so a reader scrolling to
``violations`` still sees which row it is. At 1,400 px the headline table fits without
scrolling; at a narrower window it scrolls.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence

from ..deltas_render import DELTAS_CSS
from .baseline import baseline_html
from .figures import Chart
from .parts import HEADLINE_NOTE, KIND_NOTE, NOTHING_POOLED, SUITE_NOTE, ReportParts
from .replicates import REPLICATE_SUITE_NOTE, ReplicateSection
from .tables import Table

__all__ = ["PAGE_CSS", "html_table", "report_html"]

_SHARE = re.compile(r"^(\d[\d.,]* %) (\(.*)$")  # "72.7 % (57–85) n=44": value, the rest
PAGE_CSS = """body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;
max-width:1360px;padding:0 16px;color:#1d2430;line-height:1.4}
h1{margin-bottom:0.2em}h2{margin-top:1.6em;border-bottom:1px solid #e4e7ec;padding-bottom:0.2em}
.sub{color:#4a5565;margin-top:0}
.tbl{overflow-x:auto;max-width:100%;width:fit-content;margin:0.8em 0;
border:1px solid #d5dae1}
.tbl table{border-collapse:separate;border-spacing:0;font-size:0.8em}
.tbl th,.tbl td{padding:4px 6px;text-align:right;white-space:nowrap;background:#fff;
border-bottom:1px solid #e4e7ec;border-right:1px solid #eef0f3}
.tbl .text{text-align:left}
.tbl .ci{display:block;font-size:0.85em;color:#4a5565}
.tbl thead th{background:#f3f5f8;white-space:normal;vertical-align:bottom;min-width:4em}
.tbl .pin{position:sticky;z-index:1;text-align:left;box-sizing:border-box;
white-space:normal;overflow-wrap:anywhere}
.tbl thead .pin{z-index:3;background:#f3f5f8}
.tbl .pin.last{border-right:2px solid #b9c0ca}
.tbl tbody tr:hover td{background:#f7f9fc}
.pass{color:#0b6b2f;font-weight:bold}.fail{color:#a3121e;font-weight:bold}
.na{color:#6b7280;font-weight:bold}
.reco{border:1px solid #b9d3f0;background:#f3f8fe;border-radius:6px;padding:0.6em 1.1em}
.reco .pick{font-size:1.1em;font-weight:600}.reco ul{margin:0.4em 0}
.caveats{color:#4a5565}
figure{margin:1.5em 0}img{max-width:100%;border:1px solid #eee}
figcaption{color:#4a5565;font-size:0.92em;max-width:1100px}
.note{color:#4a5565;font-size:0.92em;max-width:1100px}"""


def _key_widths(table: Table) -> list[float]:
    """Widths (in ``ch`` of the table's font) of the key columns: their longest word or
    cell, so a pinned column never covers the next one."""
    widths = []
    for i in range(table.keys):
        longest_cell = max((len(row[i]) for row in table.rows), default=0)
        longest_word = max(len(word) for word in table.header[i].split() or [""])
        # A letter of the proportional font is narrower than "0", the ch unit: 0.85 ch.
        widths.append(round(0.85 * min(28, max(longest_cell, longest_word)) + 2, 1))
    return widths


def _content(text: str) -> str:
    """A cell's HTML: a share's interval and n on a second, smaller line (narrow columns)."""
    match = _SHARE.match(text)
    if match is None:
        return html.escape(text)
    value, detail = match.groups()
    return f'{html.escape(value)}<span class="ci">{html.escape(detail)}</span>'


def _is_text(cell: str) -> bool:
    """A cell of words (left-aligned), not a number, a share or n/a."""
    return bool(cell) and cell[0].isalpha() and not cell.startswith("n/a")


def html_table(table: Table) -> str:
    """``table`` in a sideways-scrolling box, its key columns pinned."""
    esc = html.escape
    widths = _key_widths(table)
    lefts = [sum(widths[:i]) for i in range(len(widths))]
    # A column of words (the frontier's status) is left-aligned, its header with it.
    words = [
        bool(table.rows) and all(_is_text(row[i]) or row[i] == "n/a" for row in table.rows)
        for i in range(len(table.header))
    ]

    def cell(tag: str, text: str, i: int) -> str:
        if i >= table.keys:
            align = ' class="text"' if words[i] else ""
            return f"<{tag}{align}>{_content(text) if tag == 'td' else esc(text)}</{tag}>"
        last = " last" if i == table.keys - 1 else ""
        style = (
            f"left:{lefts[i]}ch;width:{widths[i]}ch;min-width:{widths[i]}ch;max-width:{widths[i]}ch"
        )
        return f'<{tag} class="pin{last}" style="{style}">{esc(text)}</{tag}>'

    head = "".join(cell("th", h, i) for i, h in enumerate(table.header))
    body = "".join(
        "<tr>" + "".join(cell("td", c, i) for i, c in enumerate(row)) + "</tr>"
        for row in table.rows
    )
    return (
        f'<div class="tbl"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
    )


def _figure(chart: Chart) -> str:
    data = base64.b64encode(chart.path.read_bytes()).decode("ascii")
    return (
        f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(chart.title)}">'
        f"<figcaption>{html.escape(chart.caption)}</figcaption></figure>"
    )


def _items(lines: Sequence[str]) -> str:
    return "".join(f"<li>{html.escape(line)}</li>" for line in lines)


def _recommendation(parts: ReportParts) -> str:
    reco = parts.recommendation
    caveats = (
        f'<p class="caveats">Caveats:</p><ul class="caveats">{_items(reco.caveats)}</ul>'
        if reco.caveats
        else ""
    )
    return (
        f'<div class="reco"><p class="pick">{html.escape(reco.headline)}</p>'
        f"<ul>{_items(reco.details)}</ul>{caveats}</div>"
    )


def _replicates(section: ReplicateSection) -> str:
    notes = "".join(f'<p class="note">{html.escape(n)}</p>' for n in section.notes)
    return (
        f"<h2>Across replicates</h2>{notes}{html_table(section.pooled)}"
        f"<p>{html.escape(section.largest)}</p>"
        f'<p class="note">{html.escape(REPLICATE_SUITE_NOTE)}</p>{html_table(section.by_suite)}'
    )


def report_html(parts: ReportParts, tail: str = "") -> str:
    """The whole ``report.html``; ``tail`` (HTML) goes at the end of the body."""
    esc = html.escape
    checks = "".join(
        f'<li><span class="{c.verdict.replace("/", "").lower()}">{c.verdict}</span>: '
        f"{esc(c.text)}</li>"
        for c in parts.checks
    )
    charts = "".join(_figure(c) for c in parts.charts) or f"<p>{esc(parts.chart_note)}</p>"
    notes = "".join(f'<p class="note">{esc(n)}</p>' for n in parts.notes)
    frontier_figure = _figure(parts.frontier_chart) if parts.frontier_chart else ""
    headline = (
        html_table(parts.headline) if parts.headline.rows else f"<p>{esc(NOTHING_POOLED)}</p>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>memctx evaluation report</title><style>{PAGE_CSS}{DELTAS_CSS}</style></head>"
        "<body><h1>memctx evaluation report</h1>"
        + (f'<p class="sub">{esc(parts.title)}</p>' if parts.title else "")
        + f"<h2>Recommendation</h2>{_recommendation(parts)}"
        f'<h2>All suites</h2><p class="note">{esc(HEADLINE_NOTE)}</p>'
        f"{headline}{notes}"
        + (baseline_html(parts.baseline) if parts.baseline else "")
        + f'<h2>Recall accuracy by suite</h2><p class="note">{esc(SUITE_NOTE)}</p>'
        f"{html_table(parts.by_suite)}"
        + (
            f'<h2>Recall accuracy by probe kind</h2><p class="note">{esc(KIND_NOTE)}</p>'
            f"{html_table(parts.by_kind)}"
            if parts.by_kind.rows
            else ""
        )
        + (_replicates(parts.replicates) if parts.replicates else "")
        + f"<h2>Checks</h2><ul>{checks}</ul>"
        f"<h2>Cost vs accuracy frontier</h2><p>{esc(parts.frontier_note)}</p>{frontier_figure}"
        f"{html_table(parts.frontier)}<p>{esc(parts.frontier_reading)}</p>"
        f"<h2>Charts</h2>{charts}"
        f"<h2>Provenance</h2><ul>{_items(parts.provenance)}</ul>{html_table(parts.scenarios)}"
        f"{tail}</body></html>\n"
    )

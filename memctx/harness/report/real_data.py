"""The report's "Real data" section, and its chart: LoCoMo evidence recall against budget.

The section (:func:`real_data_md`, :func:`real_data_html`) shows, per real-data suite the run
played, its records (:func:`real_suite_table`: they are in ``summary.json`` like every
suite's, never pooled) and the suite's own table from the run folder (``locomo.md``,
``claude_code.md``, ``trajectories.md``), and the suites skipped for want of data.

The chart (:func:`locomo_chart`, drawn by the report from ``locomo.json``): left, the recall
block ``on_context`` injects: evidence recall against its token cap, one line per embedder,
Mem0's ≈ 1,764 memory tokens per question marked; right, ``memory_search``: evidence recall
against k, one line per embedder, the LoCoMo paper's DRAGON retriever at k = 5/10/25/50
drawn as points (the published figures :mod:`memctx.harness.locomo` holds).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..locomo import DRAGON, MEM0_TOKENS
from ..real_suites import REAL_DATA_FILES
from ..schema import REAL_DATA_SUITES
from .cells import count, latency, num, pct, usd
from .figures import Chart, new_figure, save_figure
from .intervals import share_of
from .page import html_table
from .tables import Table, cost_per_call, md_table

__all__ = [
    "LOCOMO_CHART",
    "REAL_DATA_NOTE",
    "locomo_chart",
    "real_data_html",
    "real_data_md",
    "real_suite_table",
    "real_suites",
]

LOCOMO_CHART = "locomo_recall.png"
_STYLE = {"hash": ("tab:blue", "o"), "transformer": ("tab:orange", "s")}


def locomo_chart(rows: Sequence[Mapping[str, Any]], out_dir: Path) -> Chart | None:
    """Draw ``out_dir/locomo_recall.png`` from LoCoMo suite rows; ``None`` without rows."""
    if not rows:
        return None
    out_dir.mkdir(parents=True, exist_ok=True)
    fig = new_figure(11.0, 4.6)
    block, search = fig.subplots(1, 2, sharey=True)
    # Rows without ``dates`` predate the dates-in-the-text variant: their dates were fields.
    lines = dict.fromkeys((str(r["embedding"]), str(r.get("dates", "timestamp"))) for r in rows)
    for embedding, dates in lines:
        colour, marker = _STYLE.get(embedding, ("tab:gray", "^"))
        style = "-" if dates == "timestamp" else "--"
        label = f"memctx, {embedding}" + ("" if dates == "timestamp" else ", dates in text")
        for ax, kind in ((block, "recall block"), (search, "memory_search")):
            points = sorted(
                (int(r["size"]), 100 * float(r["evidence_recall"]))
                for r in rows
                if r["embedding"] == embedding
                and str(r.get("dates", "timestamp")) == dates
                and r["path"] == kind
            )
            if points:
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, marker=marker, color=colour, linestyle=style, label=label)
    block.axvline(MEM0_TOKENS, color="gray", linestyle="--", linewidth=1)
    block.annotate(
        f"Mem0: ≈ {MEM0_TOKENS:,} tokens / question",
        (MEM0_TOKENS, 45),
        xytext=(6, 0),
        textcoords="offset points",
        fontsize=8,
        color="dimgray",
    )
    search.scatter(
        list(DRAGON),
        [100 * v for v in DRAGON.values()],
        marker="x",
        color="black",
        zorder=3,
        label="DRAGON (LoCoMo paper)",
    )
    block.set(
        title="Recall block (on_context)",
        xlabel="block cap (tokens)",
        ylabel="evidence recall, categories 1-4 (%)",
        ylim=(0, 100),
    )
    search.set(title="memory_search", xlabel="k (results)", ylim=(0, 100))
    for ax in (block, search):
        ax.legend(loc="lower right", fontsize=8)
    path = save_figure(fig, out_dir / LOCOMO_CHART)
    return Chart(
        path,
        "LoCoMo evidence recall against budget",
        "Evidence recall (categories 1-4) of the recall block by its token cap, with Mem0's "
        "tokens per question marked, and of memory_search by k, with the DRAGON retriever's "
        "published figures (all 10 conversations; memctx's on the ones given). Solid: the "
        "dates in the messages' timestamp fields; dashed: only in their text.",
    )


def real_suites(summary: Mapping[str, Any]) -> list[str]:
    """The real-data suites whose records ``summary`` holds, in record order."""
    return list(
        dict.fromkeys(
            str(r["suite"]) for r in summary.get("records", []) if r["suite"] in REAL_DATA_SUITES
        )
    )


def _saved(record: Mapping[str, Any], full: Mapping[str, Any] | None) -> str:
    """Share of full's tokens (over the same calls) that ``record``'s strategy did not send."""
    if full is None:
        return "n/a"
    sent = (num(record.get("tokens_per_call")) or 0.0) * (num(record.get("calls")) or 0.0)
    whole = (num(full.get("tokens_per_call")) or 0.0) * (num(full.get("calls")) or 0.0)
    return pct(1 - sent / whole) if whole else "n/a"


def real_suite_table(summary: Mapping[str, Any], suite: str) -> Table:
    """One real-data suite's records, strategy × embedding: the figures that suite measures
    (``trajectories`` asks no probes: calls, tokens and the share saved against ``full``)."""
    records = [r for r in summary.get("records", []) if r["suite"] == suite]
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    if not any(num(r.get("probes")) for r in records):
        full = next((r for r in records if r["strategy"] == "full"), None)
        header = (
            "strategy", "embedding", "calls", "tokens / call", "saved vs full", "cost / call",
            "compactions", "trims", "hook p50 / p95 (ms)", "violations",
        )  # fmt: skip
        rows = tuple(
            (
                str(r["strategy"]),
                str(r["embedding"]),
                count(r.get("calls")),
                count(r.get("tokens_per_call")),
                _saved(r, full),
                usd(cost_per_call(r), 5),
                count(r.get("compactions")),
                count(r.get("trims")),
                latency(r.get("hook_p50_ms"), r.get("hook_p95_ms")),
                count(r.get("violations")),
            )
            for r in records
        )
        return Table(header, rows, keys=2)
    header = (
        "strategy", "embedding", "recall accuracy (95 % interval)", "probes fitted",
        "tool accuracy", "evidence recall", "tokens / call", "recall tokens", "cost / call",
        "compactions", "trims", "violations",
    )  # fmt: skip
    rows = tuple(
        (
            str(r["strategy"]),
            str(r["embedding"]),
            share_of(r).text(n=False),
            f"{count(r.get('fit'))} / {count(r.get('probes'))}",
            pct(r.get("tool_accuracy")),
            pct(r.get("evidence_recall")),
            count(r.get("tokens_per_call")),
            count(r.get("recall_tokens")),
            usd(cost_per_call(r), 5),
            count(r.get("compactions")),
            count(r.get("trims")),
            count(r.get("violations")),
        )
        for r in records
    )
    return Table(header, rows, keys=2)


REAL_DATA_NOTE = (
    "Each real-data suite stands alone: its records are in summary.json with the others "
    "(gated and compared like them) but never pooled into the all-suites figures, which "
    "cover the synthetic suites only: each measures something else at a window of its own, "
    "on data from outside the repository."
)
_ABOUT = {
    "locomo": "LoCoMo conversations through every strategy at a 16,000-token window, each "
    "question asked at the end (recall accuracy: the answer string in the context).",
    "claude-code": "Hand-written probes at real Claude Code compactions, the history before "
    "the compaction played through every strategy at Claude Code's 200,000-token window.",
    "trajectories": "SWE-agent, OpenHands and Claude Code trajectories at 16,000 and 32,000 "
    "tokens, no probes: what each strategy sends, saves and breaks.",
}


def _extra(run_dir: Path, suite: str) -> str:
    """The suite's own table (its Markdown file in the run folder), without its title."""
    name = REAL_DATA_FILES.get(suite, ("",))[0]  # its Markdown table comes first
    path = run_dir / name
    if not name or not path.is_file():
        return ""
    lines = path.read_text(encoding="utf-8").splitlines()
    title = lines[0].lstrip("# ").strip() if lines else name
    return f"#### {title}\n\n" + "\n".join(lines[1:]).strip()


def _skipped(summary: Mapping[str, Any]) -> list[str]:
    skipped = (summary.get("real_data") or {}).get("skipped") or {}
    return [f"{suite} skipped: {reason}" for suite, reason in skipped.items()]


def real_data_md(run_dir: Path, summary: Mapping[str, Any]) -> str:
    """The report's "Real data" section: per real-data suite its records and its own table,
    the LoCoMo chart, the suites skipped (``""`` when the run asked for none)."""
    suites, skipped = real_suites(summary), _skipped(summary)
    if not suites and not skipped:
        return ""
    parts = ["\n## Real data", REAL_DATA_NOTE, *(f"- {line}" for line in skipped)]
    for suite in suites:
        parts += [f"### {suite}", _ABOUT.get(suite, ""), md_table(real_suite_table(summary, suite))]
        parts.append(_extra(run_dir, suite))
        chart = run_dir / "charts" / LOCOMO_CHART
        if suite == "locomo" and chart.is_file():
            parts.append(f"![LoCoMo evidence recall](charts/{LOCOMO_CHART})")
    return "\n\n".join(p for p in parts if p) + "\n"


def real_data_html(run_dir: Path, summary: Mapping[str, Any]) -> str:
    """The same section for ``report.html``: the records as tables, the suites' own tables
    as preformatted text, the chart inlined."""
    suites, skipped = real_suites(summary), _skipped(summary)
    if not suites and not skipped:
        return ""
    out = [f'<h2>Real data</h2><p class="note">{html.escape(REAL_DATA_NOTE)}</p>']
    if skipped:
        out.append("<ul>" + "".join(f"<li>{html.escape(s)}</li>" for s in skipped) + "</ul>")
    for suite in suites:
        out.append(f"<h3>{html.escape(suite)}</h3><p>{html.escape(_ABOUT.get(suite, ''))}</p>")
        out.append(html_table(real_suite_table(summary, suite)))
        extra = _extra(run_dir, suite)
        if extra:
            out.append(f"<pre>{html.escape(extra)}</pre>")
        chart = run_dir / "charts" / LOCOMO_CHART
        if suite == "locomo" and chart.is_file():
            data = base64.b64encode(chart.read_bytes()).decode("ascii")
            out.append(f'<img src="data:image/png;base64,{data}" alt="LoCoMo evidence recall">')
    return "".join(out)

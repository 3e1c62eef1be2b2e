"""The real-data chart: LoCoMo evidence recall against budget, with the published references.

Left, the recall block ``on_context`` injects: evidence recall against its token cap, one
line per embedder, Mem0's ≈ 1,764 memory tokens per question marked. Right, ``memory_search``:
evidence recall against k, one line per embedder, the LoCoMo paper's DRAGON retriever at
k = 5/10/25/50 drawn as points (the published figures :mod:`memctx.harness.locomo` holds).
Rows are ``locomo.json``'s (dicts).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..locomo import DRAGON, MEM0_TOKENS
from .figures import Chart, new_figure, save_figure

__all__ = ["LOCOMO_CHART", "REAL_DATA_FILES", "locomo_chart", "real_data_html", "real_data_md"]

LOCOMO_CHART = "locomo_recall.png"
# What the real-data suites leave in a run folder (memctx eval --suite locomo / claude-code,
# memctx trajectories --out).
REAL_DATA_FILES = ("locomo.md", "claude_code.md", "trajectories.md")
_STYLE = {"hash": ("tab:blue", "o"), "transformer": ("tab:orange", "s")}


def locomo_chart(rows: Sequence[Mapping[str, Any]], out_dir: Path) -> Chart | None:
    """Draw ``out_dir/locomo_recall.png`` from LoCoMo suite rows; ``None`` without rows."""
    if not rows:
        return None
    out_dir.mkdir(parents=True, exist_ok=True)
    fig = new_figure(11.0, 4.6)
    block, search = fig.subplots(1, 2, sharey=True)
    for embedding in dict.fromkeys(str(r["embedding"]) for r in rows):
        colour, marker = _STYLE.get(embedding, ("tab:gray", "^"))
        for ax, kind in ((block, "recall block"), (search, "memory_search")):
            points = sorted(
                (int(r["size"]), 100 * float(r["evidence_recall"]))
                for r in rows
                if r["embedding"] == embedding and r["path"] == kind
            )
            if points:
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, marker=marker, color=colour, label=f"memctx, {embedding}")
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
        "published figures (all 10 conversations; memctx's on the ones given).",
    )


def _parts(run_dir: Path) -> list[str]:
    """The real-data tables a run folder holds, each without its own title line."""
    parts = []
    for name in REAL_DATA_FILES:
        path = run_dir / name
        if path.is_file():
            lines = path.read_text(encoding="utf-8").splitlines()
            title = lines[0].lstrip("# ").strip() if lines else name
            parts.append(f"### {title}\n\n" + "\n".join(lines[1:]).strip())
    return parts


def real_data_md(run_dir: Path) -> str:
    """The report's "Real data" section from the real-data suites' tables in ``run_dir``
    (``""`` when none ran into it)."""
    parts = _parts(run_dir)
    if not parts:
        return ""
    chart = run_dir / "charts" / LOCOMO_CHART
    figure = f"\n\n![LoCoMo evidence recall](charts/{LOCOMO_CHART})" if chart.is_file() else ""
    return "\n## Real data\n\n" + "\n\n".join(parts) + figure + "\n"


def real_data_html(run_dir: Path) -> str:
    """The same section for ``report.html``: the tables as preformatted text, the chart."""
    parts = _parts(run_dir)
    if not parts:
        return ""
    chart = run_dir / "charts" / LOCOMO_CHART
    image = (
        f'<img src="charts/{LOCOMO_CHART}" alt="LoCoMo evidence recall">' if chart.is_file() else ""
    )
    body = "".join(f"<pre>{html.escape(p)}</pre>" for p in parts)
    return f"<h2>Real data</h2>{body}{image}"

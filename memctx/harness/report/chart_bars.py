"""The report's bar charts: cost per call, recall accuracy by suite (with 95 % intervals and
the probes each bar is over), hash against transformer, and hook latency.

A bar over few probes must look uncertain: every accuracy bar carries its Wilson interval,
a bar over fewer probes than its suite asked (``full`` where its context overflowed) says
its n, and a bar over fewer than :data:`FEW` probes (and fewer than its suite asked) is drawn pale.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..schema import all_records
from .cells import num
from .checks import pair_label, pairs, suites
from .figures import Chart, Pair, new_figure, pooled_by_pair, save_figure, tick
from .intervals import Share, share_of
from .tables import cost_per_call

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "FEW",
    "by_suite_chart",
    "cost_chart",
    "draw_by_suite",
    "hash_vs_transformer_chart",
    "latency_chart",
]

FEW = 10  # a bar over fewer probes than this, and than its suite asked, is drawn pale
Series = tuple[str, Sequence[Share], Any]


def _bar_labels(ax: Axes, bars: Any, texts: Sequence[str]) -> None:
    ax.bar_label(bars, labels=list(texts), padding=2, fontsize=8)


def _grouped(
    ax: Axes, groups: Sequence[str], series: Sequence[tuple[str, Sequence[float | None], Any]]
) -> None:
    """Plain grouped bars with their values on top (when there are few enough)."""
    import numpy as np

    width = 0.8 / max(1, len(series))
    x = np.arange(len(groups))
    for i, (name, values, colour) in enumerate(series):
        heights = [0.0 if v is None else v for v in values]
        at = x + (i - (len(series) - 1) / 2) * width
        bars = ax.bar(at, heights, width, label=name, color=colour)
        if len(groups) * len(series) <= 40:
            _bar_labels(ax, bars, ["n/a" if v is None else f"{v:.2g}" for v in values])
    ax.set_xticks(x, list(groups))


def _share_bars(
    ax: Axes, groups: Sequence[str], asked: Sequence[int], series: Sequence[Series]
) -> None:
    """Grouped accuracy bars with 95 % intervals; n written where it is not the suite's."""
    import numpy as np

    width = 0.8 / max(1, len(series))
    x = np.arange(len(groups))
    small = 7 if len(groups) * len(series) > 30 else 8
    for i, (name, shares, colour) in enumerate(series):
        at = x + (i - (len(series) - 1) / 2) * width
        heights = [100 * (s.value or 0.0) for s in shares]
        below = [100 * ((s.value or 0.0) - (s.low or 0.0)) if s.known else 0.0 for s in shares]
        above = [100 * ((s.high or 0.0) - (s.value or 0.0)) if s.known else 0.0 for s in shares]
        bars = ax.bar(
            at, heights, width, yerr=[below, above], color=colour, label=name, capsize=2,
            error_kw={"elinewidth": 0.9, "ecolor": "#333333", "capthick": 0.9},
        )  # fmt: skip
        for bar, share, total, x_at in zip(bars, shares, asked, at, strict=True):
            if share.value is not None and share.n is not None and share.n < min(FEW, total):
                bar.set_alpha(0.45)
            if share.value is None:
                ax.text(x_at, 1, "no fit", rotation=90, ha="center", va="bottom", fontsize=small)
            elif share.n is not None and share.n < total:
                top = 100 * (share.high if share.high is not None else share.value)
                ax.text(
                    x_at, top + 1.5, f"n={share.n}", rotation=90, ha="center", va="bottom",
                    fontsize=small, color="#333333",
                )  # fmt: skip
    ax.set_xticks(x, [f"{g}\n{n} probes" for g, n in zip(groups, asked, strict=True)])


def _suite_index(
    summary: Mapping[str, Any],
) -> tuple[dict[tuple[str, str, str], Mapping[str, Any]], list[str], list[int]]:
    records = all_records(summary)
    index = {(str(r["suite"]), str(r["strategy"]), str(r["embedding"])): r for r in records}
    names = suites(records)
    asked = [
        max((int(num(r.get("probes")) or 0) for k, r in index.items() if k[0] == s), default=0)
        for s in names
    ]
    return index, names, asked


def cost_chart(summary: Mapping[str, Any], colours: Mapping[Pair, Any], path: Path) -> Chart | None:
    """Cost per model call of each configuration over all suites."""
    records = pooled_by_pair(summary)
    names = list(records)
    if not names:
        return None
    costs = [cost_per_call(records[p]) for p in names]
    fig = new_figure(max(7.5, 1.2 * len(names) + 1.5), 4.8)
    ax = fig.add_subplot()
    bars = ax.bar(
        [tick(p) for p in names], [c or 0.0 for c in costs], color=[colours[p] for p in names]
    )
    _bar_labels(ax, bars, ["n/a" if c is None else f"${c:.4f}" for c in costs])
    ax.set_ylabel("Cost per model call (USD)")
    ax.set_title("Cost per model call (all suites)")
    ax.tick_params(axis="x", labelsize=9)
    ax.margins(y=0.12)
    return Chart(
        save_figure(fig, path),
        "Cost per model call",
        "Input tokens priced at the answering model's rates: the prefix cached by the "
        "previous call as cache reads, the rest as cache writes (where the provider bills "
        "them), plus summary and extraction calls, over the number of model calls.",
    )


def draw_by_suite(summary: Mapping[str, Any], colours: Mapping[Pair, Any]) -> Figure | None:
    """Recall accuracy per suite and configuration, with intervals and small n marked,
    drawn but not saved; None without per-suite records."""
    index, names, asked = _suite_index(summary)
    if not names:
        return None
    series: list[Series] = [
        (pair_label(*pair), [share_of(index.get((s, *pair))) for s in names], colours[pair])
        for pair in pairs(all_records(summary))
    ]
    fig = new_figure(max(9.0, 1.35 * len(names) + 2), 5.4)
    ax = fig.add_subplot()
    _share_bars(ax, names, asked, series)
    ax.set_ylabel("Recall accuracy (%), bars: 95 % interval")
    ax.set_ylim(0, 118)
    ax.set_yticks(range(0, 101, 20))
    ax.set_title("Recall accuracy by suite")
    ax.tick_params(axis="x", labelsize=9)
    from matplotlib.patches import Patch

    ax.legend(
        handles=[Patch(color=colour, label=name) for name, _, colour in series],  # not pale
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        ncols=min(4, len(series)),
        frameon=False,
    )
    return fig


def by_suite_chart(
    summary: Mapping[str, Any], colours: Mapping[Pair, Any], path: Path
) -> Chart | None:
    """Write :func:`draw_by_suite`'s chart to ``path``; None without per-suite records."""
    fig = draw_by_suite(summary, colours)
    if fig is None:
        return None
    return Chart(
        save_figure(fig, path),
        "Recall accuracy by suite",
        "Share of probes whose context holds an expected answer, with 95 % intervals. full "
        "is scored on the probes that fit its window only: its bars say how many (n), and a "
        f"bar over fewer than {FEW} of its suite's probes is pale.",
    )


def hash_vs_transformer_chart(
    summary: Mapping[str, Any], colours: Mapping[Pair, Any], path: Path
) -> Chart | None:
    """memory-context's recall accuracy per suite with each embedder, with intervals."""
    index, names, asked = _suite_index(summary)
    embeddings = [e for s, e in pairs(all_records(summary)) if s == "memory-context"]
    if len(embeddings) < 2:
        return None
    series: list[Series] = [
        (
            embedding,
            [share_of(index.get((s, "memory-context", embedding))) for s in names],
            colours[("memory-context", embedding)],
        )
        for embedding in embeddings
    ]
    fig = new_figure(max(8.0, 1.1 * len(names) + 2), 4.8)
    ax = fig.add_subplot()
    _share_bars(ax, names, asked, series)
    ax.set_ylabel("Recall accuracy (%), bars: 95 % interval")
    ax.set_ylim(0, 112)
    ax.set_yticks(range(0, 101, 20))
    ax.set_title("memory-context: hash vs transformer embedding, by suite")
    ax.tick_params(axis="x", labelsize=9)
    ax.legend(
        title="embedding",
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        ncols=len(series),
        frameon=False,
    )
    return Chart(
        save_figure(fig, path),
        "hash vs transformer (memory-context)",
        "Recall accuracy of memory-context per suite with each embedder, with 95 % "
        "intervals: where the bars overlap, the suite cannot tell the embedders apart.",
    )


def latency_chart(
    summary: Mapping[str, Any], colours: Mapping[Pair, Any], path: Path
) -> Chart | None:
    """Hook latency p50 / p95 per configuration (all suites)."""
    records = pooled_by_pair(summary)
    names = list(records)
    if not names:
        return None
    series = [
        ("p50", [num(records[p].get("hook_p50_ms")) for p in names], "tab:blue"),
        ("p95", [num(records[p].get("hook_p95_ms")) for p in names], "tab:orange"),
    ]
    fig = new_figure(max(7.5, 1.2 * len(names) + 1.5), 4.8)
    ax = fig.add_subplot()
    _grouped(ax, [tick(p) for p in names], series)
    values = [v for _, vs, _ in series for v in vs if v]
    if values and max(values) > 100 * min(values):
        ax.set_yscale("log")  # a 0.1 ms trim next to a 100 ms embedder
    ax.set_ylabel("Hook latency per call (ms)")
    ax.set_title("Hook latency p50 / p95 (all suites)")
    ax.tick_params(axis="x", labelsize=9)
    ax.margins(y=0.12)
    ax.legend(frameon=False)
    return Chart(
        save_figure(fig, path),
        "Hook latency",
        "Time the strategy adds before each model call (machine-dependent).",
    )

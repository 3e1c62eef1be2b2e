"""PNG charts of one evaluation run (matplotlib, Agg, byte-stable output).

matplotlib is imported inside the functions, never at module import, so that ``import
memctx`` and ``memctx eval --no-report`` stay fast. Figures are built with the object API
(no pyplot, no global backend switch) and saved without the "Software" metadata, so the same
data gives the same bytes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..schema import NO_EMBEDDING, all_records
from .checks import ALL, pair_label, pairs, suites
from .frontier import FRONTIER_CHART, frontier, place_labels, point_ends, step_corners

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "LONG_SUITE",
    "Chart",
    "new_figure",
    "pick_session",
    "save_figure",
    "session_calls",
    "write_charts",
]

DPI = 110
_LABEL_PT = 8  # the frontier chart's point labels
LONG_SUITE = "long-haul"
_NAMES = (
    "recall_vs_tokens.png",
    "cost.png",
    FRONTIER_CHART,
    "accuracy_by_suite.png",
    "hash_vs_transformer.png",
    "hook_latency.png",
    "tokens_over_calls.png",
)
_EVENT_STYLE = {  # event -> (marker, colour, legend text)
    "compaction": ("v", "black", "compaction"),
    "trim": ("x", "dimgray", "trims start (each call after trims too)"),
    "overflow": ("o", "red", "overflow starts (over the window)"),
}
Pair = tuple[str, str]
SessionKey = tuple[str, str, str]


@dataclass(frozen=True)
class Chart:
    """A written chart: its file, title and a one-line explanation for the report."""

    path: Path
    title: str
    caption: str


def _colours(run_pairs: Sequence[Pair]) -> dict[Pair, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {pair: cmap(i % 10) for i, pair in enumerate(run_pairs)}


def new_figure(width: float, height: float) -> Figure:
    """A figure of the report's size and layout (no pyplot state)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def save_figure(fig: Figure, path: Path) -> Path:
    """Write ``fig`` as a byte-stable PNG (no "Software" metadata) and return ``path``."""
    fig.savefig(path, format="png", dpi=DPI, metadata={"Software": None})
    return path


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _all_records(summary: Mapping[str, Any]) -> dict[Pair, Mapping[str, Any]]:
    return {
        (str(r["strategy"]), str(r["embedding"])): r
        for r in all_records(summary)
        if r["suite"] == ALL
    }


def _tick(pair: Pair) -> str:
    return pair_label(*pair).replace(" × ", "\n× ")


def _bar_labels(ax: Axes, bars: Any, texts: Sequence[str]) -> None:
    ax.bar_label(bars, labels=list(texts), padding=2, fontsize=8)


def _recall_vs_tokens(
    summary: Mapping[str, Any], colours: Mapping[Pair, Any], path: Path
) -> Chart | None:
    points = {
        pair: record
        for pair, record in _all_records(summary).items()
        if _num(record.get("recall_accuracy")) is not None
        and _num(record.get("tokens_per_call")) is not None
    }
    if not points:
        return None
    fig = new_figure(9.5, 5)
    ax = fig.add_subplot()
    ax.grid(True, axis="both")
    markers = {NO_EMBEDDING: "o", "hash": "s", "transformer": "^"}
    xmax = 1.0
    for pair, record in points.items():
        acc, tokens = _num(record.get("recall_accuracy")), _num(record.get("tokens_per_call"))
        if acc is None or tokens is None:
            continue
        x, y = tokens / 1000, 100 * acc
        xmax = max(xmax, x)
        ci = record.get("recall_accuracy_ci")
        low, high = ci if isinstance(ci, list) and len(ci) == 2 else (acc, acc)
        fit = " (fitted probes)" if pair[0] == "full" else ""
        ax.errorbar(
            x,
            y,
            yerr=[[max(0.0, y - 100 * low)], [max(0.0, 100 * high - y)]],
            fmt=markers.get(pair[1], "D"),
            ms=9,
            capsize=4,
            elinewidth=1.2,
            color=colours[pair],
            label=f"{pair_label(*pair)}{fit}: {y:.1f} % at {x:,.1f}k",
        )
    ax.set_xlabel("Mean input tokens per model call (thousands)")
    ax.set_ylabel("Recall accuracy (%), bars: 95 % CI")
    ax.set_ylim(0, 105)
    ax.set_xlim(0, xmax * 1.1)
    ax.set_title("Recall accuracy vs tokens per call (all suites)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return Chart(
        save_figure(fig, path),
        "Recall accuracy vs tokens per call",
        "Up and to the left is better: more answers in context for fewer tokens.",
    )


def _cost(summary: Mapping[str, Any], colours: Mapping[Pair, Any], path: Path) -> Chart | None:
    records = _all_records(summary)
    names = list(records)
    if not names:
        return None
    costs = [_num(records[p].get("cost_usd")) or 0.0 for p in names]
    fig = new_figure(max(7.5, 1.2 * len(names) + 1.5), 4.8)
    ax = fig.add_subplot()
    bars = ax.bar([_tick(p) for p in names], costs, color=[colours[p] for p in names])
    _bar_labels(ax, bars, [f"${c:,.2f}" if c >= 10 else f"${c:.4g}" for c in costs])
    ax.set_ylabel("Cost (USD): answering model + LLM work")
    ax.set_title("Cost per strategy (all suites)")
    ax.tick_params(axis="x", labelsize=9)
    ax.margins(y=0.12)
    return Chart(
        save_figure(fig, path),
        "Cost per strategy",
        "Input tokens priced at the answering model's rates: the prefix cached by the "
        "previous call as cache reads, the rest as cache writes (where the provider bills "
        "them), plus summary and extraction calls.",
    )


def _frontier(summary: Mapping[str, Any], colours: Mapping[Pair, Any], path: Path) -> Chart | None:
    from matplotlib.lines import Line2D

    points = frontier(all_records(summary))
    drawn = [p for p in points if p.excluded is None]
    if not drawn:
        return None
    fig = new_figure(9.5, 5.2)
    ax = fig.add_subplot()
    ax.grid(True, axis="both")
    markers = {NO_EMBEDDING: "o", "hash": "s", "transformer": "^"}
    for p in drawn:
        assert p.cost_per_call is not None and p.recall_accuracy is not None
        x, y = p.cost_per_call, 100 * p.recall_accuracy
        low, high = p.recall_accuracy_ci or (p.recall_accuracy, p.recall_accuracy)
        colour = colours.get((p.strategy, p.embedding), "tab:gray")
        ax.errorbar(
            x,
            y,
            yerr=[[max(0.0, y - 100 * low)], [max(0.0, 100 * high - y)]],
            fmt=markers.get(p.embedding, "D"),
            ms=9,
            mew=1.8,
            capsize=4,
            elinewidth=1.2,
            color=colour,
            mfc=colour if p.on_frontier else "white",
            zorder=3,
        )
    corners = step_corners([point_ends(p)["point"] for p in drawn if p.on_frontier])
    ax.plot(
        [x for x, _ in corners],
        [y for _, y in corners],
        color="black",
        lw=1.2,
        alpha=0.6,
        zorder=2,
    )
    ax.set_xlim(0, max(p.cost_per_call or 0.0 for p in drawn) * 1.25)
    ax.set_ylim(0, 105)
    ax.set_xlabel("Cost per model call (USD): answering model + LLM work")
    ax.set_ylabel("Recall accuracy (%), bars: 95 % CI")
    ax.set_title("Cost vs recall accuracy: the frontier")
    key = ax.legend(
        handles=[
            Line2D([], [], marker="o", ls="", color="gray", ms=8, label="on the frontier"),
            Line2D([], [], marker="o", ls="", color="gray", mfc="white", ms=8, label="dominated"),
            Line2D([], [], color="black", alpha=0.6, label="frontier (step)"),
        ],
        loc="lower right",
        fontsize=8,
    )
    fig.draw_without_rendering()  # lay the figure out: display coordinates are final

    def display(xy: tuple[float, float]) -> tuple[float, float]:
        x, y = ax.transData.transform(xy)
        return float(x), float(y)

    frame, legend = ax.get_window_extent(), key.get_window_extent()
    spots = place_labels(
        drawn,
        display,
        (frame.x0, frame.y0, frame.x1, frame.y1),
        (legend.x0, legend.y0, legend.x1, legend.y1),
        fig.dpi / 72,
        _LABEL_PT,
    )
    for p in drawn:
        anchor, dx, dy, ha, va = spots[(p.strategy, p.embedding)]
        ax.annotate(
            p.label,
            point_ends(p)[anchor],
            xytext=(dx, dy),
            textcoords="offset points",
            ha=ha,
            va=va,
            fontsize=_LABEL_PT,
            color=colours.get((p.strategy, p.embedding), "tab:gray"),
        )
    left_out = [f"{p.label} ({p.excluded})" for p in points if p.excluded is not None]
    return Chart(
        save_figure(fig, path),
        "Cost vs recall accuracy: the frontier",
        "Up and to the left is better. Filled: on the frontier (not dominated), joined by "
        "the step line; hollow: dominated. Dominance compares the point estimates, not the "
        "intervals." + (f" Not drawn, not comparable: {'; '.join(left_out)}." if left_out else ""),
    )


def _grouped(
    ax: Axes,
    groups: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None], Any]],
    fmt: str,
) -> None:
    import numpy as np

    width = 0.8 / max(1, len(series))
    x = np.arange(len(groups))
    for i, (name, values, colour) in enumerate(series):
        heights = [0.0 if v is None else v for v in values]
        bars = ax.bar(
            x + (i - (len(series) - 1) / 2) * width, heights, width, label=name, color=colour
        )
        if len(groups) * len(series) <= 40:
            _bar_labels(ax, bars, ["n/a" if v is None else fmt.format(v) for v in values])
    ax.set_xticks(x, list(groups))


def _by_suite(summary: Mapping[str, Any], colours: Mapping[Pair, Any], path: Path) -> Chart | None:
    records = all_records(summary)
    index = {(r["suite"], r["strategy"], r["embedding"]): r for r in records}
    names = suites(records)
    if not names:
        return None
    series = []
    for pair in pairs(records):
        values = [_num((index.get((s, *pair)) or {}).get("recall_accuracy")) for s in names]
        series.append(
            (pair_label(*pair), [None if v is None else 100 * v for v in values], colours[pair])
        )
    fig = new_figure(max(8.0, 1.3 * len(names) + 2), 5)
    ax = fig.add_subplot()
    _grouped(ax, names, series, "{:.0f}")
    ax.set_ylabel("Recall accuracy (%)")
    ax.set_ylim(0, 112)
    ax.set_title("Recall accuracy by suite")
    ax.tick_params(axis="x", labelrotation=20, labelsize=9)
    ax.legend(
        loc="upper center", bbox_to_anchor=(0.5, -0.18), ncols=min(4, len(series)), frameon=False
    )
    return Chart(
        save_figure(fig, path),
        "Recall accuracy by suite",
        "Share of probes whose context holds an expected answer (full: fitted probes).",
    )


def _hash_vs_transformer(
    summary: Mapping[str, Any], colours: Mapping[Pair, Any], path: Path
) -> Chart | None:
    records = all_records(summary)
    embeddings = [e for s, e in pairs(records) if s == "memory-context"]
    if len(embeddings) < 2:
        return None
    index = {(r["suite"], r["strategy"], r["embedding"]): r for r in records}
    names = suites(records)
    series = []
    for embedding in embeddings:
        values = [
            _num((index.get((s, "memory-context", embedding)) or {}).get("recall_accuracy"))
            for s in names
        ]
        series.append(
            (
                embedding,
                [None if v is None else 100 * v for v in values],
                colours[("memory-context", embedding)],
            )
        )
    fig = new_figure(max(8.0, 1.1 * len(names) + 2), 4.8)
    ax = fig.add_subplot()
    _grouped(ax, names, series, "{:.0f}")
    ax.set_ylabel("Recall accuracy (%)")
    ax.set_ylim(0, 112)
    ax.set_title("memory-context: hash vs transformer embedding, by suite")
    ax.tick_params(axis="x", labelrotation=20, labelsize=9)
    ax.legend(
        title="embedding",
        loc="upper center",
        bbox_to_anchor=(0.5, -0.18),
        ncols=len(series),
        frameon=False,
    )
    return Chart(
        save_figure(fig, path),
        "hash vs transformer (memory-context)",
        "Recall accuracy of memory-context per suite with each embedder.",
    )


def _latency(summary: Mapping[str, Any], colours: Mapping[Pair, Any], path: Path) -> Chart | None:
    records = _all_records(summary)
    names = list(records)
    if not names:
        return None
    groups = [_tick(p) for p in names]
    series = [
        ("p50", [_num(records[p].get("hook_p50_ms")) for p in names], "tab:blue"),
        ("p95", [_num(records[p].get("hook_p95_ms")) for p in names], "tab:orange"),
    ]
    fig = new_figure(max(7.5, 1.2 * len(names) + 1.5), 4.8)
    ax = fig.add_subplot()
    _grouped(ax, groups, series, "{:.1f}")
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


def pick_session(calls: Iterable[Mapping[str, Any]]) -> SessionKey | None:
    """The (suite, scenario, session) to plot: the longest of ``long-haul``, else overall."""
    counts: Counter[SessionKey] = Counter()
    for row in calls:
        counts[(str(row["suite"]), str(row["scenario"]), str(row["session"]))] += 1
    if not counts:
        return None
    pool = [k for k in counts if k[0] == LONG_SUITE] or list(counts)
    return min(pool, key=lambda k: (-counts[k], k))


def session_calls(calls: Iterable[Mapping[str, Any]], key: SessionKey) -> list[dict[str, Any]]:
    """The call rows of one session (all strategies), in file order."""
    return [
        dict(row)
        for row in calls
        if (str(row["suite"]), str(row["scenario"]), str(row["session"])) == key
    ]


def _series(rows: Sequence[Mapping[str, Any]]) -> dict[Pair, list[Mapping[str, Any]]]:
    out: dict[Pair, list[Mapping[str, Any]]] = {}
    done: set[Pair] = set()
    for row in rows:
        pair = (str(row["strategy"]), str(row["embedding"]))
        line = out.setdefault(pair, [])
        if pair in done or (line and int(row["call"]) <= int(line[-1]["call"])):
            done.add(pair)  # a second window of the same scenario: plot the first only
            continue
        line.append(row)
    return out


def _tokens_over_calls(
    rows: Sequence[Mapping[str, Any]], colours: Mapping[Pair, Any], path: Path
) -> Chart | None:
    lines = _series(rows)
    if not lines:
        return None
    first = rows[0]
    fig = new_figure(10, 5.2)
    ax = fig.add_subplot()
    reference = max(lines.values(), key=len)
    ax.plot(
        [r["call"] for r in reference],
        [r["history_tokens"] / 1000 for r in reference],
        ls="--",
        color="gray",
        lw=1.2,
        label="whole transcript",
        zorder=4,  # over full, which follows it until the window
    )
    styles: Counter[str] = Counter()
    for pair, line in lines.items():
        ax.plot(
            [r["call"] for r in line],
            [r["sent_tokens"] / 1000 for r in line],
            color=colours.get(pair, "tab:gray"),
            ls=("-", "--", ":", "-.")[styles[pair[0]] % 4],
            lw=1.6,
            label=pair_label(*pair),
        )
        styles[pair[0]] += 1
    seen: set[str] = set()
    for line in lines.values():
        for event, (marker, colour, text) in _EVENT_STYLE.items():
            hits = [
                r
                for i, r in enumerate(line)
                if event in (r.get("events") or [])
                # Overflows and trims last (truncate trims every call once over): mark where
                # a run starts, or the markers hide the line.
                and (
                    event == "compaction"
                    or i == 0
                    or event not in (line[i - 1].get("events") or [])
                )
            ]
            if not hits:
                continue
            ax.scatter(
                [r["call"] for r in hits],
                [r["sent_tokens"] / 1000 for r in hits],
                marker=marker,
                color=colour,
                s=36,
                zorder=3,
                label=None if event in seen else text,
            )
            seen.add(event)
    ax.grid(True, axis="both")
    ax.set_xlabel("Model call")
    ax.set_ylabel("Input tokens sent (thousands)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"Tokens per call over one session: {first['scenario']} ({first['suite']})")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return Chart(
        save_figure(fig, path),
        "Tokens over calls",
        f"Session {first['session']}: input tokens of each model call per strategy, "
        "with compaction, trim and overflow events marked.",
    )


def write_charts(
    summary: Mapping[str, Any],
    session: Sequence[Mapping[str, Any]],
    out_dir: Path,
) -> list[Chart]:
    """Write every chart the run's data allows into ``out_dir``.

    Args:
        summary: The run's ``summary.json``.
        session: Call rows of the session to plot over time (see :func:`pick_session`).
        out_dir: Folder for the PNGs (created).

    Returns:
        The charts written, in report order (charts without data are left out).
    """
    from matplotlib import rc_context

    out_dir.mkdir(parents=True, exist_ok=True)
    colours = _colours(pairs(all_records(summary)))
    # Fixed fonts, sizes and hash salt: the same data gives the same bytes.
    with rc_context(
        {
            "svg.hashsalt": "memctx",
            "font.family": "DejaVu Sans",
            "font.size": 10,
            "axes.titlesize": 12,
            "axes.titleweight": "bold",
            "axes.grid": True,
            "axes.grid.axis": "y",
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    ):
        charts = [
            _recall_vs_tokens(summary, colours, out_dir / "recall_vs_tokens.png"),
            _cost(summary, colours, out_dir / "cost.png"),
            _frontier(summary, colours, out_dir / FRONTIER_CHART),
            _by_suite(summary, colours, out_dir / "accuracy_by_suite.png"),
            _hash_vs_transformer(summary, colours, out_dir / "hash_vs_transformer.png"),
            _latency(summary, colours, out_dir / "hook_latency.png"),
            _tokens_over_calls(session, colours, out_dir / "tokens_over_calls.png"),
        ]
    written = [c for c in charts if c is not None]
    for stale in set(_NAMES) - {c.path.name for c in written}:
        (out_dir / stale).unlink(missing_ok=True)  # left by an earlier render
    return written

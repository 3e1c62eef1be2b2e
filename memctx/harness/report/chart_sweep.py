"""The curve of a sweep (``memctx eval --sweep KEY=...``): pooled recall accuracy with its
interval, and cost per call, against the swept value, one line per strategy × embedding."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .figures import Chart, colours_for, marker_for, new_figure, save_figure

__all__ = ["sweep_chart"]


def _axis_values(values: Sequence[Any]) -> tuple[list[float], list[str], bool]:
    """Positions on the x axis: the numbers themselves when every value is a number (a
    log axis when they span 10x or more), else evenly spaced categories."""
    labels = [v if isinstance(v, str) else json.dumps(v) for v in values]
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    if numeric:
        xs = [float(v) for v in values]
        positive = all(x > 0 for x in xs)
        return xs, labels, positive and max(xs) >= 10 * min(xs)
    return [float(i) for i in range(len(values))], labels, False


def sweep_chart(points: Sequence[Any], key: str, out_dir: Path, name: str = "sweep.png") -> Chart:
    """Draw ``out_dir/name`` from :class:`memctx.harness.SweepPoint` values."""
    values = list(dict.fromkeys(json.dumps(p.value) for p in points))
    decoded = [json.loads(v) for v in values]
    xs, labels, log = _axis_values(decoded)
    at = dict(zip(values, xs, strict=True))
    pairs = list(dict.fromkeys((p.strategy, p.embedding) for p in points))
    colours = colours_for(pairs)
    fig = new_figure(11.0, 4.6)
    accuracy, cost = fig.subplots(1, 2)
    for pair in pairs:
        mine = [p for p in points if (p.strategy, p.embedding) == pair]
        mine.sort(key=lambda p: at[json.dumps(p.value)])
        x = [at[json.dumps(p.value)] for p in mine]
        label = pair[0] if pair[1] == "none" else f"{pair[0]} × {pair[1]}"
        style = {"color": colours[pair], "marker": marker_for(pair[1]), "label": label}
        acc, low, high = [], [], []
        for p in mine:
            value = float("nan") if p.recall_accuracy is None else 100 * p.recall_accuracy
            ci = p.recall_accuracy_ci
            acc.append(value)
            low.append(value - 100 * ci[0] if len(ci) == 2 else 0.0)
            high.append(100 * ci[1] - value if len(ci) == 2 else 0.0)
        accuracy.errorbar(x, acc, yerr=[low, high], capsize=3, **style)
        cost.plot(x, [p.cost_per_call or float("nan") for p in mine], **style)
    titles = ((accuracy, "recall accuracy, % (95 % interval)"), (cost, "cost per call, USD"))
    for ax, title in titles:
        ax.set_title(title)
        ax.set_xlabel(key)
        ax.grid(alpha=0.3)
        if log:
            ax.set_xscale("log")
        ax.set_xticks(xs, labels)
    accuracy.set_ylim(0, 100)
    cost.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=8, frameon=False)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = save_figure(fig, out_dir / name)
    caption = (
        f"Pooled over every suite, at each value of {key}: recall accuracy with its 95 % "
        "interval (left) and cost per call (right), one line per strategy × embedding."
    )
    return Chart(path, f"Sweep of {key}", caption)

"""The chart of one session over time: input tokens per model call for every strategy, with
the compactions, trims and overflows marked (``charts/tokens_over_calls.png``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .checks import pair_label
from .figures import Chart, Pair, new_figure, save_figure

__all__ = ["LONG_SUITE", "SessionKey", "pick_session", "session_calls", "tokens_over_calls_chart"]

LONG_SUITE = "long-haul"
SessionKey = tuple[str, str, str]
_EVENT_STYLE = {  # event -> (marker, colour, legend text)
    "compaction": ("v", "black", "compaction"),
    "trim": ("x", "dimgray", "trims start (each call after trims too)"),
    "overflow": ("o", "red", "overflow starts (over the window)"),
}


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


def tokens_over_calls_chart(
    rows: Sequence[Mapping[str, Any]], colours: Mapping[Pair, Any], path: Path
) -> Chart | None:
    """Write the tokens of each call of one session (``rows``) to ``path``; None without rows."""
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

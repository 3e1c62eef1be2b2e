"""Leave one conversation out: LoCoMo recall when the search weights are not chosen on it.

memctx's neighbour and episode weights were picked on the same 7 LoCoMo conversations the
README reports. To see how much that flatters the figures, each conversation in turn is held
out: the weights are chosen from a grid on the other six (best mean recall at the budget)
and the held-out conversation is scored with them. The average of the held-out scores, one
per conversation, is the estimate for conversations nobody tuned on; it is printed next to
the same per-conversation average with the fixed default weights.

``python -m memctx.bench.locomo.loo`` (a few minutes: 25 weight pairs x 2 embedders).
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from memctx.harness.locomo import load_locomo

from .methods import DEFAULT_METHOD, Method, evaluate_methods

__all__ = ["GRID", "LooResult", "leave_one_out", "main"]

GRID = (0.0, 0.25, 0.5, 0.75, 1.0)  # neighbour and episode weights, each


@dataclass(frozen=True)
class LooResult:
    """Held-out recall per conversation, the weights chosen without it, and their average."""

    held_out: dict[str, float]
    chosen: dict[str, tuple[float, float]]
    mean: float
    fixed_mean: float  # the same average with the default weights


def leave_one_out(
    scores: Mapping[tuple[float, float], Mapping[str, float]], fixed: tuple[float, float]
) -> LooResult:
    """Choose weights on all conversations but one, score that one; for each conversation.

    Args:
        scores: Per weight pair, recall at the budget per conversation.
        fixed: The default weight pair (for the comparison figure).
    """
    grid = sorted(scores)  # ties go to the smaller weights: a deterministic choice
    conversations = list(scores[grid[0]])
    held: dict[str, float] = {}
    chosen: dict[str, tuple[float, float]] = {}
    for out in conversations:
        best = max(
            grid,
            key=lambda w: statistics.fmean(v for c, v in scores[w].items() if c != out),
        )
        chosen[out], held[out] = best, scores[best][out]
    return LooResult(
        held_out=held,
        chosen=chosen,
        mean=statistics.fmean(held.values()),
        fixed_mean=statistics.fmean(scores[fixed].values()),
    )


def _methods(base: Method) -> list[Method]:
    return [
        replace(
            base,
            name=f"neighbour {a}, episode {b}",
            params=replace(base.params, neighbour_weight=a, episode_weight=b),
        )
        for a, b in itertools.product(GRID, GRID)
    ]


def run_loo(
    path: Path,
    *,
    embedders: Sequence[str] = ("hash", "transformer"),
    base: Method = DEFAULT_METHOD,
    cache_dir: Path | None = None,
) -> dict[str, LooResult]:
    """Evaluate the weight grid for each embedder and print the leave-one-out figures."""
    conversations = load_locomo(path)
    fixed = (base.params.neighbour_weight, base.params.episode_weight)
    results: dict[str, LooResult] = {}
    for kind in embedders:
        methods = _methods(base)
        reports = evaluate_methods(conversations, kind, methods, cache_dir=cache_dir, product=False)
        scores = {
            (m.params.neighbour_weight, m.params.episode_weight): r.per_conversation
            for m, r in zip(methods, reports, strict=True)
        }
        result = results[kind] = leave_one_out(scores, fixed)
        picks = ", ".join(f"{c} {w[0]}/{w[1]}" for c, w in result.chosen.items())
        print(
            f"{kind}: leave-one-out {result.mean:.1%} (per-conversation average; fixed "
            f"{fixed[0]}/{fixed[1]}: {result.fixed_mean:.1%}); chosen neighbour/episode: {picks}"
        )
    return results


def main() -> None:
    from ..foundations import datasets_dir

    run_loo(datasets_dir() / "locomo" / "locomo7.json", cache_dir=Path(".cache") / "memctx")


if __name__ == "__main__":
    main()

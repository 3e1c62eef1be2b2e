"""Leave one conversation out: LoCoMo recall when the search weights are not chosen on it.

memctx's neighbour and episode weights were picked on the same 7 LoCoMo conversations the
README reports. To see how much that flatters the figures, each conversation in turn is held
out: the weights are chosen from a grid on the other six (best mean recall at the budget)
and the held-out conversation is scored with them. The average of the held-out scores, one
per conversation, is the estimate for conversations nobody tuned on; it is printed next to
the same per-conversation average with the fixed default weights.

``python -m memctx.bench.locomo.loo`` (a few minutes: 25 weight pairs x 2 embedders).

``python -m memctx.bench.locomo.loo --speaker`` does the same for the speaker prior
(``speakerPrior``, :data:`SPEAKER_GRID`) through the product path: what ``on_context``
injects at 2,000 tokens (:func:`~memctx.harness.locomo.evaluate_product`), with dates in
``timestamp`` and only in the text, for each embedder (about 15 minutes).
"""

from __future__ import annotations

import itertools
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from memctx.config import MemoryContextConfig
from memctx.harness.locomo import DATES, Dates, evaluate_product, load_locomo
from memctx.retrieval import make_embedder

from .methods import DEFAULT_METHOD, Method, evaluate_methods

__all__ = ["GRID", "SPEAKER_GRID", "LooResult", "leave_one_out", "main"]

GRID = (0.0, 0.25, 0.5, 0.75, 1.0)  # neighbour and episode weights, each
SPEAKER_GRID = (0.0, 0.15, 0.3, 0.45, 0.6)  # speakerPrior


@dataclass(frozen=True)
class LooResult:
    """Held-out recall per conversation, the weights chosen without it, and their average."""

    held_out: dict[str, float]
    chosen: dict[str, tuple[float, ...]]
    mean: float
    fixed_mean: float  # the same average with the default weights


def leave_one_out(
    scores: Mapping[tuple[float, ...], Mapping[str, float]], fixed: tuple[float, ...]
) -> LooResult:
    """Choose weights on all conversations but one, score that one; for each conversation.

    Args:
        scores: Per weight tuple (a pair, or one weight), recall at the budget per
            conversation.
        fixed: The default weights (for the comparison figure).
    """
    grid = sorted(scores)  # ties go to the smaller weights: a deterministic choice
    conversations = list(scores[grid[0]])
    held: dict[str, float] = {}
    chosen: dict[str, tuple[float, ...]] = {}
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
        scores: dict[tuple[float, ...], Mapping[str, float]] = {
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


def run_speaker_loo(
    path: Path,
    *,
    embedders: Sequence[str] = ("hash", "transformer"),
    cache_dir: Path | None = None,
) -> dict[tuple[str, Dates], LooResult]:
    """Leave one conversation out for ``speakerPrior`` through ``on_context``; print it."""
    conversations = load_locomo(path)
    fixed = (MemoryContextConfig().speaker_prior,)
    results: dict[tuple[str, Dates], LooResult] = {}
    for kind in embedders:
        cache = cache_dir / f"embeddings-{kind}.bin" if cache_dir else None
        embedder = make_embedder(kind, cache_path=cache)  # type: ignore[arg-type]
        for dates in DATES:
            scores: dict[tuple[float, ...], Mapping[str, float]] = {
                (prior,): evaluate_product(
                    conversations,
                    embedder,
                    name=f"speaker prior {prior}",
                    overrides={"speakerPrior": prior},
                    dates=dates,
                ).per_conversation
                for prior in SPEAKER_GRID
            }
            result = results[kind, dates] = leave_one_out(scores, fixed)
            picks = ", ".join(f"{c} {w[0]}" for c, w in result.chosen.items())
            print(
                f"{kind}, dates in {dates}: leave-one-out {result.mean:.1%} (per-conversation "
                f"average; fixed {fixed[0]}: {result.fixed_mean:.1%}); chosen prior: {picks}"
            )
    return results


def main(argv: Sequence[str] | None = None) -> None:
    from ..foundations import datasets_dir

    args = sys.argv[1:] if argv is None else list(argv)
    path = datasets_dir() / "locomo" / "locomo7.json"
    cache_dir = Path(".cache") / "memctx"
    if args == ["--speaker"]:
        run_speaker_loo(path, cache_dir=cache_dir)
    elif not args:
        run_loo(path, cache_dir=cache_dir)
    else:
        raise SystemExit("usage: python -m memctx.bench.locomo.loo [--speaker]")


if __name__ == "__main__":
    main()

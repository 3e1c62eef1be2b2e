"""The report's "Across replicates" section: how much a configuration's recall accuracy
moves when the synthetic suites are generated with other seeds (``memctx eval
--replicates N``, :mod:`memctx.harness.replicates`).

Read from ``summary["replicates"]``: per strategy × embedding, the pooled recall accuracy of
each replicate, their mean, min-max and a 95 % Student's t interval over the replicates'
figures (:func:`memctx.harness.metrics.t_interval`: each replicate is one measurement, so
the interval is over N values, not over probes); per suite the mean and min-max; and the
largest ratio between two replicates of one figure. Every other table of the report is
replicate 0 alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..metrics import t_interval
from .cells import num, pct
from .checks import pair_label, pairs, suites
from .tables import Table

__all__ = ["REPLICATE_SUITE_NOTE", "ReplicateSection", "replicate_section", "replicate_spread"]

REPLICATE_SUITE_NOTE = (
    "Per suite: the mean recall accuracy over the replicates and, in brackets, the lowest and "
    "the highest replicate."
)


@dataclass(frozen=True)
class Spread:
    """One figure's recall accuracy across replicates.

    Attributes:
        values: Per replicate (in order), None where nothing was scored.
        mean: The mean of the known values.
        low: The lowest known value.
        high: The highest.
        interval: The 95 % t interval of the mean (``[]`` below two known values).
    """

    values: tuple[float | None, ...]
    mean: float
    low: float
    high: float
    interval: list[float]

    @property
    def ratio(self) -> float | None:
        """``high / low``; None when ``low`` is 0 (no ratio: it went from nothing)."""
        return self.high / self.low if self.low > 0 else None


def replicate_spread(values: Sequence[float | None]) -> Spread | None:
    """The spread of one figure's per-replicate values; None when none is known."""
    known = [v for v in values if v is not None]
    if not known:
        return None
    mean = sum(known) / len(known)
    return Spread(tuple(values), mean, min(known), max(known), t_interval(known))


@dataclass(frozen=True)
class ReplicateSection:
    """The section's content.

    Attributes:
        notes: What varies between replicates, what does not, which interval, what was
            played once.
        pooled: Per strategy × embedding: each replicate, mean, min-max, t interval.
        by_suite: Per suite × (strategy, embedding): mean and min-max.
        largest: The largest ratio between two replicates, in a sentence ("" when none).
    """

    notes: tuple[str, ...]
    pooled: Table
    by_suite: Table
    largest: str


def _values(
    records: Sequence[Mapping[str, Any]], count: int
) -> dict[tuple[str, str, str], list[float | None]]:
    """``{(suite, strategy, embedding): [accuracy of replicate 0, 1, ...]}``."""
    out: dict[tuple[str, str, str], list[float | None]] = {}
    for record in records:
        key = (str(record["suite"]), str(record["strategy"]), str(record["embedding"]))
        values = out.setdefault(key, [None] * count)
        replicate = int(record.get("replicate") or 0)
        if 0 <= replicate < count:
            values[replicate] = num(record.get("recall_accuracy"))
    return out


def _span(spread: Spread) -> str:
    return f"{100 * spread.low:.1f}–{100 * spread.high:.1f}"


def _largest(spreads: Mapping[tuple[str, str, str], Spread]) -> str:
    """The figure whose replicates differ most, as a ratio (or from 0 %, when one is)."""
    ratios = [(s.ratio, key) for key, s in spreads.items() if s.ratio is not None]
    if all(s.high == s.low for s in spreads.values()):
        return "Every figure is the same in every replicate."
    from_zero = sorted(key for key, s in spreads.items() if s.low == 0 < s.high)
    ratio, key = max(ratios, key=lambda pair: (pair[0], pair[1])) if ratios else (None, None)
    out = []
    if ratio is not None and key is not None and ratio > 1:
        suite, strategy, embedding = key
        spread = spreads[key]
        where = "pooled" if suite == "all" else f"suite {suite}"
        out.append(
            f"Largest ratio between two replicates of one figure: {ratio:.2f}x "
            f"({where}, {pair_label(strategy, embedding)}: {pct(spread.low)} against "
            f"{pct(spread.high)})."
        )
    if from_zero:
        named = ", ".join(
            f"{suite} {pair_label(strategy, embedding)}" for suite, strategy, embedding in from_zero
        )
        out.append(f"From 0 % in one replicate to more in another (no ratio): {named}.")
    return " ".join(out)


def _notes(section: Mapping[str, Any], datasets: Any) -> tuple[str, ...]:
    count = int(section.get("count") or 0)
    seeds = list(section.get("seeds") or ())
    first = seeds[0] if seeds else None
    said = [str(datasets)] if datasets else []
    said += [f"generator seed {first}"] if first is not None else []
    origin = "replicate 0 is the run's own scenarios" + (f" ({', '.join(said)})" if said else "")
    later = ", ".join(str(s) for s in seeds[1:])
    which = "replicate 1 regenerates" if count == 2 else f"replicates 1 to {count - 1} regenerate"
    notes = [
        f"The synthetic suites were played {count} times: {origin}; {which} each suite with "
        f"the seed{'s' if count > 2 else ''} {later} at the same scale ({section.get('scale')}). "
        "What varies between replicates is the data: other facts, other filler, other "
        "positions of the answers. What does not: the strategies, the embeddings, the windows "
        "and the settings; the strategies are deterministic (a replicate played again gives "
        "the same figures), so the spread is the data's.",
        "Mean, min-max and the 95 % interval are over the replicates' pooled figures: "
        "Student's t interval, mean ± t(0.975, N−1) × sd / √N with N the replicates, each "
        "replicate one measurement (the other tables' intervals are over the probes of "
        "replicate 0), shown clipped to 0–100 %. With few replicates it is wide by "
        "construction. Every other table of this report, the gate and memctx compare read "
        "replicate 0 alone.",
    ]
    once = section.get("once") or {}
    if once:
        reasons = "; ".join(f"{suite}: {why}" for suite, why in once.items())
        notes.append(f"Not replicated (so in no figure of this section): {reasons}.")
    if not section.get("suites"):
        notes.append("No suite of this run could be replicated: nothing to show.")
    return tuple(notes)


def replicate_section(summary: Mapping[str, Any]) -> ReplicateSection | None:
    """The section of a run with replicates; None for a run without."""
    section = summary.get("replicates")
    if not isinstance(section, Mapping) or int(section.get("count") or 0) < 2:
        return None
    count = int(section["count"])
    seeds = list(section.get("seeds") or ())
    pooled_values = _values(section.get("pooled") or [], count)
    suite_values = _values(section.get("records") or [], count)
    spreads = {
        key: spread
        for key, values in [*suite_values.items(), *pooled_values.items()]
        if (spread := replicate_spread(values)) is not None
    }
    columns = [
        f"replicate {r}"
        + (f" (seed {seeds[r]})" if r < len(seeds) and seeds[r] is not None else "")
        for r in range(count)
    ]
    rows = []
    for key in pooled_values:
        _, strategy, embedding = key
        spread = spreads.get(key)
        if spread is None:
            rows.append((strategy, embedding, *["n/a"] * (count + 4)))
            continue
        interval = spread.interval
        rows.append(
            (
                strategy,
                embedding,
                *(pct(v) for v in spread.values),
                pct(spread.mean),
                _span(spread),
                _span_of(interval),
                f"{spread.ratio:.2f}x" if spread.ratio is not None else "n/a",
            )
        )
    pooled = Table(
        ("strategy", "embedding", *columns, "mean", "min–max", "95 % t interval", "max / min"),
        tuple(rows),
        keys=2,
    )
    records = list(section.get("records") or [])
    run_pairs = pairs(records)
    suite_rows = []
    for suite in suites(records):
        cells = []
        for strategy, embedding in run_pairs:
            spread = spreads.get((suite, strategy, embedding))
            cells.append("n/a" if spread is None else f"{pct(spread.mean)} ({_span(spread)})")
        suite_rows.append((suite, *cells))
    by_suite = Table(("suite", *(pair_label(*p) for p in run_pairs)), tuple(suite_rows))
    datasets = (summary.get("provenance") or {}).get("datasets")
    return ReplicateSection(_notes(section, datasets), pooled, by_suite, _largest(spreads))


def _span_of(interval: Sequence[float]) -> str:
    """The t interval in points, clipped to 0–100 (a share cannot leave them; with few
    replicates the interval can)."""
    if len(interval) != 2:
        return "n/a"
    low, high = max(0.0, interval[0]), min(1.0, interval[1])
    return f"{100 * low:.1f}–{100 * high:.1f}"

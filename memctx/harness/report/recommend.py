"""A plain-language recommendation derived from a run's numbers: which configuration to pick.

Nothing here names a strategy: the sentences come from the frontier (:mod:`.frontier`) and
the noise rule (:mod:`.intervals`) applied to whatever the run measured.

- **Best accuracy**: the most accurate comparable configuration (the cheaper on a tie), with
  the ones it cannot be told apart from.
- **Lowest cost per call**: the cheapest comparable configuration.
- **Pick** (the best trade-off): the cheapest configuration on the frontier whose accuracy is
  within noise of the best's and that costs materially less (:data:`SAVING`); the best
  itself when no cheaper one comes that close. A configuration that is within noise but
  costs the same is no trade-off: giving up accuracy for nothing is never the advice.
- **Never recommended**: a configuration that broke an invariant (pairing, hard cap, window,
  secrets), answered no probe at all, or is less accurate than ``truncate`` (dropping the
  oldest messages, the least any design must beat) when the run has it. Best accuracy and
  the pick are chosen among the others; the caveats say which were set aside and why.
- **Caveats** the data imposes: configurations left out (``full`` scored on the probes that
  fit only), wide intervals, suites where the pick is behind another beyond noise,
  violations, rule-written summaries, context-only scoring.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..schema import REAL_DATA_SUITES, all_records
from .checks import pair_label, pairs, suites
from .frontier import FrontierPoint, frontier
from .intervals import Outcomes, difference, share_of
from .notes import summary_model, summary_strategies_run

__all__ = ["FLOOR_STRATEGY", "SAVING", "WIDE", "Recommendation", "recommend", "set_aside"]

# A cheaper configuration is picked over the most accurate only when it saves at least this
# share of the cost per call: below it the saving is rounding, not a reason to lose points.
SAVING = 0.01
WIDE = 0.05  # a pick whose interval is wider than ± this gets the "wide intervals" caveat
_SHOWN = 3  # suites named at most in the per-suite caveat


@dataclass(frozen=True)
class Recommendation:
    """What a reader should pick, and why, in sentences.

    Attributes:
        pick: The configuration to pick (its label), None when nothing is comparable.
        headline: One sentence: the pick and the reason.
        details: Best accuracy, lowest cost, the frontier.
        caveats: What limits the reading.
    """

    pick: str | None
    headline: str
    details: tuple[str, ...]
    caveats: tuple[str, ...]


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"${value:.5f}"


def _accuracy(point: FrontierPoint) -> str:
    return point.share.text()


def _within(
    a: FrontierPoint,
    b: FrontierPoint,
    records: Mapping[tuple[str, str], Mapping[str, Any]],
    outcomes: Outcomes | None,
) -> bool:
    """True when ``a`` and ``b`` cannot be told apart on recall accuracy."""
    key_a, key_b = (a.strategy, a.embedding), (b.strategy, b.embedding)
    return difference(records.get(key_a), records.get(key_b), outcomes=outcomes).sign == 0


def _saving(point: FrontierPoint, than: FrontierPoint) -> float | None:
    """The share of ``than``'s cost per call that ``point`` saves (None without costs)."""
    if not point.cost_per_call or not than.cost_per_call:
        return None
    return 1 - point.cost_per_call / than.cost_per_call


def _cheaper_by(point: FrontierPoint, than: FrontierPoint) -> str:
    saving = _saving(point, than)
    return "n/a" if saving is None else f"{100 * saving:.0f} %"


def _saves(point: FrontierPoint, than: FrontierPoint) -> bool:
    """True when ``point`` costs materially less per call than ``than`` (:data:`SAVING`)."""
    saving = _saving(point, than)
    return saving is not None and saving >= SAVING


def _suite_caveat(
    summary: Mapping[str, Any], pick: FrontierPoint, outcomes: Outcomes | None
) -> str | None:
    """The suites where another configuration is ahead of the pick beyond noise."""
    records = all_records(summary)
    index = {(str(r["suite"]), str(r["strategy"]), str(r["embedding"])): r for r in records}
    behind = []
    for suite in suites(records):
        mine = index.get((suite, pick.strategy, pick.embedding))
        rivals = [
            (difference(index.get((suite, *p)), mine, outcomes=outcomes), p)
            for p in pairs(records)
            if p != (pick.strategy, pick.embedding) and p[0] != "full"
        ]
        ahead = [(d, p) for d, p in rivals if d.sign > 0]
        if ahead:
            _, best_p = max(ahead, key=lambda item: (item[0].delta or 0.0, item[1]))
            other = share_of(index.get((suite, *best_p)))
            behind.append(
                f"{suite} ({pair_label(*best_p)} {other.text(n=False)} against "
                f"{share_of(mine).text()})"
            )
    if not behind:
        return None
    more = f" and {len(behind) - _SHOWN} more" if len(behind) > _SHOWN else ""
    return (
        f"Per suite, {pick.label} is behind another configuration beyond noise in "
        f"{len(behind)} suite(s): {'; '.join(behind[:_SHOWN])}{more}."
    )


FLOOR_STRATEGY = "truncate"  # a recommended configuration is never less accurate than it


def set_aside(
    points: Sequence[FrontierPoint], pooled: Mapping[tuple[str, str], Mapping[str, Any]]
) -> dict[tuple[str, str], str]:
    """The comparable configurations never recommended (module doc), by (strategy,
    embedding), each with the sentence saying why."""
    floor = next((p for p in points if p.strategy == FLOOR_STRATEGY and p.excluded is None), None)
    out: dict[tuple[str, str], str] = {}
    for point in points:
        if point.excluded is not None:
            continue
        key = (point.strategy, point.embedding)
        violations = (pooled.get(key) or {}).get("violations") or 0
        accuracy = point.recall_accuracy or 0.0
        why = None
        if violations:
            why = f"it broke an invariant {violations:,.0f} time(s)"
        elif accuracy <= 0.0:
            why = "it answered no probe"
        elif floor is not None and accuracy < (floor.recall_accuracy or 0.0):
            why = (
                f"it is less accurate than {floor.label} ({100 * accuracy:.1f} % against "
                f"{100 * (floor.recall_accuracy or 0.0):.1f} %)"
            )
        if why is not None:
            out[key] = f"{point.label} is never recommended: {why}."
    return out


def _caveats(
    summary: Mapping[str, Any],
    points: Sequence[FrontierPoint],
    pick: FrontierPoint,
    outcomes: Outcomes | None = None,
    aside: Mapping[tuple[str, str], str] | None = None,
) -> list[str]:
    out = list((aside or {}).values())
    pooled = {(str(r["strategy"]), str(r["embedding"])): r for r in summary.get("pooled", [])}
    for point in points:
        if point.excluded is None:
            continue
        asked = (pooled.get((point.strategy, point.embedding)) or {}).get("probes")
        if point.n is not None and isinstance(asked, int | float) and point.n < asked:
            out.append(
                f"{point.label} is left out of the ranking: its context fits the window on "
                f"{point.n:,} of {asked:,.0f} probes only ({point.share.text(n=False)} of "
                "those), so its accuracy is not comparable with the others'."
            )
        else:
            out.append(f"{point.label} is left out of the ranking: {point.excluded}.")
    half = pick.share.half_width
    if half is not None and half > WIDE:
        quick = (summary.get("config") or {}).get("quick")
        out.append(
            f"Intervals are wide (±{100 * half:.0f} points for {pick.label} at "
            f"n={pick.n}): configurations closer than that cannot be ranked"
            + (" (a --quick run; the full run asks more probes)." if quick else ".")
        )
    suite_said = _suite_caveat(summary, pick, outcomes)
    if suite_said:
        out.append(suite_said)
    violations = (pooled.get((pick.strategy, pick.embedding)) or {}).get("violations") or 0
    if violations:
        out.append(f"{pick.label} broke an invariant {violations} time(s): see the checks.")
    summarisers = summary_strategies_run(summary)
    model = summary_model(summary) if summarisers else None
    if model is not None:
        out.append(
            f"Summaries were written by {model}; summary-based strategies "
            f"({', '.join(summarisers)}) may rank differently with another summariser."
        )
    if not (summary.get("provenance") or {}).get("judge_model"):
        out.append(
            "Accuracy means an expected answer is in the context sent, not that a model "
            "answered (no judge ran)."
        )
    return out


def recommend(
    summary: Mapping[str, Any], probes: Iterable[Mapping[str, Any]] | None = None
) -> Recommendation:
    """The recommendation of a run (pooled records over all suites).

    Args:
        summary: The run's ``summary.json``.
        probes: Its probe rows (``results.jsonl``): configurations are then compared probe
            by probe (:class:`memctx.harness.outcomes.Outcomes`), which tells closer ones
            apart.
    """
    outcomes = Outcomes.from_probes(probes) if probes is not None else None
    every = all_records(summary)
    records = {(str(r["strategy"]), str(r["embedding"])): r for r in summary.get("pooled", [])}
    aside = set_aside(frontier(every), records)
    # The frontier among the configurations that may be recommended: one set aside must not
    # push a recommendable one off it.
    points = frontier([r for r in every if (str(r["strategy"]), str(r["embedding"])) not in aside])
    comparable = [p for p in points if p.excluded is None]
    records_in = summary.get("records") or []
    if records_in and all(r.get("suite") in REAL_DATA_SUITES for r in records_in):
        return Recommendation(
            None,
            "No configuration is recommended: the run played real-data suites only, which "
            "are never pooled; compare the strategies suite by suite under Real data.",
            (),
            (),
        )
    if not comparable:
        why = (
            "every configuration with a recall accuracy over every probe and a cost is set "
            "aside (see the caveats)"
            if aside
            else "none has a recall accuracy over every probe and a cost"
        )
        return Recommendation(
            None,
            f"No configuration can be recommended: {why}.",
            (),
            tuple(_caveats(summary, shown, shown[0], aside=aside))
            if (shown := points or frontier(every))
            else (),
        )
    best = max(
        comparable,
        key=lambda p: (p.recall_accuracy or 0.0, -(p.cost_per_call or 0.0), p.label),
    )
    cheapest = min(
        comparable, key=lambda p: (p.cost_per_call or 0.0, -(p.recall_accuracy or 0.0), p.label)
    )
    close = [p for p in comparable if p is not best and _within(p, best, records, outcomes)]
    on_frontier = [p for p in comparable if p.on_frontier]
    pick = min(
        [
            p
            for p in on_frontier
            if p is best or (_within(p, best, records, outcomes) and _saves(p, best))
        ],
        key=lambda p: (p.cost_per_call or 0.0, -(p.recall_accuracy or 0.0), p.label),
    )
    said_best = f"Best accuracy: {best.label}, {_accuracy(best)}, at {_usd(best.cost_per_call)}"
    if close:
        others = ", ".join(f"{p.label} ({p.share.text(n=False)})" for p in close)
        said_best += f" per call; not distinguishable from {others}."
    else:
        said_best += " per call; ahead of every other configuration beyond noise."
    said_cheap = f"Lowest cost per call: {cheapest.label}, {_usd(cheapest.cost_per_call)}"
    said_cheap += f", at {_accuracy(cheapest)}."
    said_frontier = "On the frontier (cheapest first): " + ", ".join(
        f"{p.label} {_usd(p.cost_per_call)} / {100 * (p.recall_accuracy or 0.0):.1f} %"
        for p in on_frontier
    )
    if pick is best:
        cheaper = [p for p in on_frontier if (p.cost_per_call or 0.0) < (best.cost_per_call or 0.0)]
        reason = "the most accurate configuration"
        level = [p for p in cheaper if not _saves(p, best) and _within(p, best, records, outcomes)]
        cheaper = [p for p in cheaper if _saves(p, best)]
        if level:
            names = ", ".join(f"{p.label} ({p.share.text(n=False)})" for p in level)
            verb = "costs" if len(level) == 1 else "cost"
            reason += (
                f"; {names} cannot be told apart from it but {verb} the same per call (under "
                f"{100 * SAVING:.0f} % less), "
                "so nothing is gained by giving up the points"
            )
        if cheaper:
            nearest = cheaper[-1]
            gap = 100 * ((best.recall_accuracy or 0.0) - (nearest.recall_accuracy or 0.0))
            reason += (
                f"; no {'materially ' if level else ''}cheaper one comes within noise of it "
                f"(the nearest, {nearest.label}, costs {_cheaper_by(nearest, best)} less per "
                f"call and answers {gap:.1f} points fewer)"
            )
        elif not level:
            reason += " and the cheapest on the frontier"
        headline = f"Pick {pick.label}: {reason}."
    else:
        headline = (
            f"Pick {pick.label}: {_accuracy(pick)}, within noise of the most accurate "
            f"({best.label}, {best.share.text(n=False)}), for {_cheaper_by(pick, best)} less "
            f"per call ({_usd(pick.cost_per_call)} against {_usd(best.cost_per_call)})."
        )
    return Recommendation(
        pick.label,
        headline,
        (said_best, said_cheap, said_frontier + "."),
        tuple(_caveats(summary, points, pick, outcomes, aside)),
    )

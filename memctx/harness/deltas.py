"""Deltas between two runs, per suite × strategy × embedding, with a noise rule for shares.

:func:`compare_runs` pairs the records of a *before* run (the baseline) with those of an
*after* run and gives one :class:`Delta` per pair: before, after and the change of each
metric, and for the shares of probes (:data:`SHARE_METRICS`) their 95 % intervals and whether
the change is beyond the noise. ``memctx compare``, the gate and the report's "deltas
against a baseline" all use it; :mod:`memctx.harness.deltas_render` formats the result.

**Which rows pair up** (:func:`match_rows`). Per-suite records by (suite, strategy,
embedding); a row of only one run is listed, never paired. Pooled rows (``suite == "all"``)
only when both runs pooled the same suites for that strategy × embedding; when the after
run ran a subset of the before run's suites, the before run's pooled figure is rebuilt
over those suites (:func:`memctx.harness.pooling.pool_records`); a pooled row over a single
suite is its per-suite row and is not paired twice; a run that pooled suites the other
never ran is not compared (noted).

**Beyond the noise**: :mod:`memctx.harness.noise` (the same rule as the gate's ``ci``
tolerance).

**The verdict** (:func:`verdict_of`): one line that opens ``memctx compare`` and the
report's baseline section. Per strategy × embedding (a *configuration*), over every row
compared: better when a share of probes moved the better way beyond the noise somewhere
and nowhere the worse way, or violations fell; worse symmetrically (any rise of violations
is worse: an invariant has no noise); mixed when both; within noise otherwise. Metrics
without a noise rule (tokens, cost) do not count: their changes are in the tables. Runs
that did not play the same scenarios (:mod:`memctx.harness.comparability`) get "cannot
compare: ..." instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .comparability import Comparability
from .noise import SHARE_METRICS, beyond_noise, share_interval
from .outcomes import Outcomes, paired_change, same_scenarios
from .pooling import pool_records, pooled_suite, to_number
from .schema import ALL_SUITES, HIGHER_IS_BETTER, upgrade_summary

__all__ = [
    "COMPARE_METRICS",
    "DEFAULT_COMPARE_METRICS",
    "Delta",
    "MetricChange",
    "RowMatch",
    "RowPair",
    "Verdict",
    "compare_runs",
    "comparison_notes",
    "describe_missing",
    "match_rows",
    "metric_value",
    "record_key",
    "verdict_of",
]

Key = tuple[str, str, str]
# Every metric a comparison can show, with its better direction (+1: higher is better);
# cost_per_call is cost_usd / calls (a total says little when two runs made different calls).
COMPARE_METRICS: dict[str, int] = {**HIGHER_IS_BETTER, "cost_per_call": -1}
DEFAULT_COMPARE_METRICS = (
    "recall_accuracy",
    "tool_accuracy",
    "evidence_recall",
    "tokens_per_call",
    "cost_per_call",
    "cached_share",
    "violations",
)
_EPS = 1e-9


def record_key(record: Mapping[str, Any]) -> Key:
    """(suite, strategy, embedding) of a record."""
    return (str(record["suite"]), str(record["strategy"]), str(record["embedding"]))


def metric_value(record: Mapping[str, Any], metric: str) -> float | None:
    """A record's value of ``metric`` (``cost_per_call`` derived); ``None`` when it has none."""
    if metric == "cost_per_call":
        cost, calls = to_number(record.get("cost_usd")), to_number(record.get("calls"))
        return cost / calls if cost is not None and calls else None
    return to_number(record.get(metric))


@dataclass(frozen=True)
class MetricChange:
    """One metric of one row, before and after.

    Attributes:
        metric: A key of :data:`COMPARE_METRICS`.
        before: The before run's value (``None`` when it has none).
        after: The after run's value.
        before_ci: The 95 % interval of a share (:func:`share_interval`), else ``None``.
        after_ci: Likewise for the after run.
        significant: For a share, whether the change is beyond the noise; else ``None``.
        better: ``+1`` when a higher value is better, ``-1`` when lower is.
        paired: ``significant`` was judged probe by probe (both runs' probe rows, same
            scenarios), not as independent samples.
    """

    metric: str
    before: float | None
    after: float | None
    before_ci: tuple[float, float] | None
    after_ci: tuple[float, float] | None
    significant: bool | None
    better: int
    paired: bool = False

    @property
    def delta(self) -> float | None:
        """after − before, or ``None`` when either is missing."""
        return None if self.before is None or self.after is None else self.after - self.before

    @property
    def verdict(self) -> str:
        """``"better"``, ``"worse"`` or ``""`` (no change, or nothing to compare)."""
        delta = self.delta
        if delta is None or abs(delta) <= _EPS:
            return ""
        return "better" if delta * self.better > 0 else "worse"


@dataclass(frozen=True)
class Delta:
    """The changes of one suite × strategy × embedding (``suite == "all"``: pooled).

    Attributes:
        suite: The suite, or ``"all"`` for a pooled row.
        strategy: The strategy.
        embedding: The embedding (``"none"`` for a strategy that does not search).
        fit_before: Fitted probes in the before run (the n of its shares).
        fit_after: Fitted probes in the after run.
        changes: One :class:`MetricChange` per metric compared, in the order asked.
        note: Why a pooled row's before figure is not the stored one (else ``""``).
    """

    suite: str
    strategy: str
    embedding: str
    fit_before: int | None
    fit_after: int | None
    changes: tuple[MetricChange, ...]
    note: str = ""

    @property
    def key(self) -> Key:
        return (self.suite, self.strategy, self.embedding)

    @property
    def pooled(self) -> bool:
        return self.suite == ALL_SUITES

    def change(self, metric: str) -> MetricChange | None:
        """The change of ``metric``, or ``None`` when it was not compared."""
        return next((c for c in self.changes if c.metric == metric), None)


@dataclass(frozen=True)
class RowPair:
    """A before and an after record of the same row (see :func:`match_rows`)."""

    key: Key
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    note: str = ""


@dataclass(frozen=True)
class RowMatch:
    """How the rows of two runs pair up.

    Attributes:
        pairs: Rows in both (per-suite rows in the before run's order, then pooled ones).
        only_before: Rows of the before run the after run lacks (suites or strategies not run).
        only_after: Rows new in the after run.
        notes: One line per pooled-row decision (rebuilt, not repeated, not comparable).
    """

    pairs: tuple[RowPair, ...]
    only_before: tuple[Key, ...]
    only_after: tuple[Key, ...]
    notes: tuple[str, ...]


def _suites_by_pair(summary: Mapping[str, Any]) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for record in summary.get("records", []):
        suite, strategy, embedding = record_key(record)
        if not pooled_suite(suite):  # a real-data suite: never in a pooled row
            continue
        suites = out.setdefault((strategy, embedding), [])
        if suite not in suites:
            suites.append(suite)
    return out


def match_rows(before: Mapping[str, Any], after: Mapping[str, Any]) -> RowMatch:
    """Pair the rows of two summaries (schema 1 is upgraded first): see the module
    docstring."""
    before, after = _upgraded(before), _upgraded(after)
    b_rows = {record_key(r): r for r in before.get("records", [])}
    a_rows = {record_key(r): r for r in after.get("records", [])}
    pairs = [RowPair(k, r, a_rows[k]) for k, r in b_rows.items() if k in a_rows]
    only_before = [k for k in b_rows if k not in a_rows]
    only_after = [k for k in a_rows if k not in b_rows]
    b_pool = {record_key(r): r for r in before.get("pooled", [])}
    b_suites, a_suites = _suites_by_pair(before), _suites_by_pair(after)
    rebuilt: dict[tuple[str, ...], list[str]] = {}
    single: list[str] = []
    foreign: list[str] = []
    for record in after.get("pooled", []):
        key = record_key(record)
        pair, name = key[1:], "/".join(key[1:])
        run_suites, base_suites = a_suites.get(pair, []), b_suites.get(pair, [])
        if key not in b_pool and not base_suites:
            only_after.append(key)
        elif len(run_suites) == 1 and (run_suites[0], *pair) in b_rows:
            single.append(name)
        elif key in b_pool and set(run_suites) == set(base_suites):
            pairs.append(RowPair(key, b_pool[key], record))
        elif run_suites and set(run_suites) <= set(base_suites):
            chosen = [b_rows[(s, *pair)] for s in base_suites if s in run_suites]
            rebuilt.setdefault(tuple(run_suites), []).append(name)
            note = f"baseline figure pooled from its records over the {len(chosen)} suites both ran"
            pairs.append(RowPair(key, pool_records(chosen), record, note))
        else:
            extra = sorted(set(run_suites) - set(base_suites)) or ["(none listed)"]
            foreign.append(f"{name} (suites only in the after run: {', '.join(extra)})")
    a_pool = {record_key(r) for r in after.get("pooled", [])}
    only_before += [k for k in b_pool if k not in a_pool]
    notes = [
        f"pooled rows of {', '.join(names)}: the runs pooled different suites; the baseline's "
        f"figure is rebuilt from its per-suite records over the suites both ran "
        f"({', '.join(suites)})"
        for suites, names in rebuilt.items()
    ]
    if single:
        notes.append(
            f"pooled rows over one suite ({', '.join(single)}) equal their per-suite row: "
            "not compared twice"
        )
    if foreign:
        notes.append(f"pooled rows not compared (different suites): {'; '.join(foreign)}")
    return RowMatch(tuple(pairs), tuple(only_before), tuple(only_after), tuple(notes))


def describe_missing(
    keys: Sequence[Key], present: Mapping[str, Any], *, absent: str = "not run"
) -> str:
    """What ``keys`` (rows absent from the ``present`` summary) have in common, in one line:
    the suites it did not run, the strategy × embedding pairs it did not run, other rows."""
    run_suites = {record_key(r)[0] for r in present.get("records", [])}
    run_pairs = {record_key(r)[1:] for r in present.get("records", [])}
    run_pairs |= {record_key(r)[1:] for r in present.get("pooled", [])}
    suites = sorted({k[0] for k in keys if k[0] != ALL_SUITES and k[0] not in run_suites})
    pairs = sorted({"/".join(k[1:]) for k in keys if k[1:] not in run_pairs})
    other = [
        "/".join(k)
        for k in keys
        if k[1:] in run_pairs and (k[0] == ALL_SUITES or k[0] in run_suites)
    ]
    parts = []
    if suites:
        parts.append(f"suites {absent}: {', '.join(suites)}")
    if pairs:
        parts.append(f"strategy/embedding {absent}: {', '.join(pairs)}")
    if other:
        shown = ", ".join(other[:5]) + (f" and {len(other) - 5} more" if len(other) > 5 else "")
        parts.append(f"other rows: {shown}")
    return "; ".join(parts)


def comparison_notes(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    *,
    before_name: str = "before",
    after_name: str = "after",
) -> list[str]:
    """The lines that go with :func:`compare_runs`' deltas: rows of only one run (each kind
    listed once, :func:`describe_missing`) and how pooled rows were paired."""
    before, after = _upgraded(before), _upgraded(after)
    match = match_rows(before, after)
    lines = []
    for keys, name, other, other_name in (
        (match.only_before, before_name, after, after_name),
        (match.only_after, after_name, before, before_name),
    ):
        if keys:
            lines.append(
                f"{len(keys)} row(s) only in {name}, not compared "
                f"({describe_missing(keys, other, absent=f'not in {other_name}')})"
            )
    return [*lines, *match.notes]


def compare_runs(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    metrics: Sequence[str] | None = None,
    *,
    probes: tuple[Iterable[Mapping[str, Any]], Iterable[Mapping[str, Any]]] | None = None,
) -> list[Delta]:
    """The deltas of every row both runs have (see the module docstring for pooled rows).

    Args:
        before: The baseline's summary (schema 1 or 2; upgraded in memory).
        after: The run's summary.
        metrics: Keys of :data:`COMPARE_METRICS`; default :data:`DEFAULT_COMPARE_METRICS`.
        probes: The two runs' probe rows (``results.jsonl``), before's first: a share of a
            suite both runs played on identical scenarios is then judged probe by probe
            (:func:`memctx.harness.outcomes.paired_change`).

    Returns:
        One :class:`Delta` per paired row: per-suite rows in the before run's order, then
        pooled ones. Rows of only one run are in :func:`match_rows`'s result.

    Raises:
        ValueError: An unknown metric (the message lists the known ones).
    """
    chosen = tuple(metrics or DEFAULT_COMPARE_METRICS)
    unknown = [m for m in chosen if m not in COMPARE_METRICS]
    if unknown:
        raise ValueError(f"unknown metric {unknown[0]!r}; choose from {', '.join(COMPARE_METRICS)}")
    before, after = _upgraded(before), _upgraded(after)
    outcomes: tuple[Outcomes, Outcomes] | None = None
    if probes is not None:
        shared = same_scenarios(before, after)
        outcomes = (
            Outcomes.from_probes(probes[0], shared),
            Outcomes.from_probes(probes[1], shared),
        )
    deltas = []
    for pair in match_rows(before, after).pairs:
        changes = tuple(_change(pair, metric, outcomes) for metric in chosen)
        fit_before, fit_after = (to_number(r.get("fit")) for r in (pair.before, pair.after))
        deltas.append(
            Delta(
                suite=pair.key[0],
                strategy=pair.key[1],
                embedding=pair.key[2],
                fit_before=None if fit_before is None else int(fit_before),
                fit_after=None if fit_after is None else int(fit_after),
                changes=changes,
                note=pair.note,
            )
        )
    return deltas


def _change(pair: RowPair, metric: str, outcomes: tuple[Outcomes, Outcomes] | None) -> MetricChange:
    """One metric of a row pair; a share's significance probe by probe when it can be."""
    share = metric in SHARE_METRICS
    significant = beyond_noise(pair.before, pair.after, metric)
    paired = None
    if share and outcomes is not None and not pair.note:  # a rebuilt pooled row: not paired
        paired = paired_change(pair.after, outcomes[1], pair.before, outcomes[0], metric)
    if paired is not None:
        significant = abs(paired[0]) > paired[1] + _EPS
    return MetricChange(
        metric,
        metric_value(pair.before, metric),
        metric_value(pair.after, metric),
        share_interval(pair.before, metric) if share else None,
        share_interval(pair.after, metric) if share else None,
        significant,
        COMPARE_METRICS[metric],
        paired=paired is not None,
    )


def _upgraded(summary: Mapping[str, Any]) -> Mapping[str, Any]:
    return upgrade_summary(dict(summary)) if summary.get("schema", 2) < 2 else summary


@dataclass(frozen=True)
class Verdict:
    """The one line a comparison opens with.

    Attributes:
        text: The line (``"B is better than A beyond noise in 2 configurations, ..."``).
        tone: ``"better"``, ``"worse"``, ``"mixed"``, ``"within"`` (nothing beyond noise),
            ``"none"`` (nothing judged) or ``"cannot"`` (the runs cannot be compared).
    """

    text: str
    tone: str


def _row_verdicts(delta: Delta) -> set[str]:
    """``"better"`` / ``"worse"`` for each change of a row judged beyond noise; ``"within"``
    when something was judged and nothing moved beyond it; empty when nothing was judged."""
    out: set[str] = set()
    judged = False
    for change in delta.changes:
        if change.metric == "violations" and change.delta is not None:
            judged = True
            if change.verdict:
                out.add(change.verdict)
        elif change.significant is not None:
            judged = True
            if change.significant and change.verdict:
                out.add(change.verdict)
    return out or ({"within"} if judged else set())


def _configurations(count: int) -> str:
    return f"{count} configuration{'' if count == 1 else 's'}"


def _named(pairs: Sequence[str]) -> str:
    shown = ", ".join(pairs[:3]) + (f" and {len(pairs) - 3} more" if len(pairs) > 3 else "")
    return f" ({shown})" if shown else ""


def verdict_of(
    deltas: Sequence[Delta],
    *,
    before: str = "A",
    after: str = "B",
    setup: Comparability | None = None,
    allowed: bool = False,
) -> Verdict:
    """The verdict on ``deltas`` (see the module docstring).

    Args:
        deltas: :func:`compare_runs`' result.
        before: How the before run is named (``"A"``, ``"the baseline"``).
        after: How the after run is named.
        setup: :func:`memctx.harness.comparability.run_differences`' finding: with
            differences the verdict is "cannot compare", unless ``allowed``.
        allowed: The user asked to compare anyway: the line then says what differs.
    """
    if setup is not None and not setup.comparable and not allowed:
        return Verdict(f"cannot compare: {setup.summary}", "cannot")
    if not deltas:
        return Verdict(f"nothing to compare: {before} and {after} have no row in common", "none")
    by_pair: dict[str, set[str]] = {}
    for delta in deltas:
        pair = f"{delta.strategy}/{delta.embedding}"
        by_pair.setdefault(pair, set()).update(_row_verdicts(delta))
    groups: dict[str, list[str]] = {"better": [], "worse": [], "mixed": [], "within": []}
    for pair, seen in by_pair.items():
        moved = seen & {"better", "worse"}
        if len(moved) == 2:
            groups["mixed"].append(pair)
        elif moved:
            groups[moved.pop()].append(pair)
        elif seen:
            groups["within"].append(pair)
    despite = (
        f"; compared as asked although {setup.summary}"
        if setup is not None and not setup.comparable
        else ""
    )
    judged = sum(map(len, groups.values()))
    if not judged:
        return Verdict(
            "no verdict: none of the metrics compared has a noise rule (add a share of "
            f"probes, e.g. recall_accuracy){despite}",
            "none",
        )
    basis = "per strategy × embedding, on shares of probes and violations"
    subject = after[:1].upper() + after[1:]
    if judged == len(groups["within"]):
        text = f"{subject} is within noise of {before} in all {_configurations(judged)}"
        return Verdict(f"{text} ({basis}){despite}", "within")
    parts: list[str] = []
    mixed = "better in some rows and worse in others"
    for tone, first, later in (
        ("better", f"is better than {before} beyond noise in", "better in"),
        ("worse", f"is worse than {before} beyond noise in", "worse in"),
        ("mixed", f"differs from {before} beyond noise, {mixed}, in", f"{mixed} in"),
    ):
        pairs = groups[tone]
        if pairs and parts:  # "... in 2 configurations, worse in 1"
            parts.append(f"{later} {len(pairs)}{_named(pairs)}")
        elif pairs:
            parts.append(f"{subject} {first} {_configurations(len(pairs))}{_named(pairs)}")
    parts.append(f"within noise in {len(groups['within'])}")
    tone = (
        "mixed"
        if groups["mixed"] or (groups["better"] and groups["worse"])
        else ("better" if groups["better"] else "worse")
    )
    return Verdict(f"{', '.join(parts)} ({basis}){despite}", tone)

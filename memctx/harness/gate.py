"""The baseline gate: judge a run's ``summary.json`` against a baseline, on what it ran.

A rule names a metric and how far it may move in its "worse" direction::

    recall_accuracy:ci      # may fall only within the noise of the two 95 % intervals
    recall_accuracy:-2p     # may fall by up to 2 probes' worth (2 / fit of the baseline row)
    recall_accuracy:-0.02   # may fall by up to 0.02 (absolute)
    cost_per_call:+5%       # may rise by up to 5 % of the baseline value (relative)
    violations:+0           # may not rise at all

The sign is the allowed direction of change and must point the "worse" way for the metric
(:data:`memctx.harness.deltas.COMPARE_METRICS`); it may be left out. ``p`` and ``ci`` apply
to the shares of probes (``recall_accuracy``, ``tool_accuracy``, ``evidence_recall``,
``stale_rate``). ``ci`` is :mod:`memctx.harness.noise`'s rule: a regression is a change the
worse way by more than ``sqrt(h_baseline**2 + h_run**2)``, the half-widths of the two 95 %
intervals on the facing sides (each the record's bootstrap interval, widened to the Wilson
interval of the share where that is wider): the difference's 95 % interval excludes 0.

:data:`DEFAULT_FAIL_ON` applies when only a baseline is given: ``ci`` for the four shares,
5 % for ``cost_per_call`` and ``tokens_per_call``, no new violations. Cost is judged per
call (``cost_usd / calls``), never as the run's total: a run of fewer calls would always pass
a rule on the total however dear each call became, so ``cost_usd`` is refused in a rule
(the message says to write ``cost_per_call``). One flipped probe is never a
regression under ``ci`` (not even at 44 of 44); a suite's row of 44 probes fails from a fall
of about 9 probes, a pooled row of 380 from about 26 (7 points), and a change that breaks
recall (``--set hardCapTokens=60``: needle × memory-context × hash from 84.1 % to 18.2 %,
against a noise of 0.19) fails at once. ``-Np`` is the stricter form when a few probes
matter. Timing metrics (``hook_p50_ms``, ``hook_p95_ms``) are never gated by default: they
depend on the machine and its load. A ``--fail-on`` spec replaces the defaults (the
violation check stays).

**Only runs of the same scenarios** (:func:`memctx.harness.comparability.run_differences`):
a run that played other suites, other scenarios in a suite (checksums of
``provenance.scenarios``), the generated set against the frozen one (``--quick`` against a
full baseline), other windows, another ``--llm``, or costs priced for another answer model
is not gated: :func:`check_gate` prints what differs with the fix and returns 2, unless
``allow_different_scenarios`` (``--allow-different-scenarios``) asks to compare anyway;
then the differences are printed as notes.

**What is compared** (:func:`memctx.harness.deltas.match_rows`): records matched by (suite,
strategy, embedding). Baseline records the run does not have (strategies it did not run, or
suites when allowed) are noted in one line, never failed; records new in the run are noted
("new, not gated"), one line per strategy the baseline never ran. Pooled rows (``suite ==
"all"``) are compared as they stand only when both pooled the same suites; when the run ran
a subset (as allowed), the baseline's pooled figure is rebuilt from its per-suite records
over the run's suites (:func:`memctx.harness.pooling.pool_records`: shares weighted by
``fit``, per-call means by ``calls``, ``cached_share`` by tokens sent, totals summed); a
pooled row over one suite is not compared twice, and a run that pooled suites the baseline
never ran is not compared (noted). Any record with ``violations > 0`` fails the gate
whatever the rules say, new or not: an invariant holds without a baseline. The gate prints
``FAIL`` exactly when it returns 1, and ``cannot compare`` exactly when the runs differ and
it returns 2.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .comparability import Comparability, run_differences
from .deltas import COMPARE_METRICS, describe_missing, match_rows, metric_value, record_key
from .noise import SHARE_METRICS, noise_for, share_interval
from .pooling import to_number
from .runs import read_summary
from .schema import ALL_SUITES

__all__ = [
    "DEFAULT_FAIL_ON",
    "Regression",
    "Rule",
    "check_gate",
    "compare",
    "format_regressions",
    "new_records",
    "parse_fail_on",
]

DEFAULT_FAIL_ON = (
    "recall_accuracy:ci,tool_accuracy:ci,evidence_recall:ci,stale_rate:ci,"
    "cost_per_call:+5%,tokens_per_call:+5%,violations:+0"
)
_SYNTAX = (
    "expected METRIC:[+|-]AMOUNT[%|p] or METRIC:ci separated by commas, e.g. "
    "recall_accuracy:ci,tool_accuracy:-2p,cost_per_call:+5%"
)
# Totals a rule may not judge, with the per-call metric to judge instead.
_TOTALS = {"cost_usd": "cost_per_call"}
_COST_METRICS = frozenset({"cost_usd", "cost_per_call"})
_RULE = re.compile(
    r"^(?P<metric>[a-z0-9_]+):(?P<sign>[+-]?)"
    r"(?:(?P<ci>ci)|(?P<amount>\d+(?:\.\d*)?|\.\d+)(?P<unit>[%p]?))$"
)
_EPS = 1e-9
_ROUNDING = 1e-4  # shares are stored to 4 places: two of them may differ by this much extra

Key = tuple[str, str, str]


@dataclass(frozen=True)
class Rule:
    """How far one metric may move from the baseline.

    Attributes:
        metric: A key of :data:`COMPARE_METRICS` (``cost_usd`` aside).
        amount: The tolerance: absolute, a percentage, or probes (0 for ``ci``).
        direction: The allowed direction of change: ``-1`` may fall, ``+1`` may rise.
        unit: ``""`` absolute, ``"%"`` of the baseline value, ``"p"`` probes' worth of the
            baseline row, ``"ci"`` within the noise of the two intervals.
    """

    metric: str
    amount: float
    direction: int
    unit: str = ""

    def allowed(self, baseline: Mapping[str, Any], run: Mapping[str, Any]) -> float | None:
        """The largest change the worse way allowed for this pair of records (a size);
        ``None`` when the records lack what the rule needs (then it is not applied)."""
        was = metric_value(baseline, self.metric)
        if was is None:
            return None
        if self.unit == "%":
            return abs(was) * self.amount / 100
        if self.unit == "p":
            fit = to_number(baseline.get("fit"))
            return self.amount / fit + _ROUNDING if fit else None
        if self.unit == "ci":
            measured = noise_for(baseline, run, self.metric)
            return None if measured is None else measured[1]
        return self.amount

    def __str__(self) -> str:
        sign = "+" if self.direction > 0 else "-"
        if self.unit == "ci":
            return f"{self.metric}:ci"
        return f"{self.metric}:{sign}{self.amount:g}{self.unit}"


@dataclass(frozen=True)
class Regression:
    """One reason the gate fails.

    Attributes:
        key: (suite, strategy, embedding) of the record.
        metric: The metric that moved.
        value: The run's value (``None`` when missing).
        baseline: The baseline's value (``None`` for violations without a baseline).
        rule: The rule broken, as written (or a fixed reason).
        allowed: The tolerance that rule gave for this record (``p`` and ``ci`` rules).
        detail: The intervals behind a ``ci`` verdict, or how a pooled baseline was rebuilt.
    """

    key: Key
    metric: str
    value: float | None
    baseline: float | None
    rule: str
    allowed: float | None = None
    detail: str = ""

    @property
    def delta(self) -> float | None:
        if self.value is None or self.baseline is None:
            return None
        return self.value - self.baseline

    def describe(self) -> str:
        """One line: which record, which metric, value, baseline, delta, allowed."""
        where = "/".join(self.key)
        extra = f" [{self.detail}]" if self.detail else ""
        if self.rule == "violations must be 0":
            return f"{where}: violations = {_num(self.value)} (must be 0)"
        if self.value is None:
            return f"{where}: {self.metric} missing (baseline {_num(self.baseline)}){extra}"
        delta = self.delta
        change = "" if delta is None else f", delta {delta:+.4g}"
        if delta is not None and self.baseline:
            change += f" ({delta / abs(self.baseline):+.1%})"
        limit = "" if self.allowed is None else f" (here {self.allowed:.4g})"
        return (
            f"{where}: {self.metric} = {_num(self.value)} vs baseline {_num(self.baseline)}"
            f"{change}; allowed {self.rule}{limit}{extra}"
        )


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def parse_fail_on(spec: str) -> list[Rule]:
    """Parse ``"recall_accuracy:ci,tool_accuracy:-2p,cost_per_call:+5%"`` into rules.

    Raises:
        ValueError: A malformed item, an unknown metric, a total (``cost_usd``) instead of
            its per-call figure, ``p`` or ``ci`` on a metric that is not a share of probes,
            or a sign pointing the better way (the message gives the expected syntax or the
            corrected item).
    """
    rules: list[Rule] = []
    items = [item.strip() for item in spec.split(",")]
    if not any(items):
        raise ValueError(f"empty --fail-on spec; {_SYNTAX}")
    for item in items:
        match = _RULE.match(item)
        if not match:
            raise ValueError(f"bad --fail-on item {item!r}; {_SYNTAX}")
        metric = match["metric"]
        if metric in _TOTALS:
            per_call = _TOTALS[metric]
            raise ValueError(
                f"--fail-on {item!r}: {metric} is the run's total, and a run of fewer calls "
                f"always costs less in total however dear each call became; gate "
                f"{item.replace(metric, per_call, 1)} instead"
            )
        if metric not in COMPARE_METRICS:
            gateable = ", ".join(m for m in COMPARE_METRICS if m not in _TOTALS)
            raise ValueError(f"--fail-on: unknown metric {metric!r}; gateable: {gateable}")
        unit = "ci" if match["ci"] else match["unit"]
        if unit in ("p", "ci") and metric not in SHARE_METRICS:
            raise ValueError(
                f"--fail-on {item!r}: 'p' and 'ci' apply to shares of probes "
                f"({', '.join(SHARE_METRICS)}); for {metric} write an amount or a "
                f"percentage, e.g. {metric}:{'+' if COMPARE_METRICS[metric] < 0 else '-'}5%"
            )
        worse = -COMPARE_METRICS[metric]
        direction = {"+": 1, "-": -1, "": worse}[match["sign"]]
        if direction != worse:
            way = "rise" if worse > 0 else "fall"
            tail = "ci" if unit == "ci" else f"{match['amount']}{unit}"
            raise ValueError(
                f"--fail-on {item!r}: {metric} gets worse when it {way}s, so the tolerance "
                f"is how far it may {way}: write {metric}:{'+' if worse > 0 else '-'}{tail}"
            )
        rules.append(Rule(metric, float(match["amount"] or 0), direction, unit))
    return rules


def _ci_detail(baseline: Mapping[str, Any], run: Mapping[str, Any], metric: str) -> str:
    old, new = share_interval(baseline, metric), share_interval(run, metric)
    if old is None or new is None:
        return ""
    return (
        f"95 % intervals: baseline {old[0]:.4g}-{old[1]:.4g}, run {new[0]:.4g}-{new[1]:.4g}; "
        "a regression is a fall beyond their combined half-widths"
    )


def _violation(key: Key, record: Mapping[str, Any]) -> Regression | None:
    violations = to_number(record.get("violations")) or 0.0
    if violations <= 0:
        return None
    return Regression(key, "violations", violations, None, "violations must be 0")


def _regressions(
    key: Key,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    rules: Sequence[Rule],
    *,
    note: str = "",
    pooled: bool = False,
) -> list[Regression]:
    """The regressions of one pair of records; a ``pooled`` row's violations are its
    suites' and reported on their rows, not again here."""
    out: list[Regression] = []
    violation = _violation(key, new)
    if violation is not None and not pooled:
        out.append(violation)
    for rule in rules:
        if rule.metric == "violations" and violation is not None:
            continue  # reported on its own line
        was = metric_value(old, rule.metric)
        if was is None:
            continue  # nothing to compare with
        now = metric_value(new, rule.metric)
        if now is None:
            out.append(Regression(key, rule.metric, None, was, str(rule), detail=note))
            continue
        allowed = rule.allowed(old, new)
        if allowed is None or (now - was) * rule.direction <= allowed + _EPS:
            continue
        detail = "; ".join(
            part
            for part in (_ci_detail(old, new, rule.metric) if rule.unit == "ci" else "", note)
            if part
        )
        shown = allowed if rule.unit in ("p", "ci") else None
        out.append(Regression(key, rule.metric, now, was, str(rule), shown, detail))
    return out


def compare(
    summary: Mapping[str, Any], baseline: Mapping[str, Any], rules: Sequence[Rule]
) -> list[Regression]:
    """Every regression of ``summary`` against ``baseline`` under ``rules``.

    Only rows both have are judged (see the module docstring); baseline rows absent from the
    run are never regressions. Any row of the run with violations is one.

    Returns:
        Regressions in row order of the baseline (then violations of new records).
    """
    match = match_rows(baseline, summary)
    per_suite = {record_key(r)[1:] for r in summary.get("records", [])}
    out: list[Regression] = []
    for pair in match.pairs:
        pooled = pair.key[0] == ALL_SUITES and pair.key[1:] in per_suite
        out += _regressions(pair.key, pair.before, pair.after, rules, note=pair.note, pooled=pooled)
    judged = {pair.key for pair in match.pairs}
    for record in [*summary.get("records", []), *summary.get("pooled", [])]:
        key = record_key(record)
        if key in judged or (key[0] == ALL_SUITES and key[1:] in per_suite):
            continue  # judged above, or a pooled row whose suites' rows carry the violations
        violation = _violation(key, record)
        if violation is not None:
            out.append(violation)
    return out


def new_records(summary: Mapping[str, Any], baseline: Mapping[str, Any]) -> list[Key]:
    """Records of the run that the baseline does not have (noted, never a failure)."""
    return list(match_rows(baseline, summary).only_after)


def _added_lines(added: Sequence[Key], known: Iterable[tuple[str, str]] | None) -> list[str]:
    """New records, one line per strategy × embedding the baseline never ran, else per record
    (every record on its own when the baseline's pairs are not ``known``)."""
    old_pairs = None if known is None else set(known)
    groups: dict[tuple[str, str], list[str]] = {}
    lines: list[str] = []
    for suite, strategy, embedding in added:
        if old_pairs is None or (strategy, embedding) in old_pairs:
            lines.append(f"    {suite}/{strategy}/{embedding}: new, not gated")
        else:
            groups.setdefault((strategy, embedding), []).append(suite)
    for (strategy, embedding), in_suites in groups.items():
        lines.append(
            f"    {strategy}/{embedding}: new strategy, not in the baseline, not gated "
            f"({len(in_suites)} record(s): {', '.join(in_suites)})"
        )
    return lines


def format_regressions(
    regressions: Sequence[Regression],
    *,
    rules: Iterable[Rule] = (),
    added: Sequence[Key] = (),
    compared: int | None = None,
    baseline_pairs: Iterable[tuple[str, str]] | None = None,
    notes: Sequence[str] = (),
) -> str:
    """The gate's verdict: PASS/FAIL, one line per regression, then the notes.

    ``baseline_pairs`` are the (strategy, embedding) pairs of the baseline: new records of
    a pair it never ran are noted as one new strategy, the others one by one (all of them
    one by one when it is ``None``). ``notes`` are printed as they are, one per line
    (baseline rows not run, pooled rows rebuilt or skipped).
    """
    lines: list[str] = []
    rule_text = ", ".join(str(r) for r in rules)
    scope = f" over {compared} record(s)" if compared is not None else ""
    if regressions:
        lines.append(f"gate: FAIL, {len(regressions)} regression(s){scope}:")
        lines += [f"  - {r.describe()}" for r in regressions]
    else:
        lines.append(f"gate: PASS{scope}")
    if rule_text:
        lines.append(f"  rules: {rule_text}; violations must be 0")
    lines += [f"  note: {note}" for note in notes]
    if added:
        lines.append(f"  note: {len(added)} record(s) not in the baseline (new, not gated):")
        lines += _added_lines(added, baseline_pairs)
    return "\n".join(lines)


def _config_notes(summary: Mapping[str, Any], baseline: Mapping[str, Any]) -> list[str]:
    """Settings that differ without making the runs incomparable: the overrides (what a
    gate judges) and the seed (frozen datasets: the bootstrap's only). The settings that
    change what was played are :func:`run_differences`'."""
    run, base = summary.get("config") or {}, baseline.get("config") or {}
    return [
        f"  note: config {k} differs: run {run.get(k)!r}, baseline {base.get(k)!r}"
        for k in ("overrides", "seed")
        if k in run and k in base and run[k] != base[k]
    ]


def gates_cost(rules: Sequence[Rule]) -> bool:
    """Whether ``rules`` judge cost (then costs priced for another model do not compare)."""
    return any(rule.metric in _COST_METRICS for rule in rules)


def check_gate(
    run_dir: Path,
    baseline_file: Path,
    fail_on: str | None = None,
    *,
    allow_different_scenarios: bool = False,
) -> int:
    """Compare ``run_dir/summary.json`` with ``baseline_file`` and print the verdict.

    Args:
        run_dir: The run directory (or its ``summary.json``).
        baseline_file: The baseline ``summary.json`` (or a run directory holding one).
        fail_on: A rule spec (:func:`parse_fail_on`); ``None`` uses :data:`DEFAULT_FAIL_ON`.
        allow_different_scenarios: Compare even when the runs did not play the same
            scenarios (:func:`run_differences`): rows are matched as they are, and what
            differs is printed as notes.

    Returns:
        0 when the gate passes, 1 on a regression or violation (the only case that prints
        ``FAIL``), 2 on bad input or when the runs cannot be compared (``gate: cannot
        compare``, each difference named with its fix).
    """
    try:
        rules = parse_fail_on(fail_on or DEFAULT_FAIL_ON)
        summary = read_summary(Path(run_dir), what="run")
        baseline = read_summary(Path(baseline_file), what="baseline")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    setup = run_differences(baseline, summary, costs=gates_cost(rules))
    if not setup.comparable and not allow_different_scenarios:
        print(f"gate: {setup.refusal()}")
        return 2
    regressions = compare(summary, baseline, rules)
    match = match_rows(baseline, summary)
    notes = list(match.notes)
    if match.only_before:
        notes.insert(
            0,
            f"{len(match.only_before)} baseline record(s) not in this run, not gated "
            f"({describe_missing(match.only_before, summary)})",
        )
    text = format_regressions(
        regressions,
        rules=rules,
        added=list(match.only_after),
        compared=len(match.pairs),
        baseline_pairs={record_key(r)[1:] for r in baseline.get("records", [])},
        notes=[*_despite(setup), *notes],
    )
    print("\n".join([text, *_config_notes(summary, baseline)]))
    return 1 if regressions else 0


def _despite(setup: Comparability) -> list[str]:
    """The notes of a comparison made although the runs differ (as asked)."""
    if setup.comparable:
        return setup.lines()  # suites whose scenarios could not be verified, if any
    return [f"compared as asked although {setup.summary}", *setup.lines()]

"""The baseline gate: compare a run's ``summary.json`` with a committed baseline.

A rule names a metric and how far it may move in its allowed direction::

    recall_accuracy:-0.02   # may fall by up to 0.02 (absolute)
    cost_usd:+5%            # may rise by up to 5 % of the baseline value (relative)
    violations:+0           # may not rise at all

The sign is the allowed direction of change and must point the "worse" way for the metric
(:data:`memctx.harness.schema.HIGHER_IS_BETTER`); it may be left out. Records are matched by
(suite, strategy, embedding). A record of the baseline missing from the run is a regression;
a record new in the run is only noted ("new, not gated"), and a strategy the baseline never
ran (one added to the defaults, e.g. ``observation-masking``) is noted as one line: there is
nothing to compare it with. Any record with ``violations > 0`` fails the gate whatever the
rules say, new or not: an invariant holds without a baseline.

:data:`DEFAULT_FAIL_ON` applies when only a baseline is given. Timing metrics
(``hook_p50_ms``, ``hook_p95_ms``) are never gated by default: they depend on the machine
and its load. A ``--fail-on`` spec replaces the defaults (the violation check stays).
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .schema import HIGHER_IS_BETTER, all_records, upgrade_summary

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
    "recall_accuracy:-0.02,evidence_recall:-0.02,stale_rate:+0.02,"
    "cost_usd:+5%,tokens_per_call:+5%,violations:+0"
)
_SYNTAX = (
    "expected METRIC:[+|-]AMOUNT[%] separated by commas, e.g. recall_accuracy:-0.02,cost_usd:+5%"
)
_RULE = re.compile(
    r"^(?P<metric>[a-z0-9_]+):(?P<sign>[+-]?)(?P<amount>\d+(?:\.\d*)?|\.\d+)(?P<pct>%?)$"
)
_EPS = 1e-9

Key = tuple[str, str, str]


@dataclass(frozen=True)
class Rule:
    """How far one metric may move from the baseline.

    Attributes:
        metric: A key of :data:`HIGHER_IS_BETTER`.
        amount: The tolerance: absolute, or a percentage of the baseline when ``relative``.
        relative: ``amount`` is a percentage.
        direction: The allowed direction of change: ``-1`` may fall, ``+1`` may rise.
    """

    metric: str
    amount: float
    relative: bool
    direction: int

    def allowed(self, baseline: float) -> float:
        """The largest change allowed from ``baseline`` (a non-negative size)."""
        return abs(baseline) * self.amount / 100 if self.relative else self.amount

    def __str__(self) -> str:
        sign = "+" if self.direction > 0 else "-"
        return f"{self.metric}:{sign}{self.amount:g}{'%' if self.relative else ''}"


@dataclass(frozen=True)
class Regression:
    """One reason the gate fails.

    Attributes:
        key: (suite, strategy, embedding) of the record.
        metric: The metric that moved (``"record"`` when the record is missing).
        value: The run's value (``None`` when missing).
        baseline: The baseline's value (``None`` for violations without a baseline).
        rule: The rule broken, as written (or a fixed reason).
    """

    key: Key
    metric: str
    value: float | None
    baseline: float | None
    rule: str

    @property
    def delta(self) -> float | None:
        if self.value is None or self.baseline is None:
            return None
        return self.value - self.baseline

    def describe(self) -> str:
        """One line: which record, which metric, value, baseline, delta, allowed."""
        where = "/".join(self.key)
        if self.metric == "record":
            return f"{where}: record missing from the run (present in the baseline)"
        if self.rule == "violations must be 0":
            return f"{where}: violations = {_num(self.value)} (must be 0)"
        if self.value is None:
            return f"{where}: {self.metric} missing (baseline {_num(self.baseline)})"
        delta = self.delta
        change = "" if delta is None else f", delta {delta:+.4g}"
        if delta is not None and self.baseline:
            change += f" ({delta / abs(self.baseline):+.1%})"
        return (
            f"{where}: {self.metric} = {_num(self.value)} vs baseline {_num(self.baseline)}"
            f"{change}; allowed {self.rule}"
        )


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def parse_fail_on(spec: str) -> list[Rule]:
    """Parse ``"recall_accuracy:-0.02,cost_usd:+5%"`` into rules.

    Raises:
        ValueError: A malformed item, an unknown metric, or a sign pointing the better way
            (the message gives the expected syntax).
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
        if metric not in HIGHER_IS_BETTER:
            raise ValueError(
                f"--fail-on: unknown metric {metric!r}; gateable: {', '.join(HIGHER_IS_BETTER)}"
            )
        worse = -HIGHER_IS_BETTER[metric]
        direction = {"+": 1, "-": -1, "": worse}[match["sign"]]
        if direction != worse:
            way = "rise" if worse > 0 else "fall"
            raise ValueError(
                f"--fail-on {item!r}: {metric} gets worse when it {way}s, so the tolerance "
                f"is how far it may {way}: write {metric}:{'+' if worse > 0 else '-'}"
                f"{match['amount']}{match['pct']}"
            )
        rules.append(Rule(metric, float(match["amount"]), bool(match["pct"]), direction))
    return rules


def _key(record: Mapping[str, Any]) -> Key:
    return (str(record["suite"]), str(record["strategy"]), str(record["embedding"]))


def _by_key(summary: Mapping[str, Any]) -> dict[Key, Mapping[str, Any]]:
    return {_key(r): r for r in all_records(summary)}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if math.isnan(value) else float(value)


def compare(
    summary: Mapping[str, Any], baseline: Mapping[str, Any], rules: Sequence[Rule]
) -> list[Regression]:
    """Every regression of ``summary`` against ``baseline`` under ``rules``.

    Returns:
        Regressions in record order of the baseline (then violations of new records).
    """
    run = _by_key(summary)
    base = _by_key(baseline)
    out: list[Regression] = []
    for key, old in base.items():
        new = run.get(key)
        if new is None:
            out.append(Regression(key, "record", None, None, "present in the baseline"))
            continue
        violations = _number(new.get("violations")) or 0.0
        if violations > 0:
            out.append(Regression(key, "violations", violations, None, "violations must be 0"))
        for rule in rules:
            if rule.metric == "violations" and violations > 0:
                continue  # reported above
            was = _number(old.get(rule.metric))
            if was is None:
                continue  # nothing to compare with
            now = _number(new.get(rule.metric))
            if now is None:
                out.append(Regression(key, rule.metric, None, was, str(rule)))
                continue
            if (now - was) * rule.direction > rule.allowed(was) + _EPS:
                out.append(Regression(key, rule.metric, now, was, str(rule)))
    for key, new in run.items():
        violations = _number(new.get("violations")) or 0.0
        if key not in base and violations > 0:
            out.append(Regression(key, "violations", violations, None, "violations must be 0"))
    return out


def new_records(summary: Mapping[str, Any], baseline: Mapping[str, Any]) -> list[Key]:
    """Records of the run that the baseline does not have (noted, never a failure)."""
    base = _by_key(baseline)
    return [key for key in _by_key(summary) if key not in base]


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
) -> str:
    """The gate's verdict: PASS/FAIL, one line per regression, new records noted.

    ``baseline_pairs`` are the (strategy, embedding) pairs of the baseline: new records of
    a pair it never ran are noted as one new strategy, the others one by one (all of them
    one by one when it is ``None``).
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
    if added:
        lines.append(f"  note: {len(added)} record(s) not in the baseline (new, not gated):")
        lines += _added_lines(added, baseline_pairs)
    return "\n".join(lines)


def _load_summary(path: Path, what: str) -> dict[str, Any]:
    if path.is_dir():
        path = path / "summary.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{what} {path} does not exist") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {what} {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("records"), list):
        raise ValueError(f"{what} {path} is not a summary.json (no 'records' list)")
    return upgrade_summary(data)


def _config_notes(summary: Mapping[str, Any], baseline: Mapping[str, Any]) -> list[str]:
    run, base = summary.get("config") or {}, baseline.get("config") or {}
    keys = ("quick", "suites", "windows", "overrides", "answer_model", "seed", "llm")
    return [
        f"  note: config {k} differs: run {run.get(k)!r}, baseline {base.get(k)!r}"
        for k in keys
        if k in run and k in base and run[k] != base[k]
    ]


def check_gate(run_dir: Path, baseline_file: Path, fail_on: str | None = None) -> int:
    """Compare ``run_dir/summary.json`` with ``baseline_file`` and print the verdict.

    Args:
        run_dir: The run directory (or its ``summary.json``).
        baseline_file: The baseline ``summary.json`` (or a run directory holding one).
        fail_on: A rule spec (:func:`parse_fail_on`); ``None`` uses :data:`DEFAULT_FAIL_ON`.

    Returns:
        0 when the gate passes, 1 on a regression or violation, 2 on bad input.
    """
    try:
        rules = parse_fail_on(fail_on or DEFAULT_FAIL_ON)
        summary = _load_summary(Path(run_dir), "run summary")
        baseline = _load_summary(Path(baseline_file), "baseline")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    regressions = compare(summary, baseline, rules)
    text = format_regressions(
        regressions,
        rules=rules,
        added=new_records(summary, baseline),
        compared=len(all_records(baseline)),
        baseline_pairs={key[1:] for key in _by_key(baseline)},
    )
    print("\n".join([text, *_config_notes(summary, baseline)]))
    return 1 if regressions else 0

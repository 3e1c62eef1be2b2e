"""The baseline gate: rule parsing, comparison, messages and exit codes."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers.synthetic_run import build_run, write_run

from memctx.harness.gate import (
    DEFAULT_FAIL_ON,
    Rule,
    check_gate,
    compare,
    format_regressions,
    new_records,
    parse_fail_on,
)


@pytest.fixture(scope="module")
def summary() -> dict[str, Any]:
    return build_run().summary


def _record(summary: dict[str, Any], suite: str, strategy: str, embedding: str) -> dict[str, Any]:
    for record in summary["records"]:
        if (record["suite"], record["strategy"], record["embedding"]) == (
            suite,
            strategy,
            embedding,
        ):
            return record  # type: ignore[no-any-return]
    raise KeyError(suite)


def test_parse_absolute_relative_and_unsigned_rules() -> None:
    rules = parse_fail_on("recall_accuracy:-0.02, cost_usd:+5%,violations:+0,stale_rate:0.1")
    assert rules == [
        Rule("recall_accuracy", 0.02, False, -1),
        Rule("cost_usd", 5.0, True, 1),
        Rule("violations", 0.0, False, 1),
        Rule("stale_rate", 0.1, False, 1),  # no sign: the metric's worse direction
    ]
    assert str(rules[1]) == "cost_usd:+5%"
    assert [r.metric for r in parse_fail_on(DEFAULT_FAIL_ON)] == [
        "recall_accuracy",
        "evidence_recall",
        "stale_rate",
        "cost_usd",
        "tokens_per_call",
        "violations",
    ]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("recall_accuracy", "expected METRIC:"),
        ("recall_accuracy:-x", "expected METRIC:"),
        ("recall_accuracy:--2", "expected METRIC:"),
        ("", "empty"),
        ("accuracy:-0.02", "unknown metric 'accuracy'"),
        ("recall_accuracy:+0.02", "write recall_accuracy:-0.02"),
        ("cost_usd:-5%", "write cost_usd:+5%"),
    ],
)
def test_bad_specs_say_the_expected_syntax(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_fail_on(spec)


def test_identical_summary_passes(summary: dict[str, Any]) -> None:
    assert compare(summary, summary, parse_fail_on(DEFAULT_FAIL_ON)) == []
    assert format_regressions([]).startswith("gate: PASS")


def test_absolute_rule_catches_a_drop_beyond_the_tolerance(summary: dict[str, Any]) -> None:
    run = copy.deepcopy(summary)
    _record(run, "needle", "memory-context", "hash")["recall_accuracy"] -= 0.05
    _record(run, "cjk", "memory-context", "hash")["recall_accuracy"] -= 0.01  # within tolerance
    regressions = compare(run, summary, parse_fail_on("recall_accuracy:-0.02"))
    assert [(r.key, r.metric) for r in regressions] == [
        (("needle", "memory-context", "hash"), "recall_accuracy")
    ]
    line = regressions[0].describe()
    assert "needle/memory-context/hash: recall_accuracy" in line
    assert "delta -0.05" in line and "allowed recall_accuracy:-0.02" in line
    # Improvements never fail.
    _record(run, "needle", "memory-context", "hash")["recall_accuracy"] = 1.0
    assert compare(run, summary, parse_fail_on("recall_accuracy:-0.02")) == []


def test_relative_rule_scales_with_the_baseline(summary: dict[str, Any]) -> None:
    run = copy.deepcopy(summary)
    base = _record(summary, "all", "truncate", "none")["cost_usd"]
    _record(run, "all", "truncate", "none")["cost_usd"] = base * 1.04
    assert compare(run, summary, parse_fail_on("cost_usd:+5%")) == []
    _record(run, "all", "truncate", "none")["cost_usd"] = base * 1.07
    (regression,) = compare(run, summary, parse_fail_on("cost_usd:+5%"))
    assert regression.metric == "cost_usd"
    assert regression.delta == pytest.approx(base * 0.07)
    assert "(+7.0%)" in regression.describe() and "allowed cost_usd:+5%" in regression.describe()


def test_missing_record_fails_and_new_record_is_only_noted(summary: dict[str, Any]) -> None:
    run = copy.deepcopy(summary)
    run["records"] = [r for r in run["records"] if r["suite"] != "cjk"]
    extra = dict(_record(summary, "all", "truncate", "none"), strategy="planner")
    run["records"].append(extra)
    regressions = compare(run, summary, parse_fail_on("recall_accuracy:-0.02"))
    assert {r.key for r in regressions} == {
        ("cjk", "full", "none"),
        ("cjk", "truncate", "none"),
        ("cjk", "memory-context", "hash"),
        ("cjk", "memory-context", "transformer"),
    }
    assert all("record missing from the run" in r.describe() for r in regressions)
    added = new_records(run, summary)
    assert added == [("all", "planner", "none")]
    text = format_regressions(regressions, added=added)
    assert "gate: FAIL, 4 regression(s)" in text and "all/planner/-" in text


def test_violations_always_fail_even_without_a_rule(summary: dict[str, Any]) -> None:
    run = copy.deepcopy(summary)
    _record(run, "secrets", "memory-context", "hash")["violations"] = 2
    baseline = copy.deepcopy(run)  # a baseline with the same violations does not excuse them
    regressions = compare(run, baseline, parse_fail_on("cost_usd:+5%"))
    assert [r.describe() for r in regressions] == [
        "secrets/memory-context/hash: violations = 2 (must be 0)"
    ]
    # The violations rule does not report the same record twice.
    assert len(compare(run, summary, parse_fail_on("violations:+0"))) == 1


def test_missing_metric_value_is_a_regression(summary: dict[str, Any]) -> None:
    run = copy.deepcopy(summary)
    _record(run, "all", "full", "none")["recall_accuracy"] = None
    (regression,) = compare(run, summary, parse_fail_on("recall_accuracy:-0.02"))
    assert "recall_accuracy missing" in regression.describe()


def test_check_gate_exit_codes_and_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    synthetic = build_run()
    run_dir = write_run(tmp_path / "run", synthetic)
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(synthetic.summary), encoding="utf-8")
    assert check_gate(run_dir, baseline, None) == 0
    out = capsys.readouterr().out
    assert "gate: PASS over 40 record(s)" in out and "tokens_per_call:+5%" in out

    worse = copy.deepcopy(synthetic)
    worse.record("all", "memory-context", "hash")["tokens_per_call"] *= 1.2
    worse.summary["config"]["quick"] = False
    write_run(run_dir, worse)
    assert check_gate(run_dir, baseline, None) == 1
    out = capsys.readouterr().out
    assert "all/memory-context/hash: tokens_per_call" in out and "(+20.0%)" in out
    assert "note: config quick differs" in out
    # Timing is not gated by default, only when asked.
    worse.record("all", "truncate", "none")["hook_p95_ms"] *= 10
    write_run(run_dir, worse)
    assert "hook_p95_ms" not in (check_gate(run_dir, baseline, None), capsys.readouterr().out)[1]
    assert check_gate(run_dir, baseline, "hook_p95_ms:+50%") == 1
    assert "hook_p95_ms" in capsys.readouterr().out
    # A run directory is accepted as the baseline too.
    assert check_gate(run_dir, run_dir, None) == 0


def test_check_gate_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = write_run(tmp_path / "run")
    assert check_gate(run_dir, tmp_path / "nope.json", None) == 2
    assert "nope.json does not exist" in capsys.readouterr().err
    assert check_gate(run_dir, run_dir / "summary.json", "cost_usd:5 percent") == 2
    assert "expected METRIC:" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("[1, 2]", encoding="utf-8")
    assert check_gate(run_dir, tmp_path / "bad.json", None) == 2
    assert "not a summary.json" in capsys.readouterr().err


def test_the_committed_baseline_passes_its_own_checks_and_gate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # reports/baseline/ is what `make gate` compares with: it must be a complete, clean run
    # of the frozen datasets with every check holding (a regressed baseline must not land).
    from memctx.harness.report.checks import run_checks
    from memctx.harness.report.report import load_probes, load_summary

    root = Path(__file__).resolve().parents[2] / "reports" / "baseline"
    summary = load_summary(root)
    checks = run_checks(summary, load_probes(root))
    assert [c.ok for c in checks] == [True] * len(checks), [c.text for c in checks]
    assert summary["provenance"]["datasets"] == "datasets/v1"
    assert summary["provenance"]["git"]["dirty"] is False
    assert {r["embedding"] for r in summary["records"]} == {"-", "hash", "transformer"}
    assert check_gate(root, root / "summary.json") == 0
    assert "gate: PASS" in capsys.readouterr().out


def _with_new_strategy(summary: dict[str, Any], name: str) -> dict[str, Any]:
    """``summary`` plus a strategy the baseline never ran (a copy of truncate's records)."""
    run = copy.deepcopy(summary)
    run["records"] += [
        dict(r, strategy=name, recall_accuracy=0.0, cost_usd=1e9)
        for r in summary["records"]
        if r["strategy"] == "truncate"
    ]
    return run


def test_a_strategy_new_in_the_run_is_noted_never_gated(
    summary: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # observation-masking joined the default list after the baseline was made: its records
    # have nothing to compare with, however they look.
    run = _with_new_strategy(summary, "observation-masking")
    assert compare(run, summary, parse_fail_on(DEFAULT_FAIL_ON)) == []
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "summary.json").write_text(json.dumps(run), encoding="utf-8")
    (tmp_path / "base.json").write_text(json.dumps(summary), encoding="utf-8")
    assert check_gate(tmp_path / "run", tmp_path / "base.json") == 0
    out = capsys.readouterr().out
    assert "gate: PASS over 40 record(s)" in out
    assert "note: 10 record(s) not in the baseline (new, not gated):" in out
    assert (
        "observation-masking/-: new strategy, not in the baseline, not gated (10 record(s): " in out
    )
    assert out.count("observation-masking") == 1  # one line, not one per record
    # A new suite of a strategy the baseline ran is noted record by record.
    text = format_regressions(
        [], added=[("my-suite", "truncate", "none")], baseline_pairs=[("truncate", "none")]
    )
    assert "my-suite/truncate/-: new, not gated" in text


def test_a_baseline_record_missing_still_fails_and_new_violations_still_fail(
    summary: dict[str, Any],
) -> None:
    run = _with_new_strategy(summary, "observation-masking")
    run["records"] = [r for r in run["records"] if r["strategy"] != "truncate"]
    regressions = compare(run, summary, parse_fail_on(DEFAULT_FAIL_ON))
    assert {r.key[1] for r in regressions} == {"truncate"} and len(regressions) == 10
    assert all(r.metric == "record" for r in regressions)
    # Invariants hold without a baseline: a violation in a new record fails the gate.
    run = _with_new_strategy(summary, "observation-masking")
    _record(run, "needle", "observation-masking", "none")["violations"] = 1
    (violation,) = compare(run, summary, parse_fail_on(DEFAULT_FAIL_ON))
    assert violation.describe() == "needle/observation-masking/-: violations = 1 (must be 0)"

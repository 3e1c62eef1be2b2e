"""The baseline gate: rule parsing, what is compared, the noise rule, messages and exit codes."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers.synthetic_run import build_run, write_run

from memctx.harness import (
    DEFAULT_FAIL_ON,
    bootstrap_ci,
    check_gate,
    compare,
    parse_fail_on,
    pool_records,
)
from memctx.harness.gate import Rule, format_regressions, new_records


@pytest.fixture(scope="module")
def summary() -> dict[str, Any]:
    return build_run().summary


def _record(summary: dict[str, Any], suite: str, strategy: str, embedding: str) -> dict[str, Any]:
    for record in summary["records"] + summary["pooled"]:
        if (record["suite"], record["strategy"], record["embedding"]) == (
            suite,
            strategy,
            embedding,
        ):
            return record  # type: ignore[no-any-return]
    raise KeyError((suite, strategy, embedding))


def _share_record(
    suite: str, correct: int, n: int, strategy: str = "memory-context", embedding: str = "hash"
) -> dict[str, Any]:
    """A record whose shares are ``correct`` of ``n`` probes, with the bootstrap intervals
    the harness computes for them (:func:`memctx.harness.bootstrap_ci`)."""
    flags = [1.0] * correct + [0.0] * (n - correct)
    share, ci = round(correct / n, 4), bootstrap_ci(flags)
    return {
        "suite": suite,
        "strategy": strategy,
        "embedding": embedding,
        "probes": n,
        "fit": n,
        "recall_accuracy": share,
        "recall_accuracy_ci": ci,
        "tool_accuracy": share,
        "evidence_recall": share,
        "evidence_recall_ci": ci,
        "stale_rate": 0.0,
        "tokens_per_call": 13_000.0,
        "recall_tokens": 900.0,
        "llm_tokens": 0,
        "cost_usd": 4.5,
        "cached_share": 0.84,
        "calls": 289,
        "violations": 0,
    }


def _summary(
    records: list[dict[str, Any]], pooled: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {"schema": 2, "records": records, "pooled": pooled or []}


def _write(path: Path, summary: dict[str, Any]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    return path


# -- rules -----------------------------------------------------------------------------------


def test_parse_every_form_of_rule() -> None:
    rules = parse_fail_on(
        "recall_accuracy:-0.02, cost_per_call:+5%,violations:+0,stale_rate:0.1,"
        "tool_accuracy:-2p,evidence_recall:ci,recall_accuracy:-ci,stale_rate:1.5p"
    )
    assert rules == [
        Rule("recall_accuracy", 0.02, -1),
        Rule("cost_per_call", 5.0, 1, "%"),
        Rule("violations", 0.0, 1),
        Rule("stale_rate", 0.1, 1),  # no sign: the metric's worse direction
        Rule("tool_accuracy", 2.0, -1, "p"),
        Rule("evidence_recall", 0.0, -1, "ci"),
        Rule("recall_accuracy", 0.0, -1, "ci"),
        Rule("stale_rate", 1.5, 1, "p"),
    ]
    assert [str(r) for r in rules[:2] + rules[4:6]] == [
        "recall_accuracy:-0.02",
        "cost_per_call:+5%",
        "tool_accuracy:-2p",
        "evidence_recall:ci",
    ]


def test_the_default_judges_shares_against_the_noise() -> None:
    rules = {r.metric: str(r) for r in parse_fail_on(DEFAULT_FAIL_ON)}
    assert rules == {
        "recall_accuracy": "recall_accuracy:ci",
        "tool_accuracy": "tool_accuracy:ci",
        "evidence_recall": "evidence_recall:ci",
        "stale_rate": "stale_rate:ci",
        "cost_per_call": "cost_per_call:+5%",
        "tokens_per_call": "tokens_per_call:+5%",
        "violations": "violations:+0",
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("recall_accuracy", "expected METRIC:"),
        ("recall_accuracy:-x", "expected METRIC:"),
        ("recall_accuracy:--2", "expected METRIC:"),
        ("recall_accuracy:ci%", "expected METRIC:"),
        ("recall_accuracy:2q", "e.g. recall_accuracy:ci,tool_accuracy:-2p,cost_per_call:+5%"),
        ("", "empty"),
        ("accuracy:-0.02", "unknown metric 'accuracy'"),
        ("recall_accuracy:+0.02", "write recall_accuracy:-0.02"),
        ("recall_accuracy:+2p", "write recall_accuracy:-2p"),
        ("recall_accuracy:+ci", "write recall_accuracy:-ci"),
        ("cost_per_call:-5%", "write cost_per_call:+5%"),
        ("cost_per_call:ci", "'p' and 'ci' apply to shares of probes"),
        ("cost_usd:+5%", "cost_usd is the run's total"),
        ("cost_usd:+5%", "gate cost_per_call:+5% instead"),
        ("tokens_per_call:+3p", "for tokens_per_call write an amount or a percentage"),
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
    record = _record(summary, "all", "truncate", "none")
    per_call = record["cost_usd"] / record["calls"]
    _record(run, "all", "truncate", "none")["cost_usd"] = record["cost_usd"] * 1.04
    assert compare(run, summary, parse_fail_on("cost_per_call:+5%")) == []
    _record(run, "all", "truncate", "none")["cost_usd"] = record["cost_usd"] * 1.07
    (regression,) = compare(run, summary, parse_fail_on("cost_per_call:+5%"))
    assert regression.metric == "cost_per_call"
    assert regression.delta == pytest.approx(per_call * 0.07)
    assert "(+7.0%)" in regression.describe()
    assert "allowed cost_per_call:+5%" in regression.describe()


def test_cost_is_judged_per_call_not_as_the_total(summary: dict[str, Any]) -> None:
    # Half the calls at 1.5 times the price each: the total falls by a quarter, and a rule
    # on the total would pass it; the per-call rule fails it.
    run = copy.deepcopy(summary)
    base = _record(summary, "needle", "memory-context", "hash")
    record = _record(run, "needle", "memory-context", "hash")
    record["calls"] = base["calls"] // 2
    record["cost_usd"] = base["cost_usd"] / base["calls"] * 1.5 * record["calls"]
    assert record["cost_usd"] < base["cost_usd"]
    (regression,) = compare(run, summary, parse_fail_on(DEFAULT_FAIL_ON))
    assert (regression.key, regression.metric) == (
        ("needle", "memory-context", "hash"),
        "cost_per_call",
    )
    assert regression.value == pytest.approx(base["cost_usd"] / base["calls"] * 1.5)
    assert "(+50.0%)" in regression.describe()
    # The converse: more calls at a lower price each is not a regression, dearer in total.
    record["calls"] = base["calls"] * 2
    record["cost_usd"] = base["cost_usd"] * 1.8
    assert compare(run, summary, parse_fail_on(DEFAULT_FAIL_ON)) == []


def test_a_probe_rule_counts_probes_of_the_baseline_row() -> None:
    base = _summary([_share_record("needle", 39, 44)])
    rules = parse_fail_on("recall_accuracy:-2p")
    # 39 -> 37 of 44: 0.8864 - 0.8409 = 0.0455, a hair over 2/44 = 0.04545 from the 4-place
    # rounding of the figures; still two probes.
    assert compare(_summary([_share_record("needle", 37, 44)]), base, rules) == []
    (regression,) = compare(_summary([_share_record("needle", 36, 44)]), base, rules)
    assert regression.metric == "recall_accuracy"
    assert "allowed recall_accuracy:-2p (here 0.04555)" in regression.describe()
    # The same fall over 380 probes is many more probes' worth.
    big = _summary([_share_record("needle", 300, 380)])
    assert compare(_summary([_share_record("needle", 297, 380)]), big, rules) != []


# -- the noise rule: one probe never, a real regression always --------------------------------


@pytest.mark.parametrize("correct", range(1, 45))
def test_one_flipped_probe_in_44_never_fails_the_default_gate(correct: int) -> None:
    base = _summary([_share_record("needle", correct, 44)])
    run = _summary([_share_record("needle", correct - 1, 44)])
    assert compare(run, base, parse_fail_on(DEFAULT_FAIL_ON)) == []
    # ... where the old default (recall_accuracy:-0.02, finer than one probe) failed it.
    assert compare(run, base, parse_fail_on("recall_accuracy:-0.02")) != []


def test_a_real_regression_fails_the_default_gate() -> None:
    # needle x memory-context x hash with --set hardCapTokens=60: 37 of 44 -> 8 of 44.
    base = _summary([_share_record("needle", 37, 44)])
    run = _summary([_share_record("needle", 8, 44)])
    regressions = compare(run, base, parse_fail_on(DEFAULT_FAIL_ON))
    assert {r.metric for r in regressions} == {
        "recall_accuracy",
        "tool_accuracy",
        "evidence_recall",
    }
    line = regressions[0].describe()
    assert "recall_accuracy = 0.1818 vs baseline 0.8409" in line
    assert "allowed recall_accuracy:ci (here 0.19" in line
    assert re.search(r"95 % intervals: baseline 0\.70\d*-0\.9\d*, run 0\.0\d*-0\.3\d*;", line)
    # Where the line falls: a suite of 44 probes at 37 fails from 9 probes, not 8.
    rule = parse_fail_on("recall_accuracy:ci")
    assert compare(_summary([_share_record("needle", 29, 44)]), base, rule) == []
    assert compare(_summary([_share_record("needle", 28, 44)]), base, rule)


def test_the_noise_shrinks_with_more_probes() -> None:
    # Pooled over 380 probes a 7-point fall is beyond the noise, a 4-point one is not.
    base = _summary([_share_record("all-like", 276, 380)])
    rules = parse_fail_on("recall_accuracy:ci")
    assert compare(_summary([_share_record("all-like", 261, 380)]), base, rules) == []
    assert compare(_summary([_share_record("all-like", 249, 380)]), base, rules) != []


def test_a_perfect_baseline_is_not_a_zero_width_interval() -> None:
    # The bootstrap of 44 of 44 is [1, 1]; one or two misses are still within the noise.
    base = _summary([_share_record("needle", 44, 44)])
    assert base["records"][0]["recall_accuracy_ci"] == [1.0, 1.0]
    rules = parse_fail_on("recall_accuracy:ci")
    assert compare(_summary([_share_record("needle", 42, 44)]), base, rules) == []
    assert compare(_summary([_share_record("needle", 30, 44)]), base, rules) != []


# -- what is compared ------------------------------------------------------------------------


def _subset(
    summary: dict[str, Any], suites: set[str], drop: set[tuple[str, str]]
) -> dict[str, Any]:
    """``summary`` as a run of fewer suites and strategies would write it: its records, the
    checksums of those suites' scenarios, and pooled rows over those suites."""
    run = copy.deepcopy(summary)
    played = run["provenance"]["scenarios"]
    run["provenance"]["scenarios"] = {s: played[s] for s in played if s in suites}
    run["records"] = [
        r
        for r in run["records"]
        if r["suite"] in suites and (r["strategy"], r["embedding"]) not in drop
    ]
    pairs = dict.fromkeys((r["strategy"], r["embedding"]) for r in run["records"])
    run["pooled"] = [
        pool_records([r for r in run["records"] if (r["strategy"], r["embedding"]) == pair])
        for pair in pairs
    ]
    return run


def test_a_subset_run_is_refused_unless_asked_then_passes_when_nothing_changed(
    summary: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _subset(summary, {"needle", "cjk"}, {("memory-context", "transformer")})
    run_dir = _write(tmp_path / "run", run)
    base = _write(tmp_path / "base", summary)
    assert check_gate(run_dir, base) == 2
    out = capsys.readouterr().out
    assert out.startswith("gate: cannot compare this run with the baseline: different suites")
    assert "only the baseline played supersede, paraphrase, tool-heavy" in out
    assert "suites both runs played on the same scenarios: needle, cjk" in out
    assert "--allow-different-scenarios" in out and "FAIL" not in out
    # Asked to: the suites both ran are gated, the rest noted.
    assert check_gate(run_dir, base, allow_different_scenarios=True) == 0
    out = capsys.readouterr().out
    assert out.startswith("gate: PASS over 9 record(s)")  # 2 suites x 3 pairs + 3 pooled
    assert "FAIL" not in out and "missing" not in out
    assert "note: compared as asked although different suites (only in the baseline: " in out
    (line,) = [x for x in out.splitlines() if "not in this run" in x]
    assert line.startswith("  note: 31 baseline record(s) not in this run, not gated (suites")
    assert "strategy/embedding not run: memory-context/transformer" in line
    for suite in ("cross-session", "long-haul", "paraphrase", "secrets", "supersede"):
        assert suite in line
    assert "rebuilt from its per-suite records over the suites both ran (needle, cjk)" in out


def _three_suites(
    acc: tuple[int, int, int], tokens: tuple[float, float, float]
) -> list[dict[str, Any]]:
    records = []
    for suite, correct, per_call in zip(("alpha", "beta", "gamma"), acc, tokens, strict=True):
        record = _share_record(suite, correct, 44, "truncate", "none")
        record["tokens_per_call"] = per_call
        records.append(record)
    return records


def test_pooled_rows_over_different_suites_are_not_compared_naively() -> None:
    records = _three_suites((40, 9, 13), (30_000.0, 9_000.0, 11_000.0))
    baseline = _summary(records, [pool_records(records)])
    run_records = copy.deepcopy(records[1:])  # beta and gamma only, unchanged
    run = _summary(run_records, [pool_records(run_records)])
    naive = (baseline["pooled"][0]["recall_accuracy"], run["pooled"][0]["recall_accuracy"])
    assert naive == pytest.approx((62 / 132, 22 / 88), abs=1e-4)  # 47 % "fell" to 25 %
    assert compare(run, baseline, parse_fail_on(DEFAULT_FAIL_ON)) == []
    # The rebuilt figure is still judged: a pooled regression there fails, and says how the
    # baseline's figure was made.
    run["pooled"][0]["tokens_per_call"] *= 1.2
    (regression,) = compare(run, baseline, parse_fail_on(DEFAULT_FAIL_ON))
    assert regression.key == ("all", "truncate", "none")
    assert regression.baseline == pytest.approx((9_000 + 11_000) / 2)
    assert "baseline figure pooled from its records over the 2 suites both ran" in (
        regression.describe()
    )


def test_pooled_rows_over_suites_the_baseline_lacks_are_noted_not_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = _three_suites((40, 9, 13), (30_000.0, 9_000.0, 11_000.0))
    baseline = _summary(records[:2], [pool_records(records[:2])])
    run_records = copy.deepcopy(records[1:])
    run_records[0] = _share_record("beta", 0, 44, "truncate", "none")  # beta collapsed
    run = _summary(run_records, [pool_records(run_records)])
    regressions = compare(run, baseline, parse_fail_on("recall_accuracy:ci"))
    assert [r.key for r in regressions] == [("beta", "truncate", "none")]
    run_dir, base_dir = _write(tmp_path / "run", run), _write(tmp_path / "base", baseline)
    assert check_gate(run_dir, base_dir) == 2  # gamma: a suite the baseline never played
    assert "only this run played gamma" in capsys.readouterr().out
    assert check_gate(run_dir, base_dir, allow_different_scenarios=True) == 1
    out = capsys.readouterr().out
    assert "pooled rows not compared (different suites): truncate/none" in out
    assert "suites only in the after run: gamma" in out


def test_a_pooled_row_over_one_suite_is_not_compared_twice(summary: dict[str, Any]) -> None:
    run = _subset(summary, {"needle"}, set())
    _record(run, "needle", "memory-context", "hash")["recall_accuracy"] = 0.0
    _record(run, "all", "memory-context", "hash")["recall_accuracy"] = 0.0
    regressions = compare(run, summary, parse_fail_on("recall_accuracy:-0.02"))
    assert [r.key for r in regressions] == [("needle", "memory-context", "hash")]


def test_a_schema_1_baseline_compares_with_a_schema_2_run(summary: dict[str, Any]) -> None:
    old = copy.deepcopy(summary)
    old["schema"] = 1
    old["records"] = [
        {**r, "embedding": "-" if r["embedding"] == "none" else r["embedding"]}
        for r in old["records"] + old.pop("pooled")
    ]
    assert compare(summary, old, parse_fail_on(DEFAULT_FAIL_ON)) == []
    assert new_records(summary, old) == []
    worse = copy.deepcopy(summary)
    _record(worse, "needle", "truncate", "none")["tokens_per_call"] *= 2
    (regression,) = compare(worse, old, parse_fail_on(DEFAULT_FAIL_ON))  # rows did pair
    assert regression.key == ("needle", "truncate", "none")


# -- violations, missing values, new records -------------------------------------------------


def test_violations_always_fail_even_without_a_rule(summary: dict[str, Any]) -> None:
    run = copy.deepcopy(summary)
    _record(run, "secrets", "memory-context", "hash")["violations"] = 2
    _record(run, "all", "memory-context", "hash")["violations"] = 2  # as a run pools them
    baseline = copy.deepcopy(run)  # a baseline with the same violations does not excuse them
    regressions = compare(run, baseline, parse_fail_on("cost_per_call:+5%"))
    assert [r.describe() for r in regressions] == [
        "secrets/memory-context/hash: violations = 2 (must be 0)"
    ]
    # The violations rule does not report the same record twice, nor its pooled row.
    assert len(compare(run, summary, parse_fail_on("violations:+0"))) == 1


def test_missing_metric_value_is_a_regression(summary: dict[str, Any]) -> None:
    run = copy.deepcopy(summary)
    _record(run, "all", "full", "none")["recall_accuracy"] = None
    (regression,) = compare(run, summary, parse_fail_on("recall_accuracy:-0.02"))
    assert "recall_accuracy missing" in regression.describe()


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
    assert check_gate(_write(tmp_path / "run", run), _write(tmp_path / "base", summary)) == 0
    out = capsys.readouterr().out
    assert "gate: PASS over 40 record(s)" in out
    assert "note: 9 record(s) not in the baseline (new, not gated):" in out
    assert (
        "observation-masking/none: new strategy, not in the baseline, not gated (9 record(s): "
        in out
    )
    assert out.count("observation-masking") == 1  # one line, not one per record
    # A new suite of a strategy the baseline ran is noted record by record.
    text = format_regressions(
        [], added=[("my-suite", "truncate", "none")], baseline_pairs=[("truncate", "none")]
    )
    assert "my-suite/truncate/none: new, not gated" in text


def test_new_violations_fail_and_absent_baseline_records_do_not(summary: dict[str, Any]) -> None:
    run = _with_new_strategy(summary, "observation-masking")
    run["records"] = [r for r in run["records"] if r["strategy"] != "truncate"]
    run["pooled"] = [r for r in run["pooled"] if r["strategy"] != "truncate"]
    assert compare(run, summary, parse_fail_on(DEFAULT_FAIL_ON)) == []
    # Invariants hold without a baseline: a violation in a new record fails the gate.
    _record(run, "needle", "observation-masking", "none")["violations"] = 1
    (violation,) = compare(run, summary, parse_fail_on(DEFAULT_FAIL_ON))
    assert violation.describe() == "needle/observation-masking/none: violations = 1 (must be 0)"


# -- check_gate: output and exit codes -------------------------------------------------------


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
    worse.summary["config"]["overrides"] = {"hardCapTokens": 300}
    write_run(run_dir, worse)
    assert check_gate(run_dir, baseline, None) == 1
    out = capsys.readouterr().out
    assert "all/memory-context/hash: tokens_per_call" in out and "(+20.0%)" in out
    assert "note: config overrides differs: run {'hardCapTokens': 300}, baseline {}" in out
    # Timing is not gated by default, only when asked.
    worse.record("all", "truncate", "none")["hook_p95_ms"] *= 10
    write_run(run_dir, worse)
    assert "hook_p95_ms" not in (check_gate(run_dir, baseline, None), capsys.readouterr().out)[1]
    assert check_gate(run_dir, baseline, "hook_p95_ms:+50%") == 1
    assert "hook_p95_ms" in capsys.readouterr().out
    # A run directory is accepted as the baseline too.
    assert check_gate(run_dir, run_dir, None) == 0


def _scenarios(summary: dict[str, Any]) -> dict[str, tuple[dict[str, Any], str | None]]:
    regressed = copy.deepcopy(summary)
    _record(regressed, "needle", "memory-context", "hash").update(
        recall_accuracy=0.1, recall_accuracy_ci=[0.03, 0.2]
    )
    violated = copy.deepcopy(summary)
    _record(violated, "cjk", "truncate", "none")["violations"] = 1
    return {
        "same": (summary, None),
        "subset": (_subset(summary, {"needle"}, {("truncate", "none")}), None),
        "new strategy": (_with_new_strategy(summary, "planner"), None),
        "regression": (regressed, None),
        "violation": (violated, "cost_per_call:+5%"),
    }


@pytest.mark.parametrize("name", ["same", "subset", "new strategy", "regression", "violation"])
def test_a_printed_fail_always_exits_non_zero(
    name: str, summary: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, spec = _scenarios(summary)[name]
    status = check_gate(_write(tmp_path / "run", run), _write(tmp_path / "base", summary), spec)
    captured = capsys.readouterr()
    printed = captured.out + captured.err
    assert ("FAIL" in printed) == (status == 1), printed
    assert ("cannot compare" in printed) == (status == 2), printed
    assert status == {"regression": 1, "violation": 1, "subset": 2}.get(name, 0)


def test_check_gate_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = write_run(tmp_path / "run")
    assert check_gate(run_dir, tmp_path / "nope.json", None) == 2
    assert "nope.json does not exist" in capsys.readouterr().err
    assert check_gate(run_dir, run_dir / "summary.json", "cost_usd:5 percent") == 2
    assert "expected METRIC:" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("[1, 2]", encoding="utf-8")
    assert check_gate(run_dir, tmp_path / "bad.json", None) == 2
    assert "not a summary.json" in capsys.readouterr().err
    assert check_gate(tmp_path / "no-such-run", run_dir, None) == 2
    err = capsys.readouterr().err
    assert "no-such-run does not exist; pass a summary.json, a run folder" in err
    assert "FAIL" not in err


def test_the_committed_baseline_passes_its_own_checks_and_gate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # reports/baseline/ is what `make gate` compares with: it must be a complete, clean run
    # of the frozen datasets with every check holding (a regressed baseline must not land).
    from memctx.harness.report import load_probes, load_summary, run_checks

    root = Path(__file__).resolve().parents[2] / "reports" / "baseline"
    summary = load_summary(root)
    checks = run_checks(summary, load_probes(root))
    assert [c.ok for c in checks] == [True] * len(checks), [c.text for c in checks]
    assert summary["provenance"]["datasets"] == "datasets/v1"
    git = summary["provenance"]["git"]
    assert git["dirty"] is False  # made from a clean tree: the commit says what ran
    raw = json.loads((root / "summary.json").read_text(encoding="utf-8"))
    embeddings = {r["embedding"] for r in raw["records"]}
    assert {"hash", "transformer"} <= embeddings <= {"-", "none", "hash", "transformer"}
    assert check_gate(root, root / "summary.json") == 0
    assert "gate: PASS" in capsys.readouterr().out

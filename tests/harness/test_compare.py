"""Deltas between two runs: pairing, pooled rows, intervals, the noise mark, the renderers."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers.synthetic_run import build_run

import memctx.harness
from memctx.harness import (
    DELTAS_CSS,
    beyond_noise,
    bootstrap_ci,
    compare_runs,
    comparison_notes,
    deltas_html_page,
    format_deltas_html,
    format_deltas_md,
    format_deltas_text,
    match_rows,
    pool_records,
    read_summary,
    run_differences,
    share_interval,
    verdict_html,
    verdict_md,
    verdict_of,
)
from memctx.harness.deltas import Verdict

BASELINE = Path(__file__).resolve().parents[2] / "reports" / "baseline" / "summary.json"


def _record(suite: str, correct: int, n: int, **extra: Any) -> dict[str, Any]:
    flags = [1.0] * correct + [0.0] * (n - correct)
    share = round(correct / n, 4)
    record = {
        "suite": suite,
        "strategy": "memory-context",
        "embedding": "hash",
        "probes": n,
        "fit": n,
        "recall_accuracy": share,
        "recall_accuracy_ci": bootstrap_ci(flags),
        "tool_accuracy": share,
        "evidence_recall": share,
        "evidence_recall_ci": bootstrap_ci(flags),
        "stale_rate": 0.0,
        "tokens_per_call": 13_000.0,
        "recall_tokens": 900.0,
        "llm_tokens": 0,
        "cost_usd": 4.0,
        "cached_share": 0.8,
        "calls": 200,
        "violations": 0,
    }
    return {**record, **extra}


def _summary(
    records: list[dict[str, Any]], pooled: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {"schema": 2, "records": records, "pooled": pooled or []}


def test_the_gate_function_keeps_its_name_in_the_package() -> None:
    # The run-to-run deltas live in memctx.harness.deltas: no module shadows the gate's
    # compare() (a module named compare once did, depending on import order).
    assert memctx.harness.compare.__module__ == "memctx.harness.gate"
    assert callable(memctx.harness.compare)
    assert memctx.harness.compare_runs.__module__ == "memctx.harness.deltas"


def test_deltas_values_intervals_and_marks() -> None:
    before = _summary([_record("needle", 37, 44), _record("cjk", 39, 44)])
    after = _summary(
        [
            _record("needle", 8, 44, tokens_per_call=11_700.0, cost_usd=3.0, calls=250),
            _record("cjk", 38, 44, cached_share=0.9, violations=2),
        ]
    )
    needle, cjk = compare_runs(before, after)
    assert needle.key == ("needle", "memory-context", "hash") and not needle.pooled
    assert (needle.fit_before, needle.fit_after) == (44, 44)
    recall = needle.change("recall_accuracy")
    assert recall is not None
    assert (recall.before, recall.after) == (0.8409, 0.1818)
    assert recall.delta == pytest.approx(-0.6591)
    assert recall.significant is True and recall.verdict == "worse"
    assert recall.before_ci == share_interval(before["records"][0], "recall_accuracy")
    assert recall.after_ci is not None and recall.after_ci[0] < 0.1818 < recall.after_ci[1]
    cost = needle.change("cost_per_call")
    assert cost is not None
    assert (cost.before, cost.after) == pytest.approx((4.0 / 200, 3.0 / 250))
    assert cost.significant is None and cost.verdict == "better"  # cheaper per call
    tokens = needle.change("tokens_per_call")
    assert tokens is not None and tokens.delta == pytest.approx(-1_300.0)
    # One probe of 44 is never beyond the noise.
    one = cjk.change("recall_accuracy")
    assert one is not None and one.significant is False and one.verdict == "worse"
    cached, violations = cjk.change("cached_share"), cjk.change("violations")
    assert cached is not None and cached.delta == pytest.approx(0.1) and cached.significant is None
    assert violations is not None and violations.verdict == "worse"
    assert [c.metric for c in needle.changes] == [
        "recall_accuracy",
        "tool_accuracy",
        "evidence_recall",
        "tokens_per_call",
        "cost_per_call",
        "cached_share",
        "violations",
    ]


def test_chosen_metrics_and_an_unknown_one() -> None:
    summary = _summary([_record("needle", 37, 44)])
    (delta,) = compare_runs(summary, summary, ["stale_rate", "cost_usd"])
    assert [c.metric for c in delta.changes] == ["stale_rate", "cost_usd"]
    with pytest.raises(ValueError, match="unknown metric 'accuracy'; choose from recall_accuracy"):
        compare_runs(summary, summary, ["accuracy"])


def test_a_rise_beyond_the_noise_is_marked_too() -> None:
    before, after = _record("needle", 20, 44), _record("needle", 40, 44)
    assert beyond_noise(before, after, "recall_accuracy") is True
    assert beyond_noise(after, before, "recall_accuracy") is True
    assert beyond_noise(before, before, "recall_accuracy") is False
    assert beyond_noise(before, after, "tokens_per_call") is None  # not a share of probes


def test_rebuilt_pooled_figures_reproduce_the_committed_baseline() -> None:
    # The baseline's pooled rows were aggregated from its probes; pooling its per-suite rows
    # over every suite gives the same figures (4-place rounding apart).
    baseline = read_summary(BASELINE)
    for pooled in baseline["pooled"]:
        pair = (pooled["strategy"], pooled["embedding"])
        rebuilt = pool_records(
            [r for r in baseline["records"] if (r["strategy"], r["embedding"]) == pair]
        )
        for key in ("probes", "fit", "calls", "llm_tokens", "violations"):
            assert rebuilt[key] == pooled[key], (pair, key)
        for key in ("recall_accuracy", "tool_accuracy", "evidence_recall", "stale_rate"):
            if pooled[key] is not None:
                assert rebuilt[key] == pytest.approx(pooled[key], abs=2e-4), (pair, key)
        for key in ("tokens_per_call", "recall_tokens", "cost_usd", "cached_share"):
            assert rebuilt[key] == pytest.approx(pooled[key], rel=1e-4, abs=1e-4), (pair, key)


def test_pooled_rows_pair_only_over_the_same_suites() -> None:
    records = [_record(s, c, 44) for s, c in (("alpha", 40), ("beta", 9), ("gamma", 13))]
    full = _summary(records, [pool_records(records)])
    same = compare_runs(full, copy.deepcopy(full))
    assert [d.key[0] for d in same] == ["alpha", "beta", "gamma", "all"]
    assert same[-1].note == ""  # compared as stored
    subset = _summary(records[1:], [pool_records(records[1:])])
    pooled = compare_runs(full, subset)[-1]
    assert pooled.pooled and "pooled from its records over the 2 suites" in pooled.note
    recall = pooled.change("recall_accuracy")
    assert recall is not None and recall.delta == pytest.approx(0.0, abs=1e-4)
    # One suite: the pooled row is that suite's row, not listed twice.
    single = _summary(records[:1], [pool_records(records[:1])])
    assert [d.key[0] for d in compare_runs(full, single)] == ["alpha"]
    notes = comparison_notes(full, single, before_name="A", after_name="B")
    assert any("over one suite (memory-context/hash)" in n for n in notes)
    # Suites the before run never ran: not compared, said once.
    other = _summary([*records[1:], _record("delta", 5, 44)])
    other["pooled"] = [pool_records(other["records"])]
    assert [d.key[0] for d in compare_runs(subset, other)] == ["beta", "gamma"]
    match = match_rows(subset, other)
    assert match.only_after == (("delta", "memory-context", "hash"),)
    assert any("suites only in the after run: delta" in n for n in match.notes)


def test_rows_of_only_one_run_are_listed_once() -> None:
    full = build_run().summary
    part = copy.deepcopy(full)
    part["records"] = [r for r in part["records"] if r["suite"] in ("needle", "cjk")]
    part["pooled"] = [r for r in part["pooled"] if r["strategy"] != "full"]
    part["records"] = [r for r in part["records"] if r["strategy"] != "full"]
    part["records"].append(_record("needle", 3, 4, strategy="planner", embedding="none"))
    notes = comparison_notes(full, part, before_name="A", after_name="B")
    only_a = [n for n in notes if "only in A" in n]
    only_b = [n for n in notes if "only in B" in n]
    assert len(only_a) == 1 and len(only_b) == 1
    assert only_a[0].startswith("31 row(s) only in A, not compared (suites not in B: ")
    assert "strategy/embedding not in B: full/none" in only_a[0]
    assert only_b[0] == (
        "1 row(s) only in B, not compared (strategy/embedding not in A: planner/none)"
    )


def test_read_summary_forms_and_errors(tmp_path: Path) -> None:
    run = tmp_path / "reports" / "runs" / "20250101-000000-default"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps(_summary([_record("a", 1, 2)])))
    reports = tmp_path / "reports"
    for spec in (run, run / "summary.json", "20250101-000000-default", "20250101"):
        assert read_summary(spec, reports=reports)["records"][0]["suite"] == "a"
    assert read_summary(BASELINE)["schema"] == memctx.harness.SUMMARY_SCHEMA  # 1 is upgraded
    cases = {
        tmp_path / "nope.json": "does not exist; pass a summary.json, a run folder",
        tmp_path / "missing-folder": "does not exist",
        tmp_path: "holds no summary.json",
        "20991231": "no run '20991231'",
    }
    (tmp_path / "text.json").write_text("{oops")
    cases[tmp_path / "text.json"] = "not JSON"
    (tmp_path / "list.json").write_text("[]")
    cases[tmp_path / "list.json"] = "is not a summary.json (no 'records' list)"
    (tmp_path / "keyless.json").write_text(json.dumps({"records": [{"suite": "a"}]}))
    cases[tmp_path / "keyless.json"] = "record 0 lacks suite/strategy/embedding"
    for spec, message in cases.items():
        with pytest.raises(ValueError, match=re.escape(message)):
            read_summary(spec, reports=reports, what="RUN_A")


def _two_runs() -> tuple[dict[str, Any], dict[str, Any]]:
    before = build_run().summary
    after = copy.deepcopy(before)
    for record in after["records"]:
        if (record["suite"], record["strategy"]) == ("needle", "memory-context"):
            record.update(recall_accuracy=0.125, recall_accuracy_ci=[0.0, 0.25])
    return before, after


def test_the_terminal_table_has_full_names_and_marks() -> None:
    before, after = _two_runs()
    text = format_deltas_text(
        compare_runs(before, after), comparison_notes(before, after), before="A", after="B"
    )
    assert text.startswith("recall_accuracy\nsuite ")
    assert "cross-session" in text and "memory-context  transformer" in text
    assert "…" not in text and "..." not in text  # nothing truncated
    marked = [line for line in text.splitlines() if line.endswith(" *")]
    assert len(marked) == 2 and all(line.startswith("needle ") for line in marked)
    assert re.search(r"needle\s+memory-context\s+hash\s+24 → 24\s+\S+ % \(.+\)\s+12\.5 %", text)
    assert "cost_per_call (USD per call)" in text and "$0." in text
    assert "* = the change is beyond the noise" in text


def test_markdown_has_a_table_per_metric() -> None:
    before, after = _two_runs()
    md = format_deltas_md(compare_runs(before, after, ["recall_accuracy", "violations"]))
    assert md.count("### ") == 2 and "### recall_accuracy" in md
    assert "| suite | strategy | embedding | n | before | after | change |" in md
    assert "|:--|:--|:--|--:|--:|--:|--:|" in md
    rows = [line for line in md.splitlines() if line.startswith("| needle | memory-context")]
    assert len(rows) == 4 and rows[0].endswith(" pts * |")


def test_html_escapes_names_and_pins_the_key_columns() -> None:
    before = _summary([_record("<b>suite</b>", 37, 44)])
    fragment = format_deltas_html(compare_runs(before, before), ["a & b"])
    assert "&lt;b&gt;suite&lt;/b&gt;" in fragment and "<b>suite" not in fragment
    assert "<li>a &amp; b</li>" in fragment
    widths = re.findall(r'class="key[^"]*" style="left:(\d+)ch;width:(\d+)ch', fragment)
    # suite, strategy, embedding: each left offset is the sum of the widths before it.
    lefts, sizes = [int(x) for x, _ in widths[:3]], [int(y) for _, y in widths[:3]]
    assert lefts == [0, sizes[0], sizes[0] + sizes[1]]
    assert sizes[0] == len("<b>suite</b>") + 2 and sizes[1] == len("memory-context") + 2
    assert "position: sticky" in DELTAS_CSS and "overflow-x: auto" in DELTAS_CSS
    page = deltas_html_page(compare_runs(before, before), title="t")
    assert page.startswith("<!DOCTYPE html>") and DELTAS_CSS in page
    assert "<link" not in page and "<script" not in page and "src=" not in page


# -- the verdict ---------------------------------------------------------------------------


def _pair(strategy: str, embedding: str, correct: int, **extra: Any) -> dict[str, Any]:
    return _record("needle", correct, 44, strategy=strategy, embedding=embedding, **extra)


def _verdict_runs(moves: dict[str, tuple[int, int]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two runs of one suite, one row per strategy: ``{strategy: (correct before, after)}``
    of 44 probes."""
    before = _summary([_pair(name, "hash", old) for name, (old, _) in moves.items()])
    after = _summary([_pair(name, "hash", new) for name, (_, new) in moves.items()])
    return before, after


def test_the_verdict_counts_configurations_better_worse_and_within_noise() -> None:
    # 37 -> 8 of 44 is far beyond the noise, 37 -> 36 within it.
    before, after = _verdict_runs(
        {"a": (8, 37), "b": (37, 8), "c": (9, 40), "d": (37, 36), "e": (20, 20)}
    )
    verdict = verdict_of(compare_runs(before, after))
    assert verdict.tone == "mixed"
    assert verdict.text.startswith(
        "B is better than A beyond noise in 2 configurations (a/hash, c/hash), "
        "worse in 1 (b/hash), within noise in 2 (per strategy × embedding"
    )
    improved = verdict_of(compare_runs(*_verdict_runs({"a": (8, 37), "d": (37, 36)})))
    assert improved.tone == "better"
    assert improved.text.startswith(
        "B is better than A beyond noise in 1 configuration (a/hash), within noise in 1 ("
    )
    worse = verdict_of(
        compare_runs(*_verdict_runs({"a": (37, 8)})), before="the baseline", after="this run"
    )
    assert worse.tone == "worse"
    assert worse.text.startswith("This run is worse than the baseline beyond noise in 1 ")
    same = verdict_of(compare_runs(*_verdict_runs({"a": (37, 36), "b": (20, 21)})))
    assert same.tone == "within"
    assert same.text.startswith("B is within noise of A in all 2 configurations (")


def test_a_configuration_is_judged_over_all_its_rows_and_on_violations() -> None:
    # One strategy better in needle and worse in cjk is neither better nor worse: mixed.
    before = _summary([_record("needle", 8, 44), _record("cjk", 37, 44)])
    after = _summary([_record("needle", 37, 44), _record("cjk", 8, 44)])
    verdict = verdict_of(compare_runs(before, after))
    assert verdict.tone == "mixed"
    assert "better in some rows and worse in others, in 1 configuration" in verdict.text
    # A new invariant violation is worse whatever the noise; the accuracy did not move.
    worse = _summary([_record("needle", 8, 44, violations=1), _record("cjk", 37, 44)])
    verdict = verdict_of(compare_runs(before, worse))
    assert (verdict.tone, "worse than A beyond noise" in verdict.text) == ("worse", True)
    # Without a share or violations among the metrics, nothing is judged beyond noise.
    none = verdict_of(compare_runs(before, after, ["tokens_per_call"]))
    assert none.tone == "none" and none.text.startswith("no verdict:")
    assert verdict_of([]).text == "nothing to compare: A and B have no row in common"


def test_runs_of_different_scenarios_get_cannot_compare_unless_allowed() -> None:
    before, after = _two_runs()
    after["provenance"]["scenarios"]["needle"]["sha256"] = "cd" * 32
    after["provenance"]["scenarios"]["cjk"]["probes"] = 7
    setup = run_differences(before, after, names=("A", "B"))
    assert not setup.comparable
    refused = verdict_of(compare_runs(before, after), setup=setup)
    assert refused == Verdict("cannot compare: different scenarios in needle, cjk", "cannot")
    allowed = verdict_of(compare_runs(before, after), setup=setup, allowed=True)
    assert allowed.tone == "worse"
    assert allowed.text.endswith("; compared as asked although different scenarios in needle, cjk")
    # The three forms.
    assert verdict_md(refused) == "**Verdict: cannot compare: different scenarios in needle, cjk**"
    assert verdict_html(refused) == (
        '<p class="verdict cannot">Verdict: cannot compare: different scenarios in needle, cjk</p>'
    )
    assert ".memctx-deltas p.verdict.cannot" in DELTAS_CSS

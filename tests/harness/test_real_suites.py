"""The real-data suites in the one pipeline: records, rows and sections in the run folder,
read by load_run, compare, the gate, the report and the pytest plugin (issue 25, item 5).

The data here is a small fixture written into a temporary datasets folder (one LoCoMo-shaped
conversation, one trajectory), so these tests need no external datasets; the tests of
the real files are in test_locomo_suite.py, test_claude_code_probes.py and
test_trajectories.py.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from memctx.cli.main import main
from memctx.harness import (
    ALL_SUITES,
    EvalError,
    EvalOptions,
    check_gate,
    compare_runs,
    load_run,
    run_eval,
    upgrade_summary,
)
from memctx.harness.metrics import aggregate
from memctx.harness.pooling import pool_records, pooled_suite
from memctx.harness.pytest_plugin import MemctxRun
from memctx.harness.report import write_report
from memctx.harness.schema import REAL_DATA_SUITES, SUMMARY_SCHEMA, upgrade_probe_row

STRATEGIES = ("full", "truncate", "memory-context")
PLACES = ("Lisbon", "Oslo", "Quito", "Hanoi", "Dakar", "Perth", "Tromso", "Cusco")


def _locomo(root: Path) -> None:
    """One conversation of ~20K tokens (over LoCoMo's 16K window), three answerable
    questions planted early, one adversarial one (category 5, never asked)."""
    turns = []
    for i in range(1, 261):
        speaker = "Ana" if i % 2 else "Ben"
        text = (
            f"Turn {i}: we talked about the garden, the weather and the week ahead, "
            f"nothing that matters much, just the usual chat about plans number {i} and "
            "how the neighbours keep repainting their fence every single spring again."
        )
        if i == 3:
            text = "I finally booked the trip: I am flying to Reykjavik in June."
        if i == 6:
            text = "My sister adopted a grey cat and named it Pickles."
        if i == 9:
            text = "I started learning the cello last Tuesday."
        turns.append({"speaker": speaker, "dia_id": f"D1:{i}", "text": text})
    sample = {
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": turns,
        },
        "qa": [
            {"question": "Where is Ana flying in June?", "answer": "Reykjavik",
             "evidence": ["D1:3"], "category": 4},
            {"question": "What is the name of the cat?", "answer": "Pickles",
             "evidence": ["D1:6"], "category": 1},
            {"question": "Which instrument did Ana start learning?", "answer": "cello",
             "evidence": ["D1:9"], "category": 2},
            {"question": "What did Ben paint?", "adversarial_answer": "a fence",
             "evidence": ["D1:4"], "category": 5},
        ],
    }  # fmt: skip
    (root / "locomo").mkdir(parents=True)
    (root / "locomo" / "tiny.json").write_text(json.dumps([sample]), encoding="utf-8")


def _trajectory(root: Path) -> None:
    """An agent run in OpenAI's shape, ~40K tokens of tool output: over both windows."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Find why the parser drops the last line."},
    ]
    for i in range(40):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"cmd": f"cat m{i}.py"})},
        }
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        body = f"# module {i} of {PLACES[i % len(PLACES)]}\n" + f"value_{i} = {i}\n" * 200
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": body})
    messages.append({"role": "assistant", "content": "The parser skips a line without EOL."})
    (root / "swe-agent").mkdir(parents=True)
    (root / "swe-agent" / "tiny.traj").write_text(json.dumps(messages), encoding="utf-8")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("datasets")
    _locomo(root)
    _trajectory(root)
    return root


@pytest.fixture(scope="module")
def run(data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mixed run: a synthetic suite and two real-data suites in one folder."""
    out = tmp_path_factory.mktemp("runs") / "mixed"
    return run_eval(
        EvalOptions(
            suites=("needle", "locomo", "trajectories"),
            strategies=STRATEGIES,
            embeddings=("hash",),
            quick=True,
            jobs=1,
            progress=False,
            out_dir=out,
            real_datasets=data,
        )
    )


def _summary(run: Path) -> dict[str, Any]:
    return json.loads((run / "summary.json").read_text(encoding="utf-8"))


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_mixed_run_writes_one_summary_with_every_suite_and_pools_only_synthetic(
    run: Path,
) -> None:
    summary = _summary(run)
    assert summary["schema"] == SUMMARY_SCHEMA
    suites = {r["suite"] for r in summary["records"]}
    assert suites == {"needle", "locomo", "trajectories"}
    by = {(r["suite"], r["strategy"]): r for r in summary["records"]}
    # LoCoMo: three answerable questions (category 5 is not asked); the conversation does
    # not fit 16K, so full fits none and the others had to act.
    assert by[("locomo", "truncate")]["probes"] == 3 and by[("locomo", "full")]["fit"] == 0
    assert by[("locomo", "truncate")]["trims"] > 0
    assert by[("locomo", "memory-context")]["recall_accuracy"] is not None
    # Trajectories: calls and tokens, no probes; truncate sends less than full.
    traj = {s: by[("trajectories", s)] for s in STRATEGIES}
    assert all(r["probes"] == 0 and r["calls"] > 0 for r in traj.values())
    assert traj["truncate"]["tokens_per_call"] < traj["full"]["tokens_per_call"]
    assert all(r["violations"] == 0 for r in summary["records"])
    # Pooled over the synthetic suite only: its figures are needle's.
    for record in summary["pooled"]:
        needle = by[("needle", record["strategy"])]
        assert (record["probes"], record["calls"]) == (needle["probes"], needle["calls"])
    real = summary["real_data"]
    assert real["suites"] == ["locomo", "trajectories"] and real["skipped"] == {}
    assert real["sections"] == ["locomo.md", "trajectories.md"] and real["pooled"] is False
    assert set(summary["provenance"]["scenarios"]) == {"needle", "locomo", "trajectories"}


def test_every_probe_row_carries_its_question_and_answers(run: Path) -> None:
    rows = _rows(run / "results.jsonl")
    assert {r["suite"] for r in rows} == {"needle", "locomo"}  # trajectories ask nothing
    assert all(isinstance(r["question"], str) and r["question"] for r in rows)
    assert all(isinstance(r["answers"], list) and r["answers"] for r in rows)
    cat = next(r for r in rows if r["suite"] == "locomo" and "cat" in r["question"])
    assert cat["answers"] == ["Pickles"] and cat["tags"] == ["category-1"]
    calls = _rows(run / "trace.jsonl")
    assert {c["suite"] for c in calls} == {"needle", "locomo", "trajectories"}


def test_the_real_data_tables_sit_beside_the_records(run: Path) -> None:
    locomo = (run / "locomo.md").read_text(encoding="utf-8")
    assert locomo.startswith("# LoCoMo evidence recall (1 conversation)")
    assert "DRAGON" in locomo
    table = (run / "trajectories.md").read_text(encoding="utf-8")
    assert "| swe-agent | truncate | 16,000 | 1 |" in table
    assert "| swe-agent | full | 32,000 | 1 |" in table and "| 0.0 % |" in table


def test_load_run_reads_the_real_data_records_and_rows(run: Path) -> None:
    frames = load_run(run)
    assert set(frames.records["suite"]) == {"needle", "locomo", "trajectories"}
    assert ALL_SUITES not in set(frames.records["suite"])
    assert set(frames.pooled["suite"]) == {ALL_SUITES}
    locomo = frames.probes[frames.probes["suite"] == "locomo"]
    assert set(locomo["question"]) == {
        "Where is Ana flying in June?",
        "What is the name of the cat?",
        "Which instrument did Ana start learning?",
    }
    mean = locomo.groupby("strategy").recall_accuracy.mean()
    record = frames.records.set_index(["suite", "strategy"]).loc[("locomo", "truncate")]
    assert mean["truncate"] == pytest.approx(record["recall_accuracy"], abs=1e-4)
    assert set(frames.calls["suite"]) == {"needle", "locomo", "trajectories"}


def test_compare_pairs_the_real_data_records(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = _summary(run)
    deltas = compare_runs(summary, summary)
    keys = {(d.suite, d.strategy) for d in deltas}
    assert ("locomo", "memory-context") in keys and ("trajectories", "truncate") in keys
    assert main(["compare", str(run), str(run)]) == 0
    out = capsys.readouterr().out
    assert "locomo" in out and "trajectories" in out


def test_the_gate_reads_and_fails_on_a_real_data_record(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert check_gate(run, run / "summary.json") == 0
    assert "gate: PASS" in capsys.readouterr().out
    better = copy.deepcopy(_summary(run))
    for record in better["records"]:
        if (record["suite"], record["strategy"]) == ("trajectories", "truncate"):
            record["tokens_per_call"] = record["tokens_per_call"] / 2  # a baseline sending half
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(better), encoding="utf-8")
    assert check_gate(run, baseline) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "trajectories/truncate/none: tokens_per_call" in out


def test_the_pytest_plugin_sees_the_real_data_suites(run: Path) -> None:
    memctx_run = MemctxRun(run)
    assert memctx_run.suites() == ["needle", "locomo", "trajectories"]
    assert memctx_run.record("locomo", "memory-context", "hash")["probes"] == 3
    assert all(r["question"] for r in memctx_run.probes)


def test_the_report_renders_the_real_data_suites(run: Path) -> None:
    write_report(run)
    report = (run / "report.md").read_text(encoding="utf-8")
    real = report[report.index("## Real data") :]
    assert "### locomo" in real and "### trajectories" in real
    assert "| truncate | none |" in real and "saved vs full" in real
    assert "#### LoCoMo evidence recall" in real and "charts/locomo_recall.png" in real
    assert (run / "charts" / "locomo_recall.png").is_file()
    assert "| all (synthetic suites) |" in report  # the pooled row says what it pools
    assert "<h2>Real data</h2>" in (run / "report.html").read_text(encoding="utf-8")


def test_a_suite_whose_data_is_absent_is_skipped_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "nothing"
    empty.mkdir()
    out = tmp_path / "run"
    args = [
        "eval",
        "--quick",
        "--suite",
        "needle",
        "--suite",
        "locomo",
        "--strategy",
        "truncate",
        "--real-datasets",
        str(empty),
        "--out",
        str(out),
        "--no-report",
        "--no-progress",
    ]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "suite locomo skipped: no LoCoMo file" in err and "MEMCTX_DATASETS" in err
    summary = _summary(out)
    assert {r["suite"] for r in summary["records"]} == {"needle"}
    assert "no LoCoMo file" in summary["real_data"]["skipped"]["locomo"]
    # Only real data asked, none there: nothing to run, said with the reason.
    with pytest.raises(EvalError, match=r"nothing to run.*suite trajectories skipped"):
        run_eval(EvalOptions(suites=("trajectories",), real_datasets=empty, out_dir=tmp_path / "x"))
    assert (
        main(
            [
                "eval",
                "--suite",
                "locomo",
                "--real-datasets",
                str(empty),
                "--out",
                str(tmp_path / "y"),
            ]
        )
        == 2
    )
    assert "suite locomo skipped: no LoCoMo file" in capsys.readouterr().err


def test_real_data_suites_are_never_pooled() -> None:
    assert all(not pooled_suite(s) for s in (*REAL_DATA_SUITES, ALL_SUITES))
    assert pooled_suite("needle") and pooled_suite("my-own-suite")
    record = {"suite": "locomo", "strategy": "truncate", "embedding": "none", "probes": 3}
    with pytest.raises(ValueError, match="locomo are not pooled"):
        pool_records([record])


def test_an_older_row_or_summary_reads_as_the_current_schema() -> None:
    old = {"suite": "needle", "probe": "p1", "fits": True, "recall_accuracy": True}
    assert upgrade_probe_row(old) == {**old, "question": None, "answers": None}
    new = {**old, "question": "q?", "answers": ["a"]}
    assert upgrade_probe_row(new) == new
    schema2 = {"schema": 2, "records": [{"suite": "needle"}], "pooled": []}
    assert upgrade_summary(schema2) == {**schema2, "schema": SUMMARY_SCHEMA}


def test_aggregate_keeps_real_data_out_of_the_pooled_records(run: Path) -> None:
    from memctx.harness.engine import ScenarioResult
    from memctx.harness.schema import CallRow

    def result(suite: str, sent: int) -> ScenarioResult:
        call = CallRow(suite, "s", "truncate", "none", "x", 0, 1, sent, sent, 0, 0, None)
        kinds = dict.fromkeys(("pairing", "hard_cap", "window", "secrets"), 0)
        return ScenarioResult(calls=[call], stats={"violation_kinds": kinds})

    records = aggregate(
        [
            ("needle", "truncate", "none", result("needle", 100)),
            ("locomo", "truncate", "none", result("locomo", 900)),
        ]
    )
    pooled = [r for r in records if r["suite"] == ALL_SUITES]
    assert len(pooled) == 1 and pooled[0]["tokens_per_call"] == 100.0
    only_real = aggregate([("trajectories", "truncate", "none", result("trajectories", 5))])
    assert [r["suite"] for r in only_real] == ["trajectories"]


def test_a_scenario_s_own_settings_apply_under_the_run_s_overrides(tmp_path: Path) -> None:
    """LoCoMo's scenarios carry the retention their 2023 dates need; the engine applies a
    scenario's settings, and the run's own overrides win over them."""
    import dataclasses

    from memctx.config import MemoryContextConfig
    from memctx.harness import run_scenario
    from memctx.harness.gen.generate import generate_suite

    base = generate_suite("needle", seed=0, scale=0.15)[0]
    capped = dataclasses.replace(base, meta={**base.meta, "settings": {"hardCapTokens": 200}})

    def largest_block(scenario: Any, **overrides: Any) -> int:
        work = tmp_path / f"w{len(list(tmp_path.iterdir()))}"
        config = MemoryContextConfig(**overrides)
        result = run_scenario(scenario, "memory-context", "hash", work_dir=work, config=config)
        return max(c.recall_tokens for c in result.calls)

    free = largest_block(base)
    assert free > 200  # the default cap lets a bigger block through
    assert 0 < largest_block(capped) <= 200  # the scenario's setting applies
    assert largest_block(capped, hardCapTokens=2_000) == free  # the run's override wins


def test_a_real_data_probe_can_be_explained_from_its_run(run: Path) -> None:
    """``memctx show`` finds a real-data probe's scenario in the datasets the run used and
    replays it as the run did (with the scenario's own settings)."""
    from memctx.harness import explain_probe

    rows = [r for r in _rows(run / "results.jsonl") if r["suite"] == "locomo"]
    row = next(r for r in rows if r["strategy"] == "memory-context" and "cat" in r["question"])
    shown = explain_probe(run, row["probe"], strategy="memory-context")
    assert (shown.suite, shown.scenario) == ("locomo", "locomo-tiny-1")
    assert shown.probe.question == row["question"] and list(shown.probe.answers) == row["answers"]
    assert shown.recorded_correct == row["recall_accuracy"] == shown.answer_in_context


def test_a_run_of_real_data_alone_pools_nothing_and_says_so(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "real-only"
    args = ["eval", "--suite", "locomo", "--strategy", "truncate", "--strategy",
            "memory-context", "--embedding", "hash", "--real-datasets", str(data),
            "--out", str(out), "--jobs", "1", "--no-progress"]  # fmt: skip
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "locomo (real data, not pooled):" in printed
    assert "No configuration is recommended: the run played real-data suites only" in printed
    summary = _summary(out)
    assert summary["pooled"] == [] and {r["suite"] for r in summary["records"]} == {"locomo"}
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "Nothing is pooled: the run played no synthetic suite" in report
    assert "| locomo | 3 |" in report  # its row in the by-suite table, no pooled row
    assert "| all" not in report
    # The same run as its own baseline: the gate reads its records and passes.
    again = tmp_path / "again"
    assert main([*args[:-5], "--out", str(again), "--jobs", "1", "--no-progress",
                 "--no-report", "--baseline", str(out / "summary.json")]) == 0  # fmt: skip
    assert "gate: PASS over 2 record(s)" in capsys.readouterr().out

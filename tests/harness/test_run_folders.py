"""Run folders, the tidy data of a run (``load_run``), explaining one probe, and ``memctx
eval``'s checks before any work."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from memctx.cli import main
from memctx.harness import (
    EvalOptions,
    config_label,
    explain_probe,
    find_run,
    format_explanation,
    load_run,
    new_run_id,
    point_latest,
    run_eval,
    upgrade_summary,
)

KEYS = ["suite", "strategy", "embedding"]


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A reports folder holding one quick run of two suites (written as `memctx eval` does)."""
    root = tmp_path_factory.mktemp("reports")
    options = EvalOptions(
        suites=("needle", "supersede"),
        quick=True,
        embeddings=("hash",),
        jobs=1,
        progress=False,
        reports_dir=root,
    )
    run_eval(options)
    return root


def test_a_run_gets_its_own_folder_and_latest_points_at_it(reports: Path) -> None:
    runs = list((reports / "runs").iterdir())
    assert len(runs) == 1 and runs[0].name.endswith("-quick-needle-supersede")
    assert (reports / "latest").is_symlink()
    assert (reports / "latest").resolve() == runs[0].resolve()
    assert find_run("latest", reports).resolve() == runs[0].resolve()
    assert find_run(runs[0].name[:8], reports) == runs[0]  # a unique prefix of the id
    summary = json.loads((runs[0] / "summary.json").read_text(encoding="utf-8"))
    assert summary["run"] == runs[0].name and summary["config_label"] == "quick-needle-supersede"


def test_point_latest_moves_an_old_results_folder_aside_never_deletes_it(tmp_path: Path) -> None:
    old = tmp_path / "latest"
    old.mkdir()
    (old / "summary.json").write_text("{}", encoding="utf-8")
    run = tmp_path / "runs" / "20260101-000000-default"
    run.mkdir(parents=True)
    point_latest(tmp_path, run)
    assert (tmp_path / "latest").resolve() == run.resolve()
    moved = [p for p in (tmp_path / "runs").iterdir() if "moved-from-latest" in p.name]
    assert len(moved) == 1 and (moved[0] / "summary.json").read_text(encoding="utf-8") == "{}"


def test_find_run_names_the_problem_and_recent_runs(tmp_path: Path) -> None:
    for name in ("20260101-000000-a", "20260101-000001-b"):
        (tmp_path / "runs" / name).mkdir(parents=True)
        (tmp_path / "runs" / name / "summary.json").write_text("{}", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="ambiguous"):
        find_run("20260101", tmp_path)
    with pytest.raises(FileNotFoundError, match="recent runs: 20260101-000000-a"):
        find_run("nope", tmp_path)
    with pytest.raises(FileNotFoundError, match="no run"):  # a path names one place, no glob
        find_run(tmp_path / "absent" / "run", tmp_path)
    with pytest.raises(FileNotFoundError, match="holds no runs yet"):
        find_run("x", tmp_path / "empty")


def test_config_labels_say_what_differs_and_stay_short_and_distinct() -> None:
    assert config_label() == "default"
    label = config_label(quick=True, suites=["needle"], overrides={"hardCapTokens": 300})
    assert label == "quick-needle-hardCapTokens=300"
    long_a = config_label(overrides={f"key{i}": "x" * 10 for i in range(10)})
    long_b = config_label(overrides={f"key{i}": "y" * 10 for i in range(10)})
    assert len(long_a) <= 60 and long_a != long_b
    assert "/" not in config_label(suites=["a/b"]) and " " not in config_label(llm="x y")
    stamp = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert new_run_id("default", stamp) == "20260102-030405-default"


def test_load_run_reproduces_the_summary_with_a_pandas_group_by(reports: Path) -> None:
    run = load_run("latest", reports)
    probes, calls, records = run.probes, run.calls, run.records.set_index(KEYS)
    assert set(probes["run"]) == {run.summary["run"]}
    assert set(probes["config"]) == {"quick-needle-supersede"}
    # Unfitted probes hold <NA>, not False: a plain mean skips them.
    unfit = probes[~probes["fits"]]
    assert len(unfit) and unfit["recall_accuracy"].isna().all()
    by = probes.groupby(KEYS)
    for metric in ("recall_accuracy", "tool_accuracy", "evidence_recall", "stale_rate"):
        mine = by[metric].mean().round(4)
        theirs = records[metric].astype("Float64")
        pd.testing.assert_series_equal(
            mine.sort_index(), theirs.sort_index(), check_names=False, check_dtype=False
        )
    assert (by["fits"].sum().sort_index() == records["fit"].sort_index()).all()
    per_call = calls.groupby(KEYS)
    tokens = per_call["sent_tokens"].mean().sort_index()  # the summary rounds to 0.1
    assert ((tokens - records["tokens_per_call"].sort_index()).abs() <= 0.05 + 1e-9).all()
    assert (per_call.size().sort_index() == records["calls"].sort_index()).all()
    # Pooled rows are apart: summing the per-suite records counts each call once.
    pooled = run.pooled.set_index(["strategy", "embedding"])
    summed = run.records.groupby(["strategy", "embedding"])["cost_usd"].sum()
    assert (abs(summed.sort_index() - pooled["cost_usd"].sort_index()) < 1e-4).all()
    assert (run.records["suite"] != "all").all() and (run.pooled["suite"] == "all").all()
    # One name per metric: a probe row's sent tokens are its call's.
    probe_calls = calls[calls["probe"].notna()]
    joined = probes.merge(probe_calls, on=[*KEYS, "scenario", "probe"], suffixes=("", "_call"))
    assert len(joined) == len(probes)
    assert (joined["sent_tokens"] == joined["sent_tokens_call"]).all()
    assert set(probes["embedding"]) == {"none", "hash"}


def test_a_schema_1_summary_is_upgraded_when_read() -> None:
    old = {
        "schema": 1,
        "records": [
            {"suite": "needle", "strategy": "full", "embedding": "-"},
            {"suite": "all", "strategy": "full", "embedding": "-"},
        ],
    }
    new = upgrade_summary(old)
    assert new["records"] == [{"suite": "needle", "strategy": "full", "embedding": "none"}]
    assert new["pooled"] == [{"suite": "all", "strategy": "full", "embedding": "none"}]
    assert old["records"][0]["embedding"] == "-"  # the caller's dict is left alone


def test_explaining_a_probe_replays_it_to_the_same_verdict(reports: Path) -> None:
    run = load_run("latest", reports)
    rows = run.probes[(run.probes["strategy"] == "truncate") & run.probes["fits"]]
    for _, row in rows.head(4).iterrows():
        shown = explain_probe("latest", row["probe"], strategy="truncate", reports=reports)
        assert shown.answer_in_context == bool(row["recall_accuracy"])
        assert shown.context[-1].kind == "question"
        if not shown.answer_in_context:  # the evidence it needed was left out
            assert any(e.fate != "sent" for e in shown.evidence)
    hit = run.probes[
        (run.probes["strategy"] == "memory-context") & run.probes["recall_accuracy"].fillna(False)
    ]
    shown = explain_probe("latest", hit.iloc[0]["probe"], reports=reports)
    assert shown.strategy == "memory-context" and shown.call_record is not None
    text = format_explanation(shown)
    assert "the answer IS in the context" in text and "memctx's record of the call" in text
    assert any(line.holds_answer for line in shown.context)


def test_memctx_show_prints_the_explanation_and_refuses_unknown_probes(
    reports: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    probe = load_run("latest", reports).probes.iloc[0]["probe"]
    assert main(["show", "latest", probe, "--reports", str(reports), "--no-recall-text"]) == 0
    out = capsys.readouterr().out
    assert f"probe {probe}" in out and "context sent (" in out
    assert main(["show", "latest", probe, "--reports", str(reports), "--json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert data["probe"]["id"] == probe and isinstance(data["context"], list)
    assert main(["show", "latest", "no-such-probe", "--reports", str(reports)]) == 2
    assert "no probe 'no-such-probe'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--suite", "nope"], "unknown suite"),
        (["--strategy", "nope"], "unknown strategy"),
        (["--set", "nope=1"], "nope: unknown field"),
        (["--baseline", "missing/summary.json"], "missing"),
        (["--fail-on", "recall_accuracy:+2"], "needs --baseline"),
    ],
)
def test_eval_refuses_bad_options_before_any_work_and_writes_nothing(
    argv: list[str],
    error: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["eval", "--quick", "--no-progress", *argv]) == 2
    assert error in capsys.readouterr().err
    assert not (tmp_path / "reports").exists()  # no folder, no latest link replaced


def test_a_failed_check_makes_eval_exit_non_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from helpers.synthetic_run import build_run, write_run

    from memctx.cli.evaluate import finish_eval

    run = build_run()
    for record in run.summary["records"]:
        if record["strategy"] == "memory-context":
            record.update(recall_accuracy=0.01, recall_accuracy_ci=[0.0, 0.03])
    bad = write_run(tmp_path / "bad", run)
    assert finish_eval(bad, no_report=True) == 1
    captured = capsys.readouterr()
    assert "FAIL" in captured.out and "check(s) failed" in captured.err
    good = write_run(tmp_path / "good")
    assert finish_eval(good, no_report=True) == 0
    assert os.path.exists(good / "summary.json")

"""Two runs compared probe by probe: ``compare_runs(..., probes=...)`` and ``memctx compare``
pair a share's change when both runs' probe rows cover the same scenarios, and only then."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memctx.cli import main
from memctx.harness import compare_runs, paired_note, probe_rows_of, same_scenarios

N = 40
LOST = 6  # probes the after run no longer answers; it gains none


def _summary(correct: int, run: str, sha: str = "abc") -> dict[str, Any]:
    record = {
        "suite": "needle", "strategy": "memory-context", "embedding": "hash", "probes": N,
        "fit": N, "recall_accuracy": correct / N, "recall_accuracy_ci": [],
        "tool_accuracy": correct / N, "evidence_recall": correct / N, "cost_usd": 1.0,
        "calls": 10, "violations": 0,
    }  # fmt: skip
    return {
        "schema": 2,
        "run": run,
        "records": [record],
        "pooled": [],
        "provenance": {"scenarios": {"needle": {"sha256": sha, "probes": N}}},
    }


def _rows(answered: int) -> list[dict[str, Any]]:
    return [
        {"suite": "needle", "strategy": "memory-context", "embedding": "hash",
         "scenario": "needle-001", "probe": f"p{i:02d}", "fits": True,
         "recall_accuracy": i < answered, "tool_accuracy": i < answered,
         "evidence_recall": 1.0 if i < answered else 0.0}
        for i in range(N)
    ]  # fmt: skip


def test_a_fall_only_pairing_can_see() -> None:
    before, after = _summary(30, "a"), _summary(30 - LOST, "b")
    (unpaired,) = compare_runs(before, after, ["recall_accuracy"])
    change = unpaired.change("recall_accuracy")
    assert change is not None and change.significant is False and not change.paired
    (paired,) = compare_runs(
        before, after, ["recall_accuracy", "evidence_recall"], probes=(_rows(30), _rows(24))
    )
    recall, evidence = paired.changes
    assert recall.paired and recall.significant is True  # 6 lost, none gained
    assert not evidence.paired  # a fraction per probe: the two intervals
    assert paired_note([paired]) == (
        "1 of 2 share changes judged probe by probe (paired, same scenarios); the others "
        "from the two intervals."
    )


def test_other_scenarios_or_other_figures_are_not_paired() -> None:
    before, after = _summary(30, "a"), _summary(24, "b", sha="changed")
    assert same_scenarios(before, after) == frozenset()
    (delta,) = compare_runs(before, after, ["recall_accuracy"], probes=(_rows(30), _rows(24)))
    assert delta.changes[0].paired is False
    # Rows that do not give the summary's figure (an edited summary) are not paired either.
    before, after = _summary(30, "a"), _summary(24, "b")
    (delta,) = compare_runs(before, after, ["recall_accuracy"], probes=(_rows(30), _rows(29)))
    assert delta.changes[0].paired is False


def _run_folder(path: Path, summary: dict[str, Any], rows: list[dict[str, Any]] | None) -> Path:
    path.mkdir(parents=True)
    (path / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    if rows is not None:
        text = "".join(json.dumps(row) + "\n" for row in rows)
        (path / "results.jsonl").write_text(text, encoding="utf-8")
    return path


def test_memctx_compare_pairs_run_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _run_folder(tmp_path / "a", _summary(30, "a"), _rows(30))
    b = _run_folder(tmp_path / "b", _summary(24, "b"), _rows(24))
    assert main(["compare", str(a), str(b), "--metric", "recall_accuracy"]) == 0
    out = capsys.readouterr().out
    assert "-15.0 pts *" in out
    assert "note: the share change judged probe by probe (paired, same scenarios)." in out
    # A summary without its probe rows: the same change, judged from the two intervals.
    bare = _run_folder(tmp_path / "bare", _summary(24, "b"), None)
    assert main(["compare", str(a), str(bare / "summary.json"), "--metric", "recall_accuracy"]) == 0
    out = capsys.readouterr().out
    assert "-15.0 pts *" not in out and "-15.0 pts" in out
    assert "judged from the two intervals (no probe rows" in out


def test_probe_rows_that_cannot_be_read_skip_the_pairing(tmp_path: Path) -> None:
    folder = _run_folder(tmp_path / "run", _summary(30, "a"), _rows(30))
    assert probe_rows_of(folder) == _rows(30)
    assert probe_rows_of(folder / "summary.json") == _rows(30)
    with (folder / "results.jsonl").open("a", encoding="utf-8") as handle:
        handle.write("{not json\n")
    assert probe_rows_of(folder) is None
    assert probe_rows_of(tmp_path / "no-such-run", reports=tmp_path) is None

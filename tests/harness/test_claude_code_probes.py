"""Real compactions against memctx: the hand-written probes and the comparison (issue 14)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.datasets import REPO_ROOT, dataset_path

from memctx.cli.main import main
from memctx.harness import (
    CLAUDE_CODE_CONFIGS,
    ProbesError,
    compare_compactions,
    format_comparison,
    load_hand_probes,
    run_scenario,
)
from memctx.harness.claude_code import claude_code_scenario, strategy_rows

PROBES = REPO_ROOT / "datasets" / "claude-code"
PROBE_FILES = sorted(PROBES.glob("*.probes.json"))


def test_a_probes_file_of_another_shape_is_refused_with_the_fix(tmp_path: Path) -> None:
    wrong = tmp_path / "x.probes.json"
    wrong.write_text(json.dumps({"format": "other", "probes": []}))
    with pytest.raises(ProbesError, match="not a memctx-probes/1 file"):
        load_hand_probes(wrong)
    empty = tmp_path / "y.probes.json"
    probe = {"id": "p1", "question": "which file?", "answers": [" "]}
    empty.write_text(json.dumps({"format": "memctx-probes/1", "probes": [probe]}))
    with pytest.raises(ProbesError, match="'p1' needs a question and answers"):
        load_hand_probes(empty)


@pytest.mark.dataset
def test_there_are_at_least_25_probes_for_each_visible_session() -> None:
    sessions = sorted(
        p.stem for p in dataset_path("claude-code").glob("*.jsonl") if len(p.stem) == 36
    )
    assert sorted(p.name.removesuffix(".probes.json") for p in PROBE_FILES) == sessions
    for path in PROBE_FILES:
        _, probes = load_hand_probes(path)
        assert len(probes) >= 25, path.name
        assert len({p.id for p in probes}) == len(probes)


@pytest.mark.dataset
@pytest.mark.parametrize("path", PROBE_FILES, ids=lambda p: p.name[:8])
def test_every_answer_is_verbatim_in_an_evidence_record_before_the_boundary(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    records = [
        json.loads(line)
        for line in dataset_path("claude-code", f"{data['session']}.jsonl").read_text().splitlines()
    ]
    assert records[data["boundary_line"]].get("subtype") == "compact_boundary"
    before = {r.get("uuid"): r for r in records[: data["boundary_line"]]}
    summary = next(r for r in records if r.get("isCompactSummary"))
    summary_text = json.dumps(summary["message"], ensure_ascii=False).casefold()
    for probe in data["probes"]:
        assert probe["evidence"] and all(e in before for e in probe["evidence"]), probe["id"]
        texts = [
            json.dumps(before[e]["message"], ensure_ascii=False).casefold()
            + json.dumps(before[e]["message"]).casefold()
            for e in probe["evidence"]
        ]
        for answer in probe["answers"]:
            assert any(answer.casefold() in t for t in texts), (probe["id"], answer)
        held = any(a.casefold() in summary_text for a in probe["answers"])
        assert probe["in_summary"] == held, probe["id"]


@pytest.mark.dataset
def test_the_comparison_judges_each_configuration_on_the_same_probes(tmp_path: Path) -> None:
    path = PROBE_FILES[0] if PROBE_FILES else pytest.skip("no probes written yet")
    session, probes = load_hand_probes(path)
    transcript = dataset_path("claude-code", f"{session}.jsonl")
    rows = compare_compactions(transcript, path)
    by = {r.config: r for r in rows}
    assert list(by) == list(CLAUDE_CODE_CONFIGS)
    assert all(r.probes == len(probes) for r in rows)
    held = {p.id for p in probes if p.in_summary}
    summary = by["claude-code summary"]
    assert held <= set(summary.kept)  # what the summary holds, it keeps
    # memctx's recall on top of the summary keeps at least as much, for more tokens; alone,
    # at the summary's own tokens, it stays within them.
    assert set(summary.kept) <= set(by["summary + memctx recall"].kept)
    assert by["summary + memctx recall"].tokens > summary.tokens
    assert by["memctx recall at the summary's tokens"].tokens <= summary.tokens * 1.05
    # memctx's own summary (the offline model's snapshot) never takes more than Claude
    # Code's, and recall on top of it loses none of what it keeps.
    own = by["memctx summary at the summary's tokens"]
    assert 0 < own.tokens <= summary.tokens
    assert set(own.kept) <= set(by["memctx summary + memctx recall"].kept)
    # The session as a scenario of the suite: every probe at the boundary, tagged with
    # whether Claude Code's summary kept its answer, played like any scenario.
    scenario = claude_code_scenario(transcript, path)
    assert scenario.suite == "claude-code" and len(scenario.probes) == len(probes)
    history = len(scenario.sessions[0].messages)
    assert all(p.at == history for p in scenario.probes)
    tags = {p.id: p.tags for p in scenario.probes}
    assert all(("in-summary" in tags[p.id]) == p.in_summary for p in probes)
    result = run_scenario(scenario, "truncate", "hash", work_dir=tmp_path / "truncate")
    assert [r.question for r in result.probes] == [p.question for p in probes]
    # At Claude Code's window the history still fits truncate: every answer is there.
    (mine,) = strategy_rows([(scenario, result.probes)])
    assert mine.config == "truncate" and len(mine.kept) >= 0.9 * len(probes)
    table = format_comparison([*rows, mine], {session: probes})
    assert f"| {session[:8]} | claude-code summary | {len(summary.kept)} / {len(probes)} |" in table
    assert f"| {session[:8]} | truncate | {len(mine.kept)} / {len(probes)} |" in table


@pytest.mark.dataset
def test_eval_suite_claude_code_writes_records_and_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset_path("claude-code")
    if not PROBE_FILES:
        pytest.skip("no probes written yet")
    out = tmp_path / "run"
    args = ["eval", "--suite", "claude-code", "--strategy", "truncate", "--embedding", "hash"]
    assert main([*args, "--limit", "1", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "claude-code (real data, not pooled):" in printed
    assert (out / "claude_code.md").read_text().startswith("# Real compactions")
    rows = json.loads((out / "claude_code.json").read_text())
    assert {r["config"] for r in rows} == {*CLAUDE_CODE_CONFIGS, "truncate"}
    _, first = load_hand_probes(PROBE_FILES[0])  # --limit 1: the first session
    summary = json.loads((out / "summary.json").read_text())
    (record,) = summary["records"]
    assert (record["suite"], record["strategy"]) == ("claude-code", "truncate")
    assert record["probes"] == len(first) and summary["pooled"] == []
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["question"] for r in results] == [p.question for p in first]
    assert [r["answers"] for r in results] == [list(p.answers) for p in first]


@pytest.mark.dataset
def test_the_report_of_a_run_with_real_data_has_the_section_and_a_later_run_drops_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset_path("claude-code")
    if not PROBE_FILES:
        pytest.skip("no probes written yet")
    out = tmp_path / "run"
    base = ["eval", "--quick", "--suite", "needle", "--strategy", "truncate", "--out", str(out)]
    assert main([*base, "--suite", "claude-code", "--no-progress"]) == 0
    report = (out / "report.md").read_text()
    assert "## Real data" in report and "| claude-code summary |" in report
    assert "<h2>Real data</h2>" in (out / "report.html").read_text()
    assert main([*base, "--no-progress"]) == 0  # the same folder, no real data asked: none
    assert "## Real data" not in (out / "report.md").read_text()
    assert not (out / "claude_code.md").exists()
    capsys.readouterr()

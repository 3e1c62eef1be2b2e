"""The report's note on the recall cap: said when hardCapTokens was capped below itself at
the windows the run played, by a strategy that inserted recall blocks."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from helpers.synthetic_run import build_run, write_run

from memctx.harness.gen.generate import generate_suite
from memctx.harness.provenance import provenance
from memctx.harness.report.notes import played_windows_of, recall_cap_run_note
from memctx.harness.report.report import write_report


def _summary(**changes: Any) -> dict[str, Any]:
    summary = build_run().summary
    summary["provenance"]["scenario_windows"] = {"needle": [24_000], "long-haul": [200_000]}
    for key, value in changes.items():
        summary["config"][key] = value
    return summary


def test_the_note_names_the_recalling_strategy_the_cap_and_the_fix() -> None:
    assert recall_cap_run_note(_summary()) == (
        "Recall blocks (memory-context): hardCapTokens 4,000 is capped at 2,400 by "
        "recallWindowRatio 0.1 of the 24,000-token window; raise recallWindowRatio to 0.167 "
        "to use it."
    )
    wider = _summary(windows=[32_000], overrides={"hardCapTokens": 8000})
    assert recall_cap_run_note(wider) == (
        "Recall blocks (memory-context): hardCapTokens 8,000 is capped at 3,200 by "
        "recallWindowRatio 0.1 of the 32,000-token window; raise recallWindowRatio to 0.25 "
        "to use it."
    )


def test_no_note_when_the_cap_is_the_setting_nothing_recalled_or_windows_unknown() -> None:
    assert recall_cap_run_note(_summary(overrides={"hardCapTokens": 2000})) is None
    assert recall_cap_run_note(_summary(overrides={"recallWindowRatio": 0.2})) is None
    quiet = _summary()
    for record in [*quiet["records"], *quiet["pooled"]]:
        record["recall_tokens"] = 0
    assert recall_cap_run_note(quiet) is None
    assert recall_cap_run_note(build_run().summary) is None  # written before windows were kept
    assert recall_cap_run_note(_summary(overrides={"hardCapTokens": "many"})) is None


def test_played_windows_are_the_window_option_else_the_scenarios() -> None:
    assert played_windows_of(_summary()) == [24_000, 200_000]
    assert played_windows_of(_summary(windows=[8_000])) == [8_000]


def test_provenance_keeps_each_suites_scenario_windows() -> None:
    suites = {"needle": generate_suite("needle", seed=0, scale=0.15)}
    options = SimpleNamespace(quick=True, datasets_dir=None, seed=0, answer_model="m", llm=None)
    recorded = provenance(options, suites)["scenario_windows"]
    assert recorded == {"needle": sorted({s.window for s in suites["needle"]})}


def test_the_report_shows_the_note_under_the_headline(tmp_path: Path) -> None:
    run = build_run()
    run.summary["provenance"]["scenario_windows"] = {"needle": [24_000]}
    run_dir = write_run(tmp_path / "run", run)
    write_report(run_dir)
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "hardCapTokens 4,000 is capped at 2,400 by recallWindowRatio 0.1" in md
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "hardCapTokens 4,000 is capped at 2,400" in html

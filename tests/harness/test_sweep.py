"""Sweeps: one run per value of a setting, and the curve over them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memctx.cli import main
from memctx.harness import EvalError, EvalOptions, format_sweep, parse_sweep, run_sweep
from memctx.harness.run import load_suite_scenarios
from memctx.harness.sweep import played_windows, sweep_notes


def test_parse_sweep_reads_values_and_refuses_what_the_config_refuses() -> None:
    assert parse_sweep("hardCapTokens=1000, 2000,4000") == ("hardCapTokens", [1000, 2000, 4000])
    assert parse_sweep("recallPlacement=end,before-request")[1] == ["end", "before-request"]
    for bad, message in [
        ("hardCapTokens=1000", "at least two values"),
        ("hardCapTokens", "KEY=V1,V2"),
        ("hardCapTokens=1000,1000", "given twice"),
        ("noSuchKey=1,2", "noSuchKey"),
        ("hardCapTokens=-5,10", "hardCapTokens"),
    ]:
        with pytest.raises(EvalError, match=message):
            parse_sweep(bad)


def test_a_sweep_writes_a_run_per_value_and_the_curve(tmp_path: Path) -> None:
    options = EvalOptions(
        suites=("needle",),
        strategies=("truncate", "memory-context"),
        quick=True,
        embeddings=("hash",),
        jobs=1,
        progress=False,
        out_dir=tmp_path / "sweep",
    )
    folder, points = run_sweep(options, "hardCapTokens", [60, 2000])
    assert folder == tmp_path / "sweep"
    for value in (60, 2000):
        summary = json.loads((folder / f"hardCapTokens={value}" / "summary.json").read_text())
        assert summary["config"]["overrides"] == {"hardCapTokens": value}
    by = {(p.strategy, p.value): p for p in points}
    assert set(by) == {(s, v) for s in ("truncate", "memory-context") for v in (60, 2000)}
    # The cap bounds what recall can add: a 60-token block holds less than a 2,000-token one.
    small, large = by[("memory-context", 60)], by[("memory-context", 2000)]
    assert small.recall_accuracy is not None and large.recall_accuracy is not None
    assert small.recall_accuracy < large.recall_accuracy
    assert by[("truncate", 60)].recall_accuracy == by[("truncate", 2000)].recall_accuracy
    table = (folder / "sweep.md").read_text(encoding="utf-8")
    assert "hardCapTokens=60" in table and "hardCapTokens=2000" in table
    assert format_sweep("hardCapTokens", points) in table
    assert json.loads((folder / "sweep.json").read_text())["key"] == "hardCapTokens"
    # The quick needle scenarios play a 10,000-token window: 2000 is capped there at 1,000.
    assert json.loads((folder / "sweep.json").read_text())["notes"] == [
        "hardCapTokens 2,000 is capped at 1,000 by recallWindowRatio 0.1 of the 10,000-token "
        "window; raise recallWindowRatio to 0.2 to use it"
    ]
    from memctx.harness.report import sweep_chart

    chart = sweep_chart(points, "hardCapTokens", folder)
    assert chart.path == folder / "sweep.png"
    assert chart.path.read_bytes().startswith(b"\x89PNG") and "hardCapTokens" in chart.caption


def test_the_cli_checks_a_sweep_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["eval", "--quick", "--sweep", "hardCapTokens=5"]) == 2
    assert "at least two values" in capsys.readouterr().err
    assert main(["eval", "--quick", "--sweep", "a=1,2", "--baseline", "x.json"]) == 2
    assert not (tmp_path / "reports").exists()


def _options(**changes: Any) -> EvalOptions:
    base = EvalOptions(
        suites=("needle",), strategies=("truncate",), quick=True, embeddings=("hash",), jobs=1
    )
    return replace(base, progress=False, **changes)


def test_sweep_notes_say_when_hard_cap_is_capped_and_points_are_identical() -> None:
    notes = sweep_notes(_options(), "hardCapTokens", [1000, 2000, 4000, 8000], windows=[24_000])
    assert notes == [
        "hardCapTokens 4,000 is capped at 2,400 by recallWindowRatio 0.1 of the 24,000-token "
        "window; raise recallWindowRatio to 0.167 to use it",
        "hardCapTokens 8,000 is capped at 2,400 by recallWindowRatio 0.1 of the 24,000-token "
        "window; raise recallWindowRatio to 0.334 to use it",
        "hardCapTokens=4000, hardCapTokens=8000 give the same recall cap at every window "
        "played (2,400 at 24,000 tokens) and nothing else differs: their points are "
        "identical by construction",
    ]
    every = sweep_notes(_options(), "hard_cap_tokens", [4000, 8000], windows=[10_000, 24_000])
    assert every[-1].startswith("every value of this sweep gives the same recall cap")
    assert "(1,000 at 10,000 tokens, 2,400 at 24,000 tokens)" in every[-1]
    assert every[-1].endswith("nothing else differs: the points are identical by construction")


def test_sweep_notes_stay_silent_when_the_cap_is_the_setting_or_more_changes() -> None:
    # A window where 8000 fits: the two values differ there, so no "identical".
    notes = sweep_notes(_options(), "hardCapTokens", [4000, 8000], windows=[24_000, 200_000])
    assert not any("identical" in n for n in notes) and len(notes) == 2
    raised = _options(overrides={"recallWindowRatio": 0.5})
    assert sweep_notes(raised, "hardCapTokens", [1000, 2000, 4000], windows=[24_000]) == []
    # Equal caps, but another setting is what is swept: the points may differ.
    placements = ["end", "before-request"]
    assert sweep_notes(_options(), "recallPlacement", placements, windows=[200_000]) == []
    # Swept ratio: 0.1 and 0.2 give the same cap when hardCapTokens is below both.
    low = _options(overrides={"hardCapTokens": 1000})
    same = sweep_notes(low, "recallWindowRatio", [0.1, 0.2], windows=[24_000])
    assert same and "identical by construction" in same[-1]


def test_played_windows_are_the_window_option_or_the_scenarios_own() -> None:
    assert played_windows(_options(windows=(32_000, 8_000, 32_000))) == [8_000, 32_000]
    options = _options()
    scenarios = load_suite_scenarios(options)["needle"]
    assert played_windows(options) == sorted({s.window for s in scenarios})


def test_the_cli_prints_the_notes_and_writes_them_with_the_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sweep"
    argv = ["eval", "--quick", "--suite", "needle", "--strategy", "truncate", "--window"]
    argv += ["24000", "--sweep", "hardCapTokens=4000,8000", "--no-report", "--no-progress"]
    assert main([*argv, "--jobs", "1", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "memctx: note: hardCapTokens 8,000 is capped at 2,400" in captured.err
    assert "identical by construction" in captured.out
    text = (out / "sweep.md").read_text(encoding="utf-8")
    assert "Note: every value of this sweep gives the same recall cap" in text
    notes = json.loads((out / "sweep.json").read_text(encoding="utf-8"))["notes"]
    assert len(notes) == 3 and "identical by construction" in notes[-1]

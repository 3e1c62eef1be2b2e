"""Sweeps: one run per value of a setting, and the curve over them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memctx.cli import main
from memctx.harness import EvalError, EvalOptions, format_sweep, parse_sweep, run_sweep


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

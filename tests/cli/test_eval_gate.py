"""``memctx eval --baseline``: a run that would not play what the baseline played is refused
before anything runs (exit 2, each difference named); ``--allow-different-scenarios`` lets it
through; the gate after a run refuses the same way."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from helpers.synthetic_run import build_run, write_run

import memctx.harness
from memctx.cli import main
from memctx.cli.evaluate import finish_eval
from memctx.harness import EvalError

BASELINE = Path(__file__).resolve().parents[2] / "reports" / "baseline" / "summary.json"
REACHED = "reached the run"


@pytest.fixture
def no_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Work in an empty folder where the run itself is replaced by an error saying it was
    reached: a refused command never gets there, an allowed one always does."""

    def reached(options: Any) -> Path:
        raise EvalError(REACHED)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(memctx.harness, "run_eval", reached)
    return tmp_path


def _eval(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = main(["eval", "--no-progress", "--no-report", *argv])
    return status, capsys.readouterr().err


def _baseline_with(tmp_path: Path, change: Any) -> str:
    """The committed baseline with ``change`` applied to its summary, as a file."""
    summary = json.loads(BASELINE.read_text(encoding="utf-8"))
    change(summary)
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(summary), encoding="utf-8")
    return str(path)


def test_a_quick_run_against_the_full_baseline_is_refused_before_it_runs(
    no_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, err = _eval(capsys, "--quick", "--baseline", str(BASELINE))
    assert status == 2 and REACHED not in err
    lines = err.splitlines()
    assert lines[0].startswith(
        "memctx: cannot compare this run with the baseline: this run is a quick run, the "
        "baseline a full one; different scenarios in needle, supersede, paraphrase, "
        "tool-heavy and 11 more"
    )
    assert (
        "  - quick: this run played the small generated set (--quick), the baseline the "
        "frozen datasets (datasets/v1); fix: make both runs alike" in err
    )
    assert (
        "  - scenarios: scenarios/probes of the baseline vs this run: needle 2/44 vs 1/8, "
        "supersede 2/43 vs 1/7," in err
    )
    assert "suites both runs played on the same scenarios: none" in err
    assert lines[-1] == "  (nothing was run)"
    assert not (no_run / "reports").exists()  # no run folder, no latest link moved


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (
            ["--suite", "needle", "--embedding", "hash"],
            "different suites (only in the baseline: supersede, paraphrase, tool-heavy, cjk "
            "and 10 more)",
        ),
        (["--window", "50000"], "different context windows"),
        (["--answer-model", "gpt-4o"], "costs priced for different models"),
    ],
)
def test_each_difference_known_from_the_options_is_refused_and_named(
    argv: list[str], named: str, no_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, err = _eval(capsys, *argv, "--baseline", str(BASELINE))
    assert status == 2 and REACHED not in err
    assert err.splitlines()[0] == (f"memctx: cannot compare this run with the baseline: {named}")
    assert "; fix: " in err and "--allow-different-scenarios" in err
    # Asked to compare anyway: the run starts.
    status, err = _eval(capsys, *argv, "--baseline", str(BASELINE), "--allow-different-scenarios")
    assert (status, REACHED in err) == (2, True)


def test_changed_scenarios_are_found_by_checksum_before_the_run(
    no_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def regenerated(summary: dict[str, Any]) -> None:
        summary["provenance"]["scenarios"]["paraphrase"]["sha256"] = "0" * 64

    baseline = _baseline_with(no_run, regenerated)
    status, err = _eval(capsys, "--baseline", baseline)
    assert status == 2 and REACHED not in err
    assert err.splitlines()[0].endswith("with the baseline: different scenarios in paraphrase")
    assert "paraphrase 2/44 vs 2/44 (sha256 000000000000 vs 8bf6ee4782e3); fix: " in err
    assert "suites both runs played on the same scenarios: needle, supersede, tool-heavy" in err


def test_a_run_like_the_baseline_starts_and_answer_models_matter_only_for_cost(
    no_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The committed baseline is a full run of the current datasets: nothing differs.
    assert _eval(capsys, "--baseline", str(BASELINE)) == (2, f"memctx: error: {REACHED}\n")
    argv = ["--answer-model", "gpt-4o", "--baseline", str(BASELINE)]
    assert REACHED in _eval(capsys, *argv, "--fail-on", "recall_accuracy:ci")[1]
    assert "costs priced" in _eval(capsys, *argv, "--fail-on", "cost_per_call:+10%")[1]


def test_the_gate_after_a_run_refuses_too_and_the_flag_lets_it_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = build_run()
    full.summary["provenance"]["datasets"] = "datasets/v1"
    full.summary["config"]["quick"] = False
    baseline = write_run(tmp_path / "baseline", full) / "summary.json"
    quick = write_run(tmp_path / "run", copy.deepcopy(build_run()))
    assert finish_eval(quick, no_report=True, baseline=str(baseline)) == 2
    out = capsys.readouterr().out
    assert "gate: cannot compare this run with the baseline: this run is a quick run" in out
    assert "FAIL" not in out
    allowed = finish_eval(
        quick, no_report=True, baseline=str(baseline), allow_different_scenarios=True
    )
    assert allowed == 0
    out = capsys.readouterr().out
    assert "gate: PASS over 40 record(s)" in out
    assert "note: compared as asked although this run is a quick run, the baseline a full one" in (
        out
    )


def test_the_flag_is_documented_in_eval_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--allow-different-scenarios with --baseline: gate even when this run" in text
    assert "refused before it starts (exit 2, naming each difference and the fix)" in text

"""Real-model runs against a scripted model (``helpers.scripted_llm``, a litellm custom
provider with prices): rate limits retried with backoff across worker processes, the
concurrency bound held across them, ``--max-cost`` stopping the run before the budget, and
the shared response cache answering a resumed run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.scripted_llm import MODEL, read_state

from memctx.cli import main
from memctx.harness import JOURNAL, EvalOptions, run_eval

PLUGIN = "helpers.scripted_llm"
BASE = [
    "--quick", "--suite", "needle", "--suite", "supersede", "--strategy", "truncate",
    "--embedding", "hash", "--llm", MODEL, "--plugin", PLUGIN, "--no-report", "--no-progress",
]  # fmt: skip


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The scripted model's state folder (workers inherit the environment)."""
    folder = tmp_path / "scripted"
    folder.mkdir()
    monkeypatch.setenv("SCRIPTED_LLM_DIR", str(folder))
    monkeypatch.setenv("SCRIPTED_LLM_FAIL_RATE", "0")
    monkeypatch.setenv("SCRIPTED_LLM_SEED", "3")
    return folder


def _summary(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    return data


def _probes(run: Path) -> list[dict[str, Any]]:
    lines = (run / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_rate_limits_are_retried_and_the_bound_holds_across_workers(
    tmp_path: Path, scripted: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCRIPTED_LLM_FAIL_RATE", "0.3")
    monkeypatch.setenv("SCRIPTED_LLM_HOLD_S", "0.05")
    out = run_eval(
        EvalOptions(
            suites=("needle",),  # two jobs, one per worker, calling at once
            strategies=("truncate", "observation-masking"),
            embeddings=("hash",),
            quick=True,
            jobs=2,
            llm=MODEL,
            llm_concurrency=1,
            llm_retries=10,
            llm_backoff_s=0.01,
            plugins=(PLUGIN,),
            out_dir=tmp_path / "run",
            progress=False,
        )
    )
    state = read_state(scripted)
    llm = _summary(out)["timing"]["llm"]
    assert state["rate_limited"] > 0  # the script refused calls (seeded, 30 %) ...
    assert llm["retries"] == state["rate_limited"]  # ... each one was retried ...
    assert llm["failures"] == 0
    assert llm["calls"] == state["calls"] - state["rate_limited"]  # ... and then answered
    assert state["max_in_flight"] == 1  # two workers, one call in flight at a time
    fitted = [p for p in _probes(out) if p["fits"]]
    assert fitted and all(p["judged"] is True for p in fitted)  # every probe answered
    assert "budget" not in _summary(out)  # no --max-cost, no budget section
    assert not (out / ".llm").exists()  # the slots and ledger go with the run


def test_max_cost_stops_the_run_before_the_budget(
    tmp_path: Path, scripted: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    status = main(["eval", *BASE, "--jobs", "1", "--max-cost", "0.05", "--out", str(out)])
    captured = capsys.readouterr()
    assert status == 1
    assert "stopped at the cost budget" in captured.err
    budget = _summary(out)["budget"]
    assert budget["stopped"] is True
    assert budget["limit_usd"] == 0.05
    assert 0 < budget["spent_usd"] <= 0.05
    assert budget["jobs_done"] < budget["jobs_planned"]
    assert budget["reason"].startswith("stopped before exceeding the cost budget of $0.0500")
    # The summary covers the jobs done; the journal stays for --resume.
    done = {p["scenario"] for p in _probes(out)}
    assert len(done) == budget["jobs_done"]
    assert (out / JOURNAL).exists()
    first_calls = read_state(scripted)["calls"]
    # Resumed with a larger budget: the rest runs, and what the stopped job had asked
    # already comes from the run's shared cache.
    status = main(["eval", "--resume", str(out), "--max-cost", "1", "--no-report"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    summary = _summary(out)
    assert summary["budget"]["stopped"] is False
    assert summary["budget"]["jobs_done"] == summary["budget"]["jobs_planned"]
    assert summary["timing"]["llm"]["cache_hits"] > 0
    assert read_state(scripted)["calls"] > first_calls
    assert "cost budget:" in captured.out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--max-cost", "0"], "--max-cost must be a positive amount"),
        (["--max-cost", "nan"], "--max-cost must be a positive amount"),
        (["--llm-concurrency", "0"], "--llm-concurrency must be 1 or more"),
    ],
)
def test_bad_limits_are_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    out = tmp_path / "run"
    assert main(["eval", *BASE, *extra, "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_limits_need_a_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    args = ["eval", "--quick", "--suite", "needle", "--max-cost", "1", "--out", str(out)]
    assert main(args) == 2
    assert "--max-cost needs --llm MODEL" in capsys.readouterr().err
    assert not out.exists()

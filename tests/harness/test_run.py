"""The run as a whole: determinism, the process pool, the gate on a worse config, the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memctx.cli import main
from memctx.harness.gate import check_gate
from memctx.harness.run import DEFAULT_STRATEGIES, EvalError, EvalOptions, run_eval
from memctx.harness.schema import RECORD_METRICS, TIMING_KEYS

SUITES = ("needle", "supersede")


def _options(out: Path, **kwargs: Any) -> EvalOptions:
    base: dict[str, Any] = {
        "suites": SUITES,
        "quick": True,
        "embeddings": ("hash",),
        "jobs": 1,
        "out_dir": out,
        "progress": False,
    }
    base.update(kwargs)
    return EvalOptions(**base)


def _without_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_without_timing(v) for v in value]
    return value


def _summary(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def baseline_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_eval(_options(tmp_path_factory.mktemp("eval") / "base"))


def test_run_writes_every_file_with_records_per_suite_strategy(baseline_run: Path) -> None:
    for name in ("results.jsonl", "trace.jsonl", "summary.json"):
        assert (baseline_run / name).stat().st_size > 0, name
    summary = _summary(baseline_run)
    keys = {(r["suite"], r["strategy"], r["embedding"]) for r in summary["records"]}
    assert {r["suite"] for r in summary["pooled"]} == {"all"}  # kept apart: sums count once
    keys |= {(r["suite"], r["strategy"], r["embedding"]) for r in summary["pooled"]}
    for suite in (*SUITES, "all"):
        assert (suite, "full", "none") in keys
        assert (suite, "truncate", "none") in keys
        assert (suite, "observation-masking", "none") in keys  # never searches: one record
        assert (suite, "planner", "none") in keys
        for searching in ("openclaw", "meerkat", "memory-context", "masking-recall"):
            assert (suite, searching, "hash") in keys
    # What each configuration cost to measure, in worker seconds.
    spent = summary["timing"]["strategy_s"]
    assert set(spent) == {f"{s}/{e}" for _, s, e in keys}
    assert all(seconds >= 0 for seconds in spent.values())
    for record in summary["records"]:
        assert set(RECORD_METRICS) <= set(record)
    provenance = summary["provenance"]
    assert provenance["versions"]["litellm"]
    assert set(provenance["scenarios"]) == set(SUITES)
    assert summary["config"]["suites"] == list(SUITES)
    rows = (baseline_run / "results.jsonl").read_text(encoding="utf-8").splitlines()
    probes = sum(v["probes"] for v in provenance["scenarios"].values())
    # one row per probe for each strategy x embedding pair: four never search, four by hash
    assert len(rows) == 8 * probes


def test_same_command_gives_the_same_summary_apart_from_timing(
    baseline_run: Path, tmp_path: Path
) -> None:
    again = run_eval(_options(tmp_path / "again"))
    assert _without_timing(_summary(again)) == _without_timing(_summary(baseline_run))
    assert _rows(again / "results.jsonl") == _rows(baseline_run / "results.jsonl")
    assert _rows(again / "trace.jsonl") == _rows(baseline_run / "trace.jsonl")


def _rows(path: Path) -> list[dict[str, Any]]:
    """A JSONL file's rows without the run id (it names the time) and the hook's wall time."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert rows and all(row.pop("run") for row in rows)
    for row in rows:
        row.pop("latency_ms", None)
    return rows


def test_process_pool_gives_the_same_records_as_one_process(
    baseline_run: Path, tmp_path: Path
) -> None:
    pooled = run_eval(_options(tmp_path / "pool", jobs=2, suites=("needle",)))
    # One process played needle for the baseline run already: its records are the reference
    # (each record names its run's configuration, which differs: the suites).
    single = [r for r in _summary(baseline_run)["records"] if r["suite"] == "needle"]
    assert [{**r, "config": None} for r in _without_timing(_summary(pooled)["records"])] == [
        {**r, "config": None} for r in _without_timing(single)
    ]


def test_gate_passes_on_the_baseline_and_fails_on_a_worse_config(
    baseline_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = baseline_run / "summary.json"
    assert check_gate(baseline_run, baseline, "recall_accuracy:-0.02") == 0
    # A recall cap of 60 tokens leaves no room for recalled detail: a deliberate regression.
    worse = run_eval(_options(tmp_path / "worse", overrides={"hardCapTokens": 60}))
    assert check_gate(worse, baseline, "recall_accuracy:-0.02") != 0
    assert "recall_accuracy" in capsys.readouterr().out


def test_unknown_suite_and_missing_datasets_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(EvalError, match="unknown suite"):
        run_eval(_options(tmp_path / "x", suites=("nope",)))
    with pytest.raises(EvalError, match="memctx gen"):
        run_eval(_options(tmp_path / "y", quick=False, datasets_dir=tmp_path / "none"))
    assert not (tmp_path / "x").exists()


def test_cli_eval_reports_bad_options_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "--quick", "--set", "noSuchKey=1", "--out", str(tmp_path)]) == 2
    assert "noSuchKey" in capsys.readouterr().err
    assert main(["eval", "--quick", "--fail-on", "cost_usd:+5%", "--out", str(tmp_path)]) == 2
    assert "--baseline" in capsys.readouterr().err


def test_cli_eval_quick_prints_the_table_and_writes_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    status = main(
        ["eval", "--quick", "--suite", "needle", "--jobs", "1", "--no-progress", "--out", str(out)]
    )
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert "memory-context" in printed and "truncate" in printed
    assert (out / "report.md").exists() and (out / "report.html").exists()
    # Without --window each scenario plays at its own window (sessions 3-8x its size).
    assert _summary(out)["config"]["windows"] == []


_PLUGIN = '''
from memctx.strategies import BaseStrategy, Prepared, register_strategy, strategy_names


class SystemOnly(BaseStrategy):
    """Sends the system prompt and the newest plain user message: a deliberately bad one."""

    name = "system-only"

    def prepare(self, transcript):
        last = [m for m in transcript if m["role"] == "user" and isinstance(m["content"], str)]
        return Prepared([transcript[0], *last[-1:]], trimmed=True)


if "system-only" not in strategy_names():
    register_strategy("system-only", SystemOnly)
'''


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_plugin_strategy_runs_on_a_users_own_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    from helpers.eval_sessions import scenario

    from memctx.harness.scenario import dump_scenarios

    # A user's own scenario file is a suite; a module of theirs registers a strategy that
    # the worker processes must see too.
    data = tmp_path / "mine"
    data.mkdir()
    dump_scenarios([scenario(turns=30)], data / "my-suite.jsonl")
    (tmp_path / "my_strategies.py").write_text(_PLUGIN, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    args = ["eval", "--datasets", str(data), "--plugin", "my_strategies", "--jobs", str(jobs)]
    args += ["--strategy", "system-only", "--strategy", "memory-context", "--embedding", "hash"]
    assert main([*args, "--no-progress", "--no-report", "--out", str(out)]) == 0
    records = {(r["suite"], r["strategy"]): r for r in _summary(out)["records"]}
    assert records[("my-suite", "system-only")]["recall_accuracy"] == 0.0
    assert records[("my-suite", "memory-context")]["recall_accuracy"] == 1.0
    assert _summary(out)["config"]["plugins"] == ["my_strategies"]
    capsys.readouterr()
    assert main(["eval", "--datasets", str(data), "--suite", "needle", "--out", str(out)]) == 2
    # A built-in name is a known suite, only missing from this folder: the error says so.
    assert "needle.jsonl.gz is missing" in capsys.readouterr().err
    assert main(["eval", "--datasets", str(data), "--suite", "nope", "--out", str(out)]) == 2
    assert "unknown suite" in (err := capsys.readouterr().err) and "my-suite" in err
    assert main([*args, "--plugin", "no_such_module", "--out", str(out)]) == 2
    assert "no_such_module" in capsys.readouterr().err


def test_progress_lines_count_jobs_and_estimate_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_eval(_options(tmp_path / "p", suites=("needle",), progress=True))
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 8  # full, truncate, observation-masking, planner; 4 searching x hash
    assert lines[0].startswith("[1/8] ") and "min left" in lines[0] and " job " in lines[0]
    assert lines[-1].startswith("[8/8] ") and lines[-1].endswith("done")


def test_observation_masking_is_a_default_and_its_setting_makes_a_variant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert DEFAULT_STRATEGIES == (
        "full",
        "truncate",
        "observation-masking",
        "openclaw",
        "meerkat",
        "memory-context",
        "masking-recall",
        "planner",
    )
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    assert "observation-masking" in capsys.readouterr().out
    # A bad setting is refused before anything runs, naming the fix.
    with pytest.raises(EvalError, match=r"keepLast='x'.*integer >= 0"):
        run_eval(_options(tmp_path / "bad", strategies=("observation-masking:keepLast=x",)))
    assert not (tmp_path / "bad").exists()
    # Two settings side by side: two records, neither per embedding.
    variants = ("observation-masking", "observation-masking:keepLast=2")
    run = run_eval(_options(tmp_path / "v", suites=("needle",), strategies=variants))
    records = {(r["strategy"], r["embedding"]): r for r in _summary(run)["records"]}
    ten, two = records[(variants[0], "none")], records[(variants[1], "none")]
    assert two["tokens_per_call"] < ten["tokens_per_call"]
    assert ten["violations"] == two["violations"] == 0 and ten["llm_tokens"] == 0

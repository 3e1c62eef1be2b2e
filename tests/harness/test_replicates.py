"""``memctx eval --replicates N``: replicate 0 is the run as before, the others regenerate the
synthetic suites with the seeds seed + r, and the report's "Across replicates" section is
computed from their probes."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memctx.cli import main
from memctx.harness.executor import Job, bundles
from memctx.harness.gen.generate import generate_suite
from memctx.harness.journal import job_key, read_plan, write_plan
from memctx.harness.metrics import t_interval, t_quantile
from memctx.harness.replicates import REAL_DATA_ONCE, USER_SUITE_ONCE, plan_replicates
from memctx.harness.report import format_terminal_table, write_report
from memctx.harness.run import DEFAULT_DATASETS, EvalError, EvalOptions, run_eval
from memctx.harness.scenario import load_scenarios
from memctx.harness.schema import TIMING_KEYS

SUITES = ("needle", "supersede")
# Strategies that do not search: fast, and still far apart on these suites.
STRATEGIES = ("observation-masking", "truncate")


def _options(out: Path, **kwargs: Any) -> EvalOptions:
    base: dict[str, Any] = {
        "suites": SUITES,
        "strategies": STRATEGIES,
        "quick": True,
        "embeddings": ("hash",),
        "jobs": 1,
        "out_dir": out,
        "progress": False,
    }
    base.update(kwargs)
    return EvalOptions(**base)


def _summary(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    return data


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


_CHANGING = (*TIMING_KEYS, "latency_ms", "run", "git")


def _stable(value: Any) -> Any:
    """``value`` without what changes from one run to the next (timing, a call's latency,
    run id, git)."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in _CHANGING}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_eval(_options(tmp_path_factory.mktemp("rep") / "one"))


@pytest.fixture(scope="module")
def triple(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = run_eval(_options(tmp_path_factory.mktemp("rep") / "three", replicates=3))
    write_report(run)
    return run


def test_one_replicate_writes_what_a_run_wrote_before(single: Path) -> None:
    summary = _summary(single)
    assert "replicates" not in summary
    assert "replicates" not in summary["config"]
    assert not (single / "replicates").exists()
    assert "replicates" not in json.loads((single / "run.json").read_text())["options"]


def test_replicate_zero_is_the_run_without_replicates(single: Path, triple: Path) -> None:
    one, three = _summary(single), _summary(triple)
    for key in ("records", "pooled", "provenance"):
        assert _stable(three[key]) == _stable(one[key])
    assert _stable(_rows(triple / "results.jsonl")) == _stable(_rows(single / "results.jsonl"))
    assert _stable(_rows(triple / "trace.jsonl")) == _stable(_rows(single / "trace.jsonl"))
    assert three["config"] == {**one["config"], "replicates": 3}


def test_each_replicate_plays_its_own_seed(triple: Path) -> None:
    summary = _summary(triple)
    section = summary["replicates"]
    assert section["count"] == 3 and section["seeds"] == [0, 1, 2]
    assert section["suites"] == list(SUITES) and section["once"] == {}
    first = summary["provenance"]["scenarios"]
    digests = [first] + [section["scenarios"][str(r)] for r in (1, 2)]
    for suite in SUITES:
        shas = {d[suite]["sha256"] for d in digests}
        assert len(shas) == 3, f"{suite}: replicates played the same scenarios"
        assert [d[suite]["seeds"] for d in digests] == [[0], [1], [2]]
    rows = _rows(triple / "replicates" / "results.jsonl")
    assert {(r["replicate"], r["seed"]) for r in rows} == {(1, 1), (2, 2)}
    # The scenarios kept for --resume are the generator's for that seed.
    kept = load_scenarios(triple / "replicates" / "scenarios" / "seed-2" / "needle.jsonl.gz")
    made = generate_suite("needle", seed=2, scale=section["scale"])
    assert [s.to_json() for s in kept] == [s.to_json() for s in made]
    answers = {r["answers"][0] for r in rows if r["replicate"] == 1 and r["suite"] == "needle"}
    first_answers = {
        r["answers"][0] for r in _rows(triple / "results.jsonl") if r["suite"] == "needle"
    }
    assert answers and answers != first_answers


def _pooled_by_hand(triple: Path) -> dict[tuple[str, str], list[float]]:
    """Per (strategy, embedding), the pooled recall accuracy of each replicate, counted from
    the probe rows: hits over fitted probes of the replicated suites."""
    rows = [{**r, "replicate": 0} for r in _rows(triple / "results.jsonl")]
    rows += _rows(triple / "replicates" / "results.jsonl")
    counts: dict[tuple[str, str], list[list[int]]] = {}
    for row in rows:
        if not row["fits"]:
            continue
        hits = counts.setdefault((row["strategy"], row["embedding"]), [[0, 0] for _ in range(3)])
        hits[row["replicate"]][0] += bool(row["recall_accuracy"])
        hits[row["replicate"]][1] += 1
    return {key: [h / n for h, n in per] for key, per in counts.items()}


def test_the_section_shows_each_replicate_mean_range_and_t_interval(triple: Path) -> None:
    report = (triple / "report.md").read_text(encoding="utf-8")
    section = report.split("## Across replicates", 1)[1].split("\n## ", 1)[0]
    assert "seed" in section and "deterministic" in section
    by_hand = _pooled_by_hand(triple)
    assert set(by_hand) == {("observation-masking", "none"), ("truncate", "none")}
    for (strategy, embedding), values in by_hand.items():
        mean = sum(values) / 3
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 2)
        half = 4.302652729749464 * sd / math.sqrt(3)  # t(0.975, 2), from a table
        low, high = max(0.0, mean - half), min(1.0, mean + half)
        cells = [
            strategy,
            embedding,
            *(f"{100 * v:.1f} %" for v in values),
            f"{100 * mean:.1f} %",
            f"{100 * min(values):.1f}–{100 * max(values):.1f}",
            f"{100 * low:.1f}–{100 * high:.1f}",
        ]
        row = "| " + " | ".join(cells) + " |"
        assert row in section, f"{row!r} not in the section:\n{section}"
    html = (triple / "report.html").read_text(encoding="utf-8")
    assert "<h2>Across replicates</h2>" in html
    printed = format_terminal_table(_summary(triple))
    assert "Across replicates" in printed
    masking = by_hand["observation-masking", "none"]
    assert " ".join(f"{100 * v:.1f} %" for v in masking) in " ".join(printed.split())


def test_a_run_without_replicates_has_no_such_section(single: Path) -> None:
    write_report(single)
    assert "Across replicates" not in (single / "report.md").read_text(encoding="utf-8")
    assert "Across replicates" not in format_terminal_table(_summary(single))


def test_the_same_command_gives_the_same_replicates(triple: Path, tmp_path: Path) -> None:
    again = run_eval(_options(tmp_path / "again", replicates=3))
    assert _stable(_summary(again)["replicates"]) == _stable(_summary(triple)["replicates"])
    rows = _stable(_rows(again / "replicates" / "results.jsonl"))
    assert rows == _stable(_rows(triple / "replicates" / "results.jsonl"))


def test_fewer_than_one_replicate_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "--quick", "--replicates", "0", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--replicates must be 1 or more, got 0" in err and "--replicates 1" in err
    with pytest.raises(EvalError, match="replicates must be 1 or more"):
        run_eval(_options(tmp_path / "bad", replicates=-1))


def test_frozen_datasets_replicate_at_their_manifest_scale_and_seed(tmp_path: Path) -> None:
    frozen = {"needle": load_scenarios(DEFAULT_DATASETS / "needle.jsonl.gz")}
    plan = plan_replicates(
        2, frozen, seed=0, generated_scale=None, datasets=DEFAULT_DATASETS,
        out=tmp_path, resume=False,
    )  # fmt: skip
    manifest = json.loads((DEFAULT_DATASETS / "MANIFEST.json").read_text())
    assert plan.seeds == (manifest["seed"], 1) and plan.scale == manifest["scale"]
    regenerated = generate_suite("needle", seed=1, scale=manifest["scale"])
    assert [s.to_json() for s in plan.scenarios[1]["needle"]] == [s.to_json() for s in regenerated]


def test_suites_without_a_seed_are_played_once(tmp_path: Path) -> None:
    needle = generate_suite("needle", seed=0, scale=0.15)
    generated = plan_replicates(
        2, {"needle": needle, "locomo": []}, seed=0, generated_scale=0.15,
        datasets=tmp_path, out=tmp_path / "a", resume=False,
    )  # fmt: skip
    assert generated.suites == ("needle",) and generated.once == {"locomo": REAL_DATA_ONCE}
    own = plan_replicates(
        2, {"needle": needle}, seed=0, generated_scale=None, datasets=tmp_path,
        out=tmp_path / "b", resume=False,
    )  # fmt: skip
    assert own.suites == () and own.once == {"needle": USER_SUITE_ONCE}


def test_resume_reads_the_kept_scenarios_and_the_plan_keeps_the_count(tmp_path: Path) -> None:
    needle = generate_suite("needle", seed=0, scale=0.15)
    args: dict[str, Any] = {"seed": 0, "generated_scale": 0.15, "datasets": tmp_path}
    plan_replicates(2, {"needle": needle}, out=tmp_path, resume=False, **args)
    kept = tmp_path / "replicates" / "scenarios" / "seed-1" / "needle.jsonl.gz"
    other = generate_suite("needle", seed=7, scale=0.15)
    from memctx.harness.scenario import dump_scenarios

    dump_scenarios(other, kept)  # what the interrupted run played, whatever the generator says
    resumed = plan_replicates(2, {"needle": needle}, out=tmp_path, resume=True, **args)
    assert [s.to_json() for s in resumed.scenarios[1]["needle"]] == [s.to_json() for s in other]
    write_plan(tmp_path, _options(tmp_path, replicates=2), "run-id", {})
    assert read_plan(tmp_path)["options"]["replicates"] == 2


def test_a_replicates_jobs_are_told_apart_from_replicate_zeros() -> None:
    scenario = generate_suite("needle", seed=0, scale=0.15)[0]
    config = _options(Path(".")).config()
    jobs = [
        Job(r, "needle", scenario, "memory-context", "transformer", None, config, r)
        for r in range(2)
    ]
    assert job_key(jobs[0]) != job_key(jobs[1])
    assert "\t0" not in job_key(jobs[0])[-2:]  # replicate 0's key is the one used before
    assert len(bundles(jobs)) == 2  # not one bundle: they are different scenarios


@pytest.mark.parametrize(
    ("df", "expected"),
    [(1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764), (9, 2.2622), (29, 2.0452)],
)
def test_t_quantile_matches_the_table(df: int, expected: float) -> None:
    assert t_quantile(df) == pytest.approx(expected, abs=1e-4)


def test_t_interval_needs_two_values() -> None:
    assert t_interval([]) == [] and t_interval([0.5]) == []
    assert t_interval([0.4, 0.4, 0.4]) == [0.4, 0.4]
    low, high = t_interval([0.5, 0.7])
    assert (low, high) == pytest.approx((0.6 - 12.7062 * 0.1, 0.6 + 12.7062 * 0.1), abs=1e-3)


@given(st.lists(st.floats(0, 1), min_size=2, max_size=12))
def test_t_interval_is_centred_on_the_mean_and_covers_it(values: list[float]) -> None:
    low, high = t_interval(values)
    mean = sum(values) / len(values)
    assert low <= mean + 1e-4 and high >= mean - 1e-4
    assert (low + high) / 2 == pytest.approx(mean, abs=1e-4)


def test_an_interrupted_run_with_replicates_resumes_to_the_same_summary(
    triple: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memctx.harness.run as run_module

    real = run_module.execute_jobs

    def interrupted(jobs: list[Job], options: EvalOptions, report: Any) -> Any:
        # A third of the jobs of every replicate finish, then the run dies.
        some = [job for job in jobs if job.index % 3 == 0]
        assert {job.replicate for job in some} == {0, 1, 2}
        real(some, options, report)
        raise RuntimeError("killed")

    monkeypatch.setattr(run_module, "execute_jobs", interrupted)
    out = tmp_path / "killed"
    with pytest.raises(RuntimeError, match="killed"):
        run_eval(_options(out, replicates=3))
    monkeypatch.setattr(run_module, "execute_jobs", real)
    assert not (out / "summary.json").exists()
    plan = read_plan(out)
    assert plan["options"]["replicates"] == 3
    resumed = EvalOptions(
        **plan["options"], out_dir=out, run_id=plan["run"], resume=True, jobs=1, progress=False
    )
    run_eval(resumed)
    assert _stable(_summary(out)["replicates"]) == _stable(_summary(triple)["replicates"])
    rows = _stable(_rows(out / "replicates" / "results.jsonl"))
    assert rows == _stable(_rows(triple / "replicates" / "results.jsonl"))

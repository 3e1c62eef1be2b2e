"""Whether two runs can be compared: every kind of difference found and named, nothing else
refused, and what a run plans equals what it writes."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from memctx.harness import EvalOptions, load_suite_scenarios, read_summary, run_eval
from memctx.harness.comparability import GENERATED, planned_summary, run_differences

SUITES = ("needle", "supersede", "cjk", "locomo")


def _summary(
    suites: dict[str, tuple[int, int, str]],
    *,
    generated: bool = False,
    windows: tuple[int, ...] = (),
    llm: str | None = None,
    answer_model: str = "claude-sonnet-4-5",
    overrides: dict[str, Any] | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """A summary's setup: per suite (scenarios, probes, sha256), and the settings."""
    return {
        "schema": 2,
        "provenance": {
            "datasets": GENERATED if generated else "datasets/v1",
            "scenarios": {
                suite: {"scenarios": n, "probes": p, "sha256": sha, "seeds": [seed]}
                for suite, (n, p, sha) in suites.items()
            },
        },
        "config": {
            "quick": generated,
            "windows": list(windows),
            "llm": llm,
            "answer_model": answer_model,
            "overrides": overrides or {},
            "seed": seed,
        },
        "records": [
            {"suite": suite, "strategy": "truncate", "embedding": "none"} for suite in suites
        ],
        "pooled": [],
    }


FULL = {"needle": (2, 44, "a" * 64), "supersede": (2, 43, "b" * 64), "cjk": (2, 44, "c" * 64)}


def _kinds(before: dict[str, Any], after: dict[str, Any], **kwargs: Any) -> list[str]:
    return [d.kind for d in run_differences(before, after, **kwargs).differences]


def test_each_kind_of_difference_is_found_and_named_with_its_fix() -> None:
    base = _summary(FULL)
    cases: dict[str, tuple[dict[str, Any], str]] = {
        "suites": (
            _summary({"needle": FULL["needle"]}),
            "only the baseline played supersede, cjk",
        ),
        "scenarios": (
            _summary({**FULL, "cjk": (2, 44, "d" * 64)}),
            "cjk 2/44 vs 2/44 (sha256 cccccccccccc vs dddddddddddd)",
        ),
        "quick": (
            _summary({k: (1, 8, "e" * 64) for k in FULL}, generated=True),
            "this run played the small generated set (--quick), the baseline the frozen "
            "datasets (datasets/v1)",
        ),
        "windows": (
            _summary(FULL, windows=(32_000, 200_000)),
            "the baseline played at each scenario's own window, this run at 32,000, 200,000 tokens",
        ),
        "judge": (
            _summary(FULL, llm="openai/gpt-4o-mini"),
            "the baseline --llm (none), this run --llm openai/gpt-4o-mini",
        ),
        "answer model": (
            _summary(FULL, answer_model="gpt-4o"),
            "the baseline priced for claude-sonnet-4-5, this run for gpt-4o",
        ),
    }
    for kind, (run, detail) in cases.items():
        setup = run_differences(base, run)
        assert not setup.comparable, kind
        found = {d.kind: d for d in setup.differences}
        assert kind in found, (kind, setup.differences)
        assert detail in found[kind].detail, found[kind].detail
        assert found[kind].fix
        assert setup.refusal().startswith("cannot compare this run with the baseline: ")
        assert found[kind].summary in setup.refusal().splitlines()[0]
    # Only the kind asked for (a quick run's scenarios differ too, as they must).
    assert _kinds(base, cases["judge"][0]) == ["judge"]
    assert _kinds(base, cases["quick"][0]) == ["quick", "scenarios"]


def test_what_is_not_a_difference() -> None:
    base = _summary(FULL)
    # Overrides are what a gate judges; the seed of frozen datasets only seeds the bootstrap;
    # strategies and embeddings are matched row by row.
    assert run_differences(base, _summary(FULL, overrides={"hardCapTokens": 60}, seed=3)).comparable
    other_rows = copy.deepcopy(base)
    other_rows["records"] = [dict(r, strategy="planner") for r in base["records"]]
    assert run_differences(base, other_rows).comparable
    # An answer model matters only when cost is judged.
    assert run_differences(base, _summary(FULL, answer_model="gpt-4o"), costs=False).comparable
    # --quick with --datasets plays frozen files: the checksums decide, not config.quick.
    frozen_quick = _summary(FULL)
    frozen_quick["config"]["quick"] = True
    assert run_differences(base, frozen_quick).comparable


def test_suites_without_checksums_are_unverified_not_refused() -> None:
    base = _summary(FULL)
    bare = {"schema": 2, "records": copy.deepcopy(base["records"]), "pooled": []}
    setup = run_differences(bare, base)
    assert setup.comparable and setup.unverified == ("needle", "supersede", "cjk")
    assert setup.lines() == [
        "scenarios not verified (no checksum in one summary): needle, supersede, cjk"
    ]
    # Which suites match, said when only some do.
    partial = run_differences(base, _summary({**FULL, "cjk": (1, 9, "f" * 64), "x": FULL["cjk"]}))
    assert partial.same == ("needle", "supersede")
    assert "suites both runs played on the same scenarios: needle, supersede" in partial.lines()
    assert partial.summary == ("different suites (only in this run: x); different scenarios in cjk")


_setups = st.fixed_dictionaries(
    {
        "suites": st.dictionaries(
            st.sampled_from(SUITES),
            st.tuples(st.integers(1, 3), st.integers(1, 50), st.sampled_from(["a" * 64, "b" * 64])),
            min_size=1,
        ),
        "generated": st.booleans(),
        "windows": st.lists(st.sampled_from([16_000, 64_000, 200_000]), max_size=2).map(tuple),
        "llm": st.sampled_from([None, "openai/gpt-4o-mini"]),
        "answer_model": st.sampled_from(["claude-sonnet-4-5", "gpt-4o"]),
        "seed": st.integers(0, 3),
    }
)


def _build(setup: dict[str, Any]) -> dict[str, Any]:
    return _summary(dict(setup.pop("suites")), **setup)


@given(_setups)
def test_a_run_is_always_comparable_with_itself(setup: dict[str, Any]) -> None:
    summary = _build(setup)
    assert run_differences(summary, copy.deepcopy(summary)).comparable


@given(_setups, _setups)
def test_differences_are_symmetric_and_name_every_changed_setting(
    first: dict[str, Any], second: dict[str, Any]
) -> None:
    a, b = _build(dict(first)), _build(dict(second))
    forward, backward = set(_kinds(a, b)), set(_kinds(b, a))
    assert forward == backward
    assert ("suites" in forward) == (set(first["suites"]) != set(second["suites"]))
    assert ("quick" in forward) == (first["generated"] != second["generated"])
    assert ("windows" in forward) == (sorted(first["windows"]) != sorted(second["windows"]))
    assert ("judge" in forward) == (first["llm"] != second["llm"])
    assert ("answer model" in forward) == (first["answer_model"] != second["answer_model"])
    both = set(first["suites"]) & set(second["suites"])
    changed = {s for s in both if first["suites"][s] != second["suites"][s]}
    assert ("scenarios" in forward) == bool(changed)
    assert set(run_differences(a, b).same) == both - changed


def test_what_a_run_plans_is_what_it_writes(tmp_path: Path) -> None:
    # The check before a run reads the options and the loaded scenarios; the gate after it
    # reads summary.json: the two must agree, or a run would be refused after the fact.
    options = EvalOptions(
        quick=True,
        suites=("needle",),
        strategies=("truncate",),
        embeddings=("hash",),
        jobs=1,
        out_dir=tmp_path / "run",
        progress=False,
    )
    planned = planned_summary(options, load_suite_scenarios(options))
    written = read_summary(run_eval(options))
    assert run_differences(written, planned).comparable
    assert run_differences(planned, written).same == ("needle",)
    assert planned["provenance"]["scenarios"] == written["provenance"]["scenarios"]
    other = EvalOptions(**{**options.__dict__, "seed": 1})
    reseeded = planned_summary(other, load_suite_scenarios(other))
    assert (
        "generated from different seeds: [0] vs [1]" in run_differences(written, reseeded).refusal()
    )

"""Quality gates over one evaluation run (``pytest evals``; see ``evals/thresholds.toml``).

By default the plugin runs the quick benchmark once for the session; ``--memctx-run DIR``
checks an existing run instead and ``--memctx-full`` runs the full benchmark.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from memctx.harness.pytest_plugin import MemctxRun

_DEFAULT_THRESHOLDS = Path(__file__).with_name("thresholds.toml")
SUITES = sorted(tomllib.loads(_DEFAULT_THRESHOLDS.read_text(encoding="utf-8")).get("suites", {}))
EPS = 1e-9


def _label(record: dict[str, Any]) -> str:
    return f"{record['suite']}/{record['strategy']}/{record['embedding']}"


def test_no_invariant_violations(memctx_run: MemctxRun, memctx_thresholds: dict[str, Any]) -> None:
    allowed = memctx_thresholds.get("checks", {}).get("max_violations", 0)
    bad = [
        f"{_label(r)}: {r['violations']} {r.get('violation_kinds')}"
        for r in memctx_run.records()
        if (r.get("violations") or 0) > allowed
    ]
    assert not bad, "invariant violations:\n" + "\n".join(bad)


def test_memory_context_reaches_truncate_in_every_suite(
    memctx_run: MemctxRun, memctx_thresholds: dict[str, Any]
) -> None:
    margin = memctx_thresholds.get("checks", {}).get("memory_context_vs_truncate_margin", 0.0)
    embeddings = [e for s, e in memctx_run.pairs() if s == "memory-context"]
    if not embeddings or ("truncate", "none") not in memctx_run.pairs():
        pytest.skip("the run lacks memory-context or truncate")
    worse = []
    for suite in memctx_run.suites():
        truncate = memctx_run.record(suite, "truncate")["recall_accuracy"]
        for embedding in embeddings:
            mine = memctx_run.record(suite, "memory-context", embedding)["recall_accuracy"]
            if mine is not None and truncate is not None and mine < truncate - margin - EPS:
                worse.append(
                    f"{suite}: memory-context/{embedding} {mine:.3f} < truncate {truncate:.3f}"
                )
    assert not worse, "memory-context below truncate:\n" + "\n".join(worse)


def test_full_answers_every_probe_it_fits(
    memctx_run: MemctxRun, memctx_thresholds: dict[str, Any]
) -> None:
    floor = memctx_thresholds.get("checks", {}).get("full_fit_accuracy", 1.0)
    # full sends the current session only: a question about an earlier session is not
    # one it can be the ceiling for.
    fitted = [
        p
        for p in memctx_run.probes
        if p["strategy"] == "full" and p["fits"] and "cross-session" not in p["tags"]
    ]
    if not fitted:
        pytest.skip("full ran on no probe that fits its window")
    accuracy = sum(bool(p["recall_accuracy"]) for p in fitted) / len(fitted)
    missed = [f"{p['suite']}/{p['probe']}" for p in fitted if not p["recall_accuracy"]][:20]
    assert accuracy >= floor - EPS, (
        f"full answers {accuracy:.3f} of {len(fitted)} fitted probes (< {floor}); "
        f"first misses: {', '.join(missed)}"
    )


@pytest.mark.parametrize("suite", SUITES)
def test_suite_thresholds(
    suite: str, memctx_run: MemctxRun, memctx_thresholds: dict[str, Any]
) -> None:
    bounds = memctx_thresholds.get("suites", {}).get(suite)
    if bounds is None:
        pytest.skip(f"no thresholds for suite {suite}")
    if suite not in memctx_run.suites():
        pytest.skip(f"suite {suite} is not in the run")
    target = memctx_thresholds.get("target", {})
    strategy = target.get("strategy", "memory-context")
    embedding = target.get("embedding", "hash")
    if (strategy, embedding) not in memctx_run.pairs():
        pytest.skip(f"the run lacks {strategy}/{embedding}")
    record = memctx_run.record(suite, strategy, embedding)
    failures = []
    for key, bound in bounds.items():
        kind, _, metric = key.partition("_")
        if kind not in ("min", "max") or metric not in record:
            raise pytest.UsageError(f"thresholds [suites.{suite}] {key}: expected min_/max_METRIC")
        value = record[metric]
        if value is None:
            failures.append(f"{metric} is missing")
        elif (kind == "min" and value < bound - EPS) or (kind == "max" and value > bound + EPS):
            failures.append(f"{metric} = {value:.4g}, {kind} {bound}")
    assert not failures, f"{suite} {strategy}/{embedding}: " + "; ".join(failures)

"""Honest checks: a tie or a difference within noise is never a FAIL, a claim the data cannot
decide is N/A, and "full is the ceiling" is said only when nothing ties it."""

from __future__ import annotations

from typing import Any

from helpers.synthetic_run import build_run

from memctx.harness.report import run_checks
from memctx.harness.report.loading import upgrade_probe_row


def _record(suite: str, strategy: str, embedding: str, acc: float, fit: int) -> dict[str, Any]:
    return {
        "suite": suite, "strategy": strategy, "embedding": embedding, "probes": fit, "fit": fit,
        "recall_accuracy": acc, "recall_accuracy_ci": [acc, acc], "violations": 0,
    }  # fmt: skip


def _summary(rows: list[tuple[str, float, float, int]]) -> dict[str, Any]:
    """Per suite: (suite, memory-context's accuracy, truncate's, probes), pooled by hand."""
    records, pooled = [], []
    for suite, mine, theirs, n in rows:
        records += [
            _record(suite, "memory-context", "hash", mine, n),
            _record(suite, "truncate", "none", theirs, n),
        ]
    total = sum(n for *_, n in rows)
    for strategy, embedding, at in (("memory-context", "hash", 1), ("truncate", "none", 2)):
        acc = sum(row[at] * row[3] for row in rows) / total
        pooled.append(_record("all", strategy, embedding, acc, total))
    return {"records": records, "pooled": pooled}


def _beats(summary: dict[str, Any]) -> Any:
    return next(c for c in run_checks(summary) if c.name.startswith("memory-context beats"))


def test_a_tie_on_two_probes_is_not_a_fail() -> None:
    # The quick run's case: both answer 1 of 2 probes in one suite; far ahead elsewhere.
    check = _beats(_summary([("paraphrase", 0.5, 0.5, 2), ("needle", 0.95, 0.1, 40)]))
    assert check.ok is True and check.verdict == "PASS"
    assert "not distinguishable in paraphrase (50.0 % vs 50.0 %, n=2 each: a tie)" in check.text


def test_a_loss_within_noise_is_not_a_fail_but_one_beyond_noise_is() -> None:
    within = _beats(_summary([("cjk", 0.0, 0.5, 2), ("needle", 0.95, 0.1, 40)]))
    assert within.ok is True  # 0 of 2 against 1 of 2: well within the noise of 2 probes
    assert "not distinguishable in cjk (0.0 % vs 50.0 %, n=2 each)" in within.text
    beyond = _beats(_summary([("cjk", 0.1, 0.9, 40), ("needle", 0.95, 0.1, 40)]))
    assert beyond.ok is False and beyond.verdict == "FAIL"
    assert beyond.text.startswith(
        "memory-context × hash is behind truncate beyond noise in cjk (10.0 % vs 90.0 %, n=40 each)"
    )


def test_a_claim_the_data_cannot_decide_is_na() -> None:
    check = _beats(_summary([("needle", 0.6, 0.5, 8), ("cjk", 0.55, 0.5, 8)]))
    assert check.ok is None and check.verdict == "N/A"
    assert check.text.startswith("memory-context × hash vs truncate cannot be told apart: ")


def _ceiling(probes: list[dict[str, Any]]) -> Any:
    return next(c for c in run_checks(build_run().summary, probes) if "full" in c.name)


def test_full_is_the_ceiling_only_when_nothing_ties_it() -> None:
    run = build_run()
    assert _ceiling(run.probes).text.endswith(
        "full is the ceiling: every other strategy answers fewer."
    )
    fitted = {
        (p["suite"], p["scenario"], p["probe"])
        for p in run.probes
        if p["strategy"] == "full" and p["fits"]
    }
    for row in run.probes:  # truncate answers every probe full fits, as full does
        if (
            row["strategy"] == "truncate"
            and (row["suite"], row["scenario"], row["probe"]) in fitted
        ):
            row["recall_accuracy"] = True
    check = _ceiling(run.probes)
    assert check.ok is True and "full is the ceiling" not in check.text
    assert check.text.endswith("No strategy beats full on them; truncate ties it.")


def test_schema_1_probe_rows_are_read_as_schema_2() -> None:
    old = {
        "suite": "cjk", "scenario": "cjk-000", "probe": "p1", "strategy": "full",
        "embedding": "-", "fit": False, "correct": False, "tool_hit": None, "evidence": 0.0,
        "stale": False, "context_tokens": 9,
    }  # fmt: skip
    row = upgrade_probe_row(old)
    assert row["fits"] is False and row["embedding"] == "none" and row["sent_tokens"] == 9
    assert row["recall_accuracy"] is None and row["tool_accuracy"] is None  # unfitted: no score
    fitted = upgrade_probe_row(dict(old, fit=True, correct=True, strategy="truncate"))
    assert fitted["recall_accuracy"] is True and fitted["tool_accuracy"] is True

"""The paired noise rule (Newcombe's method 10): two configurations of one run over the same
probes, judged by the probes they disagree on."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from strategies import examples, paired_outcomes

from memctx.harness.noise import noise_for, paired_noise
from memctx.harness.report import Outcomes, difference, recommend


def _table(
    both: int, after_only: int, before_only: int, neither: int
) -> tuple[dict[int, bool], dict[int, bool]]:
    """Outcomes with the given 2x2 counts (after, before)."""
    before: dict[int, bool] = {}
    after: dict[int, bool] = {}
    cells = [(True, True)] * both + [(False, True)] * after_only
    cells += [(True, False)] * before_only + [(False, False)] * neither
    for i, (b, a) in enumerate(cells):
        before[i], after[i] = b, a
    return before, after


def _record(suite: str, strategy: str, embedding: str, correct: int, n: int) -> dict[str, Any]:
    return {
        "suite": suite, "strategy": strategy, "embedding": embedding, "probes": n, "fit": n,
        "recall_accuracy": correct / n, "recall_accuracy_ci": [], "cost_usd": 1.0,
        "calls": 100, "violations": 0, "compactions": 0,
    }  # fmt: skip


def _rows(
    suite: str, strategy: str, embedding: str, outcomes: dict[int, bool]
) -> list[dict[str, Any]]:
    return [
        {"suite": suite, "strategy": strategy, "embedding": embedding, "scenario": "s",
         "probe": f"p{i}", "recall_accuracy": value, "evidence_recall": float(value)}
        for i, value in outcomes.items()
    ]  # fmt: skip


def test_disagreements_decide_where_the_unpaired_rule_sees_noise() -> None:
    # The committed baseline's memory-context: transformer 292 of 380, hash 274; the
    # transformer answers 25 probes hash misses and misses 7 hash answers.
    hash_, transformer = _table(267, 25, 7, 81)
    change, noise = paired_noise(hash_, transformer) or (0.0, 0.0)
    assert change == (25 - 7) / 380
    assert 0 < noise < change  # beyond the noise, probe by probe ...
    before = _record("all", "mc", "hash", 274, 380)
    after = _record("all", "mc", "transformer", 292, 380)
    unpaired = noise_for(before, after, "recall_accuracy")
    assert unpaired is not None and unpaired[1] > change  # ... not as independent samples


def test_the_published_reference_values() -> None:
    # Fagerland, Lydersen and Laake, "Statistical Analysis of Contingency Tables", chapter 8:
    # the paired table (59, 6; 16, 80) gives -0.0621 (95 % CI -0.1186 to -0.0046) by
    # Newcombe's square-and-add method (the continuity-corrected correlation).
    first, second = _table(59, 16, 6, 80)  # after = the second column
    change, noise = paired_noise(first, second) or (0.0, 0.0)
    assert round(change, 4) == 0.0621 and round(change - noise, 4) == 0.0046
    change, noise = paired_noise(second, first) or (0.0, 0.0)
    assert round(change, 4) == -0.0621 and round(change + noise, 4) == -0.0046


def test_one_flipped_probe_in_44_is_within_the_noise() -> None:
    change, noise = paired_noise(*_table(36, 0, 1, 7)) or (0.0, 0.0)
    assert change == -1 / 44 and noise > 1 / 44
    # Seven probes won and none lost in 44 (the paraphrase suite) is beyond it.
    change, noise = paired_noise(*_table(19, 7, 0, 18)) or (0.0, 0.0)
    assert change == 7 / 44 and noise < change


def test_nothing_in_common_is_no_comparison() -> None:
    assert paired_noise({}, {}) is None
    assert paired_noise({1: True}, {2: True}) is None


@settings(max_examples=examples(100), deadline=None)
@given(paired_outcomes())
def test_the_rule_is_symmetric_and_one_probe_is_never_beyond_it(
    outcomes: tuple[dict[int, bool], dict[int, bool]],
) -> None:
    before, after = outcomes
    measured, swapped = paired_noise(before, after), paired_noise(after, before)
    assert measured is not None and swapped is not None
    change, noise = measured
    assert swapped[0] == -change and abs(swapped[1] - noise) < 1e-12
    assert noise >= 0
    # One probe's worth is never beyond the noise (as for the unpaired rule).
    if abs(change) * len(before) <= 1:
        assert abs(change) <= noise


def test_difference_pairs_only_over_the_same_probes() -> None:
    hash_, transformer = _table(267, 25, 7, 81)
    probes = _rows("all-suite", "mc", "hash", hash_) + _rows(
        "all-suite", "mc", "transformer", transformer
    )
    outcomes = Outcomes.from_probes(probes)
    a = _record("all", "mc", "transformer", 292, 380)
    b = _record("all", "mc", "hash", 274, 380)
    paired = difference(a, b, outcomes=outcomes)
    assert paired.paired and paired.sign == 1
    assert difference(a, b).sign == 0 and not difference(a, b).paired
    # Evidence recall is a fraction per probe: not paired.
    assert not difference(a, b, "evidence_recall", outcomes).paired
    # A record over other probes (full fits some only): the figures would not be the
    # paired change's, so the rule falls back to independent samples.
    fewer = Outcomes.from_probes(
        _rows("all-suite", "mc", "hash", dict(list(hash_.items())[:100]))
        + _rows("all-suite", "mc", "transformer", transformer)
    )
    assert not difference(a, b, outcomes=fewer).paired
    # Rows that do not give the record's figure (an edited summary) are not used either.
    edited = dict(a, recall_accuracy=0.05)
    assert not difference(edited, b, outcomes=outcomes).paired


def test_the_recommendation_tells_apart_what_only_pairing_can() -> None:
    hash_, transformer = _table(267, 25, 7, 81)
    probes = _rows("needle", "mc", "hash", hash_) + _rows(
        "needle", "mc", "transformer", transformer
    )
    pooled = [
        dict(_record("all", "mc", "hash", 274, 380), cost_usd=10.0),
        dict(_record("all", "mc", "transformer", 292, 380), cost_usd=12.0),
    ]
    summary = {"records": [], "pooled": pooled, "provenance": {"judge_model": "j"}}
    # From the summary alone the cheaper hash is within noise and 17 % cheaper: the pick.
    assert recommend(summary).pick == "mc × hash"
    # Probe by probe the transformer is ahead beyond noise: it is the pick.
    reco = recommend(summary, probes)
    assert reco.pick == "mc × transformer"
    assert reco.details[0].endswith("ahead of every other configuration beyond noise.")

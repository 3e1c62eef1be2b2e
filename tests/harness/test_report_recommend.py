"""The recommendation: derived from the numbers (it changes when they do), honest about noise
and about what the data leaves out."""

from __future__ import annotations

from typing import Any

from helpers.synthetic_run import build_run

from memctx.harness.report import Recommendation, recommend


def _pooled(
    strategy: str, embedding: str, cost: float, acc: float | None, *, fit: int = 380
) -> dict[str, Any]:
    return {
        "suite": "all", "strategy": strategy, "embedding": embedding, "probes": 380,
        "fit": fit, "recall_accuracy": acc, "recall_accuracy_ci": [],
        "cost_usd": cost, "calls": 1000, "violations": 0, "compactions": 0,
    }  # fmt: skip


def _summary(*pooled: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "records": [],
        "pooled": list(pooled),
        "provenance": {"judge_model": "judge"},
        **extra,
    }


def test_the_most_accurate_is_picked_when_nothing_cheaper_comes_close() -> None:
    reco = recommend(
        _summary(
            _pooled("cheap", "none", 10.0, 0.30),
            _pooled("good", "hash", 20.0, 0.80),
            _pooled("dear", "none", 90.0, 0.25),
        )
    )
    assert isinstance(reco, Recommendation) and reco.pick == "good × hash"
    assert reco.headline == (
        "Pick good × hash: the most accurate configuration; no cheaper one comes within noise "
        "of it (the nearest, cheap, costs 50 % less per call and answers 50.0 points fewer)."
    )
    assert reco.details[0].startswith("Best accuracy: good × hash, 80.0 % (")
    assert reco.details[0].endswith("ahead of every other configuration beyond noise.")
    assert reco.details[1].startswith("Lowest cost per call: cheap, $0.01000, at 30.0 % (")
    assert reco.details[2] == (
        "On the frontier (cheapest first): cheap $0.01000 / 30.0 %, good × hash $0.02000 / 80.0 %."
    )
    assert reco.caveats == ()  # 380 probes, a judge, no summaries, nothing left out


def test_a_cheaper_configuration_within_noise_of_the_best_is_the_pick() -> None:
    rows = [_pooled("hashy", "hash", 15.0, 0.76), _pooled("deep", "transformer", 20.0, 0.78)]
    reco = recommend(_summary(*rows))
    assert reco.pick == "hashy × hash"
    assert reco.headline.startswith(
        "Pick hashy × hash: 76.0 % (71–80) n=380, within noise of the most accurate (deep × "
        "transformer, 78.0 % (74–82)), for 25 % less per call ($0.01500 against $0.02000)."
    )
    assert "not distinguishable from hashy × hash (76.0 % (71–80))" in reco.details[0]
    # The same gap over 30 times the probes is beyond noise: the best is the pick again.
    more = [dict(r, probes=12_000, fit=12_000) for r in rows]
    assert recommend(_summary(*more)).pick == "deep × transformer"


def test_within_noise_at_the_same_cost_is_no_trade_off() -> None:
    # Seen in a real run: hash 72.1 % at $0.02724 a call, transformer 76.8 % at $0.02726.
    # Within noise, but a 0.07 % saving does not pay for 4.7 points: the best is the pick.
    rows = [_pooled("mc", "hash", 27.24, 0.721), _pooled("mc", "transformer", 27.26, 0.768)]
    reco = recommend(_summary(*rows))
    assert reco.pick == "mc × transformer"
    assert reco.headline == (
        "Pick mc × transformer: the most accurate configuration; mc × hash (72.1 % (67–76)) "
        "cannot be told apart from it but costs the same per call (under 1 % less), so nothing "
        "is gained by giving up the points."
    )
    assert "0 % less" not in reco.headline
    # A saving of 1 % or more is a trade-off again: the cheaper one within noise is picked.
    rows[0]["cost_usd"] = 27.26 * 0.99
    assert recommend(_summary(*rows)).pick == "mc × hash"
    # A materially cheaper one beyond noise is still named as the nearest.
    rows.append(_pooled("cheap", "none", 10.0, 0.30))
    rows[0]["cost_usd"] = 27.25
    reco = recommend(_summary(*rows))
    assert reco.pick == "mc × transformer"
    assert "; no materially cheaper one comes within noise of it (the nearest, cheap," in (
        reco.headline
    )


def test_the_recommendation_follows_the_numbers() -> None:
    rows = [_pooled("a", "none", 10.0, 0.40), _pooled("b", "none", 20.0, 0.80)]
    assert recommend(_summary(*rows)).pick == "b"
    rows[0]["recall_accuracy"] = 0.85  # a is now cheaper and better
    reco = recommend(_summary(*rows))
    assert reco.pick == "a" and "and the cheapest on the frontier" in reco.headline
    rows[0]["cost_usd"] = 30.0  # ... and now dearer: b, 5 points behind at n=380, is within noise
    reco = recommend(_summary(*rows))
    assert reco.pick == "b" and "within noise of the most accurate (a, 85.0 %" in reco.headline
    assert reco.details[1].startswith("Lowest cost per call: b, $0.02000")


def test_caveats_say_what_the_data_imposes() -> None:
    # 4 probes a suite (a quick run), full fits 2 of 4, the offline summariser, no judge.
    run = build_run(probes_per_suite=4)
    reco = recommend(run.summary)
    caveats = " ".join(reco.caveats)
    assert "full is left out of the ranking: its context fits the window on 18 of 36 " in caveats
    assert (
        "Intervals are wide (±" in caveats and "(a --quick run; the full run asks more" in caveats
    )
    assert (
        "Summaries were written by memctx/offline; summary-based strategies (memory-context)"
        in (caveats)
    )
    assert "no judge ran" in caveats
    assert reco.pick is not None and reco.pick.startswith("memory-context × ")
    assert not any("wide" in c for c in recommend(build_run().summary).caveats)  # 216 probes


def test_a_suite_where_the_pick_is_behind_is_named() -> None:
    run = build_run()
    reco = recommend(run.summary)
    assert not any(c.startswith("Per suite,") for c in reco.caveats)
    pick = ("memory-context", reco.pick.split(" × ")[1]) if reco.pick else ("", "")
    run.record("cjk", *pick).update(recall_accuracy=0.1, recall_accuracy_ci=[0.0, 0.2])
    said = [c for c in recommend(run.summary).caveats if c.startswith("Per suite,")]
    assert said and "beyond noise in 1 suite(s): cjk (" in said[0]


def test_nothing_comparable_is_said_plainly() -> None:
    reco = recommend(_summary(_pooled("full", "none", 10.0, 0.9, fit=11)))
    assert reco.pick is None and reco.headline.startswith("No configuration can be recommended")
    assert reco.caveats[0].startswith("full is left out of the ranking: its context fits the ")


def test_a_configuration_with_violations_none_right_or_below_truncate_is_never_picked() -> None:
    broken = dict(_pooled("lastn", "none", 5.0, 0.95), violations=2)
    rows = [
        broken,
        _pooled("truncate", "none", 6.0, 0.40),
        _pooled("worse", "none", 1.0, 0.35),  # cheapest, but below truncate
        _pooled("good", "hash", 20.0, 0.80),
    ]
    reco = recommend(_summary(*rows))
    assert reco.pick == "good × hash"
    assert reco.details[0].startswith("Best accuracy: good × hash")
    said = " ".join(reco.caveats)
    assert "lastn is never recommended: it broke an invariant 2 time(s)." in said
    assert "worse is never recommended: it is less accurate than truncate (35.0 % against" in said
    # Alone in a run, a broken configuration at 0 % is no recommendation at all.
    alone = recommend(_summary(dict(_pooled("lastn", "none", 5.0, 0.0), violations=2)))
    assert alone.pick is None and alone.headline.startswith("No configuration can be recommended")
    assert any("broke an invariant 2 time(s)" in c for c in alone.caveats)
    nothing = recommend(_summary(_pooled("mute", "none", 5.0, 0.0)))
    assert nothing.pick is None and any("answered no probe" in c for c in nothing.caveats)

"""LoCoMo adapter and the evidence-recall metric."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.datasets import dataset_path

from memctx.bench.locomo.loo import SPEAKER_GRID, leave_one_out, main, run_speaker_loo
from memctx.bench.locomo.methods import DEFAULT_METHOD, METHODS, run_locomo
from memctx.harness.locomo import (
    conversation_messages,
    evaluate_product,
    evaluate_retriever,
    load_locomo,
    normalise_evidence,
    per_turn_packer,
    recalled_turns,
    rendered_packer,
    turn_item,
    within_budget,
)
from memctx.recall import build_recall_block
from memctx.retrieval import HashEmbedder


def test_malformed_evidence_ids_are_repaired() -> None:
    assert normalise_evidence("D8:6; D9:17") == (["D8:6", "D9:17"], 1)
    assert normalise_evidence("D:11:26") == (["D11:26"], 1)
    assert normalise_evidence("D30:05") == (["D30:5"], 1)
    assert normalise_evidence("D1:3") == (["D1:3"], 0)
    assert normalise_evidence("garbage")[0] == []


def test_within_budget_is_greedy_and_skips_what_does_not_fit() -> None:
    assert within_budget([0, 1, 2, 3], [5, 8, 3, 1], budget=10) == [0, 2, 3]
    assert within_budget([], [], budget=10) == []


def _tiny(tmp_path: Path) -> Path:
    sample = {
        "sample_id": "t1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Miso."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Nice!", "blip_caption": "a cat"},
            ],
            "session_2_date_time": "10:00 am on 9 June, 2023",
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Miso likes tuna."}],
        },
        "qa": [
            {
                "question": "What is Ann's cat called?",
                "answer": "Miso",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "What does the cat eat?",
                "answer": "tuna",
                "evidence": ["D2:01", "D9:9"],
                "category": 1,
            },
            {"question": "adversarial", "adversarial_answer": "x", "evidence": [], "category": 5},
        ],
    }
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([sample]))
    return path


def test_load_keeps_dates_speakers_and_captions(tmp_path: Path) -> None:
    (conv,) = load_locomo(_tiny(tmp_path))
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D2:1"]
    assert conv.turns[0].text == "[8 May 2023] Ann: I adopted a cat named Miso."
    assert conv.turns[1].text.endswith("[photo: a cat]")
    assert (conv.turns[1].said, conv.turns[1].date) == ("Nice! [photo: a cat]", "8 May 2023")
    assert conv.turns[2].timestamp > conv.turns[0].timestamp
    assert conv.questions[1].evidence == ("D2:1",)
    assert (conv.evidence_fixed, conv.evidence_dropped) == (1, 1)


def test_recall_metric_on_a_known_ranking(tmp_path: Path) -> None:
    convs = load_locomo(_tiny(tmp_path))
    # A retriever that always ranks turn 2, then 1, then 0.
    report = evaluate_retriever(
        "fixed",
        convs,
        lambda _c: lambda _q: [2, 1, 0],
        pack=per_turn_packer(lambda t: 10),
        budget=20,
        ks=(1, 3),
    )
    assert report.questions == 2  # category 5 is skipped
    assert report.at_k[1] == pytest.approx(0.5)  # question 2 found at rank 1, question 1 not
    assert report.at_k[3] == pytest.approx(1.0)
    assert report.at_budget == pytest.approx(0.5)  # two turns fit: 2 and 1
    assert report.by_category[4]["budget"] == 0.0 and report.by_category[1]["budget"] == 1.0


def test_the_default_budget_reading_counts_the_products_block(tmp_path: Path) -> None:
    (conv,) = load_locomo(_tiny(tmp_path))
    pack = rendered_packer(conv)
    # The product's block for turns 2 then 0: both days under their dates, chronologically.
    items = [turn_item(conv, conv.turns[i], rank) for rank, i in enumerate([2, 0])]
    block = build_recall_block([], items, 1000)
    assert block is not None
    assert (
        "[2023-05-08]\nAnn: I adopted a cat named Miso.\n[2023-06-09]\nAnn: Miso likes tuna."
        in (block.text)
    )
    # A candidate's cost is an upper bound (a gap marker it may not need): a few tokens over
    # the block's own size, the same two turns are chosen.
    assert pack([2, 0, 1], budget=block.tokens + 4) == [2, 0]
    assert pack([2, 0, 1], budget=1000) == [2, 0, 1]
    assert pack([2, 0, 1], budget=5) == []
    item = turn_item(conv, conv.turns[1], 0)
    assert (item.text, item.label, item.session) == ("Nice! [photo: a cat]", "Bo", conv.sample_id)


def test_the_product_path_counts_evidence_inside_the_recalled_block(tmp_path: Path) -> None:
    (conv,) = load_locomo(_tiny(tmp_path))
    messages = conversation_messages(conv)
    assert messages[1] == {
        "role": "assistant",
        "name": "Bo",
        "content": "Nice! [photo: a cat]",
        "timestamp": conv.turns[1].timestamp,
    }
    # The same chat as an exported log: no timestamp, no name, both at the text's start.
    in_text = conversation_messages(conv, "text")
    assert in_text[1] == {"role": "assistant", "content": "[8 May 2023] Bo: Nice! [photo: a cat]"}
    with pytest.raises(ValueError, match="dates must be one of timestamp, text"):
        conversation_messages(conv, "field")  # type: ignore[arg-type]
    block = "[2023-05-08]\nAnn: I adopted a cat\n named Miso.\nBo: Nice!"
    # Whitespace may differ; a turn cut short (Bo's caption missing) does not count.
    assert recalled_turns(block, conv) == {"D1:1"}
    report = evaluate_product([conv], HashEmbedder(), name="tiny", cap=2000)
    # The whole tiny archive fits the cap: every evidence turn the questions name is found.
    assert report.questions == 2 and report.at_budget == pytest.approx(1.0)
    report = evaluate_product([conv], HashEmbedder(), name="tiny", cap=2000, dates="text")
    assert report.questions == 2 and report.at_budget == pytest.approx(1.0)
    # With a cap too small for any turn, nothing is found (and nothing is counted outside).
    assert evaluate_product([conv], HashEmbedder(), name="tiny", cap=30).at_budget == 0.0


def test_the_bench_runs_every_method_on_a_tiny_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = run_locomo(_tiny(tmp_path), embedders=("hash",), cache_dir=tmp_path / "cache")
    product, in_text, *methods = reports
    assert product.name.endswith("through on_context (the product)")
    assert in_text.name.endswith("the product, dates in the text")
    assert product.at_budget == pytest.approx(1.0) == in_text.at_budget
    assert [r.name.split(maxsplit=1)[1] for r in methods] == [m.name.strip() for m in METHODS]
    default = methods[METHODS.index(DEFAULT_METHOD)]
    # The whole tiny archive fits in 2,000 tokens, so every evidence turn is in the block.
    assert default.at_budget == pytest.approx(1.0)
    assert "memctx default" in capsys.readouterr().out


def test_leave_one_out_scores_each_conversation_with_weights_chosen_on_the_others() -> None:
    scores = {
        (0.0, 0.0): {"a": 0.5, "b": 0.5, "c": 0.9},
        (0.5, 0.5): {"a": 0.6, "b": 0.6, "c": 0.1},
    }
    result = leave_one_out(scores, fixed=(0.5, 0.5))
    # Without c the pair 0.5/0.5 wins; without a (or b), 0.0/0.0 (0.7 vs 0.35 on the rest).
    assert result.chosen == {"a": (0.0, 0.0), "b": (0.0, 0.0), "c": (0.5, 0.5)}
    assert result.held_out == {"a": 0.5, "b": 0.5, "c": 0.1}
    assert result.mean == pytest.approx(1.1 / 3)
    assert result.fixed_mean == pytest.approx(1.3 / 3)


def test_the_speaker_prior_leave_one_out_runs_through_the_product(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _tiny(tmp_path)
    (sample,) = json.loads(path.read_text())
    path.write_text(json.dumps([sample, {**sample, "sample_id": "t2"}]))
    results = run_speaker_loo(path, embedders=("hash",))
    assert set(results) == {("hash", "timestamp"), ("hash", "text")}
    for result in results.values():
        # Every prior finds everything in so small an archive: ties go to the first.
        assert result.chosen == {"t1": (SPEAKER_GRID[0],), "t2": (SPEAKER_GRID[0],)}
        assert result.mean == pytest.approx(1.0) == result.fixed_mean
    out = capsys.readouterr().out
    assert "hash, dates in text: leave-one-out 100.0%" in out
    with pytest.raises(SystemExit, match="usage"):
        main(["--speakers"])


@pytest.mark.dataset
def test_the_real_file_loads_with_the_documented_counts() -> None:
    convs = load_locomo(dataset_path("locomo", "locomo7.json"))
    assert len(convs) == 7
    assert sum(len(c.turns) for c in convs) == 4124
    assert sum(1 for c in convs for q in c.questions if q.category != 5 and q.evidence) == 1033
    assert sum(c.evidence_fixed for c in convs) == 2

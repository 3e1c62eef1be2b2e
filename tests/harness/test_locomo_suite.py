"""memctx eval --suite locomo: LoCoMo through every strategy, and evidence recall through the
product's paths (the suite in the one pipeline with a small fixture: test_real_suites.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.datasets import dataset_path

from memctx.cli.main import main
from memctx.harness.engine import run_scenario
from memctx.harness.locomo import (
    DRAGON,
    LocomoRow,
    format_locomo,
    load_locomo,
    locomo_scenario,
    run_locomo_suite,
    turns_in,
)
from memctx.harness.locomo import suite as suite_module
from memctx.harness.metrics import aggregate
from memctx.harness.report import locomo_chart
from memctx.retrieval import Embedder, HashEmbedder


@pytest.mark.dataset
def test_a_turn_is_found_whole_as_a_block_line_or_as_a_hit() -> None:
    conv = load_locomo(dataset_path("locomo", "locomo7.json"))[0]
    turn = conv.turns[3]
    line = f"[2023-05-08]\n{turn.speaker}: {turn.text}\n…"
    assert turn.dia_id in turns_in(line, conv, speaker=True)
    assert turn.dia_id not in turns_in(line[: len(line) // 2], conv, speaker=True)
    assert turn.dia_id in turns_in(f"x {turn.text} y", conv, speaker=False)


@pytest.mark.dataset
def test_one_conversation_through_both_paths_grows_with_the_budget(tmp_path: Path) -> None:
    rows = run_locomo_suite(
        dataset_path("locomo", "locomo7.json"),
        tmp_path,
        embeddings=("hash",),
        budgets=(500, 2_000),
        ks=(5, 25),
        limit=1,
    )
    by = {(r.dates, r.path, r.size): r for r in rows}
    assert set(by) == {
        (dates, path, size)
        for dates in ("timestamp", "text")
        for path, size in (
            ("recall block", 500),
            ("recall block", 2_000),
            ("memory_search", 5),
            ("memory_search", 25),
        )
    }
    for dates in ("timestamp", "text"):
        small, large = by[(dates, "recall block", 500)], by[(dates, "recall block", 2_000)]
        assert small.questions == large.questions > 100
        assert 0 < small.evidence_recall < large.evidence_recall <= 1
        assert small.tokens <= 500 < large.tokens <= 2_000  # the cap holds, on average filled
        search = by[(dates, "memory_search", 5)], by[(dates, "memory_search", 25)]
        assert search[0].evidence_recall < search[1].evidence_recall
        assert set(large.by_category) >= {1, 2, 3, 4}
    # The dates read from the text group and split the conversation as the fields do: the
    # block at 2,000 tokens finds nearly as much either way (without reading them, the text
    # variant lost 4.5 points on this conversation).
    text, field = by[("text", "recall block", 2_000)], by[("timestamp", "recall block", 2_000)]
    assert text.evidence_recall > field.evidence_recall - 0.03
    saved = json.loads((tmp_path / "locomo.json").read_text())
    assert len(saved) == 8 and {r["dates"] for r in saved} == {"timestamp", "text"}
    assert (tmp_path / "locomo.md").read_text().startswith("# LoCoMo")
    assert "| hash | text | recall block | 2,000 |" in (tmp_path / "locomo.md").read_text()


def test_the_table_names_every_row_and_the_published_references() -> None:
    row = LocomoRow(
        "hash",
        "text",
        "recall block",
        2_000,
        150,
        0.843,
        {1: 0.5, 2: 1.0, 3: 0.5, 4: 0.9},
        0.2,
        1984.0,
    )
    table = format_locomo([row])
    assert (
        "| hash | text | recall block | 2,000 | 150 | 84.3 % "
        "| 50.0 % | 100.0 % | 50.0 % | 90.0 % | - |" in table
    )
    assert f"k = 5: {100 * DRAGON[5]:.1f} %" in table and "1,764" in table


def test_the_command_skips_locomo_without_its_data_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    args = ["eval", "--suite", "locomo", "--real-datasets", str(tmp_path), "--out", str(out)]
    assert main(args) == 2  # nothing else asked: nothing to run
    err = capsys.readouterr().err
    assert "suite locomo skipped: no LoCoMo file" in err and str(tmp_path / "locomo") in err


def test_the_chart_draws_both_paths_with_the_references(tmp_path: Path) -> None:
    rows = [
        {"embedding": e, "dates": d, "path": p, "size": s, "evidence_recall": r}
        for e in ("hash", "transformer")
        for d in ("timestamp", "text")
        for p, s, r in (
            ("recall block", 500, 0.6),
            ("recall block", 2_000, 0.8),
            ("memory_search", 5, 0.55),
            ("memory_search", 50, 0.85),
        )
    ]
    chart = locomo_chart(rows, tmp_path / "charts")
    assert chart is not None and chart.path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "DRAGON" in chart.caption and "Mem0" in chart.caption
    again = locomo_chart(rows, tmp_path / "again")
    assert again is not None and again.path.read_bytes() == chart.path.read_bytes()
    assert locomo_chart([], tmp_path / "none") is None


@pytest.mark.dataset
def test_a_conversation_played_through_the_strategies_is_judged_like_any_scenario(
    tmp_path: Path,
) -> None:
    conv = load_locomo(dataset_path("locomo", "locomo7.json"))[0]
    scenario = locomo_scenario(conv)
    assert scenario.suite == "locomo" and scenario.probes
    assert all(p.at == len(scenario.sessions[0].messages) for p in scenario.probes)
    assert all(p.evidence_text for p in scenario.probes)  # the evidence turns' own words
    played = [
        (s, run_scenario(scenario, s, "hash", work_dir=tmp_path / s))
        for s in ("full", "truncate", "memory-context")
    ]
    records = aggregate([("locomo", s, r.probes[0].embedding, r) for s, r in played])
    by = {r["strategy"]: r for r in records}
    assert records[-1]["suite"] == "locomo"  # the suite's records only: never pooled
    assert by["full"]["fit"] == 0  # the whole conversation does not fit 16,000 tokens
    assert by["truncate"]["fit"] == by["truncate"]["probes"] == len(scenario.probes)
    assert 0 < by["truncate"]["evidence_recall"] < 1 and by["memory-context"]["embedding"] == "hash"
    # The store keeps the 2023 turns (the scenario's own retention setting): recall finds
    # evidence truncate dropped.
    assert by["memory-context"]["evidence_recall"] > by["truncate"]["evidence_recall"]
    assert all(r["violations"] == 0 for r in records)
    rows = played[1][1].probes
    assert rows[0].question == scenario.probes[0].question
    assert rows[0].answers == list(scenario.probes[0].answers)


@pytest.mark.dataset
def test_a_transformer_model_of_choice_is_named_in_the_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[tuple[str, str]] = []

    def building(kind: str, *, model: str = "all-MiniLM-L6-v2") -> Embedder:
        built.append((kind, model))
        return HashEmbedder()  # the rows' labels are at stake here, not the model's figures

    monkeypatch.setattr(suite_module, "make_embedder", building)
    rows = run_locomo_suite(
        dataset_path("locomo", "locomo7.json"),
        embeddings=("transformer",),
        budgets=(500,),
        ks=(5,),
        limit=1,
        dates=("timestamp",),
        transformer_model="all-mpnet-base-v2",
    )
    assert built == [("transformer", "all-mpnet-base-v2")]
    assert {r.embedding for r in rows} == {"transformer (all-mpnet-base-v2)"}

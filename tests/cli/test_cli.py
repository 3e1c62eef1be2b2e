"""The memctx command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memctx.cli import main
from memctx.retrieval.embeddings import HashEmbedder
from memctx.store.raw.store import RawStore


def test_search_prints_memory_search_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with RawStore(tmp_path, embedder=HashEmbedder(), eviction_days=None) as store:
        store.add("s1", "user", "the staging database runs on port 5433", turn=4)
        store.add("s1", "assistant", "unrelated note about the README")
    assert main(["search", str(tmp_path), "which port does staging use", "--limit", "1"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits[0]["content"] == "the staging database runs on port 5433"
    assert (hits[0]["session_id"], hits[0]["turn"]) == ("s1", 4)


def test_search_on_a_folder_without_a_store_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", str(tmp_path), "anything"]) == 2
    assert "no segments.jsonl" in capsys.readouterr().err


def test_check_reports_a_broken_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    good = tmp_path / "good.json"
    good.write_text(
        json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    )
    assert main(["check", str(good), str(bad), "--trials", "2"]) == 1
    out = capsys.readouterr().out
    assert "good.json" in out and "ERROR" in out

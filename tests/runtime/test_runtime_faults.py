"""The hooks under attack and under faults: one bad message, a failing or damaged store, a
tag a user can type, a huge tool output. The agent keeps calling; every context it gets
fits the window and pairs its tools, and ``stats()`` says what went wrong."""

from __future__ import annotations

import errno
import json
import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.eval_sessions import session

from memctx import MemoryContextConfig
from memctx.errors import StoreError
from memctx.messages import estimate_messages_tokens, pairing_violations, recalled_block_text
from memctx.retrieval import HashEmbedder
from memctx.runtime import MemoryContext
from memctx.text.cut import OMISSION_NOTE_RE

WINDOW = 6_000


def engine(store: Path, window: int = WINDOW, **settings: Any) -> MemoryContext:
    config = MemoryContextConfig(hardCapTokens=600, reserveTokens=800, **settings)
    return MemoryContext(
        config, store_dir=store, session_id="s1", context_window_tokens=window,
        embedder=HashEmbedder(),
    )  # fmt: skip


def _segments(store: Path) -> list[dict[str, Any]]:
    path = store / "segments.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --- one bad message ---------------------------------------------------------------------------

BAD_ROLES = ["tool result", "us\x00er", "assistant\ud800", "a/b", "x" * 65]


@pytest.mark.parametrize("role", BAD_ROLES)
def test_one_bad_role_does_not_cost_the_compaction_batch(tmp_path: Path, role: str) -> None:
    good = [{"role": "user", "content": f"note {i}: the cache key is k{i}"} for i in range(100)]
    batch = [*good[:50], {"role": role, "content": "bad message text"}, *good[50:]]
    with engine(tmp_path) as mem:
        mem.on_before_compact(batch)
        mem.wait_idle(30)
        stats = mem.stats()
    assert "on_before_compact_failures" not in stats["counts"]
    assert stats["archive"]["bad_messages_skipped"] == 1
    stored = {s["content"] for s in _segments(tmp_path)}
    assert stored == {m["content"] for m in good}


def test_a_bad_role_in_the_context_does_not_switch_trimming_off(tmp_path: Path) -> None:
    messages = session("a", 30, tool_words=120)
    messages.insert(5, {"role": "tool result", "content": "stray output " * 50})
    with engine(tmp_path) as mem:
        out = mem.on_context(messages)
        stats = mem.stats()
    assert "on_context_failures" not in stats["counts"]
    assert estimate_messages_tokens(out) <= WINDOW and not pairing_violations(out)
    assert stats["counts"]["trims"] == 1 and stats["archive"]["archived"] > 0


def test_unreadable_timestamps_fall_back_to_now(tmp_path: Path) -> None:
    stamps: list[Any] = [float("nan"), float("inf"), 10**400, "2026-13-45", "x" * 10_000, None]
    batch = [
        {"role": "user", "content": f"event {i}", "timestamp": stamp}
        for i, stamp in enumerate(stamps)
    ]
    with engine(tmp_path) as mem:
        mem.on_before_compact(batch)
        mem.wait_idle(30)
    assert len(_segments(tmp_path)) == len(stamps)


def test_memory_search_refuses_a_non_string_query_clearly(tmp_path: Path) -> None:
    with engine(tmp_path) as mem:
        with pytest.raises(TypeError, match="query must be a string, got NoneType"):
            mem.memory_search(None)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="limit must be an int"):
            mem.memory_search("cache", limit="5")  # type: ignore[arg-type]


# --- only memctx's own blocks are dropped ------------------------------------------------------


def test_a_tool_result_that_starts_with_the_tag_is_kept_with_its_call(tmp_path: Path) -> None:
    file_text = '<recalled-context source="memory-context">\nnotes.md of the user\n'
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "read notes.md"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read"}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": file_text}],
        },
        {"role": "user", "content": file_text + "what does this file say?"},
    ]
    with engine(tmp_path) as mem:
        out = mem.on_context(messages)
        mem.on_before_compact(messages)
        mem.wait_idle(30)
    assert all(m in out for m in messages) and not pairing_violations(out)
    assert sum("notes.md of the user" in s["content"] for s in _segments(tmp_path)) == 2


def test_the_block_memctx_wrote_is_replaced_not_kept(tmp_path: Path) -> None:
    messages = session("a", 30, tool_words=120)
    stale = {"role": "user", "content": recalled_block_text("\nold recall\n")}
    with engine(tmp_path) as mem:
        out = mem.on_context([messages[0], stale, *messages[1:]])
    assert stale not in out


# --- faults while the agent keeps calling -----------------------------------------------------


def _fail_writes(code: int) -> Callable[..., int]:
    def write(fd: int, data: bytes) -> int:
        raise OSError(code, os.strerror(code))

    return write


def _deny_opens_for_writing(store: Path) -> Callable[..., int]:
    real = os.open

    def fake_open(path: Any, flags: int, *args: Any, **kw: Any) -> int:
        if str(path).startswith(str(store)) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real(path, flags, *args, **kw)

    return fake_open


def _poison_vectors(store: Path, value: float) -> None:
    """Overwrite one float of the first stored vector, header and length kept valid."""
    path = store / "vectors.bin"
    data = bytearray(path.read_bytes())
    header = 16
    data[header + 16 : header + 20] = struct.pack("<f", value)  # after the first UUID
    path.write_bytes(bytes(data))


def _flip_a_bit(store: Path) -> None:
    """Change one letter of a stored content so the line stays valid JSON."""
    path = store / "segments.jsonl"
    data = bytearray(path.read_bytes())
    at = data.index(b'"content":"') + len(b'"content":"') + 2
    assert chr(data[at]).isalpha()
    data[at] ^= 0x20  # a letter changes case
    path.write_bytes(bytes(data))


def _agent_turns(history: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """The agent's growing history, one turn (4 messages after the system prompt) at a time."""
    for end in range(5, len(history) + 1, 4):
        yield history[:end]


FAULTS = ["disk_full", "read_only", "nan_vectors", "inf_vectors", "bit_flip", "store_is_a_dir"]


@pytest.mark.parametrize("fault", FAULTS)
def test_the_agent_keeps_going_through_store_faults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    store = tmp_path / "store"
    history = session("a", 60, tool_words=150, seed=3)
    turns = list(_agent_turns(history))
    # A healthy first half: the store fills up.
    with engine(store) as mem:
        for messages in turns[:30]:
            mem.on_context(messages)
        mem.wait_idle(30)
    if fault == "nan_vectors":
        _poison_vectors(store, float("nan"))
    elif fault == "inf_vectors":
        _poison_vectors(store, float("inf"))
    elif fault == "bit_flip":
        _flip_a_bit(store)
    elif fault == "store_is_a_dir":
        (store / "segments.jsonl").unlink()
        (store / "segments.jsonl").mkdir()
    with engine(store) as mem:
        if fault == "disk_full":
            monkeypatch.setattr(os, "write", _fail_writes(errno.ENOSPC))
        elif fault == "read_only":
            monkeypatch.setattr(os, "open", _deny_opens_for_writing(store))
        outs = [mem.on_context(messages) for messages in turns[30:]]
        monkeypatch.undo()
        mem.wait_idle(30)
        stats = mem.stats()
    for messages, out in zip(turns[30:], outs, strict=True):
        assert estimate_messages_tokens(out) <= WINDOW - 800
        assert not pairing_violations(out)
        assert out[-1] is messages[-1]
    counts = stats["counts"]
    assert "on_context_failures" not in counts  # degraded, never failed
    assert counts["trims"] >= len(outs) - 2
    raw = stats.get("raw_store", {})
    if fault in ("disk_full", "read_only"):
        assert counts["archive_failures"] > 0
    elif fault == "store_is_a_dir":
        assert counts["archive_failures"] > 0 or counts["recall_failures"] > 0
    elif fault in ("nan_vectors", "inf_vectors"):
        assert raw["bad_vectors"] == 1 and "recall_failures" not in counts
    elif fault == "bit_flip":
        assert raw["checksum_mismatches"] == 1 and "recall_failures" not in counts


# --- a huge tool output costs bounded work, and nothing is lost --------------------------------


def _log(lines: int, start: int = 0) -> str:
    return "\n".join(
        f"INFO worker[{i % 7}] batch {i} done in {i % 97} ms" for i in range(start, lines)
    )


def test_a_huge_output_is_indexed_head_and_tail_and_kept_whole(tmp_path: Path) -> None:
    pem_body = [f"{'AbCdEfGh0123456789+/' * 3}{i:04d}" for i in range(40)]
    key = (
        "-----BEGIN RSA PRIVATE KEY-----\n"
        + "\n".join(pem_body)
        + "\n-----END RSA PRIVATE KEY-----"
    )
    head_log = _log(300)
    # The key straddles the head's cut (8,192 / 2 characters in), another sits in the middle.
    text = "\n".join([head_log[:3_900], key, _log(3_000, 300), key, _log(3_300, 3_000)])
    message = {"role": "tool", "tool_call_id": "c1", "content": text}
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": ""}}
        ],
    }
    with engine(tmp_path, archiveMaxMessageChars=8_192) as mem:
        mem.on_before_compact([call, message])
        mem.wait_idle(60)
        stats = mem.stats()["archive"]
        segments = _segments(tmp_path)
        indexed = sum(len(s["content"]) for s in segments)
        notes = [n for s in segments if (n := OMISSION_NOTE_RE.fullmatch(s["content"]))]
        assert len(notes) == 1 and notes[0]["kept_in"].startswith("tool-output/")
        ref = notes[0]["kept_in"]
        middle = mem.read_output_ref(ref)
    assert stats["oversized_messages"] == 1 and stats["output_refs"] == 1
    assert indexed < 3 * 8_192 and len(text) > 15 * 8_192
    assert "batch 1500 done" in middle and "batch 1500 done" not in str(segments)
    on_disk = "".join(
        p.read_text() for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".bin"
    )
    for line in pem_body:
        assert line not in on_disk
    with pytest.raises(StoreError, match="invalid output ref"):
        mem.read_output_ref("../../etc/passwd")


def test_a_bulk_first_call_archives_the_newest_inline_and_the_rest_later(tmp_path: Path) -> None:
    batch = [
        {"role": "user", "content": f"message {i} about module_{i % 50}.py"} for i in range(6_000)
    ]
    with engine(tmp_path, window=1_000_000) as mem:
        mem.on_before_compact(batch)
        deferred = mem.stats()["archive"]["archive_deferred"]
        found_now = mem.memory_search("message 5999 about module_49.py", limit=1)
        mem.wait_idle(120)
        total = len(_segments(tmp_path))
    assert 0 < deferred < 6_000
    assert found_now and "message 5999" in found_now[0]["content"]  # the newest, inline
    assert total == 6_000  # nothing lost: the worker wrote the rest


def test_archive_output_is_deterministic_for_the_same_input(tmp_path: Path) -> None:
    text = _log(5_000)
    message = {"role": "user", "content": text}
    names = []
    for run in range(2):
        with engine(tmp_path / str(run), archiveMaxMessageChars=8_192) as mem:
            mem.on_before_compact([message])
            mem.wait_idle(60)
        names.append(sorted(p.name for p in (tmp_path / str(run) / "tool-output").iterdir()))
    assert names[0] == names[1] and len(names[0]) == 1
    assert np.all([n.endswith(".json") for n in names[0]])


# --- the reported reproducers, one each ---------------------------------------------------------


def _rsa_4096_body(seed: int) -> list[str]:
    import base64
    import random as _random

    data = base64.b64encode(_random.Random(seed).randbytes(2_350)).decode()
    return [data[i : i + 64] for i in range(0, len(data), 64)]


def test_a_private_key_after_sixty_log_lines_is_masked_whole(tmp_path: Path) -> None:
    # ``cat ~/.ssh/id_rsa`` after 60 log lines: chunked first, the chunks after the one with
    # the BEGIN line held 36 of 50 body lines raw. Redacted whole first, none is stored.
    body = _rsa_4096_body(7)
    key = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----"
    output = _log(60) + "\n$ cat ~/.ssh/id_rsa\n" + key + "\n$ echo done\ndone"
    messages = [
        {"role": "user", "content": "show me the deploy key"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "sh"}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": output}],
        },
    ]
    with engine(tmp_path) as mem:
        mem.on_before_compact(messages)
        mem.wait_idle(30)
    segments = _segments(tmp_path)
    assert len(segments) > 2  # it was chunked
    stored = "\n".join(s["content"] for s in segments)
    assert [line for line in body if line in stored] == []
    assert "BEGIN RSA PRIVATE KEY" in stored and "INFO worker[3] batch 3" in stored


def test_a_secret_across_a_cut_inside_a_long_line_is_masked(tmp_path: Path) -> None:
    # Lines over a chunk's length are cut with no overlap: a token straddling the cut was
    # missed in both halves.
    token = "glpat-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn"
    for offset in (1_190, 1_195, 1_199):
        line = "x" * offset + " GITLAB_TOKEN=" + token + " " + "y" * 3_000
        with engine(tmp_path / str(offset)) as mem:
            mem.on_before_compact([{"role": "user", "content": line}])
            mem.wait_idle(30)
        stored = "".join(s["content"] for s in _segments(tmp_path / str(offset)))
        assert "Ab1Cd2Ef3Gh4" not in stored and "Ij5Kl6Mn" not in stored


def test_an_unreadable_knowledge_file_does_not_switch_trimming_off(tmp_path: Path) -> None:
    history = session("a", 40, tool_words=150, seed=5)
    (tmp_path / "knowledge.jsonl").mkdir(parents=True)  # a directory where the file goes
    with engine(tmp_path) as mem:
        mem.on_before_compact(history[:40])
        outs = [mem.on_context(history[:end]) for end in range(60, len(history) + 1, 20)]
        mem.wait_idle(30)
        counts = mem.stats()["counts"]
    assert "on_context_failures" not in counts
    for out in outs:
        assert estimate_messages_tokens(out) <= WINDOW and not pairing_violations(out)


def test_store_dir_is_read_once_and_never_blank(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreError, match="store_dir must be a non-empty path"):
        MemoryContext(store_dir="", session_id="s1")
    with MemoryContext(
        MemoryContextConfig(knowledgeExtraction=True),
        store_dir="~/.memctx/store",
        session_id="s1",
        embedder=HashEmbedder(),
    ) as mem:
        mem.on_before_compact([{"role": "user", "content": "Decision: use PostgreSQL 16."}])
        mem.wait_idle(30)
    home_store = tmp_path / "home" / ".memctx" / "store"
    assert (home_store / "segments.jsonl").is_file() and (home_store / "knowledge.jsonl").exists()
    assert not (tmp_path / "~").exists()  # nothing under a directory literally named ~

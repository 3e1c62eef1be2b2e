"""``MemoryContext.last_call``: the structured record of each ``on_context`` call, and
``stats()`` counts that are ints and never re-count the same messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import memctx
from memctx import ContextCallRecord, MemoryContextConfig, RecalledItem, TrimmedMessage
from memctx.messages import (
    estimate_message_tokens,
    estimate_messages_tokens,
    is_recalled_block,
    pairing_violations,
)
from memctx.runtime import MemoryContext
from memctx.runtime.call_record import PREVIEW_CHARS, CallNotes, preview
from memctx.runtime.stats import DistinctKeys, HookTimer
from memctx.runtime.trimmed import TrimmedMessages, message_id
from tests.strategies import examples

WINDOW = 20_000  # cap 2,000; safe limit 14,000


def engine(tmp_path: Path, **kw: Any) -> MemoryContext:
    config = kw.pop("config", MemoryContextConfig())
    return MemoryContext(
        config, store_dir=tmp_path / "store", session_id="s1", context_window_tokens=WINDOW, **kw
    )


def filler(i: int, size: int = 3000) -> dict[str, Any]:
    words = ["lorem", "ipsum", "dolor", "amet", "tempor", "magna", "aliqua"]
    text = " ".join(words[(i + j) % len(words)] for j in range(size // 6))
    role = "user" if i % 2 == 0 else "assistant"
    return {"role": role, "content": f"note {i}: {text}", "id": f"msg-{i}"}


def long_session(
    question: str = "now run the linter over the tests folder",
) -> list[dict[str, Any]]:
    """A system prompt, one early decision, 40 long notes (with ids), a last request."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    msgs.append(
        {"role": "user", "content": "Decision: the payment webhook lives in src/pay/hook.py"}
    )
    msgs.append({"role": "assistant", "content": "Understood, webhook in src/pay/hook.py."})
    msgs += [filler(i) for i in range(40)]
    msgs.append({"role": "user", "content": question})
    return msgs


def test_last_call_is_none_before_the_first_call_and_in_stats(tmp_path: Path) -> None:
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hello there"}]
    with engine(tmp_path) as mem:
        assert mem.last_call is None and mem.stats()["last_call"] is None
        assert mem.on_context(msgs) == msgs
        record = mem.last_call
        assert isinstance(record, ContextCallRecord)
        assert (record.call, record.messages_in, record.messages_out) == (1, 2, 2)
        tokens = estimate_messages_tokens(msgs)
        assert record.tokens_before == record.tokens_after == tokens
        assert record.trim == "none" and record.trimmed == () and not record.fallback
        assert record.recall == "no_match" and not record.recall_inserted
        assert record.recalled == () and record.recall_tokens == 0
        assert record.query == "hello there"
        shown = mem.stats()["last_call"]
        assert shown == record.as_dict() and shown["recall_inserted"] is False
        assert json.loads(json.dumps(shown)) == shown  # plain data
        mem.on_context(msgs)
        assert mem.last_call is not None and mem.last_call.call == 2


def test_the_record_names_the_trimmed_messages_by_position_and_id(tmp_path: Path) -> None:
    msgs = long_session()
    with engine(tmp_path) as mem:
        out = mem.on_context(msgs)
        record = mem.last_call
    assert record is not None and record.trim == "smart"
    sent = {id(m) for m in out}
    left_out = [i for i, m in enumerate(msgs) if id(m) not in sent]
    assert left_out and [t.index for t in record.trimmed] == left_out
    for t in record.trimmed:
        assert isinstance(t, TrimmedMessage)
        assert t.id == msgs[t.index].get("id") and t.role == msgs[t.index]["role"]
        assert t.tokens == estimate_message_tokens(msgs[t.index])
        assert set(t.layer.split("|")) <= {"bm25", "oldest", "pairing"}
    removed = record.trimmed_bm25 + record.trimmed_oldest + record.trimmed_pairing
    assert removed == len(record.trimmed)
    assert record.tokens_before == estimate_messages_tokens(msgs)
    assert record.tokens_after == estimate_messages_tokens(out) < record.tokens_before
    assert record.messages_out == len(out)


def test_one_layer_is_named_per_message_when_the_trim_used_one(tmp_path: Path) -> None:
    # The query matches no note: every note is equally irrelevant, so layer 2 finds no
    # "weak" unit (nothing scores) and layer 3 removes them oldest first.
    with engine(tmp_path) as mem:
        mem.on_context(long_session("zebra quagga okapi"))
        record = mem.last_call
    assert record is not None and record.trimmed
    assert record.trimmed_bm25 == 0 and record.trimmed_oldest == len(record.trimmed)
    assert {t.layer for t in record.trimmed} == {"oldest"}
    # A query that matches some notes: the others go first, by layer 2.
    with engine(tmp_path / "b") as mem:
        mem.on_context(long_session("what did note 7 say about lorem ipsum and tempor?"))
        record = mem.last_call
    assert record is not None and record.trimmed_bm25 > 0
    layers = {t.layer for t in record.trimmed}
    assert layers == ({"bm25"} if not record.trimmed_oldest else {"bm25|oldest"})


def test_a_forced_trim_is_named_forced(tmp_path: Path) -> None:
    notes = [{"role": "assistant", "content": filler(i)["content"]} for i in range(25)]
    msgs = [{"role": "system", "content": "sys"}, *notes, {"role": "user", "content": "ok"}]
    assert estimate_messages_tokens(msgs) > WINDOW
    with engine(tmp_path) as mem:
        out = mem.on_context(msgs)
        record = mem.last_call
    assert record is not None and record.trim == "forced" and record.query == "ok"
    assert record.trimmed and {t.layer for t in record.trimmed} == {"forced"}
    assert record.recall == "no_query" and len(out) == len(msgs) - len(record.trimmed)


@settings(max_examples=examples(200))
@given(st.text(st.sampled_from("ab \n\t\u2003é…"), max_size=600), st.integers(0, 300))
@example("x" + " " * 149 + "y" * 200, 250)  # the head flattens short, the rest does not
def test_a_preview_is_the_flattened_text_cut_to_its_length(text: str, pad: int) -> None:
    # Written from the definition: flatten all of it, then cut. Long whitespace runs (pad)
    # put the preview's characters past any fixed prefix.
    text = text[:150] + " " * pad + text[150:]
    flat = " ".join(text.split())
    want = flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"
    assert preview(text) == want


def test_recalled_items_carry_source_ref_score_tokens_and_preview(tmp_path: Path) -> None:
    msgs = long_session()
    with engine(tmp_path) as mem:
        out = mem.on_context(msgs)
        later = [
            *out,
            {"role": "assistant", "content": "Linter is clean."},
            {"role": "user", "content": "where does the payment webhook live?"},
        ]
        sent = mem.on_context(later)
        record = mem.last_call
        segments = [
            json.loads(line)
            for line in (tmp_path / "store" / "segments.jsonl").read_text().splitlines()
        ]
    blocks = [m for m in sent if is_recalled_block(m)]
    assert len(blocks) == 1
    assert record is not None and record.recall == "inserted" and record.recall_inserted
    assert record.recall_tokens == estimate_message_tokens(blocks[0]) > 0
    assert record.tokens_after == estimate_messages_tokens(sent)
    assert record.recalled and all(isinstance(r, RecalledItem) for r in record.recalled)
    scores = [r.score for r in record.recalled]
    assert scores == sorted(scores, reverse=True)
    assert record.recall_candidates >= len(record.recalled)
    assert record.best_score == max(r.score for r in record.recalled if r.kind == "detail")
    assert record.best_score >= record.min_best_score == 0.2
    ids = {s.get("id") for s in segments}
    hook = next(r for r in record.recalled if "src/pay/hook.py" in r.preview)
    assert (hook.kind, hook.source) == ("detail", "archive") and hook.ref in ids
    assert hook.score >= record.min_score and hook.tokens > 0
    for item in record.recalled:
        assert item.preview and len(item.preview) <= 120
        assert " ".join(item.preview.rstrip("…").split()[:3]) in " ".join(
            blocks[0]["content"].split()
        )


def test_stats_counts_are_ints_and_trimmed_messages_counts_each_message_once(
    tmp_path: Path,
) -> None:
    msgs = long_session()
    with engine(tmp_path) as mem:
        out = mem.on_context(msgs)
        first = mem.last_call
        assert first is not None
        # The agent resends its whole history every turn: the same old messages are
        # trimmed again on each call, and must not be counted again.
        history = list(msgs)
        for turn in range(6):
            history += [
                {"role": "assistant", "content": f"step {turn} done"},
                {"role": "user", "content": f"now run the linter over folder {turn}"},
            ]
            out = mem.on_context(history)
        stats = mem.stats()
        record = mem.last_call
    assert record is not None and record.call == 7 and record.trimmed
    counts = stats["counts"]
    assert all(type(v) is int for v in counts.values()), counts
    assert counts["on_context"] == 7 and counts["trims"] == 7
    distinct = {t.index for t in first.trimmed} | {t.index for t in record.trimmed}
    assert counts["trimmed_messages"] == len(distinct) <= len(history)
    latency = stats["latency_ms"]["on_context"]
    assert type(latency["calls"]) is int and latency["calls"] == 7
    assert all(type(v) is int for v in stats["archive"].values())
    assert len(out) < len(history)


def test_pairing_repairs_are_recorded(tmp_path: Path) -> None:
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "check the build please"},
        {"role": "tool", "tool_call_id": "orphan", "content": "result with no call"},
        {"role": "user", "content": "and what failed?"},
    ]
    assert pairing_violations(msgs)
    with engine(tmp_path) as mem:
        out = mem.on_context(msgs)
        record = mem.last_call
    assert not pairing_violations(out)
    assert record is not None and record.pairing_repairs == len(pairing_violations(msgs)) >= 1
    assert record.trim == "none" and record.messages_out == len(out)


def test_a_failed_hook_leaves_a_fallback_record(tmp_path: Path) -> None:
    # Not a list (a tuple): the caller's error, handed back. (A list holding a non-message
    # is no failure: the item is dropped and counted.)
    bad: Any = ({"role": "user", "content": "x"}, None)
    with engine(tmp_path) as mem:
        assert mem.on_context(bad) is bad
        record = mem.last_call
        assert record is not None and record.fallback and record.recall == "not_run"
        assert record.error is not None and "TypeError" in record.error
        assert (record.messages_in, record.messages_out) == (0, 0)  # a non-list is not read
        assert mem.stats()["last_call"]["fallback"] is True
        assert mem.on_context("not a list") == "not a list"  # type: ignore[arg-type]
        again = mem.last_call
        assert again is not None and again.call == 2 and again.fallback
        assert again.tokens_before == again.tokens_after == 0


def test_a_failing_recall_is_recorded_as_degraded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memctx.runtime.recall_step as step

    def broken(*_a: Any, **_k: Any) -> Any:
        raise OSError("disk gone")

    monkeypatch.setattr(step, "detail_items", broken)
    msgs = long_session()
    with engine(tmp_path) as mem:
        out = mem.on_context(msgs)
        record = mem.last_call
        assert mem.stats()["counts"]["recall_failures"] == 1
    assert record is not None and not record.fallback and record.trim == "smart"
    assert record.recall == "failed" and record.degraded == ("recall",)
    assert record.error is not None and "disk gone" in record.error
    assert record.tokens_after == estimate_messages_tokens(out)


def test_a_record_that_cannot_be_built_never_costs_the_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_a: Any, **_k: Any) -> Any:
        raise ValueError("no record today")

    monkeypatch.setattr(CallNotes, "freeze", broken)
    msgs = long_session()
    with engine(tmp_path) as mem:
        out = mem.on_context(msgs)
        record = mem.last_call
        counts = mem.stats()["counts"]
    assert len(out) < len(msgs) and counts["record_failures"] == 1
    assert "on_context_failures" not in counts
    assert record is not None and not record.fallback and record.error is not None
    assert "no record today" in record.error
    assert record.messages_out == len(out) and record.tokens_before > record.tokens_after > 0


def test_the_query_shown_is_redacted(tmp_path: Path) -> None:
    secret = "sk-proj-Zq8Wm2Xr5Tb7Nc1Vd3Kf6Hg9Jp4Ls0Ay"
    msgs = [{"role": "user", "content": f"why does OPENAI_API_KEY={secret} fail on deploy?"}]
    with engine(tmp_path) as mem:
        mem.on_context(msgs)
        record = mem.last_call
    assert record is not None and "deploy" in record.query and secret not in record.query
    assert secret[:12] not in json.dumps(record.as_dict())


def test_a_disabled_engine_records_a_pass_through(tmp_path: Path) -> None:
    msgs = long_session()
    with engine(tmp_path, config=MemoryContextConfig(enabled=False)) as mem:
        assert mem.on_context(msgs) is msgs
        record = mem.last_call
    assert record is not None and record.trim == "none" and record.trimmed == ()
    assert record.tokens_before == record.tokens_after == estimate_messages_tokens(msgs)


def test_the_record_types_are_public_names() -> None:
    for name in ("ContextCallRecord", "RecalledItem", "TrimmedMessage"):
        assert name in memctx.__all__ and getattr(memctx, name) is getattr(memctx.runtime, name)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"role": "user", "id": "m-1"}, "m-1"),
        ({"role": "user", "uuid": "u-2"}, "u-2"),
        ({"role": "user", "id": 7}, "7"),
        ({"role": "user", "id": True}, None),
        ({"role": "user", "id": ""}, None),
        ({"role": "user", "id": 10**5000}, None),
        ({"role": "user"}, None),
        ("not a message", None),
    ],
)
def test_message_id_reads_id_or_uuid(message: Any, expected: str | None) -> None:
    assert message_id(message) == expected


def test_hook_timer_counts_every_call_as_an_int() -> None:
    timer = HookTimer()
    for _ in range(2_005):  # more than the 2,000 latest kept for percentiles
        with timer("on_context"):
            pass
    summary = timer.summary()["on_context"]
    assert summary["calls"] == 2_005 and type(summary["calls"]) is int
    assert len(timer.samples("on_context")) == 2_000


def test_distinct_keys_counts_each_key_once() -> None:
    seen = DistinctKeys()
    assert seen.add_new(np.array([3, 1, 3], dtype=np.int64)) == 2
    assert seen.add_new(np.array([1, 3], dtype=np.int64)) == 0
    assert seen.add_new(np.array([5000, 1], dtype=np.int64)) == 1
    assert seen.add_new(np.array([], dtype=np.int64)) == 0


def test_pruned_tool_results_are_listed_and_counted_back_to_the_callers_tokens(
    tmp_path: Path,
) -> None:
    log = "".join(f"step {j} of the build: ok\n" for j in range(600))  # ~16,000 characters
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Make the build green."},
    ]
    for k in range(6):
        fn = {"name": "bash", "arguments": f'{{"cmd": "make build{k}"}}'}
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"b{k}", "type": "function", "function": fn}],
            }
        )
        msgs.append({"role": "tool", "tool_call_id": f"b{k}", "content": log})
    msgs.append({"role": "user", "content": "what is the payment webhook url again?"})
    config = MemoryContextConfig(
        contextPruning={"mode": "cache-ttl", "ttl": "5m", "hardClear": {"enabled": False}},
    )
    with MemoryContext(
        config, store_dir=tmp_path / "store", session_id="s1", context_window_tokens=40_000
    ) as mem:
        out = mem.on_context(msgs)
        record = mem.last_call
    assert record is not None and record.pruned
    # The pruned copies stand where their originals stood (a recall block, if any, would
    # come only before the last request).
    changed = [i for i, (a, b) in enumerate(zip(msgs[:-1], out, strict=False)) if a is not b]
    assert list(record.pruned) == changed
    assert all(msgs[i]["role"] == "tool" for i in record.pruned)
    assert record.tokens_before == estimate_messages_tokens(msgs)
    assert record.tokens_after == estimate_messages_tokens(out) < record.tokens_before


def test_trimmed_messages_is_a_tuple_like_sequence_built_when_read() -> None:
    msgs = [{"role": "user", "content": "a", "id": "x1"}, {"role": "assistant", "content": "b"}]
    seq = TrimmedMessages(msgs, [3, 7], [10, 20], "bm25")
    assert len(seq) == 2 and repr(seq) == "TrimmedMessages(2 messages)"
    first = TrimmedMessage(3, "x1", "user", 10, "bm25")
    assert seq[0] == first and seq[1].id is None and seq[1].index == 7
    assert seq[:1] == (first,) and list(seq) == [first, seq[1]]
    assert seq == (first, seq[1]) and seq == TrimmedMessages(msgs, [3, 7], [10, 20], "bm25")
    assert hash(seq) == hash((first, seq[1])) and seq != "not a sequence"
    assert TrimmedMessages() == () and len(TrimmedMessages()) == 0

"""The session-summary sidecar of seed 004: loop prevention, rewind recovery, the file.

Pinned here: the summary never summarises itself (its own injected text, recalled blocks,
compaction summaries), across injected prompts, echoes, compactions and restarts (a property
in every format); the caller's messages are never changed; after a compaction rewrote the
history new messages are added exactly once (the seed's bug skipped them); a second open sees
what the first saved; a corrupt file is moved aside byte for byte; the materialised summary's
bound and order; where the summary is injected; when it is due.
"""

from __future__ import annotations

import copy
import json
import logging
import tempfile
from pathlib import Path
from typing import Any

import pytest
from compaction_support import assistant, system, user
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import (
    FORMATS,
    SUMMARY_TEXTS,
    Call,
    SidecarCase,
    Turn,
    examples,
    render,
    sidecar_cases,
    user_message,
)

from memctx.compaction import (
    SIDECAR_SUFFIX,
    SUMMARY_FORMAT,
    SUMMARY_MARKER,
    SessionSummary,
    inject_summary,
    sidecar_path,
    summary_injection_due,
)
from memctx.config import PlannerConfig
from memctx.messages import (
    COMPACTION_SUMMARY_PREFIXES,
    RECALLED_CONTEXT_TAG,
    is_compaction_summary,
    is_recalled_block,
)

_settings = settings(
    max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _config(max_items: int = 60, item_chars: int = 240) -> PlannerConfig:
    return PlannerConfig(summary_max_items=max_items, summary_item_chars=item_chars)


def _apply(case: SidecarCase, event: str, n: int, state: dict[str, Any]) -> None:
    """One event of ``case`` on ``state`` (transcript, pending messages, summary, texts)."""
    summary: SessionSummary = state["summary"]
    transcript: list[Any] = state["transcript"]
    if event == "grow":
        k = max(n, 1)
        state["transcript"] = transcript + state["pending"][:k]
        state["pending"] = state["pending"][k:]
    elif event in ("inject", "echo"):
        text = summary.materialize(4000)
        state["materialised"].append(text)
        if event == "inject":
            state["transcript"] = inject_summary(transcript, text)
        elif text:
            state["transcript"] = [*transcript, user_message(case.fmt, text)]
    elif event == "compact":
        tail = transcript[len(transcript) - n :] if n else []
        state["transcript"] = [user_message(case.fmt, SUMMARY_TEXTS[n % 3]), *tail]
    elif event == "restart":
        state["summary"] = SessionSummary.open(
            summary.path, _config(case.max_items, case.item_chars)
        )


def _run(case: SidecarCase, where: str, after_update: Any) -> None:
    config = _config(case.max_items, case.item_chars)
    state: dict[str, Any] = {
        "summary": SessionSummary.open(sidecar_path(Path(where) / "s.jsonl"), config),
        "transcript": [],
        "pending": list(case.messages),
        "materialised": [],
    }
    for event, n in case.events:
        _apply(case, event, n, state)
        state["summary"].update(state["transcript"])
        after_update(state)


def _own_gists(case: SidecarCase) -> set[str]:
    """The item of every message that is the session's own: recalled blocks and compaction
    summaries are left out here with memctx.messages' recognisers, not the sidecar's rules."""
    own = [m for m in case.messages if not is_recalled_block(m) and not is_compaction_summary(m)]
    reference = SessionSummary(
        Path("/nonexistent/s"), _config(10_000, case.item_chars), writable=False
    )
    reference.update(own)
    return {item.text for item in reference.items}


@pytest.mark.parametrize("fmt", FORMATS)
def test_property_the_summary_never_summarises_itself(fmt: str) -> None:
    @_settings
    @given(sidecar_cases(fmt))
    def check(case: SidecarCase) -> None:
        own = _own_gists(case)

        def invariants(state: dict[str, Any]) -> None:
            summary: SessionSummary = state["summary"]
            lines = {line for text in state["materialised"] for line in text.splitlines()}
            lines.add(summary.materialize(case.max_chars).partition("\n")[0])
            lines.discard("")
            for item in summary.items:
                assert item.text in own  # a gist of the session, not of the summary itself
                assert SUMMARY_MARKER not in item.text
                assert not any(line in item.text for line in lines), item.text
                assert RECALLED_CONTEXT_TAG not in item.text
                assert not any(p in item.text for p in COMPACTION_SUMMARY_PREFIXES)
                assert len(item.text) <= case.item_chars
            assert len(summary.items) <= case.max_items
            assert summary.last_processed_message_count == len(state["transcript"])
            assert len(summary.materialize(case.max_chars)) <= case.max_chars

        with tempfile.TemporaryDirectory() as where:
            _run(case, where, invariants)

    check()


@pytest.mark.parametrize("fmt", FORMATS)
def test_property_the_callers_messages_are_never_changed(fmt: str) -> None:
    @_settings
    @given(sidecar_cases(fmt))
    def check(case: SidecarCase) -> None:
        originals = copy.deepcopy(case.messages)
        seen: list[tuple[list[Any], list[Any]]] = []  # every transcript and its copy

        def unchanged(state: dict[str, Any]) -> None:
            seen.append((state["transcript"], copy.deepcopy(state["transcript"])))
            injected = inject_summary(state["transcript"], f"{SUMMARY_MARKER} x")
            assert injected is not state["transcript"]
            for transcript, snapshot in seen:
                assert transcript == snapshot
            assert case.messages == originals

        with tempfile.TemporaryDirectory() as where:
            _run(case, where, unchanged)

    check()


# --- rewind recovery ---------------------------------------------------------------------------


def _session(fmt: str, tag: str, n_turns: int) -> list[Any]:
    """``n_turns`` turns in ``fmt`` whose texts are all distinct (tagged ``tag``)."""
    turns = [
        Turn(
            user_text=f"{tag} request {i}",
            assistant_text=f"{tag} answer {i}",
            thinking=None,
            calls=[Call("read", {"path": f"{tag}-{i}.py"}, f"{tag} output {i}")] if i % 2 else [],
        )
        for i in range(n_turns)
    ]
    return render(fmt, True, turns)


@pytest.mark.parametrize("fmt", FORMATS)
# The new transcript shorter, or not shorter (5 turns: Responses items spread a turn over
# more entries, so 4 new turns would still leave it shorter there).
@pytest.mark.parametrize("new_turns", [1, 5])
def test_after_a_compaction_new_messages_are_added_once_and_old_items_kept(
    fmt: str, new_turns: int, tmp_path: Path
) -> None:
    history = _session(fmt, "old", 6)
    summary = SessionSummary.open(tmp_path / "s.summary.json", _config())
    first = summary.update(history)
    before = summary.items
    assert first == len(history) - 1  # everything but the system prompt
    new = _session(fmt, "new", new_turns)[1:]
    rewritten = [history[0], user_message(fmt, SUMMARY_TEXTS[0]), *history[-4:], *new]
    assert (len(rewritten) < len(history)) == (new_turns == 1)

    added = summary.update(rewritten)

    assert added == len(new)
    assert summary.items[: len(before)] == before
    texts = [item.text for item in summary.items]
    assert len(set(texts)) == len(texts)  # nothing twice
    assert all("new" in t for t in texts[len(before) :])
    assert summary.last_processed_message_count == len(rewritten)
    assert summary.update(rewritten) == 0  # and a later turn does not add them again
    more = [*rewritten, user_message(fmt, "one more request")]
    assert summary.update(more) == 1
    assert summary.items[-1].text == "[User]: one more request"


def test_a_history_rewritten_in_place_is_noticed() -> None:
    history = [system(), user("fix the parser"), assistant("done"), user("run the tests")]
    summary = SessionSummary(Path("/nonexistent/s.summary.json"), _config(), writable=False)
    assert summary.update(history) == 3
    repaired = [*history[:3], user("run the tests, then commit"), user("and push")]
    assert summary.update(repaired) == 2  # the edited message and the new one
    assert [i.text for i in summary.items][-2:] == [
        "[User]: run the tests, then commit",
        "[User]: and push",
    ]


def test_items_are_named_by_role_and_capped_on_one_line(tmp_path: Path) -> None:
    messages = _session("anthropic", "t", 2)
    messages.append(user_message("anthropic", "line one\n\nline two " + "x" * 400))
    summary = SessionSummary.open(tmp_path / "s.summary.json", _config(item_chars=60))
    summary.update(messages)
    roles = [item.role for item in summary.items]
    assert roles == ["user", "assistant", "user", "assistant", "tool", "user"]
    last = summary.items[-1].text
    assert len(last) <= 60 and "\n" not in last
    assert last.startswith("[User]: line one") and last.endswith("xxx")
    assert "characters omitted" in last


# --- the file ----------------------------------------------------------------------------------


def test_sidecar_path_is_beside_the_session_file() -> None:
    assert sidecar_path("/s/abc.jsonl") == Path("/s/abc.jsonl.summary.json")
    assert SIDECAR_SUFFIX == ".summary.json"


def test_a_second_open_sees_what_the_first_saved(tmp_path: Path) -> None:
    path = sidecar_path(tmp_path / "session.jsonl")
    history = _session("pi", "p", 4)
    first = SessionSummary.open(path, _config(max_items=5))
    first.update(history)
    data = json.loads(path.read_text())
    assert data["format"] == SUMMARY_FORMAT
    assert data["lastProcessedMessageCount"] == len(history)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temp file left

    second = SessionSummary.open(path, _config(max_items=5))
    assert second.items == first.items and len(second.items) == 5
    assert second.last_processed_message_count == len(history)
    assert second.update(history) == 0  # the recorded fingerprints came back too
    assert second.update([*history, user("next")]) == 1
    assert SessionSummary.open(path, _config(max_items=5)).items == second.items


@pytest.mark.parametrize(
    "content",
    [
        b"\x00\xffnot json",
        b'{"format": "memctx-summary/1", "lastProcessedMessageCount": -1, "items": [], "seen": []}',
        json.dumps({"format": "something-else/3", "items": []}).encode(),
        json.dumps(
            {
                "format": SUMMARY_FORMAT,
                "lastProcessedMessageCount": 1,
                "items": [{"text": f"{SUMMARY_MARKER} x", "role": "user", "fingerprint": "f"}],
                "seen": ["f"],
            }
        ).encode(),
    ],
)
def test_a_corrupt_file_is_moved_aside_intact_and_the_summary_starts_empty(
    tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "s.jsonl.summary.json"
    earlier = tmp_path / "s.jsonl.summary.json.corrupt-1"
    earlier.write_bytes(b"an earlier corrupt file")
    path.write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="memctx"):
        summary = SessionSummary.open(path, _config())
    assert summary.items == () and summary.last_processed_message_count == 0
    assert not path.exists()
    assert (tmp_path / "s.jsonl.summary.json.corrupt-2").read_bytes() == content
    assert earlier.read_bytes() == b"an earlier corrupt file"
    assert "corrupt" in caplog.text
    summary.update([user("hello")])
    assert json.loads(path.read_text())["items"][0]["text"] == "[User]: hello"


def test_an_unreadable_path_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "s.summary.json"
    path.mkdir()
    (path / "keep").write_text("x")
    summary = SessionSummary.open(path, _config())
    assert summary.update([user("hello")]) == 1  # works in memory
    assert (path / "keep").read_text() == "x"


# --- materialisation, injection, the decision --------------------------------------------------


@given(st.integers(0, 3000), st.integers(1, 40))
@_settings
def test_materialize_keeps_the_newest_items_in_order_within_max_chars(
    max_chars: int, n: int
) -> None:
    summary = SessionSummary(Path("/nonexistent/s"), _config(), writable=False)
    summary.update([user(f"request number {i} " + "w" * (i % 7) * 9) for i in range(n)])
    text = summary.materialize(max_chars)
    assert len(text) <= max_chars
    everything = summary.materialize(10**6)
    lines = everything.splitlines()
    assert lines[0].startswith(SUMMARY_MARKER)
    assert lines[1:] == [f"- user: {i.text}" for i in summary.items]
    assert summary.materialize(len(everything)) == everything  # the bound is inclusive
    assert summary.materialize(len(everything) - 1).splitlines()[1:] == lines[2:]
    if text:
        header, *kept = text.splitlines()
        assert header == lines[0] and kept == lines[len(lines) - len(kept) :]  # newest, in order
        if len(kept) < n:  # the next older line would not have fitted
            assert len(text) + 1 + len(lines[-len(kept) - 1]) > max_chars
    else:
        assert len(lines[0]) + 1 + len(lines[-1]) > max_chars


def test_materialize_is_empty_without_items() -> None:
    summary = SessionSummary(Path("/nonexistent/s"), _config(), writable=False)
    summary.update([system(), user_message("openai", SUMMARY_TEXTS[0])])
    assert summary.items == () and summary.materialize(4000) == ""


def test_injection_appends_to_a_string_system_prompt() -> None:
    messages = [system("Be careful."), user("hi"), assistant("hello")]
    snapshot = copy.deepcopy(messages)
    out = inject_summary(messages, "SUMMARY")
    assert out[0] == {"role": "system", "content": "Be careful.\n\nSUMMARY"}
    assert out[1] is messages[1] and out[2] is messages[2] and len(out) == 3
    assert messages == snapshot


def test_injection_adds_a_text_block_to_a_list_system_prompt() -> None:
    block = {"type": "text", "text": "Be careful.", "cache_control": {"type": "ephemeral"}}
    messages = [{"role": "system", "content": [block]}, user("hi")]
    snapshot = copy.deepcopy(messages)
    out = inject_summary(messages, "SUMMARY")
    assert out[0]["content"] == [block, {"type": "text", "text": "SUMMARY"}]
    assert out[0]["content"][0] is block and out[1] is messages[1]
    assert messages == snapshot


def test_injection_without_a_system_message_inserts_one_first() -> None:
    messages = [user("hi"), assistant("hello")]
    out = inject_summary(messages, "SUMMARY")
    assert out == [{"role": "system", "content": "SUMMARY"}, *messages]
    assert messages == [user("hi"), assistant("hello")]


def test_injection_goes_to_the_last_leading_system_message_and_empty_text_is_a_copy() -> None:
    messages = [system("A"), {"role": "developer", "content": "B"}, user("hi")]
    out = inject_summary(messages, "S")
    assert out[0] is messages[0] and out[1]["content"] == "B\n\nS"
    same = inject_summary(messages, "")
    assert same == messages and same is not messages


@pytest.mark.parametrize(
    ("trimmed", "used", "budget", "due"),
    [
        (False, 0, 1000, False),
        (False, 719, 1000, False),
        (False, 720, 1000, True),
        (False, 5000, 1000, True),
        (True, 0, 1000, True),
        (False, 0, 0, True),
        (False, 10, -5, True),
        (True, 0, 0, True),
    ],
)
def test_summary_injection_due(trimmed: bool, used: int, budget: int, due: bool) -> None:
    assert (
        summary_injection_due(trimmed=trimmed, used_tokens=used, budget_tokens=budget, ratio=0.72)
        is due
    )


def test_a_secret_in_a_message_is_never_written_to_the_sidecar(tmp_path: Path) -> None:
    secret = "sk-proj-Zq8rT2vLm9XwK4pNc7YbD3hJf6GsA1eU"
    path = sidecar_path(tmp_path / "s.jsonl")
    summary = SessionSummary.open(path, PlannerConfig())
    summary.update([user(f"deploy with OPENAI_API_KEY={secret} please"), assistant("on it")])
    assert len(summary.items) == 2 and "OPENAI_API_KEY=" in summary.items[0].text
    assert secret not in path.read_text() and secret not in summary.materialize(4_000)

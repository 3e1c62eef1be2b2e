"""Tests for memctx.transcripts: real transcripts from ../shared/datasets and synthetic files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers.datasets import dataset_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctx.errors import TranscriptError
from memctx.messages.anatomy import RoleKind, inspect_message, role_kind
from memctx.transcripts.load import (
    FORMATS,
    Transcript,
    Usage,
    load_transcript,
    load_transcripts,
)
from tests.strategies import examples

# Every transcript file in ../shared/datasets with what it must load as:
# (format, transcripts, messages, tool calls, tool results), summed over the file's transcripts.
_CC = "claude-code/"
_SESSIONS = (
    "258c7280-ae70-4798-800f-63464d01a85d",
    "4d5611e5-241a-462a-8d15-5122611a9569",
    "8463c716-a2ea-4c14-9efa-87158ebd9f20",
)
EXPECTED: dict[str, tuple[str, int, int, int, int]] = {
    f"{_CC}{_SESSIONS[0]}.jsonl": ("claude-code", 1, 307, 186, 186),
    f"{_CC}{_SESSIONS[1]}.jsonl": ("claude-code", 1, 280, 150, 150),
    f"{_CC}{_SESSIONS[2]}.jsonl": ("claude-code", 1, 287, 177, 177),
    f"{_CC}short.jsonl": ("claude-code", 1, 4, 2, 2),
    f"{_CC}subagent.jsonl": ("claude-code", 1, 27, 16, 16),
    f"{_CC}tool_heavy.jsonl": ("claude-code", 1, 15, 6, 6),
    f"{_CC}{_SESSIONS[0]}/subagents/agent-a881341.jsonl": ("claude-code", 1, 6, 2, 2),
    f"{_CC}{_SESSIONS[0]}/subagents/agent-acompact-fffbd0.jsonl": ("claude-code", 1, 4, 0, 0),
    f"{_CC}{_SESSIONS[1]}/subagents/agent-a2898e3.jsonl": ("claude-code", 1, 24, 33, 33),
    f"{_CC}{_SESSIONS[1]}/subagents/agent-acompact-e1f845.jsonl": ("claude-code", 1, 5, 0, 0),
    f"{_CC}{_SESSIONS[2]}/subagents/agent-a7be2f0.jsonl": ("claude-code", 1, 26, 19, 19),
    f"{_CC}{_SESSIONS[2]}/subagents/agent-acompact-f46190.jsonl": ("claude-code", 1, 7, 0, 0),
    "swe-agent/ctf__crypto__BabyEncryption.traj": ("swe-agent", 1, 31, 0, 0),
    "swe-agent/ctf__crypto__BabyTimeCapsule.traj": ("swe-agent", 1, 19, 0, 0),
    "swe-agent/ctf__crypto__eps.traj": ("swe-agent", 1, 29, 0, 0),
    "swe-agent/ctf__crypto__katy.traj": ("swe-agent", 1, 37, 0, 0),
    "swe-agent/function_calling_simple.traj": ("swe-agent", 1, 12, 5, 5),
    "swe-agent/human_thought__swe-bench-HumanEvalFix-python__lcb__t-0.00__p-0.95__c-4.00__"
    "install-0__humanevalfix-python-0.traj": ("swe-agent", 1, 11, 0, 0),
    "swe-agent/replay__marshmallow-code__marshmallow-1867__default__t-0.20__p-0.95__c-2.00__"
    "install-1___install_from_source__marshmallow-code__marshmallow-1867.traj": (
        "swe-agent",
        1,
        29,
        0,
        0,
    ),
    "swe-agent/replay__marshmallow-code__marshmallow-1867__function_calling__install-1__"
    "marshmallow-code__marshmallow-1867.traj": ("swe-agent", 1, 24, 11, 11),
    # OpenHands: each trajectory ends with a `finish` call that has no result (5 in all).
    "openhands-swe-gym/sample_raw.json": ("openhands", 5, 188, 87, 82),
    # nebius: tool calls are fenced blocks in assistant text, not structured calls.
    "swe-agent-nebius/sample_raw.json": ("nebius", 5, 103, 0, 0),
}
BIG_SESSIONS = [f"{_CC}{s}.jsonl" for s in _SESSIONS]
CLAUDE_FILES = [rel for rel, exp in EXPECTED.items() if exp[0] == "claude-code"]
_OPENAI_KEYS = {"role", "content", "name", "tool_calls", "tool_call_id", "function_call"}

_cache: dict[str, list[Transcript]] = {}


def _load(rel: str) -> list[Transcript]:
    path = dataset_path(*rel.split("/"))
    if rel not in _cache:
        _cache[rel] = load_transcripts(path)
    return _cache[rel]


def _raw_records(rel: str) -> list[dict[str, Any]]:
    path = dataset_path(*rel.split("/"))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _tool_ids(messages: list[dict[str, Any]]) -> tuple[list[str | None], list[str | None], int]:
    """(call ids, result ids, results whose id has no call earlier) in transcript order."""
    calls: list[str | None] = []
    results: list[str | None] = []
    orphans = 0
    for message in messages:
        info = inspect_message(message)
        calls.extend(info.tool_call_ids)
        for rid in info.tool_result_ids:
            results.append(rid)
            orphans += rid is None or rid not in calls
    return calls, results, orphans


# ---------------------------------------------------------------------------- real data


@pytest.mark.dataset
@pytest.mark.parametrize("rel", list(EXPECTED))
def test_every_dataset_transcript_loads(rel: str) -> None:
    fmt, n_transcripts, n_messages, _, _ = EXPECTED[rel]
    found = _load(rel)
    assert len(found) == n_transcripts
    assert sum(len(t.messages) for t in found) == n_messages
    for t in found:
        assert t.format == fmt
        assert t.messages
        assert t.source.endswith(rel.split("/")[-1])
        for message in t.messages:
            assert role_kind(message) is not RoleKind.UNKNOWN, message
            assert None not in message.values()
            if fmt == "claude-code":  # no Claude Code envelope, only the API fields
                assert set(message) == {"role", "content"}
                assert message["role"] in ("user", "assistant")
            else:
                assert set(message) <= _OPENAI_KEYS, set(message)
                if message["role"] == "tool":
                    assert isinstance(message["tool_call_id"], str)


@pytest.mark.dataset
@pytest.mark.parametrize("rel", list(EXPECTED))
def test_every_tool_result_has_an_earlier_call(rel: str) -> None:
    _, _, _, n_calls, n_results = EXPECTED[rel]
    calls = results = 0
    for t in _load(rel):
        call_ids, result_ids, orphans = _tool_ids(t.messages)
        # No real file has a result without an earlier call (checked on every file).
        assert orphans == 0
        calls += len(call_ids)
        results += len(result_ids)
        if t.format == "openhands":
            # The only unanswered call is the final `finish` call in the last message.
            unanswered = [c for c in call_ids if c not in result_ids]
            assert len(unanswered) == 1
            assert unanswered == list(inspect_message(t.messages[-1]).tool_call_ids)
        elif rel.startswith("swe-agent/replay") and "function_calling" in rel:
            # Data oddity: this replayed trajectory reuses call ids across turns (11 calls,
            # 6 distinct ids); each result still follows a call with its id.
            assert len(set(call_ids)) == 6
        else:
            assert len(set(call_ids)) == len(call_ids)
    assert (calls, results) == (n_calls, n_results)


@pytest.mark.dataset
@pytest.mark.parametrize("rel", CLAUDE_FILES)
def test_claude_code_results_answer_the_message_right_before(rel: str) -> None:
    # The Anthropic API's rule: every tool_use is answered in the NEXT message, which is a
    # user message; several parallel results arrive together in that one message.
    (t,) = _load(rel)
    for i, message in enumerate(t.messages):
        calls = inspect_message(message).tool_call_ids
        if calls:
            nxt = t.messages[i + 1]
            assert nxt["role"] == "user"
            assert set(calls) <= set(inspect_message(nxt).tool_result_ids)
    for a, b in zip(t.messages, t.messages[1:], strict=False):
        assert not (a["role"] == b["role"] == "assistant")


@pytest.mark.dataset
@pytest.mark.parametrize("rel", CLAUDE_FILES)
def test_claude_code_merges_block_records_and_keeps_last_usage(rel: str) -> None:
    (t,) = _load(rel)
    records = _raw_records(rel)
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if r.get("type") == "assistant":
            groups.setdefault(r["message"]["id"], []).append(r)
    n_records = sum(len(g) for g in groups.values())
    assistants = [i for i, m in enumerate(t.messages) if m["role"] == "assistant"]
    assert len(assistants) == len(groups) <= n_records
    if n_records > len(groups):
        assert len(assistants) < n_records
    # Each merged message holds its group's non-blank blocks in file order, and the usage of
    # the group's LAST record (the only one with the final output_tokens).
    for index, group in zip(assistants, groups.values(), strict=True):
        blocks = [b for r in group for b in r["message"]["content"]]
        kept = [b for b in blocks if b.get("type") != "text" or b["text"].strip()]
        assert t.messages[index]["content"] == kept
        last = group[-1]["message"]["usage"]
        assert t.usage[index] == Usage(
            last["input_tokens"],
            last["cache_read_input_tokens"],
            last["cache_creation_input_tokens"],
            last["output_tokens"],
        )
    assert len(t.usage) == len(assistants)  # every assistant message has its usage
    # Every skipped record is counted under its type.
    types = Counter(r["type"] for r in records)
    for kind in ("progress", "file-history-snapshot", "queue-operation"):
        assert t.skipped.get(kind, 0) == types[kind]
    systems = sum(v for k, v in t.skipped.items() if k.startswith("system:"))
    assert systems == types["system"] - len(t.meta.get("compactions", []))


@pytest.mark.dataset
@pytest.mark.parametrize("rel", BIG_SESSIONS)
def test_claude_code_compaction_and_interleaved_results(rel: str) -> None:
    (t,) = _load(rel)
    assert t.compaction_boundary is not None
    assert t.compact_summary == t.compaction_boundary  # the summary is the first message after
    assert 0 < t.compaction_boundary < len(t.messages)
    summary = t.messages[t.compact_summary]
    assert summary["role"] == "user"
    assert isinstance(summary["content"], str)
    assert summary["content"].startswith("This session is being continued")
    assert t.meta["compactions"][0]["trigger"] == "auto"
    assert t.meta["compactions"][0]["pre_tokens"] > 150_000
    assert t.session_id == rel.split("/")[-1].removesuffix(".jsonl")
    # The raw file logs tool results BETWEEN block records of one assistant message, so a
    # plain file-order reading would break pairing; the loader must have regrouped them.
    open_id, interleaved, pending = None, 0, False
    for r in _raw_records(rel):
        if r.get("type") == "assistant":
            interleaved += r["message"]["id"] == open_id and pending
            open_id, pending = r["message"]["id"], False
        elif r.get("type") == "user":
            content = r["message"]["content"]
            pending = isinstance(content, list) and content[0].get("type") == "tool_result"
    assert interleaved > 5
    assert t.meta["merged_result_records"] > 0
    # Usage is present and plausible for the assistant messages.
    assistants = [i for i, m in enumerate(t.messages) if m["role"] == "assistant"]
    assert len(t.usage) >= 0.9 * len(assistants)
    assert all(u.context_tokens > 10_000 for u in t.usage.values())


@pytest.mark.dataset
def test_claude_code_fixtures_details() -> None:
    (short,) = _load(f"{_CC}short.jsonl")
    assert [m["role"] for m in short.messages] == ["user", "assistant", "user", "user"]
    assert short.messages[0]["content"] == "mix phx.server doesnt seem to start"
    assert short.usage[1].context_tokens == 3 + 11515 + 13835
    assert short.meta["blank_text_blocks_dropped"] == 1
    assert short.skipped["system:local_command"] == 2
    assert short.compaction_boundary is None and short.compact_summary is None
    # isMeta user records (skill prompt, command caveat) are kept: the model saw them.
    assert _load(f"{_CC}tool_heavy.jsonl")[0].meta["meta_user_messages"] == 1
    (agent,) = _load(f"{_CC}{_SESSIONS[0]}/subagents/agent-acompact-fffbd0.jsonl")
    assert agent.meta["sidechain"] is True and agent.meta["agent_id"] == "acompact-fffbd0"
    assert "sidechain" not in agent.skipped


@pytest.mark.dataset
def test_load_transcript_refuses_multi_trajectory_files() -> None:
    path = dataset_path("openhands-swe-gym", "sample_raw.json")
    with pytest.raises(TranscriptError, match=r"5 openhands transcripts.*load_transcripts"):
        load_transcript(path)
    single = load_transcript(dataset_path("swe-agent", "function_calling_simple.traj"))
    assert single.session_id == "function_calling_simple"
    assert single.messages[3] == {
        "role": "tool",
        "content": single.messages[3]["content"],
        "tool_call_id": "call_PbWErNIge3YTrli3fiVvmIid",
    }


@pytest.mark.dataset
def test_openhands_and_nebius_fields() -> None:
    openhands = _load("openhands-swe-gym/sample_raw.json")
    assert [t.meta["index"] for t in openhands] == [0, 1, 2, 3, 4]
    assert openhands[0].session_id == "python__mypy-15976_0"
    assert openhands[0].meta["tools"]
    for t in openhands:
        for message in t.messages:
            for call in message.get("tool_calls", ()):
                assert None not in call.values()
    nebius = _load("swe-agent-nebius/sample_raw.json")
    for t in nebius:
        assert t.messages[0]["role"] == "system"
        assert {m["role"] for m in t.messages[1:]} == {"user", "assistant"}
        assert all(isinstance(m["content"], str) and m["content"] for m in t.messages)
        assert "```" in t.messages[2]["content"]  # the tool call, fenced in the text


# ---------------------------------------------------------------------------- synthetic


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _jsonl(*records: object) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


OPENAI = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "list files"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        ],
        "usage": {"prompt_tokens": 120, "completion_tokens": 7},
    },
    {"role": "tool", "tool_call_id": "c1", "content": "a.py", "timestamp": 3},
    {"role": "assistant", "content": "a.py"},
]
ANTHROPIC = [
    {"role": "user", "content": "read a.py"},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "read it", "signature": "s"},
            {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a.py"}},
        ],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "done"}], "id": "msg_1"},
]


def test_openai_json_list(tmp_path: Path) -> None:
    t = load_transcript(_write(tmp_path, "chat.json", json.dumps(OPENAI)))
    assert t.format == "openai"
    assert len(t.messages) == 5
    assert "content" not in t.messages[2]  # the null is dropped
    assert "usage" not in t.messages[2] and "timestamp" not in t.messages[3]
    assert t.usage == {2: Usage(120, 0, 0, 7)}
    assert t.meta["dropped_keys"] == {"timestamp": 1}
    assert _tool_ids(t.messages) == (["c1"], ["c1"], 0)


def test_anthropic_request_object_with_system(tmp_path: Path) -> None:
    request = {"model": "claude-x", "system": "you are terse", "messages": ANTHROPIC}
    t = load_transcript(_write(tmp_path, "request.txt", json.dumps(request)))
    assert t.format == "anthropic"
    assert t.messages[0] == {"role": "system", "content": "you are terse"}
    assert t.messages[1:] == [{"role": m["role"], "content": m["content"]} for m in ANTHROPIC]
    assert t.meta["model"] == "claude-x"
    assert t.meta["dropped_keys"] == {"id": 1}
    assert _tool_ids(t.messages) == (["t1"], ["t1"], 0)


@pytest.mark.parametrize(("messages", "fmt"), [(OPENAI, "openai"), (ANTHROPIC, "anthropic")])
def test_message_jsonl_with_a_truncated_line(tmp_path: Path, messages: list[Any], fmt: str) -> None:
    text = _jsonl(*messages) + json.dumps({"role": "user", "content": "cut off"})[:17]
    t = load_transcript(_write(tmp_path, "chat.jsonl", text))
    assert t.format == fmt
    assert len(t.messages) == len(messages)
    assert t.skipped == {"invalid_json": 1}


def test_format_can_be_forced_and_is_checked(tmp_path: Path) -> None:
    path = _write(tmp_path, "plain.json", json.dumps([{"role": "user", "content": "hi"}]))
    assert load_transcript(path).format == "openai"
    assert load_transcript(path, format="anthropic").format == "anthropic"
    with pytest.raises(TranscriptError, match="asked for swe-agent but the content is openai"):
        load_transcript(path, format="swe-agent")
    with pytest.raises(TranscriptError, match="unknown transcript format 'gemini'"):
        load_transcript(path, format="gemini")


def _cc(kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"type": kind, "uuid": f"u{len(extra)}", "sessionId": "s1"}
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(id=extra.pop("mid"), usage=extra.pop("usage"))
    record["message"] = message
    record.update(extra)
    return record


def test_claude_code_synthetic_session(tmp_path: Path) -> None:
    def use(i: str) -> list[dict[str, Any]]:
        return [{"type": "tool_use", "id": i, "name": "Bash", "input": {}}]

    def res(i: str) -> list[dict[str, Any]]:
        return [{"type": "tool_result", "tool_use_id": i, "content": "ok"}]

    u1 = {"input_tokens": 1, "cache_read_input_tokens": 10, "output_tokens": 2}
    u2 = {**u1, "output_tokens": 50}
    text = _jsonl(
        {"type": "file-history-snapshot", "messageId": "x", "snapshot": {}},
        _cc("user", "hello"),
        _cc("assistant", [{"type": "text", "text": "\n\n"}], mid="m1", usage=u1),
        _cc("assistant", use("a"), mid="m1", usage=u1),
        _cc("user", res("a")),  # logged between two blocks of m1
        {"type": "progress", "uuid": "p", "data": {}},
        _cc("assistant", use("b"), mid="m1", usage=u2),
        _cc("user", res("b")),
        _cc("user", "side", isSidechain=True),
        _cc("user", "<local-command-caveat>", isMeta=True),
        {"type": "system", "subtype": "compact_boundary", "uuid": "b", "compactMetadata": {}},
        _cc("user", "This session is being continued", isCompactSummary=True),
        _cc("assistant", [{"type": "text", "text": "ok"}], mid="m2", usage=u1),
    )
    t = load_transcript(_write(tmp_path, "session.log", text + '{"type": "user", "mess'))
    assert t.format == "claude-code"
    assert t.session_id == "s1"
    assert t.messages == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": use("a") + use("b")},
        {"role": "user", "content": res("a") + res("b")},
        {"role": "user", "content": "<local-command-caveat>"},
        {"role": "user", "content": "This session is being continued"},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
    ]
    assert t.compaction_boundary == t.compact_summary == 4
    assert t.usage == {1: Usage(1, 10, 0, 50), 5: Usage(1, 10, 0, 2)}
    assert t.usage[1].context_tokens == 11
    assert t.skipped == {
        "file-history-snapshot": 1,
        "progress": 1,
        "sidechain": 1,
        "invalid_json": 1,
    }


def test_claude_code_blank_response_and_result_order(tmp_path: Path) -> None:
    u = {"input_tokens": 5, "output_tokens": 1}
    call = [{"type": "tool_use", "id": "a", "name": "R", "input": {}}]
    reply = [{"type": "text", "text": "note"}, {"type": "tool_result", "tool_use_id": "a"}]
    text = _jsonl(
        _cc("user", "hi"),
        _cc("assistant", [{"type": "text", "text": " \n"}], mid="m0", usage=u),
        _cc("assistant", call, mid="m1", usage=u),
        _cc("user", reply),
    )
    t = load_transcript(_write(tmp_path, "s.jsonl", text))
    assert [m["role"] for m in t.messages] == ["user", "assistant", "user"]
    assert t.skipped == {"blank_assistant_message": 1}
    assert [b["type"] for b in t.messages[2]["content"]] == ["tool_result", "text"]
    assert t.usage == {1: Usage(5, 0, 0, 1)}


def test_swe_agent_tool_message_with_several_ids(tmp_path: Path) -> None:
    calls = [
        {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}}
        for i in ("x", "y")
    ]
    history = [
        {"role": "user", "content": "go", "agent": "main"},
        {"role": "assistant", "content": "", "tool_calls": calls, "thought": "", "action": "f"},
        {"role": "tool", "content": "out", "tool_call_ids": ["x", "y"], "agent": "main"},
        {"role": "tool", "content": "stray"},
    ]
    t = load_transcript(_write(tmp_path, "run.traj", json.dumps({"history": history})))
    assert t.format == "swe-agent"
    assert t.messages[2:] == [
        {"role": "tool", "content": "out", "tool_call_id": "x"},
        {"role": "tool", "content": "out", "tool_call_id": "y"},
        {"role": "user", "content": "stray"},
    ]
    assert t.meta["tool_messages_repeated_per_id"] == 1
    assert t.skipped == {"tool_message_without_id_as_user": 1}


def test_openhands_and_nebius_synthetic(tmp_path: Path) -> None:
    oh = [
        {
            "instance_id": f"i{n}",
            "tools": [],
            "messages": [{"role": "user", "content": "q", "name": None, "tool_calls": None}],
        }
        for n in range(2)
    ]
    found = load_transcripts(_write(tmp_path, "oh.json", json.dumps(oh)))
    assert [t.format for t in found] == ["openhands", "openhands"]
    assert found[1].messages == [{"role": "user", "content": "q"}]
    assert found[1].session_id == "i1"
    nb = [
        {
            "instance_id": "n0",
            "trajectory": [
                {"role": "system", "system_prompt": "S", "text": None, "mask": False},
                {"role": "user", "text": "U", "system_prompt": None},
                {"role": "ai", "text": "A\n```\nls\n```", "mask": True},
                {"role": "critic", "text": "?"},
            ],
        }
    ]
    (t,) = load_transcripts(_write(tmp_path, "nb.json", json.dumps(nb)))
    assert t.format == "nebius"
    assert [m["role"] for m in t.messages] == ["system", "user", "assistant"]
    assert t.messages[0]["content"] == "S"
    assert t.skipped == {"unreadable_step": 1}


@pytest.mark.parametrize(
    ("text", "seen"),
    [
        ("", "empty"),
        ("  \n\n", "empty"),
        ("hello world\nthis is not json\n", "no line is valid JSON"),
        ('{"foo": 1, "bar": 2}', "a JSON object with 2 keys, none of 'history'"),
        ("[]", "a JSON list of 0 items"),
        ("[1, 2, 3]", "a JSON list of 3 items \\(int\\)"),
        ('{"trajectory": []}', "needs 'history'"),
        ('{"a": 1}\n{"b": 2}\n', "2 JSON lines, none a message"),
        ('{"history": [{"role": 7}]}', "no message found in the swe-agent content"),
        ('{"history": [', "neither JSON"),
    ],
)
def test_bad_files_raise_a_helpful_transcript_error(tmp_path: Path, text: str, seen: str) -> None:
    path = _write(tmp_path, "bad.jsonl", text)
    with pytest.raises(TranscriptError, match=seen) as info:
        load_transcripts(path)
    assert str(path) in str(info.value)
    if text.strip():
        assert "supported formats: claude-code" in str(info.value)


def test_unreadable_files_raise_transcript_error(tmp_path: Path) -> None:
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\xff\xfe\x00garbage\x80")
    with pytest.raises(TranscriptError, match="not UTF-8"):
        load_transcripts(binary)
    with pytest.raises(TranscriptError, match="cannot read"):
        load_transcripts(tmp_path / "missing.jsonl")
    with pytest.raises(TranscriptError, match="cannot read"):
        load_transcripts(tmp_path)


def test_formats_constant() -> None:
    assert set(FORMATS) == {
        "claude-code",
        "swe-agent",
        "openai",
        "anthropic",
        "openhands",
        "nebius",
    }


_FUZZ_KEYS = [
    "role",
    "content",
    "type",
    "message",
    "messages",
    "history",
    "trajectory",
    "uuid",
    "tool_calls",
    "tool_call_ids",
    "id",
    "usage",
    "isSidechain",
    "text",
    "system",
]
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(_FUZZ_KEYS),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)
_roles = st.sampled_from(["user", "assistant", "tool", "system", "ai", 3])
_types = st.sampled_from(["user", "assistant", "system", "progress", ["x"]])
_ids = st.sampled_from(["a", "b", None, ["a"]])
_block = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking", 1])},
    optional={"id": _ids, "tool_use_id": _ids, "text": _json},
)
_cc_message = st.fixed_dictionaries(
    {"id": _ids, "content": st.lists(_block | _json, max_size=3) | _json},
    optional={"usage": _json, "role": _roles},
)
_cc_record = st.fixed_dictionaries(
    {"type": _types, "uuid": st.just("u"), "message": _cc_message | _json},
    optional={
        "isSidechain": st.booleans(),
        "isMeta": st.booleans(),
        "isCompactSummary": st.booleans(),
        "subtype": st.sampled_from(["compact_boundary", "local_command"]),
    },
)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    doc=_json
    | st.lists(st.fixed_dictionaries({"role": _roles, "content": _json}), max_size=4)
    | st.lists(st.fixed_dictionaries({"type": _types, "uuid": _json, "message": _json}))
    | st.lists(_cc_record, min_size=1, max_size=8),
    jsonl=st.booleans(),
)
def test_arbitrary_json_raises_only_transcript_error(
    tmp_path_factory: pytest.TempPathFactory, doc: Any, jsonl: bool
) -> None:
    if jsonl and isinstance(doc, list):
        text = "".join(json.dumps(x) + "\n" for x in doc)
    else:
        text = json.dumps(doc)
    path = tmp_path_factory.mktemp("fuzz") / "t.json"
    path.write_text(text, encoding="utf-8")
    try:
        found = load_transcripts(path)
    except TranscriptError:
        return
    assert found
    for t in found:
        assert t.messages and t.format in FORMATS
        assert all(t.messages[i]["role"] == "assistant" for i in t.usage)
        assert 0 <= (t.compaction_boundary or 0) <= len(t.messages)
        assert all(role_kind(m) is not RoleKind.UNKNOWN for m in t.messages)

"""Seed 001's triggers: overflow recognition and recovery (compact, truncate, a clear error),
tool-result truncation in every format, manual /compact and the transcript trim, and the
cache_ttl / safeguard decisions."""

from __future__ import annotations

import copy
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from compaction_support import (
    ScriptedModel,
    assistant,
    call,
    compaction_setup,
    pi_call,
    pi_result,
    result,
    system,
    user,
    words,
)

from memctx.compaction import (
    COMPACTION_TRIGGERS,
    MAX_OVERFLOW_COMPACTION_ATTEMPTS,
    TOOL_FAILURES_HEADER,
    CacheTtlTrigger,
    CompactCommand,
    CompactionError,
    ContextOverflowError,
    SafeguardTrigger,
    TranscriptTrimError,
    compact_history,
    compact_with_safeguard,
    describe_recovery_steps,
    is_context_overflow_error,
    is_context_overflow_message,
    manual_compact,
    max_tool_result_chars,
    overflow_keep_recent_tokens,
    parse_compact_command,
    recover_from_overflow,
    transcript_backup_path,
    trim_transcript_file,
    truncate_oversized_tool_results,
    truncated_text,
)
from memctx.config import MemoryContextConfig
from memctx.llm import LLMError
from memctx.messages import InfoCache, TokenCounter, pairing_violations
from memctx.text.cut import OMISSION_NOTE_RE
from memctx.transcripts import InputFileError

COUNTER = TokenCounter()
WINDOW = 8000


def config(mode: str = "default", reserve: int = 500, **extra: Any) -> MemoryContextConfig:
    return MemoryContextConfig(compaction={"mode": mode, "reserve_tokens_floor": reserve, **extra})


def tool_turns(tag: str, n: int, output_words: int = 60) -> list[dict[str, Any]]:
    """``n`` turns of user question, tool call, tool output, assistant answer."""
    out: list[dict[str, Any]] = []
    for k in range(n):
        cid = f"{tag}{k}"
        out += [
            user(words(f"{tag}{k}q", 20)),
            call(cid, "bash", cmd=f"step {k}"),
            result(cid, words(f"{tag}{k}o", output_words)),
            assistant(f"done {tag} {k}"),
        ]
    return out


def agent_step(tag: str, k: int, output_words: int = 60) -> list[dict[str, Any]]:
    """One step of an agent loop: a question, a tool call, its output (the reply follows)."""
    cid = f"{tag}{k}"
    return [
        user(words(f"{tag}{k}q", 20)),
        call(cid, "bash", cmd=f"step {k}"),
        result(cid, words(f"{tag}{k}o", output_words)),
    ]


class Provider:
    """A scripted provider: refuses prompts over ``window`` estimated tokens, Anthropic-style,
    or every prompt when ``always`` is set; records what it was sent."""

    def __init__(self, window: int = WINDOW, *, always: bool = False) -> None:
        self.window = window
        self.always = always
        self.sent: list[list[Any]] = []

    def __call__(self, messages: list[Any]) -> str:
        self.sent.append(messages)
        tokens = COUNTER.count_messages(messages)
        if self.always or tokens > self.window:
            raise RuntimeError(f"prompt is too long: {tokens} tokens > {self.window} maximum")
        return f"reply {len(self.sent)}"


# --- overflow recognition -------------------------------------------------------------------

OVERFLOW_MESSAGES = [
    # Anthropic
    "prompt is too long: 207547 tokens > 200000 maximum",
    "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease "
    "input length or `max_tokens` and try again",
    '{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the '
    'maximum size"}}',
    # OpenAI
    "This model's maximum context length is 8192 tokens. However, your messages resulted in "
    "9000 tokens. Please reduce the length of the messages.",
    "Your input exceeds the context window of this model. Please adjust your input and try again.",
    "Error code: 400 - {'error': {'code': 'context_length_exceeded'}}",
    # Gemini / Vertex
    "The input token count (1234567) exceeds the maximum number of tokens allowed (1048576).",
    "Unable to submit request because the input token count is 40000 but model only supports "
    "up to 32768. Reduce the input token count and try again.",
    "400 Request payload size exceeds the limit: 20971520 bytes.",
    # Bedrock, Mistral, xAI, llama.cpp / Ollama
    "ValidationException: Input is too long for requested model.",
    "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum "
    "context length",
    "This model's maximum prompt length is 131072 but the request contains 150000 tokens.",
    "the request exceeds the available context size, try increasing it",
]

NOT_OVERFLOW_MESSAGES = [
    # OpenAI's throughput limit is worded like an overflow: waiting helps, compacting not.
    "Request too large for gpt-4o in organization org-abc on tokens per min (TPM): Limit "
    "30000, Requested 45000.",
    "Rate limit reached for requests",
    "429 Resource has been exhausted (e.g. check quota).",
    "max_tokens: 300000 > 64000, which is the maximum allowed number of output tokens",
    "Incorrect API key provided",
    "Connection reset by peer",
    "",
]


@pytest.mark.parametrize("text", OVERFLOW_MESSAGES)
def test_overflow_messages_of_every_provider_are_recognised(text: str) -> None:
    assert is_context_overflow_message(text)
    assert is_context_overflow_error(RuntimeError(text))


@pytest.mark.parametrize("text", NOT_OVERFLOW_MESSAGES)
def test_other_errors_are_not_overflows(text: str) -> None:
    assert not is_context_overflow_message(text)
    assert not is_context_overflow_error(RuntimeError(text))


def test_litellm_classes_and_codes_are_recognised_through_wrapping() -> None:
    import litellm

    exceeded = litellm.ContextWindowExceededError(
        message="something opaque", model="claude-x", llm_provider="anthropic"
    )
    assert is_context_overflow_error(exceeded)
    try:
        try:
            raise exceeded
        except Exception as exc:
            raise LLMError("LLM call for task 'x' failed", model="m", task="x") from exc
    except LLMError as wrapped:
        assert is_context_overflow_error(wrapped)
    limited = litellm.RateLimitError(message="prompt is too long", model="m", llm_provider="openai")
    assert not is_context_overflow_error(limited)

    class ApiError(Exception):
        def __init__(self, **attrs: Any) -> None:
            super().__init__("bad request")
            self.__dict__.update(attrs)

    assert is_context_overflow_error(ApiError(code="context_length_exceeded"))
    assert is_context_overflow_error(ApiError(body={"error": {"code": "context_length_exceeded"}}))
    assert is_context_overflow_error(ApiError(status_code=413))
    assert not is_context_overflow_error(ApiError(status_code=400))


def test_compaction_failures_are_never_overflows_so_recovery_cannot_loop() -> None:
    assert not is_context_overflow_error(CompactionError("prompt is too long"))
    err = ContextOverflowError("context overflow: prompt is too long", steps=(), tokens=1, window=1)
    assert not is_context_overflow_error(err)
    # A cycle in the chain ends the walk.
    a, b = RuntimeError("a"), RuntimeError("b")
    a.__cause__, b.__cause__ = b, a
    assert not is_context_overflow_error(a)


# --- tool-result truncation -----------------------------------------------------------------


def _big(n: int) -> str:
    return "HEAD" + "x" * (n - 8) + "TAIL"


FORMATS: dict[str, Callable[[str], list[dict[str, Any]]]] = {
    "openai": lambda text: [call("c1", "bash", cmd="cat"), result("c1", text)],
    "pi": lambda text: [pi_call("c1", "read", path="a"), pi_result("c1", "read", text)],
    "anthropic": lambda text: [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": "bash", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": text},
                {"type": "text", "text": "and go on"},
            ],
        },
    ],
    "gemini": lambda text: [
        {"role": "model", "parts": [{"functionCall": {"name": "bash", "args": {}}}]},
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "bash", "response": {"output": text}}}],
        },
    ],
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_oversized_results_keep_head_tail_and_size_in_every_format(fmt: str) -> None:
    messages = [system(), user("go"), *FORMATS[fmt](_big(50_000)), assistant("small")]
    snapshot = copy.deepcopy(messages)
    out = truncate_oversized_tool_results(messages, max_chars=4000)
    assert messages == snapshot, "the caller's dicts were modified"
    assert out.truncated == 1 and out.original_chars[0] >= 50_000
    assert pairing_violations(out.messages) == pairing_violations(messages) == []
    infos = InfoCache()
    (text,) = [
        b.text for m in out.messages for b in infos.info(m).blocks if b.kind == "tool_result"
    ]
    assert "HEAD" in text and "TAIL" in text
    note = OMISSION_NOTE_RE.search(text)
    assert note is not None and note["kept_in"] is None
    assert int(note["chars"].replace(",", "")) == out.original_chars[0] - 4000  # all but 4,000
    assert len(text) < 4300
    changed = [i for i, (a, b) in enumerate(zip(messages, out.messages, strict=True)) if a is not b]
    assert len(changed) == 1  # every other message is the caller's own dict


def test_results_within_the_limit_and_the_description() -> None:
    messages = [
        *FORMATS["openai"](_big(10_000)),
        *FORMATS["pi"](_big(812_000)),
    ]
    out = truncate_oversized_tool_results(messages[:4], max_chars=20_000)
    assert out.truncated == 1 and out.messages[1] is messages[1]
    assert out.describe() == "truncated 1 tool result of 812,000 chars"
    both = truncate_oversized_tool_results(messages[:4], max_chars=5000)
    assert both.describe() == "truncated 2 tool results (largest 812,000 chars, 822,000 in all)"
    assert truncate_oversized_tool_results([], max_chars=5).describe().startswith("no tool result")
    assert truncated_text("abc", 2) == "abc"  # the note would make it longer: kept whole
    assert max_tool_result_chars(200_000) == 180_000
    assert max_tool_result_chars(1000) == 2000 and max_tool_result_chars(10**7) == 400_000
    with pytest.raises(ValueError, match="max_chars"):
        truncate_oversized_tool_results(messages, max_chars=0)


# --- overflow recovery ----------------------------------------------------------------------


def test_a_prompt_that_fits_is_sent_as_is_without_llm_calls() -> None:
    model, provider = ScriptedModel(), Provider()
    messages = [system(), *tool_turns("t", 2)]
    out = recover_from_overflow(
        messages, compaction_setup(model.client(), config(), window=WINDOW), provider
    )
    assert out.result == "reply 1" and out.path == "sent as is" and not out.recovered
    assert out.messages == messages and model.requests == []


def test_a_replay_where_one_tool_output_exceeds_the_window_survives() -> None:
    """An agent loop: one `cat` prints three windows of log; the provider refuses it; the
    recovery compacts once and the session goes on, with no 'prompt too long' loop."""
    model, provider = ScriptedModel(), Provider()
    huge = "log line\n" * (WINDOW * 3 * 3 // 9)  # about three windows of tokens alone
    steps = [agent_step("a", k) for k in range(3)]
    steps.append([user("show me the whole build log"), call("big", "bash"), result("big", huge)])
    steps += [agent_step("b", k) for k in range(3)]
    history: list[Any] = [system()]
    paths: list[str] = []
    for step in steps:
        sends_before = len(provider.sent)
        out = recover_from_overflow(
            [*history, *step], compaction_setup(model.client(), config(), window=WINDOW), provider
        )
        assert len(provider.sent) - sends_before <= 1 + MAX_OVERFLOW_COMPACTION_ATTEMPTS + 1
        paths.append(out.path)
        history = [*out.messages, assistant(out.result)]
        assert pairing_violations(history) == []
    assert [p for p in paths if p != "sent as is"] == ["compacted x1"], paths
    assert paths[3] == "compacted x1" and len(provider.sent) == len(steps) + 1
    assert COUNTER.count_messages(history) <= WINDOW
    assert huge not in model.everything_sent  # the summariser saw a capped rendering only
    for request, max_tokens in zip(model.requests, model.max_tokens, strict=True):
        assert COUNTER.count_messages(request) + (max_tokens or 0) <= WINDOW


def test_no_summariser_request_exceeds_its_window_even_for_one_huge_output() -> None:
    model = ScriptedModel()
    summarizer_window = 3000
    huge = words("out", 40_000)  # ~117K tokens: over the 100K window alone
    messages = [
        system(),
        *tool_turns("a", 4),
        user("read it"),
        call("big", "read", path="dump.txt"),
        result("big", huge),
        *tool_turns("b", 2),
    ]
    out = compact_history(
        messages,
        compaction_setup(
            model.client(), config(), window=100_000, summarizer_window=summarizer_window
        ),
        keep_recent_tokens=0,
    )
    assert out.compacted and model.requests
    for request, max_tokens in zip(model.requests, model.max_tokens, strict=True):
        assert max_tokens is not None
        assert COUNTER.count_messages(request) + max_tokens <= summarizer_window


def test_three_compactions_then_truncation_then_a_clear_error() -> None:
    model, provider = ScriptedModel(), Provider(always=True)
    # The newest tool output is small enough to stay in every compaction's tail, but over
    # the truncation limit.
    messages = [system(), *tool_turns("t", 30, output_words=200), *agent_step("z", 0, 100)]
    snapshot = copy.deepcopy(messages)
    with pytest.raises(ContextOverflowError) as caught:
        recover_from_overflow(
            messages,
            compaction_setup(model.client(), config(), window=WINDOW),
            provider,
            tool_result_max_chars=600,
        )
    err = caught.value
    assert messages == snapshot
    assert err.steps[:3] == ("compacted",) * 3 and len(err.steps) == 4
    assert err.steps[3] == f"truncated 1 tool result of {len(messages[-1]['content']):,} chars"
    assert len(provider.sent) == 1 + 3 + 1  # the first send, one per compaction, one after
    text = str(err)
    assert text.startswith("context overflow:") and "compacted x3, truncated" in text
    assert "/reset" in text and "larger context window" in text
    assert isinstance(err.__cause__, RuntimeError) and err.window == WINDOW
    assert isinstance(err, CompactionError)
    last = provider.sent[-1]
    assert pairing_violations(last) == []
    assert all(len(str(m.get("content"))) < 800 for m in last if m.get("role") == "tool")


def test_the_callers_previous_summary_goes_into_the_first_compaction_only() -> None:
    model = ScriptedModel()
    messages = [system(), *tool_turns("t", 30, output_words=200)]
    with pytest.raises(ContextOverflowError) as caught:
        recover_from_overflow(
            messages,
            compaction_setup(model.client(), config(), window=WINDOW),
            Provider(always=True),
            previous_summary="EARLIER-NOTE",
            max_attempts=2,
        )
    assert caught.value.steps == ("compacted", "compacted")
    # One request carries it (the first compaction's merge step); the second compaction
    # reads it inside the first one's summary instead.
    assert sum("EARLIER-NOTE" in str(request) for request in model.requests) == 1


def test_truncation_alone_rescues_a_prompt_with_an_oversized_result() -> None:
    """A provider whose tokenizer counts the output far higher than the estimate: only
    cutting the output helps (``max_attempts=0`` goes straight to it)."""
    model = ScriptedModel()

    def strict(messages: list[Any]) -> str:
        if any(len(str(m.get("content"))) > 10_000 for m in messages):
            raise RuntimeError("This model's maximum context length is 8192 tokens")
        return "ok"

    messages = [system(), user("go"), call("c1", "bash", cmd="cat"), result("c1", _big(30_000))]
    out = recover_from_overflow(
        messages,
        compaction_setup(model.client(), config(), window=WINDOW),
        strict,
        max_attempts=0,
        tool_result_max_chars=5000,
    )
    assert out.path == "truncated 1 tool result of 30,000 chars" and out.result == "ok"
    assert out.overflow_errors == (
        "RuntimeError: This model's maximum context length is 8192 tokens",
    )
    assert model.requests == [] and out.messages[:3] == messages[:3]


def test_an_error_that_is_not_an_overflow_is_raised_at_once() -> None:
    model = ScriptedModel()

    def down(messages: list[Any]) -> str:
        raise ConnectionError("provider unavailable")

    with pytest.raises(ConnectionError):
        recover_from_overflow(
            [system(), user("hi")], compaction_setup(model.client(), config(), window=WINDOW), down
        )
    assert model.requests == []


def test_recovery_helpers_and_arguments() -> None:
    assert describe_recovery_steps([]) == "sent as is"
    assert (
        describe_recovery_steps(["compacted", "compacted", "truncated x", "compacted"])
        == "compacted x2, truncated x, compacted x1"
    )
    assert [overflow_keep_recent_tokens(8000, k) for k in (1, 2, 3)] == [2000, 1000, 500]
    with pytest.raises(ValueError, match="1-based"):
        overflow_keep_recent_tokens(8000, 0)
    client = ScriptedModel().client()
    for bad in ({"max_attempts": -1}, {"tool_result_max_chars": 0}):
        with pytest.raises(ValueError):
            recover_from_overflow(
                [], compaction_setup(client, config(), window=WINDOW), Provider(), **bad
            )


# --- manual ---------------------------------------------------------------------------------


def test_manual_compact_puts_the_users_instructions_into_the_prompt() -> None:
    model = ScriptedModel()
    messages = [system(), *tool_turns("t", 6)]
    out = manual_compact(
        messages,
        compaction_setup(model.client(), config(), window=WINDOW),
        "/compact  keep the database migration decisions ",
        keep_recent_tokens=COUNTER.count_messages(messages[-4:]),
    )
    assert out.compacted
    assert all(p.endswith("keep the database migration decisions") for p in model.prompts)
    assert "/compact" not in model.everything_sent
    plain = ScriptedModel()
    manual_compact(
        messages,
        compaction_setup(plain.client(), config(), window=WINDOW),
        "only the API",
        keep_recent_tokens=0,
    )
    assert plain.prompts[-1].endswith("only the API")


def test_parse_compact_command() -> None:
    assert parse_compact_command("/compact") == CompactCommand(None)
    assert parse_compact_command("  /compact   focus on X \n") == CompactCommand("focus on X")
    assert parse_compact_command("/compaction") is None
    assert parse_compact_command("please /compact") is None
    assert COMPACTION_TRIGGERS == ("overflow", "manual", "cache_ttl", "safeguard")


# --- transcript trim ------------------------------------------------------------------------


def _jsonl(n: int, tag: str = "m") -> bytes:
    return b"".join(f'{{"i": {i}, "text": "{tag} {i} \u00e9"}}\n'.encode() for i in range(n))


def test_trim_keeps_the_last_lines_and_backs_up_the_original_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    original = _jsonl(250)
    path.write_bytes(original)
    os.chmod(path, 0o640)
    out = trim_transcript_file(path)
    lines = original.splitlines(keepends=True)
    assert path.read_bytes() == b"".join(lines[-100:])
    assert out.backup == transcript_backup_path(path) == tmp_path / "session.jsonl.bak"
    assert out.backup.read_bytes() == original
    assert (out.lines_before, out.lines_kept, out.trimmed) == (250, 100, True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.jsonl", "session.jsonl.bak"]

    second = trim_transcript_file(path, max_lines=40)
    assert out.backup.read_bytes() == original  # the first backup is never overwritten
    assert second.backup == tmp_path / "session.jsonl.bak.1"
    assert second.backup.read_bytes() == b"".join(lines[-100:])
    assert path.read_bytes() == b"".join(lines[-40:])


def test_trim_leaves_a_short_file_alone_and_counts_records_not_blank_lines(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a": 1}\n\n   \n{"a": 2}')  # blank lines, no final newline
    out = trim_transcript_file(path, max_lines=2)
    assert not out.trimmed and out.backup is None and out.lines_before == 2
    assert path.read_bytes() == b'{"a": 1}\n\n   \n{"a": 2}'
    assert trim_transcript_file(path, max_lines=1).lines_kept == 1
    assert path.read_bytes() == b'{"a": 2}\n'
    assert transcript_backup_path(path).read_bytes() == b'{"a": 1}\n\n   \n{"a": 2}'


def test_trim_keeps_an_unrelated_bak_and_follows_symlinks(tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    real.write_bytes(_jsonl(5))
    (tmp_path / "real.jsonl.bak").write_bytes(b"someone else's backup")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    out = trim_transcript_file(link, max_lines=2)
    assert link.is_symlink()
    assert link.read_bytes() == b"".join(_jsonl(5).splitlines(keepends=True)[-2:])
    assert (tmp_path / "real.jsonl.bak").read_bytes() == b"someone else's backup"
    assert out.backup == tmp_path / "real.jsonl.bak.1" and out.backup.read_bytes() == _jsonl(5)


def test_trim_refuses_non_regular_files(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(InputFileError, match="FIFO"):
        trim_transcript_file(fifo)
    with pytest.raises(InputFileError, match="directory"):
        trim_transcript_file(tmp_path)
    with pytest.raises(InputFileError):
        trim_transcript_file(tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="max_lines"):
        trim_transcript_file(fifo, max_lines=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe.jsonl"]


def test_a_failed_write_leaves_the_transcript_and_no_stray_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_jsonl(5))

    def disk_full(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    with pytest.raises(TranscriptTrimError, match=r"No space left on device.*free space"):
        trim_transcript_file(path, max_lines=2)
    assert path.read_bytes() == _jsonl(5)
    assert [p.name for p in tmp_path.iterdir()] == ["t.jsonl"]  # no backup, no temp file


def test_a_transcript_written_meanwhile_is_not_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_jsonl(5))
    real_link = os.link

    def append_then_link(src: Any, dst: Any) -> None:
        with path.open("ab") as handle:  # the agent appends while the backup is placed
            handle.write(b'{"late": true}\n')
        real_link(src, dst)

    monkeypatch.setattr(os, "link", append_then_link)
    with pytest.raises(TranscriptTrimError, match="changed while"):
        trim_transcript_file(path, max_lines=2)
    assert path.read_bytes() == _jsonl(5) + b'{"late": true}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["t.jsonl"]


# --- cache_ttl and safeguard decisions -----------------------------------------------------


def test_safeguard_trigger_fires_past_window_minus_reserve() -> None:
    trigger = SafeguardTrigger()
    assert not trigger.decide(tokens=7500, window=8000, reserve=500)
    decision = trigger.decide(tokens=7501, window=8000, reserve=500)
    assert decision and decision.trigger == "safeguard" and "7,501" in decision.reason
    with pytest.raises(ValueError, match="reserve"):
        trigger.decide(tokens=1, window=100, reserve=100)


def test_cache_ttl_trigger_waits_for_the_cache_to_go_cold() -> None:
    cfg = MemoryContextConfig(context_pruning={"mode": "cache-ttl", "ttl": "30s"})
    trigger = CacheTtlTrigger.from_config(cfg)
    assert trigger.ttl_s == 30 and trigger.enabled and trigger.cold_at(100.0) == 130.0
    args = {"tokens": 6000, "window": 8000, "reserve": 500}
    warm = trigger.decide(**args, now=129.9, last_call_at=100.0)
    assert not warm and "warm" in warm.reason
    cold = trigger.decide(**args, now=130.0, last_call_at=100.0)
    assert cold and cold.trigger == "cache_ttl" and "cold" in cold.reason
    assert trigger.decide(**args, now=0.0, last_call_at=None)  # no call yet, no cache
    assert not trigger.decide(**args, now=50.0, last_call_at=60.0)  # clock behind: warm
    small = trigger.decide(tokens=100, window=8000, reserve=500, now=1e9, last_call_at=0.0)
    assert not small and "not worth" in small.reason
    off = CacheTtlTrigger.from_config(MemoryContextConfig())
    assert off.ttl_s == 300 and not off.decide(**args, now=1e9, last_call_at=0.0)
    for bad in ({"ttl_s": 0}, {"ttl_s": float("inf")}, {"min_fill": 1.5}):
        with pytest.raises(ValueError):
            CacheTtlTrigger(**bad)


def test_compact_with_safeguard_adds_the_sections_whatever_the_mode() -> None:
    model = ScriptedModel(lambda prompt, i: "HISTORY-SUMMARY")
    messages = [
        system(),
        user("build it"),
        pi_call("c1", "bash", command="make"),
        pi_result("c1", "bash", "make: *** [all] Error 2", is_error=True),
        assistant("it failed"),
        *tool_turns("t", 2),
    ]
    out = compact_with_safeguard(
        messages,
        compaction_setup(model.client(), config("default"), window=WINDOW),
        keep_recent_tokens=COUNTER.count_messages(messages[-4:]),
    )
    assert out.summary.startswith("HISTORY-SUMMARY") and TOOL_FAILURES_HEADER in out.summary

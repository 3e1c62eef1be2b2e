"""The pre-compaction memory flush: when it fires, its saved cycle state, and the silent turn.

The failure modes users report are each pinned here: stale token counts re-triggering a
flush right after a compaction, threshold arithmetic in 1M and in tiny windows, a flush
request that would itself overflow, flush and compaction feeding each other (a property over
random token sequences), notes overwriting a daily log, ``NO_REPLY`` writing something, a
state file lost on restart or fatal when corrupt, and notes not searchable afterwards.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import logging
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
from compaction_support import (
    ScriptedModel,
    assistant,
    call,
    compaction_setup,
    failing_client,
    result,
    system,
)
from compaction_support import user as user_msg
from hypothesis import HealthCheck, given, settings
from strategies import FlushTimeline, examples, flush_timelines

from memctx.compaction import (
    FLUSH_OUTPUT_INSTRUCTIONS,
    FLUSH_STATE_FILE,
    FLUSH_TASK,
    CompactionBudget,
    FlushOutcome,
    FlushReason,
    FlushState,
    FlushTracker,
    compact_history,
    compaction_reserve,
    flush_request,
    flush_threshold,
    is_silent_reply,
    run_flush,
    should_flush,
    summary_message,
)
from memctx.config import MemoryContextConfig
from memctx.llm import LLMClient, task_of
from memctx.messages import TokenCounter, recalled_block_text
from memctx.offline import FLUSH_TASK as OFFLINE_FLUSH_TASK
from memctx.retrieval import HashEmbedder
from memctx.store import MemoryFiles

DEFAULT = MemoryContextConfig()
NOW = dt.datetime(2026, 2, 28, 14, 30)
DAILY = "memory/2026-02-28.md"


def config(soft: int = 4000, floor: int = 20000, enabled: bool = True) -> MemoryContextConfig:
    return MemoryContextConfig.from_dict(
        {
            "compaction": {
                "reserveTokensFloor": floor,
                "memoryFlush": {"enabled": enabled, "softThresholdTokens": soft},
            }
        }
    )


@pytest.fixture
def memory(tmp_path: Path) -> MemoryFiles:
    return MemoryFiles(tmp_path / "ws", embedder=HashEmbedder(), clock=NOW.timestamp)


def session() -> list[dict[str, Any]]:
    """A coding session with durable facts: a decision, a config value, a path, an error."""
    return [
        system(),
        user_msg("The login endpoint returns 500 since this morning."),
        call("c1", "read", path="app/routes/auth.py"),
        result("c1", "def login(request):\n    return sessions[request.sid]"),
        call("c2", "bash", cmd="pytest -q"),
        result("c2", "FAILED tests/test_auth.py::test_login - KeyError: 'session_id'"),
        assistant("We decided to store sessions in Redis instead of the in-process dict."),
        user_msg("Set REDIS_URL=redis://localhost:6379/0 in config/settings.py please."),
        assistant("Done: config/settings.py now reads REDIS_URL."),
    ]


# --- threshold and decision --------------------------------------------------------------------


def test_threshold_is_window_minus_compaction_reserve_minus_soft_threshold() -> None:
    assert flush_threshold(200_000, DEFAULT) == 200_000 - 20_000 - 4_000
    assert (
        flush_threshold(200_000, DEFAULT) == 200_000 - compaction_reserve(DEFAULT, 200_000) - 4000
    )
    fresh = FlushState()
    assert not should_flush(175_999, 200_000, DEFAULT, fresh)
    decision = should_flush(176_000, 200_000, DEFAULT, fresh)
    assert decision and decision.reason is FlushReason.DUE and decision.threshold == 176_000


def test_one_million_token_window_threshold() -> None:
    window = 1_000_000
    assert flush_threshold(window, DEFAULT) == 976_000
    assert should_flush(976_000, window, DEFAULT, FlushState())
    assert not should_flush(975_999, window, DEFAULT, FlushState())
    # A count far beyond the window (a provider's cumulative usage) still decides sanely.
    assert should_flush(10**12, window, DEFAULT, FlushState())
    # A larger soft threshold than the reserve: still positive and exact in ints.
    assert flush_threshold(window, config(soft=900_000)) == 80_000


@pytest.mark.parametrize("window", [1, 100, 4_000, 5_000, 5_333])
def test_tiny_windows_never_flush(window: int) -> None:
    threshold = flush_threshold(window, DEFAULT)
    assert threshold <= 0
    for tokens in (0, 1, window // 2, window, 10 * window):
        decision = should_flush(tokens, window, DEFAULT, FlushState())
        assert not decision and decision.reason is FlushReason.NO_THRESHOLD


def test_small_window_with_positive_threshold_flushes_once_full_enough() -> None:
    # 8,000: reserve min(20000, 2000) = 2000, soft 4000, threshold 2000.
    assert flush_threshold(8_000, DEFAULT) == 2_000
    assert not should_flush(1_999, 8_000, DEFAULT, FlushState())
    assert should_flush(2_000, 8_000, DEFAULT, FlushState())


def test_zero_soft_threshold_fires_at_the_compaction_point() -> None:
    assert flush_threshold(200_000, config(soft=0)) == 180_000


@pytest.mark.parametrize("tokens", [None, -1, True, 1.5, "200000"])
def test_unusable_token_counts_do_not_flush(tokens: Any) -> None:
    decision = should_flush(tokens, 200_000, DEFAULT, FlushState())
    assert not decision and decision.reason is FlushReason.NO_TOKENS


@pytest.mark.parametrize("window", [0, -5, True, 2.0])
def test_invalid_window_is_an_error_naming_the_fix(window: Any) -> None:
    with pytest.raises(ValueError, match="context window"):
        should_flush(1, window, DEFAULT, FlushState())


def test_disabled_never_flushes() -> None:
    decision = should_flush(199_000, 200_000, config(enabled=False), FlushState())
    assert not decision and decision.reason is FlushReason.DISABLED


def test_once_per_cycle() -> None:
    flushed = FlushState(cycle=3, flushed_cycle=3)
    decision = should_flush(190_000, 200_000, DEFAULT, flushed)
    assert not decision and decision.reason is FlushReason.ALREADY_FLUSHED
    assert should_flush(190_000, 200_000, DEFAULT, FlushState(cycle=4, flushed_cycle=3))


# --- stale counts and the cycle ----------------------------------------------------------------


def test_stale_count_after_compaction_does_not_flush_again(tmp_path: Path) -> None:
    tracker = FlushTracker(tmp_path)
    assert tracker.check(180_000, 200_000, DEFAULT)
    tracker.note_flush()
    assert tracker.check(185_000, 200_000, DEFAULT).reason is FlushReason.ALREADY_FLUSHED
    tracker.note_compaction()  # records 185,000, the last count seen
    assert tracker.state.cycle == 1 and tracker.state.compaction_tokens == 185_000
    # The agent reports the count from before the compaction: stale, not a new cycle's need.
    for stale in (185_000, 190_000):
        assert tracker.check(stale, 200_000, DEFAULT).reason is FlushReason.STALE_TOKENS
    # A fresh count after the compaction lifts the guard; the new cycle flushes once.
    assert tracker.check(60_000, 200_000, DEFAULT).reason is FlushReason.BELOW_THRESHOLD
    assert tracker.state.compaction_tokens is None
    assert tracker.check(176_500, 200_000, DEFAULT)
    tracker.note_flush()
    assert not tracker.check(178_000, 200_000, DEFAULT)


def test_stale_guard_survives_a_restart(tmp_path: Path) -> None:
    FlushTracker(tmp_path).note_compaction(tokens_before=190_000)
    again = FlushTracker(tmp_path)
    assert again.state == FlushState(cycle=1, compaction_tokens=190_000)
    assert again.check(190_000, 200_000, DEFAULT).reason is FlushReason.STALE_TOKENS


def test_flush_compaction_flush_loop_runs_at_most_once_per_cycle(
    tmp_path: Path, memory: MemoryFiles
) -> None:
    """flush -> compaction -> note_compaction -> the next flush only in the next cycle."""
    window = 8_000
    cfg = config(soft=1_000)  # threshold 8000 - 2000 - 1000 = 5000; compaction at 6000
    tracker = FlushTracker(tmp_path / "state")
    counter = TokenCounter()
    history = [system()]
    flushes: list[int] = []
    compactions = 0
    for turn in range(150):
        history += [user_msg(f"Turn {turn}: we decided to use port {8000 + turn} for svc{turn}.")]
        history += [assistant(f"Noted: svc{turn} listens on port {8000 + turn}. " + "ok " * 150)]
        tokens = counter.count_messages(history)
        if tracker.check(tokens, window, cfg):
            out = run_flush(history, compaction_setup(LLMClient(), cfg, window=window), memory, NOW)
            assert out.ran
            tracker.note_flush()
            flushes.append(tracker.state.cycle)
        if tokens >= window - compaction_reserve(cfg, window):
            done = compact_history(history, compaction_setup(LLMClient(), cfg, window=window))
            history = done.messages
            tracker.note_compaction(tokens_before=tokens)
            compactions += 1
            # The stale count the agent still holds must not flush in the new cycle.
            assert not tracker.check(tokens, window, cfg)
    assert compactions >= 3
    assert len(flushes) == len(set(flushes))  # never two in one cycle
    assert len(flushes) >= 3  # the flush did run, once in each of several cycles
    assert len(flushes) <= compactions + 1
    assert memory.search("port svc", 3)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(timeline=flush_timelines())
def test_property_at_most_one_flush_per_cycle(timeline: FlushTimeline) -> None:
    cfg = config(soft=timeline.soft_threshold, floor=timeline.reserve_floor)
    window = timeline.window
    threshold = flush_threshold(window, cfg)
    compact_at = window - compaction_reserve(cfg, window)
    with tempfile.TemporaryDirectory() as where:
        tracker = FlushTracker(where)
        flushes: dict[int, int] = {}
        pre_compaction: int | None = None  # the count a stale report repeats
        for kind, value in timeline.events:
            if kind == "restart":
                before = tracker.state
                tracker = FlushTracker(where)
                assert tracker.state == before and tracker.problem is None
                continue
            if kind == "stale":
                if pre_compaction is None:
                    continue
                decision = tracker.check(pre_compaction, window, cfg)
                assert not decision
                continue
            decision = tracker.check(value, window, cfg)
            if value < (pre_compaction or math.inf):
                pre_compaction = None  # a fresh count: later repeats are no longer stale
            if decision:
                assert threshold > 0 and value >= threshold
                flushes[tracker.state.cycle] = flushes.get(tracker.state.cycle, 0) + 1
                tracker.note_flush()
            if value >= compact_at:
                tracker.note_compaction(tokens_before=value)
                pre_compaction = value
        assert all(n == 1 for n in flushes.values())
        if threshold <= 0:
            assert not flushes


# --- the state file ----------------------------------------------------------------------------


def test_state_survives_a_restart_and_is_written_atomically(tmp_path: Path) -> None:
    first = FlushTracker(tmp_path)
    assert first.state == FlushState() and first.problem is None
    first.note_flush(now=1_700_000_000.0)
    first.note_compaction(tokens_before=150_000)
    first.note_compaction(tokens_before=160_000)
    second = FlushTracker(tmp_path)
    assert second.state == FlushState(
        cycle=2, flushed_cycle=0, compaction_tokens=160_000, flushed_at=1_700_000_000.0
    )
    data = json.loads((tmp_path / FLUSH_STATE_FILE).read_text())
    assert data["compactionCount"] == 2 and data["memoryFlushCompactionCount"] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [FLUSH_STATE_FILE]  # no temp files


def test_state_directory_is_created_on_first_write(tmp_path: Path) -> None:
    tracker = FlushTracker(tmp_path / "a" / "b")
    assert not (tmp_path / "a").exists()  # reading creates nothing
    tracker.note_flush()
    assert (tmp_path / "a" / "b" / FLUSH_STATE_FILE).is_file()


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"\xff\xfe garbage",
        b"[]",
        b'{"version": 1, "compactionCount": "3"}',
        b'{"version": 1, "compactionCount": -1}',
        b'{"version": 1, "compactionCount": 1, "memoryFlushCompactionCount": 5}',
        b'{"version": 99, "compactionCount": 1}',
        b'{"version": 1}',
        b'{"version": 1, "compactionCount": true}',
        b"",
        b" " * (70 * 1024),
    ],
)
def test_corrupt_state_is_reported_and_replaced(
    tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / FLUSH_STATE_FILE
    path.write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="memctx"):
        tracker = FlushTracker(tmp_path)
    assert tracker.state == FlushState()
    assert tracker.problem is not None and "corrupt" in tracker.problem
    assert any("corrupt" in r.getMessage() for r in caplog.records)
    assert json.loads(path.read_text())["compactionCount"] == 0  # replaced by a valid file
    assert (tmp_path / (FLUSH_STATE_FILE + ".corrupt")).read_bytes() == content
    assert FlushTracker(tmp_path).problem is None  # the replacement reads cleanly


def test_unwritable_state_is_reported_never_raised(tmp_path: Path) -> None:
    (tmp_path / FLUSH_STATE_FILE).mkdir()  # a directory where the file should be
    tracker = FlushTracker(tmp_path)
    assert tracker.problem is not None and tracker.state == FlushState()
    assert tracker.check(190_000, 200_000, DEFAULT)
    tracker.note_flush()  # cannot be saved: kept in memory and reported
    assert tracker.state.flushed_this_cycle
    assert "cannot save" in (tracker.problem or "")
    assert not tracker.check(190_000, 200_000, DEFAULT)
    assert not list(tmp_path.glob(".*.tmp"))


# --- the silent turn ---------------------------------------------------------------------------


def test_offline_flush_writes_searchable_notes(memory: MemoryFiles) -> None:
    out = run_flush(session(), compaction_setup(LLMClient(), DEFAULT, window=200_000), memory, NOW)
    assert out.outcome is FlushOutcome.WRITTEN and out.flushed and out.ran
    assert out.path == memory.workspace_dir / DAILY
    text = out.path.read_text()
    assert text.startswith("## Memory flush 14:30 (pre-compaction)\n")
    assert "Redis instead of the in-process dict" in text
    assert "REDIS_URL=redis://localhost:6379/0" in text
    assert "KeyError: 'session_id'" in text
    assert "app/routes/auth.py" in text and "config/settings.py" in text
    assert out.prompt_tokens > 0 and out.cost_usd == 0.0
    # Searchable right after, on the same MemoryFiles.
    hits = memory.search("Redis sessions decision", 3)
    assert hits and hits[0].path == DAILY and "Redis" in hits[0].text
    assert memory.search("REDIS_URL", 3)[0].path == DAILY


def test_flush_is_silent_and_leaves_the_callers_messages_alone(memory: MemoryFiles) -> None:
    messages = session()
    snapshot = copy.deepcopy(messages)
    ids = [id(m) for m in messages]
    out = run_flush(messages, compaction_setup(LLMClient(), DEFAULT, window=200_000), memory, NOW)
    assert out.flushed
    assert messages == snapshot and [id(m) for m in messages] == ids
    assert not hasattr(out, "messages")  # nothing to append to the transcript


def test_append_only_preserves_the_daily_log_byte_for_byte(memory: MemoryFiles) -> None:
    daily = memory.workspace_dir / DAILY
    daily.parent.mkdir(parents=True)
    existing = (
        "# 2026-02-28\n\n- 早上：部署到 staging 成功\r\n- handwritten note without newline".encode()
    )
    daily.write_bytes(existing)
    out = run_flush(session(), compaction_setup(LLMClient(), DEFAULT, window=200_000), memory, NOW)
    assert out.flushed
    after = daily.read_bytes()
    assert after.startswith(existing) and len(after) > len(existing)
    second = run_flush(
        [user_msg("We switched the queue to RabbitMQ instead of Kafka for jobs.")],
        compaction_setup(LLMClient(), DEFAULT, window=200_000),
        memory,
        NOW,
    )
    assert second.flushed
    assert daily.read_bytes().startswith(after)


def test_repeated_flush_does_not_repeat_notes(memory: MemoryFiles) -> None:
    first = run_flush(
        session(), compaction_setup(LLMClient(), DEFAULT, window=200_000), memory, NOW
    )
    assert first.flushed
    before = (memory.workspace_dir / DAILY).read_bytes()
    again = run_flush(
        session(), compaction_setup(LLMClient(), DEFAULT, window=200_000), memory, NOW
    )
    assert again.outcome is FlushOutcome.NO_REPLY and again.ran and "already" in again.detail
    assert (memory.workspace_dir / DAILY).read_bytes() == before


@pytest.mark.parametrize(
    "reply",
    ["NO_REPLY", "<NO_REPLY>", "", "  \n ", "`NO_REPLY`", "no_reply.", "```\nNO_REPLY\n```"],
)
def test_no_reply_writes_nothing(memory: MemoryFiles, reply: str) -> None:
    model = ScriptedModel(lambda prompt, i: reply)
    out = run_flush(
        session(), compaction_setup(model.client(), DEFAULT, window=200_000), memory, NOW
    )
    assert out.outcome is FlushOutcome.NO_REPLY and out.ran and not out.flushed
    assert out.path is None and out.notes == ""
    assert not (memory.workspace_dir / "memory").exists()
    assert is_silent_reply(reply)
    assert len(model.requests) == 1


def test_notes_followed_by_no_reply_are_written_without_the_token(memory: MemoryFiles) -> None:
    model = ScriptedModel(lambda prompt, i: "- Deploys go to eu-west-1 via `make ship`.\nNO_REPLY")
    out = run_flush(
        session(), compaction_setup(model.client(), DEFAULT, window=200_000), memory, NOW
    )
    assert out.flushed and out.notes == "- Deploys go to eu-west-1 via `make ship`."
    assert "NO_REPLY" not in (memory.workspace_dir / DAILY).read_text()
    assert not is_silent_reply("- a note\n<NO_REPLY>")


def test_notes_are_redacted_as_memory_files_redact(memory: MemoryFiles) -> None:
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 3
    model = ScriptedModel(lambda prompt, i: f"- The staging api_key is {secret}")
    out = run_flush(
        session(), compaction_setup(model.client(), DEFAULT, window=200_000), memory, NOW
    )
    assert out.flushed
    assert secret not in (memory.workspace_dir / DAILY).read_text()


def test_request_shape_prompts_and_task(memory: MemoryFiles) -> None:
    cfg = MemoryContextConfig.from_dict(
        {
            "compaction": {
                "memoryFlush": {
                    "systemPrompt": "Custom system prompt.",
                    "prompt": "Write notes for memory/YYYY-MM-DD.md now.",
                }
            }
        }
    )
    messages = [
        system("SECRET SYSTEM PROMPT TEXT"),
        summary_message("OLD SUMMARY TEXT"),
        user_msg(recalled_block_text("<knowledge>RECALLED FACT</knowledge>")),
        *session()[1:],
    ]
    model = ScriptedModel(lambda prompt, i: "NO_REPLY")
    out = run_flush(messages, compaction_setup(model.client(), cfg, window=200_000), memory, NOW)
    assert out.messages_sent == len(session()) - 1 and out.messages_left_out == 0
    (request,) = model.requests
    assert task_of(request) == FLUSH_TASK == OFFLINE_FLUSH_TASK
    assert [m["role"] for m in request] == ["system", "user"]
    assert "Custom system prompt." in request[0]["content"]
    assert FLUSH_OUTPUT_INSTRUCTIONS in request[0]["content"]
    assert request[1]["content"].endswith("Write notes for memory/2026-02-28.md now.")
    sent = model.everything_sent
    for absent in ("SECRET SYSTEM PROMPT TEXT", "OLD SUMMARY TEXT", "RECALLED FACT"):
        assert absent not in sent
    assert "[User]: The login endpoint returns 500" in sent
    assert request == flush_request(
        request[1]["content"].split("<conversation>\n")[1].split("\n</conversation>")[0],
        cfg.compaction.memory_flush,
        NOW.date(),
    )


def _fits(request: list[dict[str, Any]], cfg: MemoryContextConfig, window: int, sw: int) -> bool:
    budget = CompactionBudget.from_config(cfg, window, summarizer_window=sw)
    padded = math.ceil(TokenCounter().count_messages(request) * budget.safety_margin)
    return padded + budget.summary_tokens <= sw


@pytest.mark.parametrize(
    ("window", "summarizer_window"),
    [(8_000, None), (200_000, None), (200_000, 16_000), (1_000_000, None)],
)
def test_huge_conversation_sends_only_the_newest_part_that_fits(
    memory: MemoryFiles, window: int, summarizer_window: int | None
) -> None:
    per = 3_000  # characters per message: ~1,000 tokens
    count = 3 * window // 1_000 + 10  # about three windows of conversation
    messages = [system()] + [
        user_msg(f"MSG{i:05d} " + "x" * per) if i % 2 else assistant(f"MSG{i:05d} " + "y" * per)
        for i in range(count)
    ]
    model = ScriptedModel(lambda prompt, i: "- kept")
    out = run_flush(
        messages,
        compaction_setup(
            model.client(), DEFAULT, window=window, summarizer_window=summarizer_window
        ),
        memory,
        NOW,
    )
    assert out.flushed
    (request,) = model.requests
    sw = summarizer_window or window
    assert _fits(request, DEFAULT, window, sw)
    prompt = request[-1]["content"]
    assert f"MSG{count - 1:05d}" in prompt  # the newest message is there
    assert "MSG00000" not in prompt  # the oldest is not
    assert out.messages_left_out > 0 and out.messages_sent + out.messages_left_out == count
    # Contiguous: everything from the first message sent to the newest.
    first = count - out.messages_sent
    assert all(f"MSG{i:05d}" in prompt for i in range(first, count))
    assert f"MSG{first - 1:05d}" not in prompt


def test_single_oversized_newest_message_is_cut_to_fit(memory: MemoryFiles) -> None:
    window = 8_000
    huge = "HEAD-MARK " + "z" * 200_000 + " TAIL-MARK"
    model = ScriptedModel(lambda prompt, i: "NO_REPLY")
    out = run_flush(
        [user_msg("earlier"), result("c9", "orphan"), user_msg(huge)],
        compaction_setup(model.client(), DEFAULT, window=window),
        memory,
        NOW,
    )
    assert out.outcome is FlushOutcome.NO_REPLY and out.messages_sent == 1
    (request,) = model.requests
    assert _fits(request, DEFAULT, window, window)
    prompt = request[-1]["content"]
    assert "HEAD-MARK" in prompt and "TAIL-MARK" in prompt and "characters omitted" in prompt


def test_window_too_small_for_the_prompt_makes_no_call(memory: MemoryFiles) -> None:
    model = ScriptedModel()
    out = run_flush(session(), compaction_setup(model.client(), DEFAULT, window=300), memory, NOW)
    assert out.outcome is FlushOutcome.WINDOW_TOO_SMALL and not out.ran
    assert "larger window" in out.detail
    assert model.requests == []


def test_llm_failure_is_a_result_not_an_exception(memory: MemoryFiles) -> None:
    out = run_flush(
        session(), compaction_setup(failing_client(), DEFAULT, window=200_000), memory, NOW
    )
    assert out.outcome is FlushOutcome.LLM_FAILED and not out.ran
    assert "provider unavailable" in out.detail
    assert not (memory.workspace_dir / "memory").exists()


def test_write_failure_is_a_result_not_an_exception(memory: MemoryFiles) -> None:
    memory.workspace_dir.mkdir(parents=True)
    (memory.workspace_dir / "memory").write_text("a file where the directory should be")
    out = run_flush(session(), compaction_setup(LLMClient(), DEFAULT, window=200_000), memory, NOW)
    assert out.outcome is FlushOutcome.WRITE_FAILED and not out.ran
    assert out.notes and out.detail


def test_disabled_and_empty_conversations_make_no_call(memory: MemoryFiles) -> None:
    model = ScriptedModel()
    off = run_flush(
        session(),
        compaction_setup(model.client(), config(enabled=False), window=200_000),
        memory,
        NOW,
    )
    assert off.outcome is FlushOutcome.DISABLED
    empty = run_flush(
        [system()], compaction_setup(model.client(), DEFAULT, window=200_000), memory, NOW
    )
    assert empty.outcome is FlushOutcome.NOTHING_TO_SEND
    assert model.requests == []


def test_messages_must_be_a_list(memory: MemoryFiles) -> None:
    with pytest.raises(TypeError, match="list of message dicts"):
        run_flush("hello", compaction_setup(LLMClient(), DEFAULT, window=200_000), memory, NOW)  # type: ignore[arg-type]


def test_cached_reply_reports_no_new_tokens(memory: MemoryFiles, tmp_path: Path) -> None:
    client = LLMClient(cache_dir=tmp_path / "cache")
    run_flush(session(), compaction_setup(client, DEFAULT, window=200_000), memory, NOW)
    other = MemoryFiles(tmp_path / "ws2", embedder=HashEmbedder(), clock=NOW.timestamp)
    again = run_flush(session(), compaction_setup(client, DEFAULT, window=200_000), other, NOW)
    assert again.cached and again.flushed and again.prompt_tokens == 0

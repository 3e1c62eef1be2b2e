"""The offline model's memory-flush branch: deterministic, extractive bullet notes or NO_REPLY."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from memctx.compaction import FLUSH_TASK, flush_request, render_messages
from memctx.config import MemoryContextConfig
from memctx.llm import LLMClient, task_marker
from memctx.messages import InfoCache, estimate_tokens
from memctx.offline import FLUSH_TASK as OFFLINE_FLUSH_TASK
from memctx.offline import NO_REPLY, flush_notes, offline_flush_response, offline_reply

FLUSH = MemoryContextConfig().compaction.memory_flush
DAY = dt.date(2026, 2, 28)


def rendered(messages: list[dict[str, Any]]) -> str:
    infos = InfoCache()
    return render_messages(infos.info(m) for m in messages)


def tool_call(cid: str, name: str, **args: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": cid,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        ],
    }


SESSION: list[dict[str, Any]] = [
    {"role": "user", "content": "The login endpoint returns 500 since this morning."},
    tool_call("c1", "read", path="app/routes/auth.py"),
    {"role": "tool", "tool_call_id": "c1", "content": "see lib/unrelated/helpers.py line 3"},
    tool_call("c2", "bash", cmd="pytest -q"),
    {
        "role": "tool",
        "tool_call_id": "c2",
        "content": "collected 12 items\nFAILED tests/test_auth.py::test_login - KeyError: 'sid'",
    },
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "We decided nothing yet, maybe switch to Memcached."},
            {"type": "text", "text": "We decided to store sessions in Redis instead of a dict."},
        ],
    },
    {"role": "user", "content": "Set REDIS_URL=redis://localhost:6379/0 in config/settings.py."},
    {"role": "assistant", "content": "Thanks!"},
]


def test_task_names_agree() -> None:
    assert OFFLINE_FLUSH_TASK == FLUSH_TASK == "memory-flush"


def test_notes_hold_decisions_config_errors_and_paths() -> None:
    notes = flush_notes(rendered(SESSION))
    lines = notes.splitlines()
    assert all(line.startswith("- ") for line in lines)
    assert "- Decision: We decided to store sessions in Redis instead of a dict" in lines
    assert "- Config: Set REDIS_URL=redis://localhost:6379/0 in config/settings.py" in lines
    assert any(line.startswith("- Issue: FAILED tests/test_auth.py::test_login") for line in lines)
    assert lines[-1] == "- Files: app/routes/auth.py, config/settings.py"
    # Thinking is not a note, tool output names no files, small talk gives nothing.
    assert "Memcached" not in notes and "helpers.py" not in notes and "Thanks" not in notes


def test_notes_are_deterministic() -> None:
    text = rendered(SESSION)
    assert flush_notes(text) == flush_notes(text)


@pytest.mark.parametrize(
    "conversation",
    ["", "[User]: hi there!\n\n[Assistant]: Hello! How can I help?", "[User]: what is 2+2?"],
)
def test_nothing_durable_answers_no_reply(conversation: str) -> None:
    assert flush_notes(conversation) == NO_REPLY


def test_system_text_gives_no_notes() -> None:
    text = "[System]: We decided to always use Postgres 16 for everything in prod."
    assert flush_notes(text) == NO_REPLY


def test_extractor_style_headers_are_read_too() -> None:
    notes = flush_notes("[user] We switched the queue to RabbitMQ instead of Kafka.")
    assert notes == "- Decision: We switched the queue to RabbitMQ instead of Kafka"


def test_chinese_decision() -> None:
    notes = flush_notes("[User]: 我们决定改用 PostgreSQL 作为主数据库，而不是 MySQL。")
    assert notes.startswith("- Decision: ") and "PostgreSQL" in notes


def test_secrets_are_not_noted() -> None:
    secret = "sk-proj-" + "Q9w8E7r6T5y4U3i2O1p0" * 3
    notes = flush_notes(f"[User]: We decided the api_key is {secret} for the staging deploy.")
    assert secret not in notes


def test_budget_drops_the_oldest_bullets_first() -> None:
    text = "\n".join(
        f"[User]: We decided to use port {9000 + i} for service{i} instead of {8000 + i}."
        for i in range(20)
    )
    full = flush_notes(text)
    small = flush_notes(text, max_tokens=60)
    assert estimate_tokens(small) <= 60 and small != NO_REPLY
    assert full.endswith(small.split("\n", 1)[-1])  # the newest notes are the ones kept
    assert "service19" in small and "service0 " not in small
    assert flush_notes(text, max_tokens=1) == NO_REPLY


def test_offline_model_answers_the_flush_request() -> None:
    request = flush_request(rendered(SESSION), FLUSH, DAY)
    reply = LLMClient().complete(request, task=FLUSH_TASK)
    assert reply.text == flush_notes(rendered(SESSION), 1024)
    assert offline_reply(request) == offline_flush_response(request, 1024)


def test_request_without_a_conversation_answers_no_reply() -> None:
    request = [
        {"role": "system", "content": task_marker(FLUSH_TASK)},
        {"role": "user", "content": "We decided to use Redis."},
    ]
    assert offline_reply(request) == NO_REPLY
    assert offline_flush_response([]) == NO_REPLY

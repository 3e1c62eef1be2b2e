"""``memctx claude-code hook``: events as Claude Code sends them, over a generated session
file in Claude Code's JSONL format."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.claude_code_sessions import session_records, write_session
from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.integrations import MAX_CONTEXT_CHARS, default_store_dir, run_hook
from memctx.integrations.claude_code import archive_transcript, context_answer
from memctx.store import KnowledgeStore, NewFact
from memctx.store.knowledge_rules import FactType
from memctx.text import Redactor

FACT = "staging database password rotates every Tuesday"


def _event(name: str, transcript: Path, cwd: Path, session: str = "sess-1", **more: Any) -> str:
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": str(transcript),
            "cwd": str(cwd),
            "hook_event_name": name,
            **more,
        }
    )


def _hook(event: str, store: Path | None) -> str:
    out = io.StringIO()
    assert run_hook(io.StringIO(event), out, store_dir=store) == 0
    return out.getvalue()


def _segments(store: Path) -> int:
    return len((store / "segments.jsonl").read_text(encoding="utf-8").splitlines())


@pytest.fixture
def session(tmp_path: Path) -> Path:
    return write_session(tmp_path / "sess-1.jsonl", session_records("sess-1", 12))


def test_precompact_archives_once_and_then_only_what_was_added(
    tmp_path: Path, session: Path
) -> None:
    store = tmp_path / "store"
    event = json.loads(_event("PreCompact", session, tmp_path, trigger="auto"))
    assert archive_transcript(event, store) == 48
    archived = _segments(store)
    assert archived > 0
    assert archive_transcript(event, store) == 0  # the same transcript twice: nothing new
    assert _hook(json.dumps(event), store) == ""
    assert _segments(store) == archived
    # Claude Code appends to the file: the next compaction archives only the new turns.
    records = session_records("sess-1", 12) + session_records("sess-1", 2, seed=7)
    write_session(session, records)
    assert archive_transcript(event, store) == 8
    assert _segments(store) > archived


def test_user_prompt_submit_prints_the_recall_block_as_additional_context(
    tmp_path: Path, session: Path
) -> None:
    store = tmp_path / "store"
    _hook(_event("PreCompact", session, tmp_path, trigger="manual", custom_instructions=""), store)
    # A new session of the project recalls what the earlier one archived.
    printed = _hook(
        _event(
            "UserPromptSubmit",
            session,
            tmp_path,
            session="sess-2",
            prompt="when does the staging database password rotate?",
        ),
        store,
    )
    answer = json.loads(printed)
    assert set(answer) == {"hookSpecificOutput"}
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    assert FACT in output["additionalContext"]
    assert len(output["additionalContext"]) <= MAX_CONTEXT_CHARS


def test_user_prompt_submit_prints_nothing_when_nothing_is_relevant(
    tmp_path: Path, session: Path
) -> None:
    store = tmp_path / "store"
    assert (
        _hook(_event("UserPromptSubmit", session, tmp_path, prompt="staging password"), store) == ""
    )
    _hook(_event("PreCompact", session, tmp_path, trigger="auto"), store)
    prompt = "zygomorphic quokka xylophone"
    assert _hook(_event("UserPromptSubmit", session, tmp_path, prompt=prompt), store) == ""


def test_session_start_after_compact_recalls_the_last_request_and_the_project_rules(
    tmp_path: Path, session: Path
) -> None:
    store = tmp_path / "store"
    _hook(_event("PreCompact", session, tmp_path, trigger="auto"), store)
    knowledge = KnowledgeStore(store, redactor=Redactor())
    knowledge.ingest(NewFact(FactType.DECISION, "Use uv, never pip, in this repo", origin="user"))
    knowledge.ingest(NewFact(FactType.TASK_STATE, "Migrate the cache layer to Redis 7"))
    # The last thing the user asked is about the staging password.
    records = session_records("sess-1", 12)
    records.append({**records[12], "uuid": "u-last", "parentUuid": records[-1]["uuid"]})
    write_session(session, records)
    for source in ("compact", "resume"):
        printed = _hook(_event("SessionStart", session, tmp_path, source=source), store)
        output = json.loads(printed)["hookSpecificOutput"]
        assert output["hookEventName"] == "SessionStart"
        text = output["additionalContext"]
        assert FACT in text
        assert "Use uv, never pip, in this repo" in text
        assert "Migrate the cache layer to Redis 7" in text
    assert _hook(_event("SessionStart", session, tmp_path, source="startup"), store) == ""


def test_the_store_is_per_project_unless_given(
    tmp_path: Path, session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMCTX_HOME", str(tmp_path / "home"))
    project_a, project_b = tmp_path / "a", tmp_path / "b"
    _hook(_event("PreCompact", session, project_a, trigger="auto"), None)
    assert (default_store_dir(project_a) / "segments.jsonl").exists()
    assert default_store_dir(project_a).is_relative_to(tmp_path / "home")
    assert default_store_dir(project_a) != default_store_dir(project_b)
    prompt = "when does the staging database password rotate?"
    ask_a = _event("UserPromptSubmit", session, project_a, session="s2", prompt=prompt)
    ask_b = _event("UserPromptSubmit", session, project_b, session="s2", prompt=prompt)
    assert FACT in _hook(ask_a, None)
    assert _hook(ask_b, None) == ""


def test_additional_context_stays_within_the_limit_for_a_huge_history(tmp_path: Path) -> None:
    records = session_records("big", 4)
    long = "the staging database password rotates " + "and the vault token is renewed " * 2_000
    records.append({**records[0], "uuid": "u-big", "message": {"role": "user", "content": long}})
    transcript = write_session(tmp_path / "big.jsonl", records)
    store = tmp_path / "store"
    _hook(_event("PreCompact", transcript, tmp_path, session="big", trigger="auto"), store)
    ask = _event("UserPromptSubmit", transcript, tmp_path, prompt="staging database password vault")
    text = json.loads(_hook(ask, store))["hookSpecificOutput"]["additionalContext"]
    assert 0 < len(text) <= MAX_CONTEXT_CHARS


@settings(max_examples=30, deadline=None)
@given(st.text(max_size=200))
def test_any_stdin_exits_zero_and_prints_nothing_or_valid_json(
    tmp_path_factory: Any, data: str
) -> None:
    store = tmp_path_factory.mktemp("store")
    printed = _hook(data, store)
    if printed:
        json.loads(printed)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30_000), st.integers(0, 4))
def test_the_answer_is_within_the_limit_and_keeps_both_ends(text: str, pad: int) -> None:
    text = text * (pad + 1)
    answer = context_answer("UserPromptSubmit", text)
    if not text.strip():
        assert answer is None
        return
    assert answer is not None
    shown = answer["hookSpecificOutput"]["additionalContext"]
    assert len(shown) <= MAX_CONTEXT_CHARS
    if len(text) <= MAX_CONTEXT_CHARS:
        assert shown == text
    else:
        assert shown.startswith(text[:1_000]) and shown.endswith(text[-500:])


def _cli_hook(stdin: str, store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memctx.cli", "claude-code", "hook", "--store", str(store)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_command_exits_zero_on_its_own_failure_and_logs_it(tmp_path: Path) -> None:
    store = tmp_path / "store"
    missing = tmp_path / "gone.jsonl"
    done = _cli_hook(_event("PreCompact", missing, tmp_path, trigger="auto"), store)
    assert done.returncode == 0
    assert done.stdout == ""
    done = _cli_hook("{not json", store)
    assert done.returncode == 0
    assert done.stdout == ""
    log = (store / "claude-code" / "hook.log").read_text(encoding="utf-8").splitlines()
    assert len(log) == 2
    assert "gone.jsonl" in log[0]
    assert "JSONDecodeError" in log[1]


def test_the_command_answers_a_prompt(tmp_path: Path, session: Path) -> None:
    store = tmp_path / "store"
    assert _cli_hook(_event("PreCompact", session, tmp_path, trigger="auto"), store).returncode == 0
    prompt = "when does the staging database password rotate?"
    done = _cli_hook(_event("UserPromptSubmit", session, tmp_path, prompt=prompt), store)
    assert done.returncode == 0
    assert FACT in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def test_a_failed_archive_leaves_the_messages_for_the_next_compaction(
    tmp_path: Path, session: Path
) -> None:
    store = tmp_path / "store"
    (store / "segments.jsonl").mkdir(parents=True)  # the raw store cannot be written
    event = _event("PreCompact", session, tmp_path, trigger="auto")
    assert _hook(event, store) == ""
    assert not (store / "claude-code" / "archived-sess-1.json").exists()
    assert "did not finish" in (store / "claude-code" / "hook.log").read_text(encoding="utf-8")
    (store / "segments.jsonl").rmdir()
    assert archive_transcript(json.loads(event), store) == 48


def test_session_start_skips_the_compaction_summary_for_the_last_request(
    tmp_path: Path, session: Path
) -> None:
    store = tmp_path / "store"
    # A history the block cannot hold whole: what it recalls depends on the query.
    records = session_records("sess-1", 300)
    write_session(session, records)
    _hook(_event("PreCompact", session, tmp_path, trigger="auto"), store)
    asked = {**records[12], "uuid": "u-ask", "parentUuid": records[-1]["uuid"]}
    summary = {
        **records[0],
        "uuid": "u-summary",
        "parentUuid": "u-ask",
        "isCompactSummary": True,
        "message": {
            "role": "user",
            "content": "This session is being continued from a previous conversation that "
            "ran out of context. The deploy script and the login page were fixed.",
        },
    }
    write_session(session, [*records, asked, summary])
    printed = _hook(_event("SessionStart", session, tmp_path, source="compact"), store)
    assert FACT in json.loads(printed)["hookSpecificOutput"]["additionalContext"]


def test_extraction_cut_off_by_the_hook_time_still_moves_the_watermark_and_logs(
    tmp_path: Path, session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memctx.integrations import claude_code

    monkeypatch.setattr(claude_code, "PRECOMPACT_WAIT_S", 0.0)  # extraction cannot finish
    store = tmp_path / "store"
    event = json.loads(_event("PreCompact", session, tmp_path, trigger="auto"))
    assert archive_transcript(event, store) == 48
    assert (store / "claude-code" / "archived-sess-1.json").exists()
    log = (store / "claude-code" / "hook.log").read_text(encoding="utf-8")
    assert "extraction of 48 archived messages of sess-1 did not finish" in log
    assert archive_transcript(event, store) == 0


@pytest.mark.parametrize("session_id", ["..", "a/b", "", None, "x" * 300])
def test_an_unsafe_session_id_is_hashed_into_a_safe_one(
    tmp_path: Path, session: Path, session_id: object
) -> None:
    store = tmp_path / "store"
    event = json.loads(_event("PreCompact", session, tmp_path))
    event["session_id"] = session_id
    assert archive_transcript(event, store) == 48
    (state,) = (store / "claude-code").glob("archived-*.json")
    assert state.name.startswith("archived-cc-")

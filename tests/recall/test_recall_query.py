"""The recall query: which user messages count."""

from __future__ import annotations

from memctx.messages import recalled_block_text
from memctx.messages.anatomy import InfoCache
from memctx.recall.query import MAX_QUERY_CHARS, build_query


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text}


def test_last_three_user_messages_oldest_first() -> None:
    msgs = [
        user("first request"),
        {"role": "assistant", "content": "ok"},
        user("second request about the parser"),
        {"role": "assistant", "content": "done"},
        user("third"),
        user("y"),
    ]
    assert build_query(msgs, InfoCache()) == "second request about the parser\nthird\ny"


def test_tool_results_recalled_blocks_and_harness_text_are_skipped() -> None:
    msgs = [
        user("fix the flaky login test in tests/test_auth.py"),
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "FAILED x"}],
        },
        user(recalled_block_text("old")),
        user("<command-name>/clear</command-name>"),
        user("System: [2026-01-01] Feishu message from bot"),
        user("<system-reminder>todo list is empty</system-reminder>"),
        user("[Context compacted] Decisions: use Postgres. Files: src/db.py"),
        user("This session is being continued from a previous conversation. Summary: ..."),
        user("ok <system-reminder>ignore me</system-reminder> continue"),
    ]
    assert build_query(msgs, InfoCache()) == (
        "fix the flaky login test in tests/test_auth.py\nok   continue"
    )


def test_query_is_bounded_keeping_the_newest_text() -> None:
    msgs = [user("old request"), user("paste " * 2000 + "the newest question")]
    query = build_query(msgs, InfoCache())
    assert len(query) == MAX_QUERY_CHARS
    assert query.endswith("the newest question")


def test_a_full_question_stands_alone_a_thin_one_borrows_context() -> None:
    earlier = user("refactor the payment webhook handler")
    full = build_query([earlier, user("why does the parser reject unicode paths?")], InfoCache())
    assert full == "why does the parser reject unicode paths?"
    thin = build_query([earlier, user("ok go")], InfoCache())
    assert thin == "refactor the payment webhook handler\nok go"


def test_older_messages_add_only_their_opening() -> None:
    paste = "Traceback " + "frame " * 500
    query = build_query([user(paste), user("and now?")], InfoCache())
    assert query == paste[:300] + "\nand now?"


def test_no_user_text_gives_an_empty_query() -> None:
    assert build_query([{"role": "system", "content": "be nice"}], InfoCache()) == ""
    assert build_query([], InfoCache()) == ""

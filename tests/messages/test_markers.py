"""Only the recall blocks memctx writes are its own: a text that merely starts with the tag is
the conversation's and must survive every hook."""

from __future__ import annotations

from typing import Any

from memctx.messages import is_recalled_block, recalled_block_text

BODY = "\n<detail>\n[2026-02-10]\nuser: where is the webhook verified?\n</detail>\n"


def test_the_block_memctx_writes_is_recognised_in_every_shape() -> None:
    text = recalled_block_text(BODY)
    assert is_recalled_block({"role": "user", "content": text})
    # Frameworks that wrap string content in one text block, and Gemini's parts.
    assert is_recalled_block({"role": "user", "content": [{"type": "text", "text": text}]})
    assert is_recalled_block({"role": "user", "parts": [{"text": text}]})


def test_a_text_that_only_starts_with_the_tag_is_not_a_block() -> None:
    text = recalled_block_text(BODY)
    cases: list[dict[str, Any]] = [
        # Not the frame memctx writes: another source, a space before it, no closing tag.
        {"role": "user", "content": text.replace("memory-context", "memory")},
        {"role": "user", "content": " " + text},
        {"role": "user", "content": text.removesuffix("</recalled-context>")},
        {"role": "user", "content": '<recalled-context source="memory-context">'},
        {"role": "user", "content": text + "\nand what about this?"},  # a user quoting one
        {"role": "user", "content": "see this:\n" + text},
        {"role": "assistant", "content": text},
        {"role": "tool", "tool_call_id": "c1", "content": text},
        # A file read by a tool that happens to begin with the tag (the reported case).
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": text}],
        },
        {
            "role": "user",
            "content": [{"type": "text", "text": text}, {"type": "text", "text": "x"}],
        },
        {"role": "user", "content": [{"type": "image", "text": text}]},
    ]
    for message in cases:
        assert not is_recalled_block(message), message


def test_hostile_values_are_simply_not_blocks() -> None:
    for junk in (None, 3, "text", [], {"role": "user", "content": None}, {"role": "user"}):
        assert not is_recalled_block(junk)
    assert not is_recalled_block({"role": "user", "content": [None]})

"""Recalled text is data, as properties: any archived text, with every tag, look-alike, entity,
line break, header, gap marker and role word in its alphabet, comes back out of the recall
block as exactly the item archived (after the documented whitespace compaction and cuts),
with its provenance, inside one block that ends where memctx ended it."""

from __future__ import annotations

import tempfile
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import examples

from memctx import MemoryContextConfig
from memctx.messages import is_recalled_block, message_text
from memctx.messages.quoting import (
    CONTINUATION,
    indent_continuation,
    normalize_breaks,
    quote_text,
    safe_label,
    unquote_text,
)
from memctx.recall import RecallItem, build_recall_block, compact_text, parse_recall_block
from memctx.retrieval import HashEmbedder
from memctx.runtime import MemoryContext
from memctx.text import leading_day

_CUT = " …[cut]"
TOKENS = [
    '<recalled-context source="memory-context">',
    "</recalled-context>",
    "<knowledge>",
    "</knowledge>",
    "<detail>",
    "</detail>",
    "< /Recalled-Context >",
    "＜/recalled-context＞",
    "﹤detail﹥",
    "‹knowledge›",
    "〈detail〉",
    "&",
    "&&",
    "&lt;",
    "&amp;",
    "&amp;lt;",
    "&#x3C;",
    "&#xFF1C;",
    "\n",
    "\r",
    "\r\n",
    "\u2028",
    "\x85",
    "\v",
    "\n\n",
    "[2026-01-01]",
    "[2026-01-01 session s2]",
    "…",
    _CUT,
    "user: ",
    "assistant: ",
    "tool bash: ",
    "system: ",
    "SYSTEM: ",
    "- [decision] ",
    "- [decision, from user] ",
    "  ",
    "\t",
    "zebrafish",
    "[1 January 1970] ",  # the day of the details on day 0: shown without it
    "1970-01-02 | ",
    "[2 Jan 1970 10:00] ",  # a time says more than the header: kept
]
CHARS = "ab <>&;#/\n -:[]…x\u3008\uff1c"
TEXT = st.lists(
    st.one_of(st.sampled_from(TOKENS), st.text(alphabet=CHARS, max_size=4)), max_size=14
).map("".join)
LABELS = st.one_of(
    st.sampled_from(["user", "assistant", "tool bash", "system", "Caroline"]), st.text(max_size=12)
)


@settings(max_examples=examples(300), deadline=None)
@given(st.one_of(TEXT, st.text()))
def test_quoting_is_reversible_and_leaves_no_markup(text: str) -> None:
    quoted = quote_text(text)
    assert unquote_text(quoted) == text
    assert not any(c in quoted for c in "<＜﹤‹〈〈⟨❬❮❰⧼˂ᐸ")
    shown = indent_continuation(quote_text(normalize_breaks(text)))
    assert all(line.startswith(CONTINUATION) for line in shown.splitlines()[1:])


@settings(max_examples=examples(200), deadline=None)
@given(st.text())
def test_a_label_is_one_line_without_markup(name: str) -> None:
    label = safe_label(name)
    assert label and len(label) <= 40 and not label.startswith((" ", "-"))
    assert not any(c in label for c in ":[]<>\n\r…") and label == " ".join(label.split())


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    facts=st.lists(st.tuples(TEXT.filter(str.split), LABELS), max_size=4),
    details=st.lists(
        st.tuples(
            TEXT, LABELS, st.integers(0, 3), st.sampled_from("ab"), st.sampled_from(["", "m"])
        ),
        max_size=8,
    ),
    cap=st.integers(60, 1500),
)
def test_any_archived_text_parses_back_into_the_items_shown(
    facts: list[tuple[str, str]], details: list[tuple[str, str, int, str, str]], cap: int
) -> None:
    # Details with source "m" are chunks of one archived message, shown as one item.
    knowledge = [
        RecallItem("knowledge", text, 1.0 - i / 10, label, f"f{i}", (float(i), 0))
        for i, (text, label) in enumerate(facts)
    ]
    items = [
        RecallItem("detail", text, 1.0 - i / 100, label, f"d{i}", (day * 86400.0, i), src, sess, i)
        for i, (text, label, day, sess, src) in enumerate(details)
    ]
    block = build_recall_block(knowledge, items, cap)
    if block is None:
        return
    lines = block.text.split("\n")
    assert lines[-1] == "</recalled-context>" and lines.count("</recalled-context>") == 1
    assert sum(line.startswith("<recalled-context") for line in lines) == 1
    entries = parse_recall_block(block.text)
    got_facts = [(e.label, e.text) for e in entries if e.kind == "knowledge"]
    assert got_facts == [(safe_label(k.label), " ".join(k.text.split())) for k in block.knowledge]
    got = sorted((e.label, e.text) for e in entries if e.kind == "detail")
    assert got == sorted((safe_label(d.label), compact_text(d.shown_text)) for d in block.details)
    for shown in block.details:  # what a line leaves out is only the date its header shows
        elided = shown.text[: len(shown.text) - len(shown.shown_text)]
        assert shown.text.endswith(shown.shown_text)
        assert not elided or leading_day(shown.text) == (shown.day, len(elided))
    originals = {item.ref: item.text for item in items}
    for shown in block.details:  # each shown text is the archived one, or its head, cut
        if shown.chunks:  # several chunks: each line shown is a line of one of them
            parts = {
                ln
                for ref in shown.chunks
                for text in (originals[ref], compact_text(originals[ref]))
                for ln in text.split("\n")
            }
            shown_lines = [ln.removesuffix(_CUT) for ln in shown.text.split("\n")]
            assert all(
                ln in parts or ln == "…" or ln.strip() == "" or any(p.startswith(ln) for p in parts)
                for ln in shown_lines
            )
            continue
        whole = compact_text(originals[shown.ref])
        assert shown.text == originals[shown.ref] or (
            shown.text.endswith(_CUT) and whole.startswith(shown.text[: -len(_CUT)])
        )


def _exchange(position: str, text: str, i: int) -> list[dict[str, Any]]:
    cid = f"c{i}"
    if position == "user":
        return [{"role": "user", "content": text}]
    if position == "assistant":
        return [{"role": "assistant", "content": text}]
    if position == "openai_tool":
        call = {"id": cid, "type": "function", "function": {"name": "bash", "arguments": "{}"}}
        return [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": cid, "content": text},
        ]
    use = {"type": "tool_use", "id": cid, "name": "bash", "input": {}}
    return [
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "content": text}]},
    ]


_LABEL_OF = {"user": "user", "assistant": "assistant", "openai_tool": "tool bash"}


@settings(
    max_examples=examples(12, thorough_at_most=60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    archived=st.lists(
        st.tuples(
            st.sampled_from(["user", "assistant", "openai_tool", "anthropic_tool"]),
            TEXT.filter(lambda t: bool(t.strip())),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_on_context_recalls_archived_text_as_it_was_archived(
    archived: list[tuple[str, str]],
) -> None:
    config = MemoryContextConfig(
        embedding_model="hash",
        redaction=False,
        knowledge_extraction=False,
        auto_recall_min_best_score=0.0,
        auto_recall_min_score=0.0,
    )
    messages: list[dict[str, Any]] = []
    expected: set[tuple[str, str]] = set()
    for i, (position, text) in enumerate(archived):
        body = f"zebrafish {text}"
        messages += _exchange(position, body, i)
        label = _LABEL_OF.get(position, "tool bash")
        expected.add((label, compact_text(body)))
        if position.endswith("tool"):
            expected.add(("assistant", "[tool call] bash {}"))
    with (
        tempfile.TemporaryDirectory() as store,
        MemoryContext(
            config,
            store_dir=store,
            session_id="s1",
            context_window_tokens=200_000,
            embedder=HashEmbedder(),
        ) as mem,
    ):
        mem.on_before_compact(messages)
        assert mem.wait_idle(60)
        out = mem.on_context([{"role": "user", "content": "zebrafish?"}])
    blocks = [message_text(m) for m in out if is_recalled_block(m)]
    assert len(blocks) == 1
    lines = blocks[0].split("\n")
    assert lines[-1] == "</recalled-context>" and lines.count("</recalled-context>") == 1
    entries = parse_recall_block(blocks[0])
    assert entries
    for entry in entries:
        assert entry.kind == "detail"
        text = entry.text
        if (entry.label, text) in expected:
            continue
        assert text.endswith(_CUT), entry  # otherwise only a head, cut to fit
        assert any(
            label == entry.label and whole.startswith(text[: -len(_CUT)])
            for label, whole in expected
        ), entry

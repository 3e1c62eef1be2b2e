"""The OpenAI Responses API / Agents SDK item list as a fifth message format.

Role-less items are one block each (``function_call``, ``function_call_output``,
``reasoning``); calls pair with outputs by ``call_id``; the properties the four other
formats hold (valid input breaks no rule, units never split a call from its output, repair
leaves no violation and no call without its output) run over conversations rendered as items.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctx import MemoryContextConfig
from memctx.messages import RoleKind, inspect_message
from memctx.messages.anatomy import ITEM, with_tool_id
from memctx.messages.edits import with_tool_result_text
from memctx.messages.markers import is_recalled_block
from memctx.messages.pairing import pairing_violations, repair_tool_pairing
from memctx.messages.tokens import estimate_messages_tokens
from memctx.messages.units import tool_units
from memctx.runtime.engine import MemoryContext
from tests.strategies import examples, valid_conversations

_settings = settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def call(cid: str, name: str = "shell") -> dict[str, Any]:
    return {"type": "function_call", "call_id": cid, "name": name, "arguments": '{"cmd": "ls"}'}


def out(cid: str, text: str = "a.py") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": cid, "output": text}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}  # an easy-input message: no type


def call_ids(items: list[Any]) -> set[str]:
    return {i["call_id"] for i in items if i.get("type") == "function_call"}


def output_ids(items: list[Any]) -> set[str]:
    return {i["call_id"] for i in items if i.get("type") == "function_call_output"}


def test_roles_and_blocks_read() -> None:
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "plan"}],
    }
    message = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "hello", "annotations": []}],
    }
    infos = [inspect_message(m) for m in (call("c1"), out("c1"), reasoning, message, user("hi"))]
    assert [i.role for i in infos] == ["assistant", "tool", "assistant", "assistant", "user"]
    assert [i.kind for i in infos] == [
        RoleKind.ASSISTANT,
        RoleKind.TOOL,
        RoleKind.ASSISTANT,
        RoleKind.ASSISTANT,
        RoleKind.USER,
    ]
    assert infos[0].tool_call_ids == ("c1",) and infos[0].tool_names == ("shell",)
    assert infos[1].tool_result_ids == ("c1",) and infos[1].text == ""
    assert infos[2].blocks[0].text == "plan" and infos[3].text == "hello"


def test_items_count_their_tokens() -> None:
    items: list[Any] = []
    for i in range(15):
        items += [call(f"c{i}"), out(f"c{i}", "x" * 3000)]
    # 15 outputs of 3,000 characters: at least 1,000 tokens each by the 3-characters estimate
    assert estimate_messages_tokens(items) >= 15_000


def test_pairing_by_call_id() -> None:
    parallel = [user("go"), call("a"), call("b"), out("a"), out("b"), user("next")]
    assert pairing_violations(parallel) == []
    missing = [user("go"), call("a"), call("b"), out("a"), user("next")]
    assert [v.tool_id for v in pairing_violations(missing)] == ["b"]
    orphan = [user("go"), out("z")]
    assert [v.kind.value for v in pairing_violations(orphan)] == ["orphan_result"]
    # A chat-completions tool message does not answer a Responses call.
    mixed = [user("go"), call("a"), {"role": "tool", "tool_call_id": "a", "content": "x"}]
    assert pairing_violations(mixed)


def test_repair_drops_an_unanswered_call_item_whole() -> None:
    items = [user("go"), call("a"), call("b"), out("a"), user("next")]
    repaired = repair_tool_pairing(items)
    assert pairing_violations(repaired) == []
    assert call_ids(repaired) == output_ids(repaired) == {"a"}


def test_writers_write_where_the_readers_read() -> None:
    item = out("c1", "long output")
    ref = inspect_message(item).blocks[0]
    assert ref.field == ITEM
    edited = with_tool_result_text(item, ref, "cut")
    assert inspect_message(edited).blocks[0].text == "cut" and item["output"] == "long output"
    renamed = with_tool_id(call("c1"), inspect_message(call("c1")).blocks[0], "c2")
    assert inspect_message(renamed).tool_call_ids == ("c2",)


@_settings
@given(valid_conversations("responses"), st.data())
def test_valid_item_lists_break_no_rule_and_units_keep_calls_whole(
    items: list[Any], data: st.DataObject
) -> None:
    assert pairing_violations(items) == []
    units = tool_units(items)
    assert sorted(i for unit in units for i in unit) == list(range(len(items)))
    dropped = data.draw(st.sets(st.integers(0, max(len(units) - 1, 0))))
    gone = {i for k in dropped if k < len(units) for i in units[k]}
    assert pairing_violations([m for i, m in enumerate(items) if i not in gone]) == []


@_settings
@given(valid_conversations("responses"), st.data())
def test_repair_after_losing_and_moving_items_leaves_every_call_answered(
    items: list[Any], data: st.DataObject
) -> None:
    damaged = list(items)
    for _ in range(data.draw(st.integers(1, 4))):
        if not damaged:
            break
        at = data.draw(st.integers(0, len(damaged) - 1))
        if data.draw(st.booleans()):
            del damaged[at]
        elif at + 1 < len(damaged):
            damaged[at], damaged[at + 1] = damaged[at + 1], damaged[at]
    repaired = repair_tool_pairing(damaged)
    assert pairing_violations(repaired) == []
    assert call_ids(repaired) == output_ids(repaired)


def filler_output(i: int) -> str:
    words = ["lorem", "ipsum", "dolor", "amet", "tempor", "magna", "aliqua"]
    return f"file {i}: " + " ".join(words[(i + j) % 7] for j in range(500))


def test_items_through_on_context_trim_archive_and_recall(tmp_path: Path) -> None:
    items: list[Any] = [
        {"role": "developer", "content": "You are a coding agent."},
        user("Decision: the payment webhook lives in src/pay/hook.py"),
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Understood."}],
        },
    ]
    for i in range(30):
        items += [
            user(f"read file {i}"),
            {"type": "reasoning", "id": f"rs_{i}", "summary": []},
            call(f"c{i}", "read_file"),
            out(f"c{i}", filler_output(i)),
        ]
    items.append(user("now run the linter over the tests folder"))
    assert estimate_messages_tokens(items) > 14_000
    with MemoryContext(
        MemoryContextConfig(),
        store_dir=tmp_path / "s",
        session_id="s1",
        context_window_tokens=20_000,
    ) as mem:
        sent = mem.on_context(items)
        assert mem.stats()["counts"]["trims"] == 1 and len(sent) < len(items)
        assert pairing_violations(sent) == [] and call_ids(sent) == output_ids(sent)
        assert estimate_messages_tokens(sent) <= 16_000
        later = mem.on_context([*sent, user("where does the payment webhook live?")])
        blocks = [m for m in later if is_recalled_block(m)]
        assert len(blocks) == 1 and "src/pay/hook.py" in blocks[0]["content"]
        assert blocks[0]["role"] == "user"  # an easy-input user message item
        assert pairing_violations(later) == []
        assert mem.stats()["counts"].get("unknown_messages", 0) == 0


def reasoning(rid: str) -> dict[str, Any]:
    return {"type": "reasoning", "id": rid, "summary": [{"type": "summary_text", "text": "think"}]}


def test_a_reasoning_item_is_one_unit_with_the_item_after_it() -> None:
    answer = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "ok"}],
    }
    items = [user("go"), reasoning("rs_1"), call("c1"), out("c1"), reasoning("rs_2"), answer]
    assert tool_units(items) == [[0], [1, 2, 3], [4, 5]]
    # before a user message (nothing of its response after it) it stays alone
    assert tool_units([reasoning("rs_1"), user("next")]) == [[0], [1]]


def test_the_other_call_item_types_pair_with_their_outputs() -> None:
    pairs = [
        (
            {
                "type": "local_shell_call",
                "id": "ls_1",
                "call_id": "c1",
                "action": {"command": ["ls"]},
                "status": "completed",
            },
            {"type": "local_shell_call_output", "id": "c1", "output": "a.py"},
        ),
        (
            {"type": "shell_call", "call_id": "c2", "action": {"commands": ["ls"]}},
            {"type": "shell_call_output", "call_id": "c2", "output": [{"stdout": "a.py"}]},
        ),
        (
            {"type": "apply_patch_call", "call_id": "c3", "operation": {"type": "create_file"}},
            {"type": "apply_patch_call_output", "call_id": "c3", "output": "done"},
        ),
        (
            {"type": "computer_call", "call_id": "c4", "action": {"type": "click"}},
            {
                "type": "computer_call_output",
                "call_id": "c4",
                "output": {"type": "computer_screenshot", "image_url": "data:,"},
            },
        ),
    ]
    for call_item, output_item in pairs:
        assert inspect_message(call_item).kind is RoleKind.ASSISTANT
        assert inspect_message(output_item).kind is RoleKind.TOOL
        assert pairing_violations([user("go"), call_item, output_item]) == []
        assert pairing_violations([user("go"), call_item, user("next")]) != []
        assert tool_units([user("go"), call_item, output_item]) == [[0], [1, 2]]
        repaired = repair_tool_pairing([user("go"), call_item, user("next")])
        assert call_item not in repaired


def test_a_text_edit_rewrites_only_outputs_that_are_strings() -> None:
    shot = {
        "type": "computer_call_output",
        "call_id": "c4",
        "output": {"type": "computer_screenshot", "image_url": "data:,"},
    }
    (block,) = inspect_message(shot).blocks
    assert with_tool_result_text(shot, block, "[masked]") == shot
    text_out = {"type": "local_shell_call_output", "call_id": "c1", "output": "a.py " * 50}
    (block,) = inspect_message(text_out).blocks
    assert with_tool_result_text(text_out, block, "[masked]")["output"] == "[masked]"

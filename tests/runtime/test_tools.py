"""memctx's tools for the model: definitions in two shapes, calls that never raise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memctx import MemoryContext, MemoryContextConfig, call_memory_tool, tool_definitions


@pytest.fixture
def mem(tmp_path: Path) -> Any:
    engine = MemoryContext(
        MemoryContextConfig(),
        store_dir=tmp_path / "store",
        session_id="s1",
        context_window_tokens=20_000,
    )
    yield engine
    engine.close()


def test_definitions_name_both_tools_in_each_providers_shape() -> None:
    openai = tool_definitions()
    assert [t["function"]["name"] for t in openai] == ["memory_search", "read_output_ref"]
    assert openai[0]["type"] == "function"
    assert openai[0]["function"]["parameters"]["required"] == ["query"]
    anthropic = tool_definitions("anthropic")
    assert [t["name"] for t in anthropic] == ["memory_search", "read_output_ref"]
    assert anthropic[1]["input_schema"]["required"] == ["ref"]
    openai[0]["function"]["name"] = "changed"  # each call hands out its own copy
    assert tool_definitions()[0]["function"]["name"] == "memory_search"
    with pytest.raises(ValueError, match="'openai' or 'anthropic'"):
        tool_definitions("gemini")  # type: ignore[arg-type]


def test_memory_search_answers_with_the_archived_message(mem: MemoryContext) -> None:
    mem.on_before_compact(
        [
            {"role": "user", "content": "The payment webhook is verified in src/pay/hook.py"},
            {"role": "assistant", "content": "Noted."},
        ]
    )
    mem.wait_idle()
    answer = call_memory_tool(mem, "memory_search", '{"query": "payment webhook verified"}')
    hits = json.loads(answer)
    assert hits and "src/pay/hook.py" in hits[0]["content"]


def test_read_output_ref_gives_back_a_kept_output_and_refuses_traversal(
    mem: MemoryContext, tmp_path: Path
) -> None:
    big = "".join(f"line {i}: compiling module {i}\n" for i in range(12_000))
    mem.on_before_compact(
        [
            {"role": "user", "content": "run the build"},
            {"role": "tool", "tool_call_id": "x", "content": big},
        ]
    )
    mem.wait_idle()
    refs = sorted(p.name for p in (tmp_path / "store").rglob("tool-output/*.json"))
    assert refs, "the oversized output was kept whole"
    text = call_memory_tool(mem, "read_output_ref", {"ref": f"tool-output/{refs[0]}"})
    assert "line 6000: compiling module 6000" in text
    refused = call_memory_tool(mem, "read_output_ref", {"ref": "../../etc/passwd"})
    assert refused.startswith("error: invalid output ref")


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        ("memory_search", "{not json", "not a JSON object"),
        ("memory_search", "[1, 2]", "must be a JSON object"),
        ("memory_search", {"query": ""}, "non-empty string 'query'"),
        ("memory_search", {"query": "x", "limit": 0}, "from 1 to 20"),
        ("read_output_ref", {"ref": 7}, "string 'ref'"),
        ("delete_memory", {}, "unknown tool 'delete_memory'"),
    ],
)
def test_a_malformed_call_is_an_error_text_never_an_exception(
    mem: MemoryContext, name: str, arguments: Any, says: str
) -> None:
    answer = call_memory_tool(mem, name, arguments)
    assert answer.startswith("error: ") and says in answer

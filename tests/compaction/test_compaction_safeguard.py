"""The safeguard sections: tool failures, read and modified files, the split-turn prefix."""

from __future__ import annotations

from typing import Any

import pytest
from compaction_support import call, pi_call, pi_result, result, user

from memctx.compaction import (
    MAX_TOOL_FAILURE_CHARS,
    MAX_TOOL_FAILURES,
    SPLIT_TURN_HEADER,
    TOOL_FAILURES_HEADER,
    FileOperations,
    ToolFailure,
    collect_file_operations,
    collect_tool_failures,
    compute_file_lists,
    format_file_operations,
    format_split_turn,
    format_tool_failures,
    parse_file_operations,
)
from tests.strategies import FORMATS, Call, Turn, render

# --- tool failures -------------------------------------------------------------------------


def test_limits_are_the_seed_ones() -> None:
    assert (MAX_TOOL_FAILURES, MAX_TOOL_FAILURE_CHARS) == (8, 240)
    assert TOOL_FAILURES_HEADER == "## Tool Failures"
    assert SPLIT_TURN_HEADER == "**Turn Context (split turn):**"


def test_failed_results_are_collected_in_order_with_their_tool_name() -> None:
    messages = [
        user("go"),
        pi_call("t1", "bash", cmd="make"),
        pi_result("t1", "bash", "make: *** [all] Error 2", is_error=True),
        pi_call("t2", "read", path="a.py"),
        pi_result("t2", "read", "fine"),
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "u1", "name": "edit", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "u1",
                    "content": "no match",
                    "is_error": True,
                }
            ],
        },
    ]
    failures = collect_tool_failures(messages)
    assert failures == [
        ToolFailure("t1", "bash", "make: *** [all] Error 2"),
        ToolFailure("u1", "edit", "no match"),  # the name comes from the call
    ]


def test_a_gemini_error_response_is_a_failure() -> None:
    messages = [
        {"role": "model", "parts": [{"functionCall": {"name": "grep", "args": {"q": "x"}}}]},
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "grep", "response": {"error": "bad regex"}}}],
        },
    ]
    (failure,) = collect_tool_failures(messages)
    assert failure.tool_name == "grep" and "bad regex" in failure.summary


def test_failures_are_deduplicated_by_call_id_and_whitespace_is_folded() -> None:
    bad = pi_result("t1", "bash", "line one\n\n   line two\t end", is_error=True)
    again = pi_result("t1", "bash", "the same call reported twice", is_error=True)
    failures = collect_tool_failures([pi_call("t1", "bash"), bad, again])
    assert failures == [ToolFailure("t1", "bash", "line one line two end")]


def test_a_failure_is_cut_to_240_characters() -> None:
    long = pi_result("t1", "bash", "E" * 1000, is_error=True)
    (failure,) = collect_tool_failures([pi_call("t1", "bash"), long])
    assert len(failure.summary) == MAX_TOOL_FAILURE_CHARS
    assert failure.summary == "E" * 237 + "..."
    empty = pi_result("t2", "bash", "", is_error=True)
    (failure,) = collect_tool_failures([pi_call("t2", "bash"), empty])
    assert failure.summary == "failed (no output)"


def test_the_section_lists_at_most_eight_failures_then_a_count() -> None:
    failures = [ToolFailure(f"t{i}", "bash", f"error {i} " + "x" * 300) for i in range(11)]
    failures = [ToolFailure(f.tool_id, f.tool_name, f.summary[:240]) for f in failures]
    section = format_tool_failures(failures)
    lines = section.splitlines()
    assert lines[0] == TOOL_FAILURES_HEADER
    assert len(lines) == 1 + MAX_TOOL_FAILURES + 1
    assert lines[-1] == "- ...and 3 more"
    assert all(line.startswith("- bash: error ") for line in lines[1:-1])
    assert all(len(line) <= len("- bash: ") + MAX_TOOL_FAILURE_CHARS for line in lines[1:])
    assert "error 8" not in section
    assert format_tool_failures([]) == ""


def test_twenty_real_failures_make_a_bounded_section() -> None:
    messages: list[Any] = []
    for i in range(20):
        messages += [
            pi_call(f"t{i}", "bash"),
            pi_result(f"t{i}", "bash", f"failure {i}: " + "y" * 500, is_error=True),
        ]
    section = format_tool_failures(collect_tool_failures(messages))
    entries = section.splitlines()[1:]
    assert len(entries) == 9 and entries[-1] == "- ...and 12 more"
    assert all(len(e) <= len("- bash: ") + 240 for e in entries)


def test_successful_results_are_not_failures() -> None:
    messages = [call("c1", "bash"), result("c1", "Error: in the output but not an error")]
    assert collect_tool_failures(messages) == []


# --- file operations -----------------------------------------------------------------------


def test_files_are_computed_from_the_tool_calls() -> None:
    messages = [
        call("1", "read", path="src/a.py"),
        call("2", "Read", file_path="src/b.py"),
        call("3", "write", path="src/new.py"),
        call("4", "Edit", file_path="src/b.py"),
        call("5", "MultiEdit", file_path="src/c.py"),
        call("6", "str_replace_editor", command="view", path="docs/x.md"),
        call("7", "str_replace_editor", command="create", path="docs/y.md"),
        call("8", "str_replace_editor", command="str_replace", path="docs/z.md"),
        call("9", "bash", path="not/a/file/tool.py"),
        call("10", "read"),  # no path
        {
            "role": "assistant",
            "tool_calls": [{"id": "11", "function": {"name": "read", "arguments": "{not json"}}],
        },
        call("12", "NotebookEdit", notebook_path="nb.ipynb"),
    ]
    ops = collect_file_operations(messages)
    assert ops.read == {"src/a.py", "src/b.py", "docs/x.md"}
    assert ops.written == {"src/new.py", "docs/y.md"}
    assert ops.edited == {"src/b.py", "src/c.py", "docs/z.md", "nb.ipynb"}
    read_only, modified = compute_file_lists(ops)
    assert read_only == ["docs/x.md", "src/a.py"]  # b.py was also edited: listed as modified
    assert modified == ["docs/y.md", "docs/z.md", "nb.ipynb", "src/b.py", "src/c.py", "src/new.py"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_files_are_read_in_every_format(fmt: str) -> None:
    turn = Turn(
        user_text="go",
        assistant_text="",
        thinking=None,
        calls=[
            Call("read", {"path": "a.py"}, "contents"),
            Call("edit", {"path": "b.py"}, "edited"),
            Call("grep", {"path": "c.py"}, "nothing"),
        ],
    )
    messages = render(fmt, False, [turn])
    read_only, modified = compute_file_lists(collect_file_operations(messages))
    assert (read_only, modified) == (["a.py"], ["b.py"])


def test_file_sections_round_trip_through_a_summary() -> None:
    section = format_file_operations(["a.py", "docs/b.md"], ["c.py"])
    assert section == (
        "<read-files>\na.py\ndocs/b.md\n</read-files>\n\n<modified-files>\nc.py\n</modified-files>"
    )
    parsed = parse_file_operations(f"Earlier work.\n\n{section}\n\nMore text.")
    assert parsed.read == {"a.py", "docs/b.md"} and parsed.edited == {"c.py"}
    assert format_file_operations([], []) == ""
    assert format_file_operations([], ["x"]) == "<modified-files>\nx\n</modified-files>"
    assert parse_file_operations("no lists here") == FileOperations()


def test_operations_merge_and_a_changed_file_is_not_listed_as_read() -> None:
    ops = parse_file_operations("<read-files>\na.py\nb.py\n</read-files>")
    ops.update(FileOperations(written={"b.py"}))
    assert compute_file_lists(ops) == (["a.py"], ["b.py"])


def test_split_turn_section() -> None:
    section = format_split_turn("The user asked to migrate the schema.")
    assert section.startswith("---\n\n" + SPLIT_TURN_HEADER + "\n\n")
    assert section.endswith("The user asked to migrate the schema.")

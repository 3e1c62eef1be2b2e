"""``memctx mcp``: the mcp SDK's own stdio client lists and calls the tools of the server run
as a subprocess, over a store a PreCompact hook filled."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import anyio
from helpers.claude_code_sessions import session_records, write_session
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from memctx.integrations import run_hook

BIG_MARKER = "checksum-row-77321"


def _filled_store(tmp_path: Path) -> Path:
    records = session_records("sess-1", 8)
    # A tool output far too long to index whole: archived as a note (its head and tail)
    # naming the output ref that keeps its middle, where the marker is.
    lines = [f"line {i}: value {i * 7}" for i in range(30_000)]
    lines[15_000] = BIG_MARKER
    big = "\n".join(lines)
    records[2]["message"]["content"][0]["content"] = big
    transcript = write_session(tmp_path / "sess-1.jsonl", records)
    store = tmp_path / "store"
    event = {
        "session_id": "sess-1",
        "transcript_path": str(transcript),
        "cwd": str(tmp_path),
        "hook_event_name": "PreCompact",
        "trigger": "auto",
    }
    assert run_hook(io.StringIO(json.dumps(event)), io.StringIO(), store_dir=store) == 0
    (store / "MEMORY.md").write_text("# Project memory\nDeploy with make ship.\n", "utf-8")
    return store


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def _session(store: Path) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memctx.cli", "mcp", "--store", str(store)]
    )
    out: dict[str, Any] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        out["tools"] = sorted(tool.name for tool in (await session.list_tools()).tools)
        found = await session.call_tool(
            "memory_search", {"query": "staging database password rotates", "limit": 5}
        )
        out["search"] = _text(found)
        big = await session.call_tool("memory_search", {"query": "line value tool output"})
        out["big"] = _text(big)
        refs = re.findall(r"tool-output/[A-Za-z0-9._-]+\.json", out["big"])
        out["ref"] = refs[0] if refs else None
        if refs:
            out["read"] = _text(await session.call_tool("read_output_ref", {"ref": refs[0]}))
        bad = await session.call_tool("read_output_ref", {"ref": "../../etc/passwd"})
        out["bad_ref"] = _text(bad)
        empty = await session.call_tool("memory_search", {"query": "  "})
        out["bad_query"] = _text(empty)
        out["get"] = _text(await session.call_tool("memory_get", {"path": "MEMORY.md"}))
        out["bad_get"] = _text(await session.call_tool("memory_get", {"path": "/etc/passwd"}))
    return out


def test_an_mcp_client_lists_and_calls_the_tools(tmp_path: Path) -> None:
    store = _filled_store(tmp_path)
    out = anyio.run(_session, store)
    assert out["tools"] == ["memory_get", "memory_search", "read_output_ref"]
    hits = json.loads(out["search"])
    assert any("staging database password rotates" in hit["content"] for hit in hits)
    assert out["ref"] is not None, out["big"]
    assert BIG_MARKER in out["read"]
    assert out["bad_ref"].startswith("error:")
    assert out["bad_query"].startswith("error: memory_search needs a non-empty string")
    assert "Deploy with make ship." in out["get"]
    assert out["bad_get"].startswith("error:")

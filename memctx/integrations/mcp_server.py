"""``memctx mcp``: an MCP server over stdio (the official ``mcp`` Python SDK) that lets the
model search its pre-compaction history.

Tools: ``memory_search`` and ``read_output_ref`` answer exactly as the agent-loop tools of
:func:`memctx.runtime.call_memory_tool` (one implementation of their checks and errors), over
every session of the store; ``memory_get`` reads lines of the memory files (``MEMORY.md``,
``memory/*.md``) in the store. Answers are text and never an exception: a bad argument or a
store problem comes back as ``"error: ..."`` saying what to change.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from memctx.config import MemoryContextConfig
from memctx.retrieval import make_embedder
from memctx.runtime import MemoryContext, call_memory_tool
from memctx.store import MemoryFiles

__all__ = ["build_server", "serve"]

SERVER_NAME = "memctx"
_SESSION = "mcp"
_MAX_GET_LINES = 2_000


def _engine(store_dir: Path) -> MemoryContext:
    config = MemoryContextConfig().with_overrides({"crossSession": True})
    return MemoryContext(config, store_dir=store_dir, session_id=_SESSION)


def build_server(store_dir: str | os.PathLike[str]) -> Any:
    """The MCP server over the store at ``store_dir`` (an ``mcp`` ``MCPServer``).

    Raises:
        ImportError: The ``mcp`` package is missing (``pip install 'memctx[mcp]'``).
    """
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError as exc:
        raise ImportError("memctx mcp needs the mcp package: pip install 'memctx[mcp]'") from exc
    store = Path(store_dir)
    engine = _engine(store)
    files: list[MemoryFiles] = []  # made on the first memory_get

    server = MCPServer(
        SERVER_NAME,
        instructions=(
            "Search this project's history from before compaction: memory_search for "
            "passages, read_output_ref for a whole tool output a passage names, memory_get "
            "for lines of MEMORY.md or memory/*.md."
        ),
    )

    @server.tool(
        name="memory_search",
        description=(
            "Search the archived history of this project's sessions (what compaction "
            "dropped). Returns JSON [{content, score, session_id, turn}]."
        ),
        structured_output=False,
    )
    def memory_search(query: str, limit: int = 5) -> str:
        return call_memory_tool(engine, "memory_search", {"query": query, "limit": limit})

    @server.tool(
        name="read_output_ref",
        description=(
            "The whole text of an archived tool output a memory_search hit names "
            "(ref like 'tool-output/<name>.json')."
        ),
        structured_output=False,
    )
    def read_output_ref(ref: str) -> str:
        return call_memory_tool(engine, "read_output_ref", {"ref": ref})

    @server.tool(
        name="memory_get",
        description=(
            "Lines of a memory file of the store (MEMORY.md or memory/*.md): from_line "
            "(1-based) and at most `lines` lines."
        ),
        structured_output=False,
    )
    def memory_get(path: str, from_line: int = 1, lines: int = 200) -> str:
        try:
            if not 1 <= lines <= _MAX_GET_LINES:
                return f"error: memory_get 'lines' must be from 1 to {_MAX_GET_LINES}"
            if not files:
                files.append(MemoryFiles(store, embedder=make_embedder("hash")))
            text = files[0].memory_get(path, from_line, lines)
            return text if text else f"(no lines at {path}:{from_line})"
        except Exception as exc:  # a tool answer, never a crash of the server
            return f"error: memory_get failed: {type(exc).__name__}: {exc}"

    return server


def serve(store_dir: str | os.PathLike[str]) -> int:
    """Serve over stdio until the client closes the stream; 0."""
    build_server(store_dir).run("stdio")
    return 0

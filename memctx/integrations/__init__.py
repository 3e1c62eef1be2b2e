"""Where agents live: Claude Code's hooks and the MCP server (and, later, framework
adapters and the proxy) built on :mod:`memctx.runtime` and :mod:`memctx.strategies`.

May import: every package below it (strategies and everything under them). The ``mcp``
package is an optional extra (``memctx[mcp]``), imported only when the server is built.
"""

from __future__ import annotations

from .claude_code import (
    HOOK_EVENTS as HOOK_EVENTS,
)
from .claude_code import (
    MAX_CONTEXT_CHARS as MAX_CONTEXT_CHARS,
)
from .claude_code import (
    default_store_dir as default_store_dir,
)
from .claude_code import (
    install as install,
)
from .claude_code import (
    run_hook as run_hook,
)
from .claude_code import (
    settings_paths as settings_paths,
)
from .claude_code import (
    uninstall as uninstall,
)
from .mcp_server import build_server as build_server
from .mcp_server import serve as serve

__all__: list[str] = []

"""Where agents live: the ways an agent reaches memctx without calling the library itself.

:mod:`memctx.integrations.claude_code` holds Claude Code's hooks and their installer,
:mod:`memctx.integrations.mcp_server` the MCP server (``memory_search``, ``read_output_ref``,
``memory_get``), and :mod:`memctx.integrations.proxy` an HTTP proxy in front of a provider's
API: any agent that lets its base URL be set gets memctx's context management on every call.
:mod:`memctx.integrations.runner` steps a strategy the way every framework adapter does.

May import: :mod:`memctx.strategies` and everything below it. ``mcp`` and ``aiohttp`` are
optional extras (``memctx[mcp]``, ``memctx[proxy]``), imported only when used.
"""

from __future__ import annotations

from .claude_code import (
    HOOK_EVENTS,
    MAX_CONTEXT_CHARS,
    default_store_dir,
    install,
    run_hook,
    settings_paths,
    uninstall,
)
from .mcp_server import build_server, serve
from .proxy import ProxySettings, ProxyStats, build_proxy_app, serve_proxy
from .runner import RunnerStats, RunnerStep, StrategyRunner

__all__: list[str] = []

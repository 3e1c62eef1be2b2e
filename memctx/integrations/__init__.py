"""Where agents live: the ways an agent reaches memctx without calling the library itself.

:mod:`memctx.integrations.proxy` is an HTTP proxy in front of a provider's API: any agent that
lets its base URL be set gets memctx's context management on every model call.

May import: :mod:`memctx.strategies` and everything below it.
"""

from __future__ import annotations

from .proxy import STATS_KEY, ProxySettings, ProxyStats, build_proxy_app, serve_proxy

__all__: list[str] = []

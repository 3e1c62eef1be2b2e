"""An HTTP proxy that runs a memctx strategy on every model call an agent sends.

The agent's base URL points here (``ANTHROPIC_BASE_URL=http://HOST:PORT`` or
``OPENAI_BASE_URL=http://HOST:PORT/v1``); each ``POST /v1/messages`` (Anthropic Messages) or
``POST /v1/chat/completions`` (OpenAI Chat Completions) has its messages replaced by what the
session's strategy prepares (recall block, trimming, compaction) and goes on to the upstream.
Everything else of the request (model, tools, ``stream``, the auth headers) is forwarded as
the client sent it, and the upstream's answer, errors and server-sent events included, comes
back byte for byte: the proxy never decompresses or re-encodes it.

Why a failure inside memctx forwards the original request: the proxy sits on the agent's only
path to its model, so memctx going wrong must cost the agent its memory, never its call. Such
failures are counted (:class:`ProxyStats`) and logged without the request's content.

Auth headers travel in memory only: nothing here writes headers anywhere, and the strategy
sees the messages alone.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memctx.config import MemoryContextConfig
from memctx.strategies import Strategy, make_strategy
from memctx.text import redact

from .runner import StrategyRunner

if TYPE_CHECKING:  # aiohttp is the optional extra memctx[proxy]: imported when a proxy is built
    from aiohttp import ClientSession, web

__all__ = ["ProxySettings", "ProxyStats", "build_proxy_app", "serve_proxy"]

log = logging.getLogger(__name__)

SESSION_HEADER = "x-memctx-session"
ANTHROPIC_PATH = "/v1/messages"
OPENAI_PATH = "/v1/chat/completions"
_SESSION_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
# Headers that describe one connection or one body encoding, never forwarded as they are.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)


@dataclass(frozen=True)
class ProxySettings:
    """How one proxy runs.

    Attributes:
        upstream: The provider's base URL (``https://api.anthropic.com``); request paths are
            appended to it.
        store_dir: The strategy's store, shared by every session of this proxy.
        window: The model's context window in tokens.
        strategy: A registered strategy name (``memory-context`` by default).
        config: memctx settings; ``None`` means the defaults.
        max_body_bytes: Larger request bodies get 413 without reaching the upstream.
        max_concurrency: Requests handled at once; the others wait their turn.
        max_sessions: Strategies kept open; the least recently used one is closed beyond it.
        upstream_timeout: Seconds to connect to the upstream and between two reads of its
            answer (a long stream that keeps sending is not cut).
    """

    upstream: str
    store_dir: Path
    window: int
    strategy: str = "memory-context"
    config: MemoryContextConfig | None = None
    max_body_bytes: int = 32 * 1024 * 1024
    max_concurrency: int = 64
    max_sessions: int = 256
    upstream_timeout: float = 600.0

    def __post_init__(self) -> None:
        if not self.upstream.startswith(("http://", "https://")):
            raise ValueError(
                f"upstream {self.upstream!r} is not an http(s) URL; give e.g. https://api.anthropic.com"
            )
        for name in ("window", "max_body_bytes", "max_concurrency", "max_sessions"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.upstream_timeout <= 0:
            raise ValueError(f"upstream_timeout must be positive, got {self.upstream_timeout!r}")


@dataclass
class ProxyStats:
    """What the proxy has done since it started (counts only, no content).

    Attributes:
        requests: Requests to the two model endpoints.
        prepared: Requests whose messages the strategy prepared.
        memctx_failures: Requests forwarded as the client sent them because memctx failed.
        upstream_failures: Requests the upstream could not be reached for (answered 502/504).
        prepare_seconds: Time spent in the strategy, summed.
    """

    requests: int = 0
    prepared: int = 0
    memctx_failures: int = 0
    upstream_failures: int = 0
    prepare_seconds: float = 0.0
    sessions: dict[str, int] = field(default_factory=dict)


def session_id_for(headers: Any, body: dict[str, Any], provider: str) -> str:
    """The session a request belongs to: its ``x-memctx-session`` header, else a stable hash.

    The hash covers the system prompt and the first user message, which an agent resends
    unchanged on every call of one conversation.

    Raises:
        ValueError: The header holds characters a session id cannot (letters, digits, ``._-``).
    """
    given = headers.get(SESSION_HEADER)
    if given is not None:
        if not _SESSION_ID.match(given):
            raise ValueError(
                f"{SESSION_HEADER} {given[:40]!r} is not a session id; "
                "use 1-128 letters, digits, '.', '_' or '-'"
            )
        return str(given)
    messages = body.get("messages") or []
    system: Any = body.get("system") if provider == "anthropic" else None
    if system is None:
        system = [
            m for m in messages if isinstance(m, dict) and m.get("role") in ("system", "developer")
        ][:1]
    first_user = next(
        (m for m in messages if isinstance(m, dict) and m.get("role") == "user"), None
    )
    digest = hashlib.sha256(json.dumps([system, first_user], sort_keys=True, default=str).encode())
    return f"proxy-{digest.hexdigest()[:24]}"


def _system_message(system: Any) -> dict[str, Any]:
    return {"role": "system", "content": system}


class MemctxFailed(Exception):
    """The strategy failed on a request (logged and counted by its runner)."""


def prepared_body(runner: StrategyRunner, body: dict[str, Any], provider: str) -> dict[str, Any]:
    """The request body with its messages replaced by what the session's strategy prepares.

    A client resends its whole history every time; the runner goes on from the history its
    strategy compacted while the request starts with what the last one sent
    (:mod:`memctx.integrations.runner`), so a compaction happens once and the prefix sent
    upstream stays stable for the provider's prompt cache.

    Anthropic's top-level ``system`` goes to the strategy as a leading system message (so
    that it is counted against the window and kept) and comes back top-level; system
    messages the strategy adds in front join it as text blocks, since the Messages API has
    no system role.
    """
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("the request has no 'messages' list")
    system = body.get("system") if provider == "anthropic" else None
    history = ([_system_message(system)] if system is not None else []) + list(messages)
    step = runner.step(history)
    if step.failed:  # the runner logged and counted it; the caller forwards the original
        raise MemctxFailed("the strategy failed on this request")
    sent = step.context
    out = dict(body)
    if provider == "anthropic":
        leading = 0
        while leading < len(sent) and sent[leading].get("role") == "system":
            leading += 1
        head, rest = sent[:leading], sent[leading:]
        if head:
            out["system"] = _merged_system(system, head)
        out["messages"] = rest
    else:
        out["messages"] = sent
    return out


def _merged_system(original: Any, head: list[dict[str, Any]]) -> Any:
    if len(head) == 1 and head[0].get("content") is original:
        return original
    blocks: list[Any] = []
    for message in head:
        content = message.get("content")
        if isinstance(content, str):
            blocks.append({"type": "text", "text": content})
        elif isinstance(content, list):
            blocks.extend(content)
    return blocks


@dataclass
class _Open:
    """A session's strategy (in its runner) and the lock that gives it one request at a time."""

    runner: StrategyRunner
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class _Sessions:
    """One strategy per session, each used by one request at a time, the oldest closed first."""

    def __init__(self, settings: ProxySettings, factory: Callable[[str], Strategy]) -> None:
        self._settings = settings
        self._factory = factory
        self._open: OrderedDict[str, _Open] = OrderedDict()
        self._guard = asyncio.Lock()

    async def get(self, session_id: str) -> _Open:
        async with self._guard:
            entry = self._open.get(session_id)
            if entry is not None:
                self._open.move_to_end(session_id)
                return entry
            strategy = await asyncio.to_thread(self._factory, session_id)
            entry = _Open(StrategyRunner(strategy))
            self._open[session_id] = entry
            while len(self._open) > self._settings.max_sessions:
                _, old = self._open.popitem(last=False)
                async with old.lock:
                    await asyncio.to_thread(_close_quietly, old)
            return entry

    async def close(self) -> None:
        async with self._guard:
            while self._open:
                _, entry = self._open.popitem(last=False)
                async with entry.lock:
                    await asyncio.to_thread(_close_quietly, entry)


def _close_quietly(entry: _Open) -> None:
    entry.runner.end_session()  # neither raises: closing must not take the proxy down
    entry.runner.close()


def build_proxy_app(
    settings: ProxySettings,
    *,
    strategy_factory: Callable[[str], Strategy] | None = None,
    stats: ProxyStats | None = None,
) -> web.Application:
    """The proxy as an aiohttp application (``serve_proxy`` runs it; tests run it directly).

    Args:
        settings: Upstream, store, window and limits.
        strategy_factory: Builds the strategy of a session id; by default
            :func:`memctx.make_strategy` with ``settings``.
        stats: Where the proxy counts what it does; pass one to read it while it serves.

    Raises:
        ImportError: aiohttp is missing (``pip install 'memctx[proxy]'``).
    """
    from aiohttp import ClientError, ClientSession, ClientTimeout, web

    def default_factory(session_id: str) -> Strategy:
        return make_strategy(
            settings.strategy,
            store_dir=settings.store_dir,
            session_id=session_id,
            window=settings.window,
            config=settings.config,
        )

    stats = stats if stats is not None else ProxyStats()
    sessions = _Sessions(settings, strategy_factory or default_factory)
    slots = asyncio.Semaphore(settings.max_concurrency)
    app = web.Application(client_max_size=settings.max_body_bytes)
    timeout = ClientTimeout(
        total=None, connect=settings.upstream_timeout, sock_read=settings.upstream_timeout
    )
    upstream = settings.upstream.rstrip("/")

    clients: list[ClientSession] = []  # the one upstream client, made on the server's loop

    async def on_startup(app: web.Application) -> None:
        # auto_decompress=False: the answer's bytes go back exactly as the upstream sent them.
        clients.append(ClientSession(timeout=timeout, auto_decompress=False))

    async def on_cleanup(app: web.Application) -> None:
        for client in clients:
            await client.close()
        clients.clear()
        await sessions.close()

    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)

    async def transformed(raw: bytes, headers: Any, provider: str) -> bytes:
        """The body to forward: the strategy's messages, or ``raw`` when memctx fails."""
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the request body is not a JSON object")
            session_id = session_id_for(headers, body, provider)
            entry = await sessions.get(session_id)
            async with entry.lock:
                started = time.perf_counter()
                out = await asyncio.to_thread(prepared_body, entry.runner, body, provider)
                stats.prepare_seconds += time.perf_counter() - started
            stats.prepared += 1
            stats.sessions[session_id] = stats.sessions.get(session_id, 0) + 1
            return json.dumps(out).encode()
        except Exception as exc:  # the agent's call goes on without memctx
            stats.memctx_failures += 1
            # An error's text can quote the conversation: it is redacted like anything
            # memctx keeps, so a secret in a message never reaches the log this way.
            log.warning(
                "memctx proxy: forwarding a request unchanged (%s: %s)",
                type(exc).__name__,
                redact(str(exc)[:200]),
            )
            return raw

    async def model_call(request: web.Request) -> web.StreamResponse:
        provider = "anthropic" if request.path == ANTHROPIC_PATH else "openai"
        stats.requests += 1
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _error(
                413, f"request body over {settings.max_body_bytes} bytes; raise --max-body-bytes"
            )
        async with slots:
            body = await transformed(raw, request.headers, provider)
            return await forward(request, body)

    async def passthrough(request: web.Request) -> web.StreamResponse:
        async with slots:
            return await forward(request, await request.read())

    async def forward(request: web.Request, body: bytes) -> web.StreamResponse:
        headers = {
            k: v
            for k, v in request.headers.items()
            if k.lower() not in _HOP_BY_HOP and k.lower() != SESSION_HEADER
        }
        client = clients[0]
        url = upstream + request.path_qs
        try:
            async with client.request(request.method, url, data=body, headers=headers) as answer:
                response = web.StreamResponse(status=answer.status, reason=answer.reason)
                for key, value in answer.headers.items():
                    if key.lower() not in _HOP_BY_HOP:
                        response.headers.add(key, value)
                await response.prepare(request)
                async for chunk in answer.content.iter_any():
                    await response.write(chunk)
                await response.write_eof()
                return response
        except TimeoutError:
            stats.upstream_failures += 1
            return _error(504, f"the upstream did not answer within {settings.upstream_timeout} s")
        except ClientError as exc:
            stats.upstream_failures += 1
            return _error(502, f"the upstream could not be reached ({type(exc).__name__})")

    app.router.add_post(ANTHROPIC_PATH, model_call)
    app.router.add_post(OPENAI_PATH, model_call)
    app.router.add_route("*", "/{tail:.*}", passthrough)
    return app


def _error(status: int, message: str) -> web.Response:
    from aiohttp import web

    return web.json_response(
        {"type": "error", "error": {"type": "memctx_proxy_error", "message": message}},
        status=status,
    )


def export_lines(host: str, port: int) -> list[str]:
    """The lines an agent's shell exports to send its calls through the proxy."""
    base = f"http://{host}:{port}"
    return [f"export ANTHROPIC_BASE_URL={base}", f"export OPENAI_BASE_URL={base}/v1"]


def serve_proxy(settings: ProxySettings, host: str, port: int) -> None:
    """Run the proxy until interrupted, after printing the lines to export."""
    from aiohttp import web

    app = build_proxy_app(settings)
    for line in export_lines(host, port):
        print(line, flush=True)
    web.run_app(app, host=host, port=port, print=None, access_log=None)

"""``make bench``: what the proxy adds to a model call beyond the strategy's own work.

The same seeded 2,000-message session is sent call after call (one new user turn each time),
once straight into a :class:`~memctx.integrations.StrategyRunner` (what an agent running the
strategy in process pays, the continuation after a compaction included) and once
through the proxy over HTTP to an upstream on 127.0.0.1 that answers at once, so the ratio is
the proxy's cost (JSON parsing and re-encoding, HTTP both ways, the session lookup) over the
hook alone. Each side has its own store, so neither finds the other's archive.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from aiohttp import web

from memctx.integrations import ProxySettings, ProxyStats, StrategyRunner, build_proxy_app
from memctx.strategies import make_strategy

from .runtime import make_session

__all__ = ["run_proxy_bench"]

WINDOW = 100_000


def _serve(loop: asyncio.AbstractEventLoop, app: web.Application) -> tuple[web.AppRunner, int]:
    async def start() -> tuple[web.AppRunner, int]:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        return runner, int(port)

    return asyncio.run_coroutine_threadsafe(start(), loop).result(60)


def _upstream() -> web.Application:
    answer = {"id": "m", "type": "message", "role": "assistant", "content": []}

    async def reply(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response(answer)

    app = web.Application(client_max_size=1 << 30)
    app.router.add_post("/v1/messages", reply)
    return app


def _bodies(n_messages: int, calls: int) -> list[dict[str, Any]]:
    session = make_session(n_messages, seed=0)
    system, history = session[0]["content"], session[1:]
    bodies = []
    for call in range(calls):
        turn = {"role": "user", "content": f"next step please ({call})"}
        messages = [*history, turn]
        bodies.append({"model": "m", "max_tokens": 16, "system": system, "messages": messages})
        history = [*messages, {"role": "assistant", "content": f"done ({call})"}]
    return bodies


def run_proxy_bench(n_messages: int = 2_000, calls: int = 6) -> float:
    """Print and return the proxy's mean time per request over the hook's (first call excluded)."""
    bodies = _bodies(n_messages, calls)
    with tempfile.TemporaryDirectory() as hook_dir, tempfile.TemporaryDirectory() as proxy_dir:
        in_process = StrategyRunner(
            make_strategy("memory-context", store_dir=hook_dir, session_id="bench", window=WINDOW)
        )
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, daemon=True)
        thread.start()
        up_runner, up_port = _serve(loop, _upstream())
        settings = ProxySettings(
            upstream=f"http://127.0.0.1:{up_port}",
            store_dir=Path(proxy_dir),
            window=WINDOW,
            max_body_bytes=1 << 30,
        )
        stats = ProxyStats()
        app = build_proxy_app(settings, stats=stats)
        runner, port = _serve(loop, app)
        hook_times, proxy_times = [], []
        # Interleaved, so that warm-up and the machine's load fall on both sides alike.
        with httpx.Client(timeout=600) as client:
            for body in bodies:
                history = [{"role": "system", "content": body["system"]}, *body["messages"]]
                started = time.perf_counter()
                if in_process.step(history).failed:
                    raise RuntimeError("the strategy failed in process")
                hook_times.append(time.perf_counter() - started)
                payload = json.dumps(body).encode()
                started = time.perf_counter()
                answer = client.post(
                    f"http://127.0.0.1:{port}/v1/messages",
                    content=payload,
                    headers={"content-type": "application/json", "x-memctx-session": "bench"},
                )
                proxy_times.append(time.perf_counter() - started)
                answer.raise_for_status()
        in_process.close()
        if stats.prepared != calls or stats.memctx_failures:
            raise RuntimeError(f"the proxy did not run the strategy on every request: {stats}")

        async def stop() -> None:
            await runner.cleanup()
            await up_runner.cleanup()

        asyncio.run_coroutine_threadsafe(stop(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
    hook = sum(hook_times[1:]) / (calls - 1)
    proxy = sum(proxy_times[1:]) / (calls - 1)
    print(
        f"proxy at {len(bodies[-1]['messages'])} messages: {proxy * 1e3:.0f} ms per request vs "
        f"the hook alone {hook * 1e3:.0f} ms -> {proxy / hook:.2f}x"
        f" (+{(proxy - hook) * 1e3:.0f} ms: JSON and HTTP both ways)"
    )
    return proxy / hook


if __name__ == "__main__":
    run_proxy_bench()

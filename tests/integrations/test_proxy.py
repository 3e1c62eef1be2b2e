"""The memctx proxy between the real anthropic/openai clients and a fake upstream on 127.0.0.1.

The fake upstream records every request it receives (headers and body) and answers with
canned JSON, canned server-sent events, or an error, so each test can check what the
provider would have seen and what the client got back.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from aiohttp import web

from memctx import TokenCounter, pairing_violations
from memctx.integrations.proxy import (
    STATS_KEY,
    ProxySettings,
    ProxyStats,
    build_proxy_app,
    export_lines,
    session_id_for,
)
from memctx.strategies import Strategy

API_KEY = "sk-ant-test-SECRETKEY-0123456789abcdef"
WINDOW = 12_000

ANTHROPIC_JSON = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 1},
}
OPENAI_JSON = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-test",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "ok"},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
}


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> bytes:
    out = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {payload}\n\n")
    return "".join(out).encode()


ANTHROPIC_SSE = _sse(
    [
        ("message_start", {"type": "message_start", "message": {**ANTHROPIC_JSON, "content": []}}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Hel"},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "lo"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 2},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
)
OPENAI_SSE = _sse(
    [
        (
            None,
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "gpt-test",
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}}],
            },
        ),
        (
            None,
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "gpt-test",
                "choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": "stop"}],
            },
        ),
        (None, "[DONE]"),
    ]
)


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Upstream:
    received: list[Received] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.received.append(Received(request.path, headers, body))
        if request.headers.get("x-test-sleep"):
            await asyncio.sleep(float(request.headers["x-test-sleep"]))
        if request.headers.get("x-test-fail"):
            status = int(request.headers["x-test-fail"])
            error = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
            return web.json_response(error, status=status, headers={"x-upstream": "1"})
        anthropic_path = request.path == "/v1/messages"
        if body.get("stream"):
            response = web.StreamResponse(headers={"content-type": "text/event-stream"})
            await response.prepare(request)
            sse = ANTHROPIC_SSE if anthropic_path else OPENAI_SSE
            for start in range(0, len(sse), 37):  # many small writes, as a real stream
                await response.write(sse[start : start + 37])
                await asyncio.sleep(0)
            await response.write_eof()
            return response
        return web.json_response(ANTHROPIC_JSON if anthropic_path else OPENAI_JSON)


class Servers:
    """The fake upstream and the proxy, served on 127.0.0.1 from one background loop."""

    def __init__(self, store: Path, **settings: Any) -> None:
        self.upstream = Upstream()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.runners: list[web.AppRunner] = []
        up_app = web.Application()
        up_app.router.add_route("*", "/{tail:.*}", self.upstream.handle)
        up_port = self._serve(up_app)
        factory = settings.pop("strategy_factory", None)
        upstream = settings.pop("upstream", f"http://127.0.0.1:{up_port}")
        self.settings = ProxySettings(upstream=upstream, store_dir=store, window=WINDOW, **settings)
        self.app = build_proxy_app(self.settings, strategy_factory=factory)
        self.port = self._serve(self.app)
        self.base = f"http://127.0.0.1:{self.port}"

    def _serve(self, app: web.Application) -> int:
        async def start() -> int:
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            self.runners.append(runner)
            server = site._server  # the port the OS chose
            assert server is not None
            return int(server.sockets[0].getsockname()[1])  # type: ignore[attr-defined]

        return asyncio.run_coroutine_threadsafe(start(), self.loop).result(30)

    @property
    def stats(self) -> ProxyStats:
        return self.app[STATS_KEY]

    def close(self) -> None:
        if not self.thread.is_alive():
            return

        async def stop() -> None:
            for runner in reversed(self.runners):
                await runner.cleanup()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    running = Servers(tmp_path / "store")
    yield running
    running.close()


def _anthropic(servers: Servers, **headers: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key=API_KEY, base_url=servers.base, max_retries=0, default_headers=headers or None
    )


def _openai(servers: Servers, **headers: str) -> openai.OpenAI:
    return openai.OpenAI(
        api_key=API_KEY,
        base_url=servers.base + "/v1",
        max_retries=0,
        default_headers=headers or None,
    )


def _long_conversation(turns: int, fact_turn: int | None = None) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for i in range(turns):
        text = f"Step {i}: we looked at module part{i}.py and " + "its helper functions " * 30
        if i == fact_turn:
            text = (
                "Remember: the deployment password rotation job is named zebracorn-rotator. " + text
            )
        messages.append({"role": "user", "content": text})
        messages.append({"role": "assistant", "content": f"Done with step {i}. " + "noted " * 40})
    return messages


def test_anthropic_request_reaches_upstream_within_the_window_with_system_top_level(
    servers: Servers,
) -> None:
    history = _long_conversation(150)
    history.append({"role": "user", "content": "What did we do in step 59?"})
    reply = _anthropic(servers, **{"x-memctx-session": "s-anthropic"}).messages.create(
        model="claude-test", max_tokens=64, system="You are a careful engineer.", messages=history
    )
    assert reply.content[0].type == "text" and reply.content[0].text == "ok"
    (got,) = servers.upstream.received
    sent = got.body["messages"]
    assert got.body["system"] == "You are a careful engineer."  # stays top-level, unchanged
    assert all(m["role"] in ("user", "assistant") for m in sent)
    assert sent[-1] == history[-1]
    assert not pairing_violations(sent)
    counter = TokenCounter()
    assert sum(counter.count_message(m) for m in sent) < sum(
        counter.count_message(m) for m in history
    )
    assert sum(counter.count_message(m) for m in sent) <= WINDOW
    assert got.body["model"] == "claude-test" and got.body["max_tokens"] == 64
    # auth forwarded untouched (this client version sends the key as a bearer token)
    assert API_KEY in (got.headers.get("x-api-key"), got.headers.get("authorization", "")[7:])
    assert got.headers["anthropic-version"]
    assert "x-memctx-session" not in got.headers
    assert servers.stats.prepared == 1 and servers.stats.memctx_failures == 0


def test_openai_recall_block_brings_back_an_archived_fact(servers: Servers) -> None:
    client = _openai(servers, **{"x-memctx-session": "s-recall"})
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful."}]
    history += _long_conversation(150, fact_turn=1)
    history.append(
        {"role": "user", "content": "What is the deployment password rotation job named?"}
    )
    client.chat.completions.create(model="gpt-test", messages=history)  # type: ignore[arg-type]
    sent = servers.upstream.received[-1].body["messages"]
    assert len(sent) < len(history)
    assert history[3] not in sent  # the message holding the fact was trimmed away ...
    recalled = [m for m in sent if "<recalled-context" in json.dumps(m)]
    assert recalled and "zebracorn-rotator" in json.dumps(recalled)  # ... and came back recalled
    assert sent[0] == history[0]


def test_anthropic_stream_arrives_byte_identical_and_parses(servers: Servers) -> None:
    body = {
        "model": "claude-test",
        "max_tokens": 16,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    with httpx.Client() as client:
        raw = client.post(
            servers.base + "/v1/messages",
            json=body,
            headers={"x-api-key": API_KEY, "anthropic-version": "2023-06-01"},
        )
    assert raw.status_code == 200
    assert raw.content == ANTHROPIC_SSE
    assert raw.headers["content-type"].startswith("text/event-stream")
    with _anthropic(servers).messages.stream(
        model="claude-test", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        assert "".join(stream.text_stream) == "Hello"


def test_openai_stream_arrives_byte_identical_and_parses(servers: Servers) -> None:
    with httpx.Client() as client:
        raw = client.post(
            servers.base + "/v1/chat/completions",
            json={
                "model": "gpt-test",
                "stream": True,
                "messages": [{"role": "user", "content": "hi"}],
            },
            headers={"authorization": f"Bearer {API_KEY}"},
        )
    assert raw.content == OPENAI_SSE
    chunks = _openai(servers).chat.completions.create(
        model="gpt-test", stream=True, messages=[{"role": "user", "content": "hi"}]
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Hello"


def test_upstream_errors_come_back_with_their_status(servers: Servers) -> None:
    with pytest.raises(anthropic.RateLimitError) as caught:
        _anthropic(servers, **{"x-test-fail": "429"}).messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.status_code == 429
    assert caught.value.response.headers["x-upstream"] == "1"
    with pytest.raises(openai.InternalServerError) as caught_openai:
        _openai(servers, **{"x-test-fail": "503"}).chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "hi"}]
        )
    assert caught_openai.value.status_code == 503


def test_unreachable_upstream_is_a_502(tmp_path: Path) -> None:
    running = Servers(tmp_path / "store", upstream="http://127.0.0.1:9")  # discard port: closed
    try:
        with pytest.raises(anthropic.APIStatusError) as caught:
            _anthropic(running).messages.create(
                model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
            )
        assert caught.value.status_code == 502
        assert running.stats.upstream_failures == 1
    finally:
        running.close()


def test_fifty_concurrent_sessions_each_answered_and_kept_apart(servers: Servers) -> None:
    def one(i: int) -> str:
        client = _openai(servers, **{"x-memctx-session": f"sess-{i}"})
        history = _long_conversation(8)
        history.append({"role": "user", "content": f"question {i}"})
        reply = client.chat.completions.create(model="gpt-test", messages=history)  # type: ignore[arg-type]
        return reply.choices[0].message.content or ""

    with ThreadPoolExecutor(max_workers=50) as pool:
        answers = list(pool.map(one, range(50)))
    assert answers == ["ok"] * 50
    assert len(servers.upstream.received) == 50
    assert sorted(servers.stats.sessions) == sorted(f"sess-{i}" for i in range(50))
    last_questions = {r.body["messages"][-1]["content"] for r in servers.upstream.received}
    assert last_questions == {f"question {i}" for i in range(50)}
    assert servers.stats.memctx_failures == 0


def test_api_keys_never_reach_the_store(servers: Servers, tmp_path: Path) -> None:
    _anthropic(servers, **{"x-memctx-session": "s-keys"}).messages.create(
        model="claude-test",
        max_tokens=8,
        messages=[*_long_conversation(40), {"role": "user", "content": "next"}],
    )
    _openai(servers, **{"x-memctx-session": "s-keys2"}).chat.completions.create(
        model="gpt-test",
        messages=[*_long_conversation(40), {"role": "user", "content": "next"}],  # type: ignore[arg-type]
    )
    servers.close()  # strategies closed: everything they write is on disk
    files = [p for p in (tmp_path / "store").rglob("*") if p.is_file()]
    assert files, "the strategy wrote nothing: this test would prove nothing"
    for path in files:
        data = path.read_bytes()
        assert b"SECRETKEY" not in data, path


_QUOTED_SECRET = "hunter2-Zq9xV7wLpR3k"


class _Broken:
    def compact(self, transcript: Any, tokens: int | None = None) -> Any:
        # An error quoting the conversation, secret included: the log must not keep it.
        raise RuntimeError(f"boom near 'password={_QUOTED_SECRET}'")

    def prepare(self, transcript: Any) -> Any:
        # An error quoting the conversation, secret included: the log must not keep it.
        raise RuntimeError(f"boom near 'password={_QUOTED_SECRET}'")

    def end_session(self, transcript: Any) -> None:
        pass

    def close(self) -> dict[str, float]:
        return {}


def test_a_memctx_failure_forwards_the_request_unchanged_and_counts_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    factory: Callable[[str], Strategy] = lambda _sid: _Broken()  # type: ignore[assignment,return-value]  # noqa: E731
    running = Servers(tmp_path / "store", strategy_factory=factory)
    try:
        history = [*_long_conversation(30), {"role": "user", "content": "go"}]
        reply = _anthropic(running).messages.create(
            model="claude-test", max_tokens=8, system="sys", messages=history
        )
        assert reply.content[0].type == "text"
        (got,) = running.upstream.received
        assert got.body["messages"] == history and got.body["system"] == "sys"
        assert running.stats.memctx_failures == 1 and running.stats.prepared == 0
        assert "RuntimeError" in caplog.text and _QUOTED_SECRET not in caplog.text
    finally:
        running.close()


def test_an_oversized_body_is_refused_with_413(tmp_path: Path) -> None:
    running = Servers(tmp_path / "store", max_body_bytes=2_000)
    try:
        with pytest.raises(anthropic.APIStatusError) as caught:
            _anthropic(running).messages.create(
                model="claude-test", max_tokens=8, messages=_long_conversation(10)
            )
        assert caught.value.status_code == 413
        assert not running.upstream.received
    finally:
        running.close()


def test_session_id_is_the_header_or_a_stable_hash() -> None:
    body = {"system": "s", "messages": [{"role": "user", "content": "a"}]}
    longer = {"system": "s", "messages": body["messages"] + [{"role": "assistant", "content": "b"}]}
    other = {"system": "t", "messages": body["messages"]}
    assert session_id_for({}, body, "anthropic") == session_id_for({}, longer, "anthropic")
    assert session_id_for({}, body, "anthropic") != session_id_for({}, other, "anthropic")
    assert session_id_for({"x-memctx-session": "abc"}, body, "anthropic") == "abc"
    with pytest.raises(ValueError, match="x-memctx-session"):
        session_id_for({"x-memctx-session": "../etc"}, body, "anthropic")


def test_settings_and_export_lines() -> None:
    assert export_lines("127.0.0.1", 8787) == [
        "export ANTHROPIC_BASE_URL=http://127.0.0.1:8787",
        "export OPENAI_BASE_URL=http://127.0.0.1:8787/v1",
    ]
    with pytest.raises(ValueError, match="http"):
        ProxySettings(upstream="api.anthropic.com", store_dir=Path("x"), window=10)
    with pytest.raises(ValueError, match="window"):
        ProxySettings(upstream="http://x", store_dir=Path("x"), window=0)


def test_cli_help_documents_every_option_and_bad_options_fail_clearly(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from memctx.cli import main

    with pytest.raises(SystemExit):
        main(["proxy", "--help"])
    text = capsys.readouterr().out
    for option in (
        "--upstream",
        "--listen",
        "--strategy",
        "--store",
        "--window",
        "--max-body-bytes",
        "--max-concurrency",
        "--max-sessions",
        "--upstream-timeout",
    ):
        assert option in text
    store = str(tmp_path / "s")
    common = ["proxy", "--upstream", "http://127.0.0.1:9", "--store", store]
    assert main([*common, "--window", "1000", "--listen", "nohost"]) == 2
    assert "--listen" in capsys.readouterr().err
    assert main([*common, "--window", "0"]) == 2
    assert "--window" in capsys.readouterr().err
    assert main(["proxy", "--upstream", "ftp://x", "--store", store, "--window", "10"]) == 2
    assert "http" in capsys.readouterr().err


def test_a_silent_upstream_is_a_504_after_the_timeout(tmp_path: Path) -> None:
    running = Servers(tmp_path / "store", upstream_timeout=0.3)
    try:
        with pytest.raises(anthropic.APIStatusError) as caught:
            _anthropic(running, **{"x-test-sleep": "3"}).messages.create(
                model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
            )
        assert caught.value.status_code == 504
        assert running.stats.upstream_failures == 1
    finally:
        running.close()


class _Overlap:
    """A strategy that notes whether two requests of its session ever ran in it at once."""

    def __init__(self) -> None:
        self.inside = 0
        self.most = 0
        self.calls = 0
        self.guard = threading.Lock()

    def compact(self, transcript: Any, tokens: int | None = None) -> Any:
        return None

    def prepare(self, transcript: Any) -> Any:
        with self.guard:
            self.inside += 1
            self.most = max(self.most, self.inside)
        threading.Event().wait(0.02)  # long enough for a second request to arrive meanwhile
        with self.guard:
            self.inside -= 1
            self.calls += 1
        return type("P", (), {"context": list(transcript)})()

    def end_session(self, transcript: Any) -> None:
        pass

    def close(self) -> dict[str, float]:
        return {}


def test_requests_of_one_session_are_serialised_and_sessions_run_in_parallel(
    tmp_path: Path,
) -> None:
    made: dict[str, _Overlap] = {}

    def factory(session_id: str) -> Strategy:
        made[session_id] = _Overlap()
        return made[session_id]  # type: ignore[return-value]

    running = Servers(tmp_path / "store", strategy_factory=factory)
    try:

        def one(i: int) -> None:
            _openai(running, **{"x-memctx-session": f"s{i % 2}"}).chat.completions.create(
                model="gpt-test", messages=[{"role": "user", "content": f"q{i}"}]
            )

        with ThreadPoolExecutor(max_workers=12) as pool:
            list(pool.map(one, range(12)))
        assert sorted(made) == ["s0", "s1"]
        assert [made[s].calls for s in ("s0", "s1")] == [6, 6]
        assert all(strategy.most == 1 for strategy in made.values())
    finally:
        running.close()


def test_api_keys_never_reach_the_log(servers: Servers, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    _anthropic(servers).messages.create(
        model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
    )
    with pytest.raises(anthropic.APIStatusError):
        _anthropic(servers, **{"x-test-fail": "500"}).messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )
    with httpx.Client() as client:  # not JSON: memctx fails, logs, forwards
        client.post(servers.base + "/v1/messages", content=b"{", headers={"x-api-key": API_KEY})
    assert servers.stats.memctx_failures == 1
    assert caplog.records and "SECRETKEY" not in caplog.text


def test_the_command_serves_and_prints_the_lines_to_export(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "memctx.cli", "proxy", "--upstream", "http://127.0.0.1:9"]
    command += ["--store", str(tmp_path / "s"), "--window", "8000", "--listen", f"127.0.0.1:{port}"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        first = process.stdout.readline().strip()
        second = process.stdout.readline().strip()
        assert first == f"export ANTHROPIC_BASE_URL=http://127.0.0.1:{port}"
        assert second == f"export OPENAI_BASE_URL=http://127.0.0.1:{port}/v1"
        for _ in range(100):  # the server is up once it answers (502: upstream is closed)
            try:
                answer = httpx.post(f"http://127.0.0.1:{port}/v1/messages", json={}, timeout=5)
                break
            except httpx.TransportError:
                threading.Event().wait(0.1)
        assert answer.status_code == 502
    finally:
        process.terminate()
        process.wait(30)

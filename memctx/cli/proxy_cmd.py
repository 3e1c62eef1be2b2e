"""``memctx proxy``: serve the memctx HTTP proxy in front of a provider's API.

The command checks its options, prints the line(s) an agent's shell exports to send its
calls through the proxy, and serves until interrupted (:mod:`memctx.integrations.proxy`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .options import OptionError, positive

__all__ = ["add_proxy_arguments", "proxy_command"]


def add_proxy_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``memctx proxy``, each documented in ``--help``."""
    parser.add_argument(
        "--upstream",
        required=True,
        help="the provider's base URL the proxy forwards to, e.g. https://api.anthropic.com "
        "or https://api.openai.com",
    )
    parser.add_argument(
        "--listen",
        default="127.0.0.1:8787",
        help="HOST:PORT to serve on (default 127.0.0.1:8787)",
    )
    parser.add_argument(
        "--strategy",
        default="memory-context",
        help="the strategy run on every call, maybe with settings "
        "(default memory-context; see memctx eval --help for the names)",
    )
    parser.add_argument(
        "--store",
        required=True,
        type=Path,
        help="directory of the strategy's store (archive, memory files), shared by all sessions",
    )
    parser.add_argument(
        "--window", required=True, type=int, help="the model's context window in tokens"
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=32 * 1024 * 1024,
        help="larger request bodies are refused with 413 (default 32 MiB)",
    )
    parser.add_argument(
        "--max-concurrency",
        type=int,
        default=64,
        help="requests handled at once; the others wait (default 64)",
    )
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=256,
        help="sessions kept open; the least recently used is closed beyond it (default 256)",
    )
    parser.add_argument(
        "--upstream-timeout",
        type=float,
        default=600.0,
        help="seconds to connect to the upstream and between two reads of its answer "
        "(default 600); past it the client gets 504",
    )


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` as a host and a port.

    Raises:
        OptionError: Not ``HOST:PORT`` with a port from 1 to 65535.
    """
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise OptionError(f"--listen {value!r} is not HOST:PORT; give e.g. 127.0.0.1:8787")
    return host, int(port)


def proxy_command(args: argparse.Namespace) -> int:
    """Run ``memctx proxy`` with parsed options; returns the exit status."""
    from memctx.integrations import ProxySettings, serve_proxy

    host, port = parse_listen(args.listen)
    positive("--window", args.window)
    positive("--max-body-bytes", args.max_body_bytes)
    positive("--max-concurrency", args.max_concurrency)
    positive("--max-sessions", args.max_sessions)
    if args.upstream_timeout <= 0:
        raise OptionError(
            f"--upstream-timeout must be a positive number, got {args.upstream_timeout}"
        )
    try:
        settings = ProxySettings(
            upstream=args.upstream,
            store_dir=args.store,
            window=args.window,
            strategy=args.strategy,
            max_body_bytes=args.max_body_bytes,
            max_concurrency=args.max_concurrency,
            max_sessions=args.max_sessions,
            upstream_timeout=args.upstream_timeout,
        )
    except ValueError as exc:
        raise OptionError(str(exc)) from exc
    args.store.mkdir(parents=True, exist_ok=True)
    serve_proxy(settings, host, port)
    return 0

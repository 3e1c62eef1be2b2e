"""The ``memctx`` command line.

Commands: ``eval`` (the benchmark), ``report`` (re-render a run), ``gen`` (scenario
datasets), ``replay`` (real transcripts through ``MemoryContext`` or a strategy:
:mod:`memctx.cli.replay_cmd`), ``search`` (memory_search over a store), ``check`` (load
transcripts, report pairing and redaction), ``calibrate`` (token counters against
provider-reported usage), ``foundation`` (check and calibrate; by default over the real
datasets), ``trajectories`` and ``proxy`` (:mod:`memctx.cli.proxy_cmd`). Heavy modules
are imported inside each command.

Every command that reads transcripts takes files, ``FILE#N`` (the N-th transcript of a file
holding several, counted from 0) and, for ``check``, ``calibrate`` and ``foundation``,
folders: :mod:`memctx.cli.inputs`.

Errors never end in a traceback: bad input (a :class:`~memctx.errors.MemctxError`, a file
that cannot be read, a bad option value) prints one line, ``memctx: error: <problem>; <fix>``,
and exits 2; anything else is a bug, reported as ``memctx: internal error`` with exit 1
(``MEMCTX_DEBUG=1`` shows the traceback). Exit 1 also means a command's check failed
(violations, the gate, transcripts left broken).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import get_args

from memctx.config import DEFAULT_TRANSFORMER_MODEL, TransformerModelName
from memctx.errors import MemctxError
from memctx.transcripts import shared_datasets_dir

from .claude_code_cmd import add_claude_code_parser, add_mcp_parser
from .compare_cmd import add_compare_arguments, compare_command
from .inputs import TRANSCRIPT_ARG_HELP, split_transcript_arg
from .options import (
    OptionError,
    describe_os_error,
    existing_dir,
    fail,
    positive,
)
from .proxy_cmd import add_proxy_arguments, proxy_command
from .replay_cmd import add_replay_arguments, replay_command
from .show_cmd import add_show_arguments, show_command

__all__ = ["main"]

DEBUG_ENV = "MEMCTX_DEBUG"


def _cmd_check(args: argparse.Namespace) -> int:
    from .foundation import check_transcripts

    positive("--trials", args.trials, zero=True)
    return check_transcripts(list(args.paths), trials=args.trials)


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from .foundation import calibrate_tokens

    return calibrate_tokens(_sources(args), models=args.model)


def _sources(args: argparse.Namespace) -> list[str]:
    """What ``calibrate`` and ``foundation`` read: each PATH (a file, ``FILE#N`` or a
    folder) and ``--datasets``; with neither, the shared datasets folder
    (``$MEMCTX_DATASETS``, else ``../shared/datasets``).

    Raises:
        OptionError: A path that does not exist, or no path and no datasets folder.
    """
    given = [*args.paths, *([args.datasets] if args.datasets else [])]
    for arg in given:
        if not split_transcript_arg(arg)[0].exists():
            option = "--datasets " if arg == args.datasets else ""
            raise OptionError(f"{option}{arg} not found; pass an existing file or folder")
    if given:
        return given
    root = shared_datasets_dir()
    if not root.is_dir():
        raise OptionError(
            f"no PATH given and no datasets folder at {root}; pass transcript files or "
            "folders, or --datasets DIR (or set MEMCTX_DATASETS)"
        )
    return [str(root)]


def _cmd_search(args: argparse.Namespace) -> int:
    import json

    from memctx.retrieval import make_embedder
    from memctx.store import RawStore, memory_search, validate_session_id
    from memctx.transcripts import check_input_file

    store_dir = Path(args.store)
    positive("--limit", args.limit)
    if not (store_dir / "segments.jsonl").exists():
        return fail(
            f"no segments.jsonl in {store_dir}: it is not a memctx store; pass the folder a "
            "store was written to (it holds segments.jsonl)"
        )
    check_input_file(store_dir / "segments.jsonl", what="store's segments.jsonl")
    if args.session is not None:
        validate_session_id(args.session)
    embedder = make_embedder(args.embedding, model=args.transformer_model)
    with RawStore(store_dir, embedder=embedder, eviction_days=None) as store:
        hits = memory_search(
            store,
            args.query,
            args.limit,
            session_id=args.session,
            cross_session=args.session is None,
        )
    print(json.dumps(hits, ensure_ascii=False, indent=2))
    return 0


def _cmd_trajectories(args: argparse.Namespace) -> int:
    """``memctx eval --suite trajectories`` under its own name: the trajectories through
    every strategy (``full`` always among them: it is what ``saved`` is measured against),
    hash embeddings, written as a run folder whose summary, report and gate see them."""
    from memctx.harness import (
        DEFAULT_STRATEGIES,
        EvalError,
        EvalOptions,
        run_eval,
    )
    from memctx.strategies import parse_strategy

    from .evaluate import finish_eval

    root = shared_datasets_dir(args.datasets)
    existing_dir("--datasets", root)
    positive("--window", args.window)
    positive("--limit", args.limit)
    strategies = list(dict.fromkeys(["full", *(args.strategy or DEFAULT_STRATEGIES)]))
    for strategy in strategies:  # every name checked before the first replay
        try:
            parse_strategy(strategy)
        except ValueError as exc:
            raise OptionError(f"--strategy: {exc}") from None
    options = EvalOptions(
        suites=("trajectories",),
        strategies=tuple(strategies),
        embeddings=("hash",),
        windows=tuple(args.window or ()),
        real_datasets=root,
        limit=args.limit,
        out_dir=Path(args.out) if args.out else None,
        progress=not args.no_progress,
    )
    try:
        run_dir = run_eval(options)
    except (EvalError, MemctxError, ValueError) as exc:
        return fail(str(exc))
    status = finish_eval(run_dir, no_report=args.no_report)
    table = run_dir / "trajectories.md"
    if table.is_file():
        print("\n" + table.read_text(encoding="utf-8").strip())
    return status


def _cmd_eval(args: argparse.Namespace) -> int:
    from .evaluate import eval_command

    return eval_command(args)


def _cmd_foundation(args: argparse.Namespace) -> int:
    from .foundation import calibrate_tokens, check_transcripts

    positive("--trials", args.trials, zero=True)
    sources = _sources(args)
    status = check_transcripts(sources, trials=args.trials)
    if status:
        return status
    print()
    return calibrate_tokens(sources, models=["claude-sonnet-4-5"], required=False)


def _cmd_gen(args: argparse.Namespace) -> int:
    from memctx.harness.gen import gen_main

    status: int = gen_main(list(args.args))
    return status


def _cmd_report(args: argparse.Namespace) -> int:
    from memctx.harness.report import report_main

    return report_main(list(args.args))


def _add_sources(command: argparse.ArgumentParser, what: str) -> None:
    command.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help=f"{what}: files or folders (the datasets root reads claude-code/, swe-agent/, "
        "*/sample_raw.json; any other folder its *.jsonl, *.json, *.traj); " + TRANSCRIPT_ARG_HELP,
    )
    command.add_argument(
        "--datasets",
        metavar="PATH",
        help="a folder (the datasets root or its claude-code folder) or a file, read as a "
        "PATH; default, when no PATH is given: $MEMCTX_DATASETS, else ../shared/datasets",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memctx", description="Memory-enhanced compaction for LLM coding agents."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    check = sub.add_parser(
        "check", help="load transcripts; report messages, pairing violations and redaction hits"
    )
    check.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="transcript files (Claude Code, SWE-agent, OpenHands, ...) or folders of them; "
        + TRANSCRIPT_ARG_HELP,
    )
    check.add_argument(
        "--trials", type=int, default=50, help="random 20%% deletions repaired per transcript"
    )
    check.set_defaults(func=_cmd_check)

    calibrate = sub.add_parser(
        "calibrate", help="token counters vs provider-reported input tokens (Claude Code)"
    )
    _add_sources(calibrate, "Claude Code sessions")
    calibrate.add_argument(
        "--model",
        action="append",
        default=None,
        help="litellm model whose tokenizer to measure (repeatable; default claude-sonnet-4-5)",
    )
    calibrate.set_defaults(func=_cmd_calibrate)

    search = sub.add_parser("search", help="memory_search over a store: JSON results")
    search.add_argument("store", help="store directory (holds segments.jsonl)")
    search.add_argument("query")
    search.add_argument("--session", help="only this session (default: every session)")
    search.add_argument("--limit", type=int, default=5, help="results, at most 20")
    search.add_argument(
        "--embedding",
        choices=["hash", "transformer"],
        default="hash",
        help="must match the embedder that built the store",
    )
    search.add_argument(
        "--transformer-model",
        choices=get_args(TransformerModelName),
        default=DEFAULT_TRANSFORMER_MODEL,
        help="the transformer's model (transformerModel), as the store was built with",
    )
    search.set_defaults(func=_cmd_search)

    proxy = sub.add_parser(
        "proxy",
        help="an HTTP proxy in front of a provider's API: memctx on every call of any agent",
        description="Serve Anthropic Messages (POST /v1/messages) and OpenAI Chat Completions "
        "(POST /v1/chat/completions), streaming or not: each request's messages go through the "
        "strategy of its session (the x-memctx-session header, else a hash of the system prompt "
        "and the first user message) and on to --upstream; auth headers and the answer pass "
        "through unchanged. Prints the line to export (ANTHROPIC_BASE_URL / OPENAI_BASE_URL).",
    )
    add_proxy_arguments(proxy)
    proxy.set_defaults(func=proxy_command)

    replay = sub.add_parser(
        "replay",
        help="play real transcripts through MemoryContext or a strategy: tokens, trims, "
        "recalls, compactions per call",
    )
    add_replay_arguments(replay)
    replay.set_defaults(func=replay_command)

    trajectories = sub.add_parser(
        "trajectories",
        help="real SWE-agent / OpenHands / Claude Code trajectories through every strategy at "
        "small windows (memctx eval --suite trajectories, hash embeddings): a run folder",
    )
    trajectories.add_argument(
        "--datasets", help="datasets folder (default $MEMCTX_DATASETS, else ../shared/datasets)"
    )
    trajectories.add_argument(
        "--window", type=int, action="append", help="tokens (repeatable; default 16000, 32000)"
    )
    trajectories.add_argument(
        "--strategy", action="append", help="repeatable; default: all (full is always played)"
    )
    trajectories.add_argument("--limit", type=int, help="at most N trajectories per dataset")
    trajectories.add_argument(
        "--out",
        help="run directory to write (default: a new reports/runs/<time>-<config>/, and "
        "reports/latest points at it)",
    )
    trajectories.add_argument("--no-progress", action="store_true", help="no per-job lines")
    trajectories.add_argument("--no-report", action="store_true", help="skip report.md/html/charts")
    trajectories.set_defaults(func=_cmd_trajectories)

    from .eval_args import add_eval_arguments

    evaluate = sub.add_parser(
        "eval",
        help="the benchmark: scenarios x strategies x embeddings -> results, summary, report",
    )
    add_eval_arguments(evaluate)
    evaluate.set_defaults(func=_cmd_eval)

    foundation = sub.add_parser(
        "foundation", help="pairing repair and token calibration on the real transcripts"
    )
    _add_sources(foundation, "transcripts")
    foundation.add_argument("--trials", type=int, default=50)
    foundation.set_defaults(func=_cmd_foundation)

    show = sub.add_parser(
        "show",
        help="one probe of a run: the context its call sent, the recall block, what was left "
        "out and why (a deterministic replay of its scenario)",
    )
    add_show_arguments(show)
    show.set_defaults(func=show_command)

    compare = sub.add_parser(
        "compare", help="deltas between two finished runs (A: baseline, B: after), with intervals"
    )
    add_compare_arguments(compare)
    compare.set_defaults(func=compare_command)

    add_claude_code_parser(sub)
    add_mcp_parser(sub)

    for name, func, text in (
        ("gen", _cmd_gen, "generate the scenario datasets (memctx gen --help)"),
        ("report", _cmd_report, "re-render a run directory's report (memctx report --help)"),
    ):
        command = sub.add_parser(name, help=text, add_help=False)
        command.add_argument("args", nargs=argparse.REMAINDER)
        command.set_defaults(func=func)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``memctx`` command; return its exit status (see the module docstring)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _dispatch(argv)
    except KeyboardInterrupt:
        print("memctx: interrupted", file=sys.stderr)
        return 130
    except MemctxError as exc:
        return fail(str(exc))
    except BrokenPipeError:  # the reader of our output went away (`memctx ... | head`)
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:
        return fail(describe_os_error(exc))
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        return _internal_error(exc)


def _dispatch(argv: list[str]) -> int:
    # gen and report own their options (and --help): hand them the rest of the line as is.
    passthrough = {"gen": _cmd_gen, "report": _cmd_report}
    if argv and argv[0] in passthrough:
        return passthrough[argv[0]](argparse.Namespace(args=argv[1:]))
    args = build_parser().parse_args(argv)
    status: int = args.func(args)
    return status


def _internal_error(exc: BaseException) -> int:
    """A bug, not bad input: say where, not the exception's text (it may quote input)."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if f"{os.sep}memctx{os.sep}" in f.filename] or frames
    where = f" at {Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else ""
    print(
        f"memctx: internal error: {type(exc).__name__}{where}; this is a bug in memctx: "
        f"re-run with {DEBUG_ENV}=1 to see the traceback and report it",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

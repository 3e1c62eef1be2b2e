"""The ``memctx`` command line.

Commands: ``eval`` (the benchmark), ``report`` (re-render a run), ``gen`` (scenario
datasets), ``replay`` (a real transcript through ``MemoryContext``), ``search``
(memory_search over a store), ``check`` (load transcripts, report pairing and redaction),
``calibrate`` (token counters against provider-reported usage) and ``foundation`` (check and
calibrate over the real datasets). Heavy modules are imported inside each command.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["main"]

DEFAULT_DATASETS = Path(__file__).resolve().parents[3] / "shared" / "datasets"


def _datasets_dir(value: str | None) -> Path:
    return Path(value or os.environ.get("MEMCTX_DATASETS") or DEFAULT_DATASETS)


def _cmd_check(args: argparse.Namespace) -> int:
    from .foundation import check_transcripts

    return check_transcripts([Path(p) for p in args.paths], trials=args.trials)


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from .foundation import calibrate_tokens

    return calibrate_tokens(_datasets_dir(args.datasets), models=args.model)


def _cmd_search(args: argparse.Namespace) -> int:
    import json

    from memctx.errors import StoreError
    from memctx.retrieval import make_embedder
    from memctx.store import RawStore, memory_search

    store_dir = Path(args.store)
    if not (store_dir / "segments.jsonl").exists():
        print(f"error: no segments.jsonl in {store_dir} (is it a memctx store?)", file=sys.stderr)
        return 2
    try:
        with RawStore(
            store_dir, embedder=make_embedder(args.embedding), eviction_days=None
        ) as store:
            hits = memory_search(
                store,
                args.query,
                args.limit,
                session_id=args.session,
                cross_session=args.session is None,
            )
    except StoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(hits, ensure_ascii=False, indent=2))
    return 0


def _cmd_replay(args: argparse.Namespace) -> int:
    import json

    from memctx.errors import MemctxError
    from memctx.harness import HOOK_STRATEGY, format_replay, replay_transcript
    from memctx.transcripts import load_transcript

    reports = []
    try:
        transcript = load_transcript(Path(args.transcript))
        overrides = _replay_overrides(args)
        for window in args.window:
            reports.append(
                replay_transcript(
                    transcript,
                    window=window,
                    strategy=args.strategy or HOOK_STRATEGY,
                    embedding=args.embedding,
                    overrides=overrides,
                    store_dir=Path(args.store) / f"w{window}" if args.store else None,
                )
            )
    except (MemctxError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([r.as_dict() for r in reports], indent=2))
    else:
        print(format_replay(reports, per_call=args.per_turn))
    # A call over the window is a violation for every strategy but ``full``, whose oversized
    # calls are only "not fit" (see memctx.harness.engine).
    return 1 if any(r.summary()["violations"] for r in reports) else 0


def _replay_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The config file's settings (memory context always on), then each ``--set``."""
    from memctx.config import load_config

    overrides: dict[str, Any] = {}
    if args.config:
        overrides.update(load_config(args.config).model_dump(by_alias=True))
        overrides["enabled"] = True  # replaying is the opt-in, whatever the file says
    overrides.update(dict(item.split("=", 1) for item in args.set or []))
    return overrides


def _cmd_eval(args: argparse.Namespace) -> int:
    from .evaluate import eval_command

    return eval_command(args)


def _cmd_foundation(args: argparse.Namespace) -> int:
    from .foundation import calibrate_tokens, check_transcripts

    root = _datasets_dir(args.datasets)
    if not root.exists():
        print(f"error: datasets folder not found: {root} (pass --datasets DIR)", file=sys.stderr)
        return 2
    status = check_transcripts(sorted(_transcript_files(root)), trials=args.trials)
    return status or calibrate_tokens(root, models=["claude-sonnet-4-5"])


def _cmd_gen(args: argparse.Namespace) -> int:
    from memctx.harness.gen import gen_main

    status: int = gen_main(list(args.args))
    return status


def _cmd_report(args: argparse.Namespace) -> int:
    from memctx.harness.report import report_main

    return report_main(list(args.args))


def _transcript_files(root: Path) -> list[Path]:
    patterns = ("claude-code/*.jsonl", "swe-agent/*.traj", "*/sample_raw.json")
    return [p for pattern in patterns for p in root.glob(pattern)]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memctx", description="Memory-enhanced compaction for LLM coding agents."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    check = sub.add_parser(
        "check", help="load transcripts; report messages, pairing violations and redaction hits"
    )
    check.add_argument("paths", nargs="+", help="transcript files (Claude Code, SWE-agent, ...)")
    check.add_argument(
        "--trials", type=int, default=50, help="random 20%% deletions repaired per transcript"
    )
    check.set_defaults(func=_cmd_check)

    calibrate = sub.add_parser(
        "calibrate", help="token counters vs provider-reported input tokens (Claude Code)"
    )
    calibrate.add_argument("--datasets", help="datasets folder (default ../shared/datasets)")
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
    search.set_defaults(func=_cmd_search)

    replay = sub.add_parser(
        "replay",
        help="play a real transcript through MemoryContext: tokens, trims, recalls per call",
    )
    replay.add_argument("transcript", help="Claude Code JSONL, OpenAI/Anthropic JSON(L), ...")
    replay.add_argument(
        "--window",
        type=int,
        action="append",
        default=None,
        help="context window in tokens (repeatable; default 200000 and 64000)",
    )
    replay.add_argument("--config", help="memctx config file or openclaw.json")
    replay.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="config override (repeatable)"
    )
    replay.add_argument("--embedding", choices=["hash", "transformer"], default="hash")
    replay.add_argument("--store", help="keep the stores here (default: a temporary folder)")
    replay.add_argument(
        "--strategy",
        help="the harness strategy to play it through (full, truncate, memory-context, ...); "
        "default memory-context-hook: MemoryContext alone at the transcript's own compactions",
    )
    replay.add_argument("--per-turn", action="store_true", help="print one line per call")
    replay.add_argument("--json", action="store_true", help="print JSON instead of tables")
    replay.set_defaults(func=_cmd_replay)

    from .evaluate import add_eval_arguments

    evaluate = sub.add_parser(
        "eval",
        help="the benchmark: scenarios x strategies x embeddings -> results, summary, report",
    )
    add_eval_arguments(evaluate)
    evaluate.set_defaults(func=_cmd_eval)

    foundation = sub.add_parser(
        "foundation", help="pairing repair and token calibration on the real transcripts"
    )
    foundation.add_argument("--datasets", help="datasets folder (default ../shared/datasets)")
    foundation.add_argument("--trials", type=int, default=50)
    foundation.set_defaults(func=_cmd_foundation)

    for name, func, text in (
        ("gen", _cmd_gen, "generate the scenario datasets (memctx gen --help)"),
        ("report", _cmd_report, "re-render a run directory's report (memctx report --help)"),
    ):
        command = sub.add_parser(name, help=text, add_help=False)
        command.add_argument("args", nargs=argparse.REMAINDER)
        command.set_defaults(func=func)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    argv = list(sys.argv[1:] if argv is None else argv)
    # gen and report own their options (and --help): hand them the rest of the line as is.
    passthrough = {"gen": _cmd_gen, "report": _cmd_report}
    if argv and argv[0] in passthrough:
        return passthrough[argv[0]](argparse.Namespace(args=argv[1:]))
    args = build_parser().parse_args(argv)
    if args.command == "replay" and args.window is None:
        args.window = [200_000, 64_000]  # eval's default is each scenario's own window
    status: int = args.func(args)
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

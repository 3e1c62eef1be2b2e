"""``memctx show RUN PROBE_ID``: the context one probe's call would have sent, and why.

Kept apart from :mod:`memctx.cli.main` so the dispatcher stays thin; the work is
:func:`memctx.harness.explain_probe` (a deterministic replay of that one scenario).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from .options import fail

__all__ = ["add_show_arguments", "show_command"]


def add_show_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``memctx show``."""
    parser.add_argument(
        "run", metavar="RUN", help="a run folder, its summary.json, a run id, or 'latest'"
    )
    parser.add_argument("probe", metavar="PROBE_ID", help="the probe's id (results.jsonl 'probe')")
    parser.add_argument(
        "--strategy",
        help="whose call to show (default: memory-context when the run has it, else the first)",
    )
    parser.add_argument("--embedding", help="which embedding (default: the first that ran)")
    parser.add_argument(
        "--reports", default="reports", help="where run ids are looked up (default: reports)"
    )
    parser.add_argument(
        "--no-recall-text", action="store_true", help="leave the recall block's full text out"
    )
    parser.add_argument("--json", action="store_true", help="the explanation as one JSON object")


def show_command(args: argparse.Namespace) -> int:
    """Explain one probe; exit 0, or 2 on a bad run, probe or strategy."""
    from memctx.errors import MemctxError
    from memctx.harness import EvalError, explain_probe, format_explanation

    try:
        explanation = explain_probe(
            args.run,
            args.probe,
            strategy=args.strategy,
            embedding=args.embedding,
            reports=Path(args.reports),
        )
    except (FileNotFoundError, ValueError, EvalError, MemctxError) as exc:
        return fail(str(exc))
    if args.json:
        data = asdict(explanation)
        print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    else:
        print(format_explanation(explanation, full_recall=not args.no_recall_text))
    return 0

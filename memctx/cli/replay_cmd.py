"""``memctx replay``: real transcripts through ``MemoryContext`` or any harness strategy.

One run is every transcript the arguments name (``FILE``, ``FILE#N``: see
:mod:`memctx.cli.inputs`) x every ``--strategy`` x every ``--window``, one report each, in
that order. Everything is checked before the first replay: the windows, the strategies,
the config and ``--set`` overrides, the credentials of a real ``extractionModel``, and every
file. The output is one format whatever the options:

- text (:func:`memctx.harness.format_replay`): a section per report, then one table;
- ``--json``: a JSON list with one object per report (:meth:`ReplayReport.as_dict`:
  ``summary``, ``violation_kinds``, ``calibration``, ``compactions``,
  ``recorded_compactions``, ``recovery_paths``, ``calls``), ``--per-turn`` or not.

Exit 0, 1 when a report has a violation, 2 on bad input (nothing replayed).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from memctx.errors import MemctxError

from .inputs import TRANSCRIPT_ARG_HELP, load_transcript_arg
from .options import (
    CONFIG_HELP,
    OptionError,
    check_llm_credentials,
    config_from_args,
    describe_os_error,
    fail,
    positive,
)

__all__ = ["DEFAULT_WINDOWS", "add_replay_arguments", "replay_command"]

DEFAULT_WINDOWS = (200_000, 64_000)  # eval's default is each scenario's own window


def add_replay_arguments(replay: argparse.ArgumentParser) -> None:
    """The ``replay`` command's arguments."""
    replay.add_argument(
        "transcript",
        nargs="+",
        metavar="FILE[#N]",
        help="Claude Code JSONL, OpenAI/Anthropic JSON(L), SWE-agent, OpenHands, ...; "
        + TRANSCRIPT_ARG_HELP,
    )
    replay.add_argument(
        "--window",
        type=int,
        action="append",
        default=None,
        help="context window in tokens (repeatable; default 200000 and 64000)",
    )
    replay.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    replay.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="config override (repeatable)"
    )
    replay.add_argument("--embedding", choices=["hash", "transformer"], default="hash")
    replay.add_argument(
        "--store",
        help="keep the stores here, a folder per replay: [tN-]wWINDOW[-STRATEGY], tN when "
        "several transcripts are played, the strategy when several are (default: a "
        "temporary folder)",
    )
    replay.add_argument(
        "--strategy",
        action="append",
        help="a harness strategy to play it through (repeatable: full, truncate, openclaw, "
        "meerkat, memory-context, ...); default memory-context-hook: MemoryContext alone at "
        "the transcript's own compactions",
    )
    replay.add_argument(
        "--calibrate",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="read --window in the provider's tokens, converted with the usage the "
        "transcript reports (system prompt and tools it does not hold, the tokenizers' "
        "ratio); default: when it reports usage",
    )
    replay.add_argument(
        "--per-turn", action="store_true", help="also print one line per call in each section"
    )
    replay.add_argument(
        "--json",
        action="store_true",
        help="print a JSON list instead, one object per transcript x strategy x window "
        "(summary, violation_kinds, calibration, compactions, recorded_compactions, "
        "recovery_paths, calls), whatever the other options",
    )


def replay_command(args: argparse.Namespace) -> int:
    """Run ``memctx replay``; return its exit status (see the module docstring)."""
    from memctx.harness import format_replay, replay_transcript
    from memctx.strategies import HOOK_STRATEGY

    windows = args.window or list(DEFAULT_WINDOWS)
    strategies = args.strategy or [HOOK_STRATEGY]
    reports = []
    try:
        positive("--window", windows)
        _check_strategies(strategies)
        if args.store and Path(args.store).exists() and not Path(args.store).is_dir():
            raise OptionError(f"--store {args.store} is a file, not a folder; pass a folder")
        overrides = _replay_overrides(args)
        transcripts = [t for arg in args.transcript for t in load_transcript_arg(arg)]
        for n, transcript in enumerate(transcripts):
            for window in windows:
                for strategy in strategies:
                    where = _store_dir(
                        args.store, n, len(transcripts), window, strategy, strategies
                    )
                    reports.append(
                        replay_transcript(
                            transcript,
                            window=window,
                            strategy=strategy,
                            embedding=args.embedding,
                            overrides=overrides,
                            store_dir=where,
                            calibrate=args.calibrate,
                        )
                    )
    except (MemctxError, ValueError) as exc:
        return fail(str(exc))
    except OSError as exc:
        return fail(describe_os_error(exc))
    if args.json:
        print(json.dumps([r.as_dict() for r in reports], indent=2))
    else:
        print(format_replay(reports, per_call=args.per_turn))
    # A call over the window is a violation for every strategy but ``full``, whose oversized
    # calls are only "not fit" (see memctx.harness.engine).
    return 1 if any(r.summary()["violations"] for r in reports) else 0


def _store_dir(
    store: str | None, n: int, count: int, window: int, strategy: str, strategies: list[str]
) -> Path | None:
    """``STORE/[tN-]wWINDOW[-STRATEGY]``: the transcript's number only when there are
    several, the strategy's name only when there are several."""
    if not store:
        return None
    folder = f"w{window}" if len(strategies) == 1 else f"w{window}-{strategy}"
    return Path(store) / (f"t{n}-{folder}" if count > 1 else folder)


def _check_strategies(strategies: list[str]) -> None:
    from memctx.strategies import parse_strategy

    for strategy in strategies:
        try:
            parse_strategy(strategy)
        except ValueError as exc:
            raise OptionError(f"--strategy: {exc}") from None


def _replay_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The settings ``--config`` and ``--set`` give (:func:`config_from_args`, as ``eval``
    reads them), as dotted keys; a real ``extractionModel``'s credentials checked with them.

    A file's ``enabled=false`` is kept: the replay then shows memctx switched off (the engine
    warns once); ``--set enabled=true`` turns it on."""
    config = config_from_args(args.config, args.set)
    check_llm_credentials(config.extraction_model, option="extractionModel")
    return config.explicit_settings()

"""``memctx eval``'s arguments: the parser's options and the harness options built from them.

Every check that can be made from the arguments alone is made here, before any work
(:func:`options_from_args`): bad numbers, ``--config`` files and ``--set`` keys (read as
every command reads them: :func:`memctx.cli.options.config_from_args`), limits that need a
model.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .options import CONFIG_HELP, OptionError, config_from_args, positive

__all__ = [
    "add_eval_arguments",
    "llm_limits",
    "options_from_args",
]


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``memctx eval`` (every one documented in ``--help``)."""
    from memctx.harness import DEFAULT_EMBEDDINGS, DEFAULT_STRATEGIES

    parser.add_argument(
        "--suite",
        action="append",
        help="suite to run (repeatable; default: every synthetic suite). Real-data suites, "
        "run only when named, from --real-datasets: locomo (LoCoMo conversations through "
        "every strategy, and evidence recall of the recall block and memory_search beside "
        "the published figures), claude-code (hand-written probes at real Claude Code "
        "compactions, and Claude Code's own summary against memctx), trajectories "
        "(SWE-agent / OpenHands / Claude Code trajectories at 16K and 32K windows); their "
        "records are in summary.json with the others, never pooled into 'all'; a real-data "
        "suite whose data is absent is skipped with the reason",
    )
    parser.add_argument(
        "--strategy",
        action="append",
        help=f"strategy (repeatable; default: {', '.join(DEFAULT_STRATEGIES)})",
    )
    parser.add_argument(
        "--embedding",
        action="append",
        choices=list(DEFAULT_EMBEDDINGS),
        help="embedder for strategies that search (repeatable; default: hash and transformer, "
        "hash only with --quick)",
    )
    parser.add_argument(
        "--window",
        type=int,
        action="append",
        help="context window in tokens (repeatable; default: each scenario's own window)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a small generated set (every suite, hash only unless --embedding): under a minute",
    )
    parser.add_argument(
        "--jobs", type=int, help="worker processes, or Ray actors (default: CPU count)"
    )
    parser.add_argument(
        "--executor",
        choices=["local", "ray"],
        default="local",
        help="where the jobs run: local (this machine's process pool, the default) or ray "
        "(a Ray cluster, pip install 'memctx[ray]'); the results are the same",
    )
    parser.add_argument(
        "--ray-address",
        metavar="HOST:PORT",
        help="with --executor ray: the cluster to join (ray start --head prints it; default: "
        "start a local Ray with --jobs CPUs)",
    )
    parser.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="config override (repeatable)"
    )
    parser.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    parser.add_argument(
        "--llm", metavar="MODEL", help="answer and judge probes with this litellm model"
    )
    parser.add_argument(
        "--llm-concurrency",
        type=int,
        metavar="N",
        help="with --llm: calls in flight at once per provider, across every worker "
        "(default 4); rate limits and transient errors are retried with jittered backoff",
    )
    parser.add_argument(
        "--max-cost",
        type=float,
        metavar="USD",
        help="with --llm: stop before a call that could take the run's spend over USD; the "
        "summary covers the jobs done and the exit status is 1",
    )
    parser.add_argument(
        "--answer-model",
        default="claude-sonnet-4-5",
        help="litellm model whose prices give cost_usd (default claude-sonnet-4-5)",
    )
    parser.add_argument(
        "--out",
        help="run directory to write (default: a new reports/runs/<time>-<config>/, and "
        "reports/latest points at it once the run has finished)",
    )
    parser.add_argument(
        "--datasets",
        help="folder of scenario files SUITE.jsonl(.gz) (default: datasets/v1); any file there "
        "is a suite, so your own scenarios run next to the built-in ones",
    )
    parser.add_argument(
        "--real-datasets",
        metavar="DIR",
        help="folder of the external data the real-data suites read (locomo/, claude-code/, "
        "swe-agent/, ...; default: $MEMCTX_DATASETS, else ../shared/datasets)",
    )
    parser.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="real-data suites: at most N LoCoMo conversations, Claude Code sessions, or "
        "trajectories per dataset (default: all; 1 with --quick)",
    )
    parser.add_argument(
        "--plugin",
        action="append",
        metavar="MODULE",
        help="import this module first, in every worker too (repeatable): it can call "
        "memctx.strategies.register_strategy to add a strategy (an installed package's "
        "'memctx.strategies' entry points need no --plugin)",
    )
    parser.add_argument("--seed", type=int, default=0, help="generator and bootstrap seed")
    parser.add_argument(
        "--replicates",
        type=int,
        default=1,
        metavar="N",
        help="play the synthetic suites N times: replicate 0 on the run's own scenarios, "
        "replicate r regenerated with the seed --seed + r (other facts, filler and positions); "
        "the report adds each configuration's accuracy per replicate, mean, min-max and a 95 %% "
        "t interval over them; tables, gate and compare read replicate 0 (default 1; "
        "real-data suites are played once)",
    )
    parser.add_argument("--baseline", help="summary.json to compare against (the gate)")
    parser.add_argument(
        "--fail-on",
        metavar="SPEC",
        help="gate tolerances (needs --baseline), e.g. recall_accuracy:ci (a fall beyond the "
        "noise both runs measured, the default), recall_accuracy:-2p (at most 2 probes), "
        "cost_per_call:+5%%",
    )
    parser.add_argument(
        "--allow-different-scenarios",
        action="store_true",
        help="with --baseline: gate even when this run does not play what the baseline "
        "played (other suites, other scenario checksums, --quick against a full baseline, "
        "other --window, --llm, or --answer-model when cost is gated), matching rows by "
        "suite x strategy x embedding; without it such a run is refused before it starts "
        "(exit 2, naming each difference and the fix)",
    )
    parser.add_argument(
        "--sweep",
        metavar="KEY=V1,V2,...",
        help="run the matrix once per value of one config setting (e.g. "
        "hardCapTokens=1000,2000,4000): a run folder per value inside the sweep's folder, "
        "and sweep.md / sweep.json / sweep.png with the curve",
    )
    parser.add_argument(
        "--resume",
        metavar="RUN_DIR",
        help="complete a run that stopped (killed, crashed, interrupted): its finished jobs "
        "are kept, the others run, and the summary is the one an uninterrupted run writes; "
        "the run's own options are used (only --jobs, --executor, --ray-address, "
        "--llm-concurrency, --max-cost, --no-progress, --no-report, --baseline, --fail-on and "
        "--allow-different-scenarios may be given with it)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no per-job lines")
    parser.add_argument("--no-report", action="store_true", help="skip report.md/html/charts")


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The run's settings as the dotted camelCase dict recorded in its summary: what
    ``--config`` and ``--set`` give explicitly (defaults left out), so the summary alone
    reproduces the run. Invalid settings fail here, naming the key, not in every worker."""
    return config_from_args(args.config, args.set).explicit_settings()


def options_from_args(args: argparse.Namespace) -> Any:
    """Build :class:`memctx.harness.run.EvalOptions` from parsed arguments."""
    from memctx.harness import DEFAULT_EMBEDDINGS, DEFAULT_STRATEGIES, EvalOptions

    embeddings = tuple(args.embedding or (("hash",) if args.quick else DEFAULT_EMBEDDINGS))
    kwargs: dict[str, Any] = {}
    positive("--window", args.window)
    positive("--limit", args.limit)
    positive("--seed", args.seed, zero=True)
    if args.replicates < 1:
        raise OptionError(
            f"--replicates must be 1 or more, got {args.replicates}: --replicates 1 plays each "
            "suite once (the default), --replicates N plays the synthetic suites with N seeds"
        )
    if args.jobs is not None:
        positive("--jobs", args.jobs)
        kwargs["jobs"] = args.jobs
    kwargs.update(llm_limits(args, llm=args.llm))
    out = Path(args.out) if args.out else None
    if out is not None and out.exists() and not out.is_dir():
        raise OptionError(f"--out {out} is a file; pass a folder for the run directory")
    return EvalOptions(
        suites=tuple(dict.fromkeys(args.suite or ())),
        strategies=tuple(args.strategy or DEFAULT_STRATEGIES),
        embeddings=tuple(dict.fromkeys(embeddings)),
        windows=tuple(args.window or ()),
        quick=args.quick,
        overrides=_overrides(args),
        llm=args.llm,
        out_dir=out,
        datasets_dir=Path(args.datasets) if args.datasets else None,
        seed=args.seed,
        replicates=args.replicates,
        answer_model=args.answer_model,
        progress=not args.no_progress,
        plugins=tuple(args.plugin or ()),
        executor=args.executor,
        ray_address=args.ray_address,
        real_datasets=Path(args.real_datasets) if args.real_datasets else None,
        limit=args.limit,
        **kwargs,
    )


def llm_limits(args: argparse.Namespace, *, llm: str | None) -> dict[str, Any]:
    """``--llm-concurrency`` and ``--max-cost`` as EvalOptions fields (checked: they need a
    model, a concurrency of 1 or more and a budget above 0)."""
    out: dict[str, Any] = {}
    for flag, name, value in (
        ("--llm-concurrency", "llm_concurrency", getattr(args, "llm_concurrency", None)),
        ("--max-cost", "max_cost", getattr(args, "max_cost", None)),
    ):
        if value is None:
            continue
        if not llm:
            raise OptionError(f"{flag} needs --llm MODEL (it limits the real model's calls)")
        if name == "llm_concurrency" and value < 1:
            raise OptionError(f"--llm-concurrency must be 1 or more, got {value}")
        if name == "max_cost" and not value > 0:  # NaN too
            raise OptionError(f"--max-cost must be a positive amount of USD, got {value}")
        out[name] = value
    return out

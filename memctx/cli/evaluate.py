"""``memctx eval``: the run, the terminal table, the gate (its arguments: :mod:`.eval_args`).

Kept apart from :mod:`memctx.cli` so the command line module stays a thin dispatcher and the
harness can be driven from Python (:func:`memctx.harness.run.run_eval`) with the same options.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .eval_args import llm_limits, options_from_args
from .options import OptionError, describe_os_error, fail

__all__ = ["eval_command", "finish_eval"]


def _validate(args: argparse.Namespace) -> Any:
    """Every check that can fail before any work: options, suites, strategies, ``--set``,
    ``--baseline``, ``--fail-on``, ``--llm`` credentials. Returns the options with the run's
    id and folder fixed (raises on the first problem)."""
    from dataclasses import replace

    from memctx.harness import new_run_id, parse_fail_on, run_dir_for, validate_options
    from memctx.harness.report import load_summary

    if args.fail_on and not args.baseline:
        raise OptionError("--fail-on needs --baseline FILE (the summary.json to compare against)")
    options = _resumed(args) if args.resume else options_from_args(args)
    validate_options(options)
    if args.sweep:
        from memctx.harness import parse_sweep

        if args.resume or args.baseline:
            raise OptionError("--sweep runs several configurations: gate or resume them one by one")
        parse_sweep(args.sweep)
    if args.fail_on:
        parse_fail_on(args.fail_on)
    if args.baseline:
        load_summary(Path(args.baseline))
    if args.llm:
        from .options import check_llm_credentials

        check_llm_credentials(args.llm)
    if args.baseline and not args.allow_different_scenarios:
        _check_comparable(args, options)
    if args.resume:
        return options, Path(args.resume)
    named = options.label()
    if args.sweep:
        named = f"{named}-sweep-{args.sweep.partition('=')[0]}".removeprefix("default-")
    run_id, out = run_dir_for(replace(options, run_id=new_run_id(named)))
    return replace(options, run_id=run_id, out_dir=out if args.out else None), out


class Incomparable(Exception):
    """The run would not play what the baseline played (the message names each difference
    with its fix, one per line)."""


def _check_comparable(args: argparse.Namespace, options: Any) -> None:
    """Refuse, before any work, a run that cannot be gated against ``--baseline``: its
    suites, their scenarios (loaded and checksummed now, as the run will), ``--quick``,
    ``--window``, ``--llm`` or the answer model (when cost is gated) differ from the
    baseline's (:func:`memctx.harness.run_differences`)."""
    from memctx.harness import (
        DEFAULT_FAIL_ON,
        gates_cost,
        load_suite_scenarios,
        parse_fail_on,
        planned_summary,
        read_summary,
        run_differences,
    )

    baseline = read_summary(Path(args.baseline), what="baseline")
    # Real-data suites too: their scenarios are checksummed like the synthetic ones.
    planned = planned_summary(options, load_suite_scenarios(options))
    costs = gates_cost(parse_fail_on(args.fail_on or DEFAULT_FAIL_ON))
    setup = run_differences(baseline, planned, costs=costs)
    if not setup.comparable:
        raise Incomparable(f"{setup.refusal()}\n  (nothing was run)")


_RUN_SHAPING = (
    "suite", "strategy", "embedding", "window", "quick", "set", "config", "llm", "out",
    "datasets", "plugin", "real_datasets", "limit",
)  # fmt: skip
# Options whose default is not None: given with --resume when they differ from it.
_RUN_SHAPING_DEFAULTS = {"replicates": 1}


def _resumed(args: argparse.Namespace) -> Any:
    """The options of the run ``--resume`` names (its ``run.json``), to complete it."""
    from memctx.harness import EvalOptions, read_plan

    given = [f"--{name}" for name in _RUN_SHAPING if getattr(args, name, None)]
    given += [
        f"--{name}"
        for name, default in _RUN_SHAPING_DEFAULTS.items()
        if getattr(args, name, default) != default
    ]
    if given:
        raise OptionError(
            f"--resume completes a run with its own options; drop {', '.join(given)} "
            "(or start a new run without --resume)"
        )
    folder = Path(args.resume)
    plan = read_plan(folder)
    extra: dict[str, Any] = {"jobs": args.jobs} if args.jobs else {}
    extra.update(llm_limits(args, llm=plan["options"].get("llm")))
    return EvalOptions(
        **plan["options"],
        out_dir=folder,
        run_id=plan["run"],
        resume=True,
        progress=not args.no_progress,
        executor=args.executor,
        ray_address=args.ray_address,
        **extra,
    )


def eval_command(args: argparse.Namespace) -> int:
    """Run ``memctx eval``; exit 0, 1 (gate failed, a check failed or an invariant was
    violated) or 2 (bad input, found before any work)."""
    from memctx.errors import MemctxError
    from memctx.harness import EvalError, run_eval

    try:
        options, out = _validate(args)
    except Incomparable as exc:
        print(f"memctx: {exc}", file=sys.stderr)
        return 2
    except (EvalError, MemctxError, ValueError) as exc:
        return fail(str(exc))
    except OSError as exc:
        return fail(describe_os_error(exc))
    args.out = str(out)
    if args.sweep:
        return _sweep(args, options)
    try:
        run_dir = run_eval(options)
    except (EvalError, MemctxError, ValueError) as exc:
        return fail(str(exc))
    except OSError as exc:
        return fail(describe_os_error(exc))
    return finish_eval(
        run_dir,
        no_report=args.no_report,
        baseline=args.baseline,
        fail_on=args.fail_on,
        allow_different_scenarios=args.allow_different_scenarios,
    )


def _sweep(args: argparse.Namespace, options: Any) -> int:
    """``--sweep``: one run per value, each reported, then the curve."""
    from memctx.errors import MemctxError
    from memctx.harness import EvalError, format_sweep, parse_sweep, run_sweep, sweep_notes
    from memctx.harness.report import write_report

    key, values = parse_sweep(args.sweep)

    def report(run_dir: Path) -> None:
        if not args.no_report:
            write_report(run_dir)

    try:
        # Said before the first run too: a sweep whose points are identical by construction
        # can be stopped before it spends the time.
        notes = sweep_notes(options, key, values)
        for note in notes:
            print(f"memctx: note: {note}", file=sys.stderr)
        folder, points = run_sweep(options, key, values, after_each=report, notes=notes)
        if not args.no_report:
            from memctx.harness.report import sweep_chart

            chart = sweep_chart(points, key, folder)
            with (folder / "sweep.md").open("a", encoding="utf-8") as md:
                md.write(f"\n![{chart.title}]({chart.path.name})\n\n{chart.caption}\n")
            print(f"chart: {chart.path}")
    except (EvalError, MemctxError, ValueError) as exc:
        return fail(str(exc))
    except OSError as exc:
        return fail(describe_os_error(exc))
    print("".join(f"Note: {note}.\n\n" for note in notes) + format_sweep(key, points))
    print(f"\nsweep folder: {folder} (sweep.md, sweep.json; one run folder per value)")
    violations = sum(p.violations for p in points)
    if violations:
        print(f"FAIL: {violations} invariant violation(s) across the sweep", file=sys.stderr)
        return 1
    return 0


def finish_eval(
    run_dir: Path,
    *,
    no_report: bool = False,
    baseline: str | None = None,
    fail_on: str | None = None,
    allow_different_scenarios: bool = False,
) -> int:
    """After a run: the report, the table and the checks, the gate; the exit status (1 when
    an invariant was violated, a printed check FAILed or the gate failed; 2 when the run
    cannot be compared with the baseline)."""
    from memctx.harness import upgrade_summary
    from memctx.harness.report import format_terminal_table, load_probes, run_checks, write_report

    summary = upgrade_summary(json.loads((run_dir / "summary.json").read_text(encoding="utf-8")))
    real = summary.get("real_data") or {}
    for suite, reason in (real.get("skipped") or {}).items():
        print(f"memctx: suite {suite} skipped: {reason}", file=sys.stderr)
    if not no_report:
        write_report(
            run_dir, baseline=baseline, allow_different_scenarios=allow_different_scenarios
        )
    probes = load_probes(run_dir)
    print(format_terminal_table(summary, probes))
    for name in real.get("sections") or ():
        print(f"real-data table: {run_dir / name}")
    spent = summary["timing"].get("strategy_s", {})
    if spent:
        parts = ", ".join(f"{key} {seconds:.0f} s" for key, seconds in spent.items())
        print(f"\nworker time per strategy: {parts}")
    print(f"\nrun directory: {run_dir}  ({summary['timing']['wall_s']} s)")
    status = 0
    llm = summary["timing"].get("llm")
    if llm:
        print(
            f"LLM calls: {llm['calls']} sent, {llm['retries']} retried, {llm['cache_hits']} "
            f"from the cache, ${llm['spent_usd']:.4f} spent (at most {llm['concurrency']} "
            "at once per provider)"
        )
    budget = summary.get("budget")
    if budget:
        from memctx.harness import budget_line

        if budget.get("stopped"):
            print(f"memctx: {budget_line(budget)}", file=sys.stderr)
            status = 1
        else:
            print(budget_line(budget))
    # Per suite: the real-data suites are in no pooled record.
    violations = sum(r.get("violations") or 0 for r in summary["records"])
    if violations:
        print(f"FAIL: {violations} invariant violation(s); see report.md", file=sys.stderr)
        status = 1
    failed = [c for c in run_checks(summary, probes) if c.ok is False]
    if failed:
        print(f"FAIL: {len(failed)} check(s) failed (listed above)", file=sys.stderr)
        status = 1
    if baseline:
        from memctx.harness import check_gate

        gate = check_gate(
            run_dir, Path(baseline), fail_on, allow_different_scenarios=allow_different_scenarios
        )
        status = max(status, gate)  # 2, cannot compare, over 1
    return status

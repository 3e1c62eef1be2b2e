"""Real-model runs (``memctx eval --llm MODEL``): what the workers' LLM calls share.

:func:`run_limits` gives a run its :class:`~memctx.llm.CallLimits`: concurrency slots per
provider and a spend ledger under ``<run>/.llm/`` (fresh for each invocation, removed when
the run ends), and the response cache ``<run>/llm-cache/`` that every worker reads and
writes (kept, so ``--resume`` and repeated calls are answered from it). :func:`run_eval`
puts the limits in the environment while the jobs run (:func:`memctx.llm.limits_environment`),
so spawned workers inherit them; ``ProbeJudge`` reads them there.

After the jobs, :func:`llm_timing` gives ``summary["timing"]["llm"]`` (calls, retries, cache
hits, spend) and :func:`budget_section` ``summary["budget"]`` (limit, spend, jobs done of
planned, whether the run stopped at the budget); :func:`budget_line` says it in one line.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memctx.llm import CallLimits

__all__ = [
    "LIMITS_DIRNAME",
    "RUN_CACHE_DIRNAME",
    "budget_line",
    "budget_section",
    "clear_limits",
    "llm_timing",
    "run_limits",
]

LIMITS_DIRNAME = ".llm"
RUN_CACHE_DIRNAME = "llm-cache"


def run_limits(options: Any, out: Path) -> CallLimits | None:
    """The limits of a run with a real model (``None`` without ``--llm``); a fresh ledger.

    Args:
        options: The run's :class:`~memctx.harness.run.EvalOptions`.
        out: The run directory.
    """
    if options.llm is None:
        return None
    folder = out / LIMITS_DIRNAME
    shutil.rmtree(folder, ignore_errors=True)  # the budget counts this invocation's calls
    return CallLimits(
        folder=folder,
        concurrency=options.llm_concurrency,
        max_cost_usd=options.max_cost,
        max_retries=options.llm_retries,
        retry_backoff_s=options.llm_backoff_s,
        seed=options.seed,
        cache_dir=out / RUN_CACHE_DIRNAME,
    )


def clear_limits(limits: CallLimits | None) -> None:
    """Remove the run's slot files and ledger (read them first)."""
    if limits is not None:
        shutil.rmtree(limits.folder, ignore_errors=True)


def llm_timing(limits: CallLimits) -> dict[str, Any]:
    """``summary["timing"]["llm"]``: what the run's real calls did, from its ledger."""
    state = limits.ledger().snapshot()
    return {
        "calls": int(state["calls"]),
        "retries": int(state["retries"]),
        "failures": int(state["failures"]),
        "cache_hits": int(state["cache_hits"]),
        "spent_usd": round(float(state["spent_usd"]), 6),
        "concurrency": limits.concurrency,
    }


def budget_section(
    limits: CallLimits, stopped: str | None, jobs_done: int, jobs_planned: int
) -> dict[str, Any]:
    """``summary["budget"]``: the limit, what was spent, how far the run got, and why it
    stopped (``None`` when it finished)."""
    state = limits.ledger().snapshot()
    return {
        "limit_usd": limits.max_cost_usd,
        "spent_usd": round(float(state["spent_usd"]), 6),
        "jobs_done": jobs_done,
        "jobs_planned": jobs_planned,
        "stopped": stopped is not None,
        # The ledger's own words: an executor may wrap the exception (Ray adds a traceback).
        "reason": (state.get("reason") or stopped) if stopped is not None else None,
    }


def budget_line(budget: Mapping[str, Any]) -> str:
    """One line on a run's budget, e.g. ``stopped at the cost budget: $0.0400 of $0.0500
    spent, 3 of 12 jobs done; ...``."""
    spent, limit = float(budget.get("spent_usd", 0.0)), budget.get("limit_usd")
    done, planned = budget.get("jobs_done"), budget.get("jobs_planned")
    money = f"${spent:.4f} of ${float(limit or 0):.4f} spent"
    if not budget.get("stopped"):
        return f"cost budget: {money}, all {planned} jobs done"
    return (
        f"stopped at the cost budget: {money}, {done} of {planned} jobs done (the summary "
        "covers those); raise --max-cost and --resume the run folder to finish it"
    )

"""Evaluation: run the matrix, read a run, gate a change, compare two runs, explain a probe.

The front door to :mod:`memctx.harness` for code (the ``memctx`` command is the other)::

    from memctx.eval import EvalOptions, run_eval, load_run, check_gate

    run = run_eval(EvalOptions(strategies=("truncate", "memory-context"), quick=True))
    frames = load_run(run)                   # pandas DataFrames: probes, calls, records
    status = check_gate(run, Path("reports/baseline/summary.json"))  # 0 pass, 1 fail, 2 cannot

May import: every package below it.
"""

from __future__ import annotations

from memctx.harness import (
    EvalOptions,
    RunFrames,
    check_gate,
    compare_runs,
    explain_probe,
    load_run,
    run_eval,
)

__all__ = [
    "EvalOptions",
    "RunFrames",
    "check_gate",
    "compare_runs",
    "explain_probe",
    "load_run",
    "run_eval",
]

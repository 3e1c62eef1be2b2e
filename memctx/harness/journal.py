"""Resumable runs: the plan and the finished jobs of a run, on disk while it runs.

A run writes ``run.json`` (its options and the checksums of the scenarios it plays) before
the first job and appends one line per finished job to ``jobs.jsonl`` (the job's key and its
whole result), flushed as each job lands. A run stopped in any way, SIGKILL included, is
completed by ``memctx eval --resume RUN_DIR``: the same options are read back, the finished
jobs are loaded (a line torn by the kill is ignored: that job runs again) and only the others
run. Jobs are deterministic and the summary is aggregated from all results in plan order, so
a resumed run writes the same ``summary.json`` as one that never stopped (timing aside).
``jobs.jsonl`` is removed once ``summary.json`` is written: the run is complete.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, TextIO

from .engine import ScenarioResult
from .executor import Job
from .schema import CallRow, ProbeRow

__all__ = ["JOURNAL", "PLAN", "JobJournal", "job_key", "read_plan", "write_plan"]

PLAN = "run.json"
JOURNAL = "jobs.jsonl"
_PLAN_VERSION = 1
# EvalOptions fields a resumed run takes from the plan (the rest are how it runs: workers,
# progress lines, where the folder is).
_KEPT = (
    "suites",
    "strategies",
    "embeddings",
    "windows",
    "quick",
    "overrides",
    "llm",
    "datasets_dir",
    "seed",
    "answer_model",
    "plugins",
    "real_datasets",
    "limit",
    "replicates",
)


def job_key(job: Job) -> str:
    """What identifies a job across runs of the same plan (a replicate's scenarios reuse the
    ids of replicate 0's: the replicate is part of the key, left out for replicate 0 so a
    journal written before replicates existed still resumes)."""
    key = f"{job.suite}\t{job.scenario.id}\t{job.strategy}\t{job.embedding}\t{job.window}"
    return f"{key}\t{job.replicate}" if job.replicate else key


def write_plan(out: Path, options: Any, run_id: str, scenarios: Mapping[str, Any]) -> None:
    """Write ``run.json``: the run's id, options and the scenarios' checksums."""
    data = asdict(options)
    kept = {key: data[key] for key in _KEPT}
    for key in ("datasets_dir", "real_datasets"):
        kept[key] = None if data[key] is None else str(data[key])
    kept["overrides"] = dict(options.overrides)
    if kept["replicates"] == 1:  # the default: the plan of a run without replicates as before
        del kept["replicates"]
    plan = {"version": _PLAN_VERSION, "run": run_id, "options": kept, "scenarios": scenarios}
    out.mkdir(parents=True, exist_ok=True)
    (out / PLAN).write_text(json.dumps(plan, indent=2, ensure_ascii=False) + "\n", "utf-8")


def read_plan(out: Path) -> dict[str, Any]:
    """``run.json`` of a run folder, its options ready for ``EvalOptions(**...)``.

    Raises:
        ValueError: No plan (the folder is not a run that can be resumed), a finished run,
            or a plan this version cannot read (the message says what to do).
    """
    path = out / PLAN
    if (out / "summary.json").exists() and not (out / JOURNAL).exists():
        raise ValueError(f"{out} is a finished run (summary.json is written): nothing to resume")
    try:
        plan = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(
            f"{out} holds no {PLAN}: it is not a run that `memctx eval` started, or it was "
            "made before runs could be resumed; start it again"
        ) from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {path} ({exc}); start the run again") from None
    if not isinstance(plan, dict) or plan.get("version") != _PLAN_VERSION:
        raise ValueError(f"{path} is not a plan this memctx reads; start the run again")
    options = dict(plan["options"])
    for key in ("suites", "strategies", "embeddings", "windows", "plugins"):
        options[key] = tuple(options[key])
    for key in ("datasets_dir", "real_datasets"):  # a plan written before one is None
        options[key] = None if options.get(key) is None else Path(options[key])
    plan["options"] = options
    return plan


def _result_json(result: ScenarioResult) -> dict[str, Any]:
    return {
        "probes": [p.to_json() for p in result.probes],
        "calls": [c.to_json() for c in result.calls],
        "stats": result.stats,
    }


_PROBE_FIELDS = {f.name for f in fields(ProbeRow)}
_CALL_FIELDS = {f.name for f in fields(CallRow)}


def _result(data: Mapping[str, Any]) -> ScenarioResult:
    return ScenarioResult(
        probes=[
            ProbeRow(**{k: v for k, v in p.items() if k in _PROBE_FIELDS}) for p in data["probes"]
        ],
        calls=[CallRow(**{k: v for k, v in c.items() if k in _CALL_FIELDS}) for c in data["calls"]],
        stats=dict(data["stats"]),
    )


class JobJournal:
    """``jobs.jsonl`` of one run folder: finished jobs appended, read back on resume."""

    def __init__(self, out: Path) -> None:
        self.path = out / JOURNAL
        self._handle: TextIO | None = None

    def load(self, jobs: list[Job]) -> dict[int, tuple[ScenarioResult, float]]:
        """The finished jobs among ``jobs``, by index (torn or unknown lines skipped)."""
        if not self.path.exists():
            return {}
        by_key = {job_key(job): job for job in jobs}
        done: dict[int, tuple[ScenarioResult, float]] = {}
        with self.path.open(encoding="utf-8") as fh:
            for line in fh:
                try:
                    entry = json.loads(line)
                    job = by_key.get(entry["key"])
                    if job is not None:
                        done[job.index] = (_result(entry["result"]), float(entry["seconds"]))
                except (ValueError, KeyError, TypeError):
                    continue  # the line a kill cut short: that job runs again
        return done

    def append(self, job: Job, result: ScenarioResult, seconds: float) -> None:
        """Record a finished job (flushed at once: a kill loses at most the job in hand)."""
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._repair_tail()
            self._handle = self.path.open("a", encoding="utf-8")
        entry = {"key": job_key(job), "seconds": seconds, "result": _result_json(result)}
        self._handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
        self._handle.flush()

    def _repair_tail(self) -> None:
        """End a torn last line, so the next entry starts on a line of its own."""
        if self.path.exists() and self.path.stat().st_size:
            with self.path.open("rb+") as fh:
                fh.seek(-1, 2)
                if fh.read(1) != b"\n":
                    fh.write(b"\n")

    def close(self, *, remove: bool = False) -> None:
        """Close the file; ``remove`` deletes it (the run is complete)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        if remove:
            self.path.unlink(missing_ok=True)

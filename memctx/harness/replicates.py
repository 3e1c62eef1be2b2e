"""Replicates of a run (``memctx eval --replicates N``): the synthetic suites played N times,
each time generated with another seed, so a figure comes with its spread across datasets.

A published replication of agent benchmarks found up to 14x variance across replicates at
temperature 0: one dataset's figure is one draw. memctx's strategies are deterministic (the
same scenarios give the same numbers), so what varies between replicates is the data: the
generator's seed picks other facts, other filler and other positions for the answers.

- Replicate 0 is the run itself: the frozen datasets (or, with ``--quick``, the suites
  generated with ``--seed``). Everything that existed before replicates reads it alone: the
  records and pooled records of ``summary.json``, ``results.jsonl``, ``trace.jsonl``, the
  report's tables, the gate, ``memctx compare`` and the quality floors.
- Replicate ``r`` (1 to N-1) regenerates each synthetic suite of the generator with the seed
  ``seed + r`` at the scale of replicate 0's data (the frozen datasets' manifest, or the
  quick scale), and plays it with the same strategies, embeddings and windows. Its scenarios
  are kept under ``replicates/scenarios/seed-S/`` in the run folder (``--resume`` reads
  them back rather than generating them again), its probe and call rows, each with its
  ``replicate`` and ``seed``, in ``replicates/results.jsonl`` and ``replicates/trace.jsonl``.
- Suites with no seed are played once, in replicate 0, and the summary says why: the
  real-data suites (LoCoMo, Claude Code sessions, trajectories) and a user's own scenario
  files (not written by ``memctx gen``).

``summary["replicates"]`` (only when N > 1) holds, for every replicate (0 included), the
per-suite and pooled records of the replicated suites (:func:`memctx.harness.metrics.aggregate`
over each replicate's jobs); the report's "Across replicates" section reads them.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .executor import Job
from .metrics import aggregate
from .provenance import scenarios_digest
from .scenario import Scenario, dump_scenarios, load_scenarios
from .schema import ALL_SUITES, REAL_DATA_SUITES

__all__ = [
    "REPLICATES_DIR",
    "ReplicatePlan",
    "clear_replicates",
    "plan_replicates",
    "replicates_section",
    "write_replicate_rows",
]

REPLICATES_DIR = "replicates"
REAL_DATA_ONCE = "real data: no generator seed, played once (replicate 0)"
USER_SUITE_ONCE = "not written by the generator (no MANIFEST.json entry): played once (replicate 0)"


@dataclass(frozen=True)
class ReplicatePlan:
    """What the replicates of a run play.

    Attributes:
        count: Replicates, 1 for a run without (then nothing else is set).
        seeds: The generator's seed of each replicate; replicate 0's is ``None`` when its
            data does not say (a user's datasets folder without a manifest).
        scale: The generator's scale of every replicate.
        suites: The suites regenerated for every replicate.
        once: The suites played in replicate 0 only, with why.
        scenarios: Per replicate from 1, per suite, its scenarios.
    """

    count: int = 1
    seeds: tuple[int | None, ...] = ()
    scale: float = 1.0
    suites: tuple[str, ...] = ()
    once: Mapping[str, str] = field(default_factory=dict)
    scenarios: Mapping[int, Mapping[str, list[Scenario]]] = field(default_factory=dict)


def _manifest(root: Path) -> dict[str, Any]:
    path = root / "MANIFEST.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def plan_replicates(
    count: int,
    suites: Mapping[str, Sequence[Scenario]],
    *,
    seed: int,
    generated_scale: float | None,
    datasets: Path,
    out: Path,
    resume: bool,
) -> ReplicatePlan:
    """The scenarios of replicates 1 to ``count - 1``.

    Args:
        count: Replicates of the run (1: none beyond the run itself).
        suites: Replicate 0's scenarios per suite (the run's own).
        seed: The run's ``--seed``; replicate ``r`` is generated with ``seed + r``.
        generated_scale: The scale replicate 0 was generated at (``--quick``), or ``None``
            when it read frozen datasets (then their manifest gives seed and scale).
        datasets: The frozen datasets' folder (read for its manifest).
        out: The run folder (the generated scenarios are kept under ``replicates/``).
        resume: Read scenarios kept by the interrupted run instead of generating them.
    """
    if count <= 1:
        return ReplicatePlan()
    from .gen.generate import SUITES, generate_suite

    if generated_scale is not None:
        first_seed: int | None = seed
        scale = generated_scale
        made: set[str] = set(SUITES)
    else:
        manifest = _manifest(datasets)
        found = manifest.get("seed")
        first_seed = found if isinstance(found, int) else None
        scale = float(manifest.get("scale") or 1.0)
        made = set(manifest.get("suites") or ()) & set(SUITES)
    replicated = tuple(s for s in suites if s in made and s not in REAL_DATA_SUITES)
    once = {
        s: REAL_DATA_ONCE if s in REAL_DATA_SUITES else USER_SUITE_ONCE
        for s in suites
        if s not in replicated
    }
    scenarios: dict[int, dict[str, list[Scenario]]] = {}
    for replicate in range(1, count):
        folder = out / REPLICATES_DIR / "scenarios" / f"seed-{seed + replicate}"
        scenarios[replicate] = {}
        for suite in replicated:
            path = folder / f"{suite}.jsonl.gz"
            if resume and path.is_file():
                scenarios[replicate][suite] = load_scenarios(path)
                continue
            played = generate_suite(suite, seed=seed + replicate, scale=scale)
            dump_scenarios(played, path)
            scenarios[replicate][suite] = played
    seeds = (first_seed, *(seed + r for r in range(1, count)))
    return ReplicatePlan(count, seeds, scale, replicated, once, scenarios)


def clear_replicates(out: Path) -> None:
    """Remove the ``replicates/`` folder an earlier run left in ``out``."""
    shutil.rmtree(out / REPLICATES_DIR, ignore_errors=True)


def write_replicate_rows(
    out: Path, plan: ReplicatePlan, finished: Sequence[tuple[Job, Any]], tag: Mapping[str, Any]
) -> None:
    """``replicates/results.jsonl`` and ``replicates/trace.jsonl``: the probe and call rows of
    replicates 1 and on, each with its ``replicate`` and ``seed`` (replicate 0's rows are the
    run's own ``results.jsonl`` and ``trace.jsonl``)."""
    folder = out / REPLICATES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    rows = [(job, result) for job, result in finished if job.replicate]
    for name, attribute in (("results.jsonl", "probes"), ("trace.jsonl", "calls")):
        with (folder / name).open("w", encoding="utf-8") as fh:
            for job, result in rows:
                where = {**tag, "replicate": job.replicate, "seed": plan.seeds[job.replicate]}
                for row in getattr(result, attribute):
                    line = {**where, **row.to_json()}
                    fh.write(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n")


def replicates_section(
    plan: ReplicatePlan,
    finished: Sequence[tuple[Job, Any]],
    *,
    seed: int,
    answer_model: str,
    tag: Mapping[str, Any],
) -> dict[str, Any]:
    """``summary["replicates"]``: the plan and, per replicate, the records of the replicated
    suites (per suite, then pooled over them: ``suite == "all"``), each with its
    ``replicate``. Replicate 0's are over the same jobs as the run's own records, restricted
    to the replicated suites (so every replicate pools the same suites)."""
    records: list[dict[str, Any]] = []
    for replicate in range(plan.count):
        played = [
            (job.suite, job.strategy, job.embedding, result)
            for job, result in finished
            if job.replicate == replicate and job.suite in plan.suites
        ]
        if not played:
            continue
        for record in aggregate(played, seed=seed, answer_model=answer_model):
            records.append({**tag, "replicate": replicate, **record})
    return {
        "count": plan.count,
        "seeds": list(plan.seeds),
        "scale": plan.scale,
        "suites": list(plan.suites),
        "once": dict(plan.once),
        "scenarios": {
            str(replicate): scenarios_digest(suites)
            for replicate, suites in sorted(plan.scenarios.items())
        },
        "records": [r for r in records if r["suite"] != ALL_SUITES],
        "pooled": [r for r in records if r["suite"] == ALL_SUITES],
    }

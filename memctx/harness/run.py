"""One evaluation run: scenarios × strategies × embeddings, replayed, aggregated and written.

:func:`run_eval` loads the frozen scenarios (or, with ``quick``, generates a small set in
memory), plans one job per scenario × strategy × embedding × window, replays the jobs on a
process pool, and writes the run directory described in :mod:`memctx.harness.schema`:
``results.jsonl``, ``trace.jsonl``, ``summary.json`` (with provenance) and the report. Without
an explicit ``out_dir`` the run gets a folder of its own under ``reports/runs/`` and
``reports/latest`` points at it once it has finished (:mod:`memctx.harness.runs`).

Strategies that never search (``full``, ``truncate``, ``observation-masking``, ``planner``, and
any registered with ``searches=False``) run once per scenario with embedding ``"-"``: their
numbers cannot depend on the embedder, and running them twice would only double the bill.

The real-data suites (``locomo``, ``claude-code``, ``trajectories``: :mod:`.real_suites`)
are planned and written with the synthetic ones when named in ``suites``; a real suite whose
data is absent is skipped, the reason kept in ``summary["real_data"]["skipped"]``.

With ``replicates`` above 1 the synthetic suites are also played regenerated with the seeds
``seed + 1`` ... (:mod:`.replicates`); those jobs join the same pool, and everything above
still describes replicate 0, the run's own scenarios.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memctx.config import MemoryContextConfig
from memctx.errors import ConfigError, MemctxError
from memctx.llm import BudgetExceeded, limits_environment
from memctx.strategies import parse_strategy, resolve_config, strategy_info, strategy_names
from memctx.transcripts import shared_datasets_dir

from .executor import EXECUTORS, Job, execute_jobs
from .journal import JobJournal, read_plan, write_plan
from .llm_runs import budget_section, clear_limits, llm_timing, run_limits
from .progress import EtaEstimator, format_progress
from .provenance import provenance, scenarios_digest
from .real_suites import (
    QUICK_REAL_LIMIT,
    RealDataMissing,
    clear_real_sections,
    real_suite_scenarios,
    write_real_sections,
)
from .replicates import (
    ReplicatePlan,
    clear_replicates,
    plan_replicates,
    replicates_section,
    write_replicate_rows,
)
from .runs import RUNS, config_label, new_run_id, point_latest
from .scenario import Scenario, load_scenarios
from .schema import ALL_SUITES, NO_EMBEDDING, REAL_DATA_SUITES, SUMMARY_SCHEMA

__all__ = [
    "DEFAULT_DATASETS",
    "DEFAULT_EMBEDDINGS",
    "DEFAULT_STRATEGIES",
    "QUICK_SCALE",
    "EvalError",
    "EvalOptions",
    "dataset_suites",
    "import_plugins",
    "load_suite_scenarios",
    "real_limit",
    "run_dir_for",
    "run_eval",
    "validate_options",
]

DEFAULT_DATASETS = Path(__file__).resolve().parents[2] / "datasets" / "v1"
# observation-masking is the published baseline every design is measured against (keep the
# last N tool outputs, mask older ones; JetBrains, "The Complexity Trap", 2025).
DEFAULT_STRATEGIES = (
    "full",
    "truncate",
    "observation-masking",
    "openclaw",
    "meerkat",
    "memory-context",
    "masking-recall",
    "planner",
)
DEFAULT_EMBEDDINGS = ("hash", "transformer")
QUICK_SCALE = 0.15


class EvalError(Exception):
    """A run cannot start: bad option, missing datasets (the message says what to do)."""


@dataclass(frozen=True)
class EvalOptions:
    """Everything that shapes one run (recorded in ``summary.json`` as its config).

    Attributes:
        suites: Suite names; empty means every suite of the datasets. The real-data suites
            (``locomo``, ``claude-code``, ``trajectories``) run only when named.
        strategies: Strategy names (:func:`memctx.strategies.strategy_names`), maybe with
            settings (``observation-masking:keepLast=5``).
        embeddings: Embedders for strategies that search.
        windows: Context windows to play at; empty means each scenario's own window.
        quick: Generate a small set in memory (``QUICK_SCALE``) instead of the frozen one.
        jobs: Worker processes (1 runs in this process).
        overrides: Config overrides (dotted keys, as ``--set``).
        llm: A real model to answer and judge probes with, or ``None``.
        out_dir: The run directory to write (replaced if it exists); ``None`` writes a new
            folder ``reports_dir/runs/<run id>`` and points ``reports_dir/latest`` at it.
        reports_dir: Where run folders and the ``latest`` link live.
        run_id: The run's id (on every row); ``None`` makes one from the time and
            :meth:`label`.
        resume: Complete the run in ``out_dir``: its finished jobs (``jobs.jsonl``, see
            :mod:`memctx.harness.journal`) are loaded, not run again.
        datasets_dir: Frozen scenarios; ``None`` means ``datasets/v1`` of the checkout.
        seed: Seed of the generator (quick mode) and of the bootstrap.
        replicates: Times the synthetic suites are played, each replicate ``r`` from 1 on
            regenerated with the seed ``seed + r`` (:mod:`memctx.harness.replicates`); 1
            (the default) plays the run's own scenarios only.
        answer_model: litellm model whose prices give ``cost_usd``.
        progress: Print one line per finished job on stderr.
        executor: Where the jobs run: ``"local"`` (this machine's process pool) or ``"ray"``
            (:mod:`memctx.harness.ray_executor`; needs ``memctx[ray]``). Not part of the
            config: the results are the same.
        ray_address: The Ray cluster to run on (``HOST:6379``); ``None`` starts a local one
            with ``jobs`` CPUs.
        plugins: Modules imported before planning and in every worker (they register
            strategies with :func:`memctx.strategies.register_strategy`; an installed
            package's entry points in the group ``memctx.strategies`` need no plugin).
        llm_concurrency: With ``llm``: calls in flight at once per provider, across every
            worker (:mod:`memctx.harness.llm_runs`). Not part of the config.
        max_cost: With ``llm``: the budget in USD; the run stops before a call that could
            exceed it, the summary covering the jobs done (``summary["budget"]``). Not part
            of the config: it does not change the records of the jobs that finished.
        llm_retries: With ``llm``: extra attempts after a rate limit or a transient error.
        llm_backoff_s: With ``llm``: the first backoff delay (doubling, jittered).
        real_datasets: The external datasets the real-data suites read (``locomo/``,
            ``claude-code/``, ``swe-agent/``, ...); ``None`` means ``$MEMCTX_DATASETS``, else
            ``../shared/datasets`` beside the checkout.
        limit: At most this many scenarios per real-data source (LoCoMo conversations,
            Claude Code sessions, trajectories per dataset); ``None`` for all
            (:data:`~memctx.harness.real_suites.QUICK_REAL_LIMIT` with ``quick``).
    """

    suites: tuple[str, ...] = ()
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    embeddings: tuple[str, ...] = DEFAULT_EMBEDDINGS
    windows: tuple[int, ...] = ()
    quick: bool = False
    jobs: int = field(default_factory=lambda: max(1, os.cpu_count() or 1))
    overrides: Mapping[str, Any] = field(default_factory=dict)
    llm: str | None = None
    out_dir: Path | None = None
    reports_dir: Path = Path("reports")
    run_id: str | None = None
    resume: bool = False
    datasets_dir: Path | None = None
    seed: int = 0
    replicates: int = 1
    answer_model: str = "claude-sonnet-4-5"
    progress: bool = True
    plugins: tuple[str, ...] = ()
    llm_concurrency: int = 4
    max_cost: float | None = None
    llm_retries: int = 5
    llm_backoff_s: float = 1.0
    executor: str = "local"
    ray_address: str | None = None
    real_datasets: Path | None = None
    limit: int | None = None

    def config_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key in (
            "out_dir", "reports_dir", "run_id", "resume", "datasets_dir", "progress", "jobs",
            "executor", "ray_address", "real_datasets",
        ):  # fmt: skip
            data.pop(key)
        data["overrides"] = dict(self.overrides)
        if self.replicates == 1:  # the default: a run's config reads as it did before replicates
            data.pop("replicates")
        for key in ("llm_concurrency", "max_cost", "llm_retries", "llm_backoff_s"):
            data.pop(key)  # how a real model is called, not what the run measures
        return data

    def config(self) -> MemoryContextConfig:
        """The memctx settings every job of the run starts from (``overrides`` applied).

        Raises:
            ConfigError: An invalid override.
        """
        return MemoryContextConfig().with_overrides(dict(self.overrides))

    def label(self) -> str:
        """The short configuration label (:func:`memctx.harness.runs.config_label`)."""
        return config_label(
            quick=self.quick,
            suites=self.suites,
            strategies=self.strategies,
            default_strategies=DEFAULT_STRATEGIES,
            embeddings=self.embeddings,
            default_embeddings=("hash",) if self.quick else DEFAULT_EMBEDDINGS,
            windows=self.windows,
            overrides=self.overrides,
            llm=self.llm,
        )


def run_dir_for(options: EvalOptions) -> tuple[str, Path]:
    """The run's id and folder: ``options.run_id`` / ``out_dir`` when set, else new ones."""
    run_id = options.run_id or new_run_id(options.label())
    out = options.out_dir if options.out_dir is not None else options.reports_dir / RUNS / run_id
    return run_id, Path(out)


def real_limit(options: EvalOptions) -> int | None:
    """Scenarios per real-data source: ``options.limit``, else a small slice with ``quick``."""
    if options.limit is not None:
        return options.limit
    return QUICK_REAL_LIMIT if options.quick else None


def load_suite_scenarios(
    options: EvalOptions, skipped: dict[str, str] | None = None
) -> dict[str, list[Scenario]]:
    """The scenarios of each selected suite, in suite order (real-data suites included).

    Args:
        options: The run's options.
        skipped: Where to note a real-data suite whose data is absent (``{suite: reason}``);
            it is then left out. ``None`` makes that an error.

    Raises:
        EvalError: An unknown suite, frozen datasets that are missing or do not match their
            manifest (the message says how to regenerate them), real data that is there but
            unusable, or absent when ``skipped`` is ``None``.
    """
    synthetic = _synthetic_scenarios(options)
    root = shared_datasets_dir(options.real_datasets)
    out: dict[str, list[Scenario]] = {}
    for suite in options.suites or tuple(synthetic):
        if suite not in REAL_DATA_SUITES:
            out[suite] = synthetic[suite]
            continue
        try:
            out[suite] = real_suite_scenarios(
                suite, root, windows=options.windows, limit=real_limit(options)
            )
        except RealDataMissing as exc:
            if skipped is None:
                raise EvalError(f"suite {suite}: {exc}") from None
            skipped[suite] = str(exc)
        except (MemctxError, ValueError) as exc:
            raise EvalError(f"suite {suite}: {exc}") from None
    return out


def _synthetic_scenarios(options: EvalOptions) -> dict[str, list[Scenario]]:
    """The synthetic suites among ``options.suites`` (every one of the datasets when none is
    named), generated with ``quick`` or read from the frozen datasets."""
    from .gen.generate import DEFAULT_SUITES, SUITES, generate_suite, verify_datasets

    named = tuple(s for s in options.suites if s not in REAL_DATA_SUITES)
    if options.suites and not named:
        return {}  # real-data suites only: the frozen datasets are not needed
    if options.quick and options.datasets_dir is None:
        suites = named or DEFAULT_SUITES
        unknown = [s for s in suites if s not in SUITES]
        if unknown:
            raise EvalError(f"unknown suite(s) {unknown}; valid: {', '.join(SUITES)}")
        return {s: generate_suite(s, seed=options.seed, scale=QUICK_SCALE) for s in suites}
    root = options.datasets_dir or DEFAULT_DATASETS
    # Every SUITE.jsonl(.gz) in the folder is a suite, the generator's or the user's own, and
    # every one plays when none is named.
    found = dataset_suites(root)
    available = [s for s in SUITES if s in found] + sorted(set(found) - set(SUITES))
    suites = named or tuple(available) or DEFAULT_SUITES
    unknown = [s for s in suites if s not in found and s not in SUITES]
    if unknown:
        valid = ", ".join(dict.fromkeys([*available, *SUITES]))
        raise EvalError(f"unknown suite(s) {unknown}; valid: {valid}")
    problems = verify_datasets(root) if (root / "MANIFEST.json").exists() else []
    if problems:
        raise EvalError(
            f"datasets in {root} do not match their manifest: {'; '.join(problems)}; "
            f"regenerate with `memctx gen --out {root}`"
        )
    out: dict[str, list[Scenario]] = {}
    for suite in suites:
        path = found.get(suite, root / f"{suite}.jsonl.gz")
        if not path.exists():
            raise EvalError(
                f"no scenarios for suite {suite!r}: {path} is missing; create the datasets "
                f"with `memctx gen --out {root}` or run `memctx eval --quick`"
            )
        out[suite] = load_scenarios(path)
    return out


def dataset_suites(root: Path) -> dict[str, Path]:
    """``{suite: file}`` for every ``SUITE.jsonl.gz`` / ``SUITE.jsonl`` in ``root``."""
    out: dict[str, Path] = {}
    if root.is_dir():
        for path in sorted(root.iterdir()):
            for ext in (".jsonl.gz", ".jsonl"):
                if path.name.endswith(ext) and len(path.name) > len(ext):
                    out.setdefault(path.name[: -len(ext)], path)
    return out


def import_plugins(modules: Sequence[str]) -> None:
    """Import each plugin module (they register strategies as a side effect).

    Raises:
        EvalError: A module cannot be imported (the message names it and the cause).
    """
    if modules and os.getcwd() not in sys.path:
        # The `memctx` script's sys.path starts at its own folder, and spawned workers do not
        # inherit the parent's: a plugin next to the user's files must still be found.
        sys.path.insert(0, os.getcwd())
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:  # any failure inside the plugin is the user's to see
            raise EvalError(
                f"--plugin {name}: cannot import it ({type(exc).__name__}: {exc}); it must be "
                "importable from the current directory or the environment"
            ) from exc


def validate_options(options: EvalOptions) -> dict[str, str]:
    """Check every option that can be checked before any work (plugins imported first).

    Returns:
        ``{strategy as given: registered name}``.

    Raises:
        EvalError: An unknown strategy, suite or embedding, bad strategy settings or a
            window that is not a positive token count.
    """
    from .gen.generate import SUITES

    _check_executor(options)
    import_plugins(options.plugins)
    _check_llm_limits(options)
    known_strategies = strategy_names()
    unknown = [s for s in options.strategies if s.partition(":")[0] not in known_strategies]
    if unknown:
        raise EvalError(f"unknown strategy {unknown}; valid: {', '.join(known_strategies)}")
    bad = [e for e in options.embeddings if e not in DEFAULT_EMBEDDINGS]
    if bad or not options.embeddings:
        raise EvalError(f"embeddings must be among {DEFAULT_EMBEDDINGS}, got {bad or '[]'}")
    try:
        config = options.config()
    except ConfigError as exc:
        raise EvalError(str(exc)) from None
    chosen = config.explicit_settings().get("embeddingModel")
    if chosen is not None and tuple(options.embeddings) != (chosen,):
        raise EvalError(
            f"--set embeddingModel={chosen} conflicts with the embedders of the run "
            f"({', '.join(options.embeddings)}): choose them with --embedding {chosen}"
        )
    names: dict[str, str] = {}
    for strategy in options.strategies:
        try:  # settings after the name (observation-masking:keepLast=5) are checked now
            names[strategy] = parse_strategy(strategy)[0]
            resolve_config(strategy, config)  # a name setting that contradicts --set
        except (ValueError, ConfigError) as exc:
            raise EvalError(str(exc)) from None
    if any(w <= 0 for w in options.windows):
        raise EvalError(f"windows must be positive token counts, got {list(options.windows)}")
    if options.replicates < 1:
        raise EvalError(
            f"replicates must be 1 or more, got {options.replicates}: pass --replicates 1 to "
            "play each suite once, or N > 1 to play the synthetic suites with N seeds"
        )
    if options.limit is not None and options.limit <= 0:
        raise EvalError(f"limit must be a positive number of scenarios, got {options.limit}")
    known = set(SUITES) | set(REAL_DATA_SUITES)
    if not options.quick or options.datasets_dir is not None:
        known |= set(dataset_suites(options.datasets_dir or DEFAULT_DATASETS))
    missing = [s for s in options.suites if s not in known]
    if missing:
        raise EvalError(f"unknown suite(s) {missing}; valid: {', '.join(sorted(known))}")
    return names


def _check_executor(options: EvalOptions) -> None:
    if options.executor not in EXECUTORS:
        raise EvalError(f"unknown executor {options.executor!r}; valid: {', '.join(EXECUTORS)}")
    if options.ray_address is not None and options.executor != "ray":
        raise EvalError("--ray-address needs --executor ray")
    if options.executor == "ray":
        from .ray_executor import RayUnavailable, require_ray

        try:
            require_ray()
        except RayUnavailable as exc:
            raise EvalError(str(exc)) from None


def _check_llm_limits(options: EvalOptions) -> None:
    if options.llm_concurrency < 1:
        raise EvalError(f"--llm-concurrency must be 1 or more, got {options.llm_concurrency}")
    if options.max_cost is not None and not options.max_cost > 0:
        raise EvalError(f"--max-cost must be a positive amount of USD, got {options.max_cost}")
    if options.llm_retries < 0 or options.llm_backoff_s < 0:
        raise EvalError("llm_retries and llm_backoff_s must be 0 or more")


def _plan(
    options: EvalOptions,
    suites: Mapping[str, list[Scenario]],
    replicas: Mapping[int, Mapping[str, list[Scenario]]] | None = None,
) -> list[Job]:
    """Every job: replicate 0's (``suites``), then each further replicate's (``replicas``)."""
    names = validate_options(options)
    config = options.config()
    windows: Sequence[int | None] = options.windows or (None,)
    jobs: list[Job] = []
    for replicate, played in [(0, suites), *sorted((replicas or {}).items())]:
        for suite, scenarios in played.items():
            for scenario in scenarios:
                for window in windows:
                    for strategy in options.strategies:
                        searches = strategy_info(names[strategy]).searches
                        embeddings = options.embeddings if searches else (NO_EMBEDDING,)
                        for embedding in embeddings:
                            job = Job(
                                len(jobs), suite, scenario, strategy, embedding, window, config,
                                replicate,
                            )  # fmt: skip
                            jobs.append(job)
    return jobs


def _replicate_plan(
    options: EvalOptions, suites: Mapping[str, list[Scenario]], out: Path
) -> ReplicatePlan:
    """The scenarios of replicates 1 and on (none with ``replicates == 1``)."""
    generated = options.quick and options.datasets_dir is None
    return plan_replicates(
        options.replicates,
        suites,
        seed=options.seed,
        generated_scale=QUICK_SCALE if generated else None,
        datasets=options.datasets_dir or DEFAULT_DATASETS,
        out=out,
        resume=options.resume,
    )


def run_eval(options: EvalOptions) -> Path:
    """Run the benchmark described by ``options`` and write its run directory.

    Returns:
        The run directory (:func:`run_dir_for`) holding results, trace, summary and report.

    Raises:
        EvalError: Bad options or missing datasets (nothing is written then).
    """
    from .metrics import aggregate

    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    wall = time.perf_counter()
    validate_options(options)
    run_id, out = run_dir_for(options)
    label = options.label()
    skipped: dict[str, str] = {}
    suites = load_suite_scenarios(options, skipped)
    if not options.resume:
        clear_replicates(out)  # left by an earlier run in this folder
    replicas = _replicate_plan(options, suites, out)
    jobs = _plan(options, suites, replicas.scenarios)
    if not jobs:
        why = "".join(f"; suite {suite} skipped: {reason}" for suite, reason in skipped.items())
        raise EvalError(f"nothing to run: the selected suites hold no scenarios{why}")
    digest = scenarios_digest(suites)
    journal = JobJournal(out)
    if options.resume:
        plan = read_plan(out)
        if plan["scenarios"] != digest:
            raise EvalError(
                f"the scenarios differ from those the run in {out} started with (the datasets "
                "or the generator changed): start the run again instead of resuming it"
            )
        done = journal.load(jobs)
    else:
        journal.close(remove=True)  # a journal left by an earlier run in this folder
        write_plan(out, options, run_id, digest)
        done = {}
    finished: set[int] = set(done)
    estimator = EtaEstimator()
    for index, (_, seconds) in done.items():
        job = jobs[index]
        estimator.add(
            job.weight(), job.embedding == "transformer", seconds, f"{job.strategy}/{job.embedding}"
        )
    clock_start = time.perf_counter()
    landed: dict[int, tuple[Any, float]] = {}

    def report(job: Job, result: Any, seconds: float) -> None:
        journal.append(job, result, seconds)
        landed[job.index] = (result, seconds)
        finished.add(job.index)
        estimator.add(job.weight(), job.heavy, seconds, job.group)
        if not options.progress:
            return
        pending = [(j.weight(), j.heavy, j.group) for j in jobs if j.index not in finished]
        left = estimator.seconds_left(pending, options.jobs)
        elapsed = time.perf_counter() - clock_start
        line = format_progress(len(finished), len(jobs), job.label, seconds, elapsed, left)
        print(line, file=sys.stderr, flush=True)

    if done and options.progress:
        print(f"resuming {out}: {len(done)} of {len(jobs)} jobs done", file=sys.stderr)
    limits = run_limits(options, out)
    stopped: str | None = None  # why the run stopped at its budget
    try:
        with limits_environment(limits):
            done.update(execute_jobs([j for j in jobs if j.index not in done], options, report))
    except BudgetExceeded as exc:
        stopped = str(exc)
        done.update(landed)  # the jobs that finished before it: the summary covers those
    finally:
        journal.close()
    played = [(job, done[job.index][0]) for job in jobs if job.index in done]
    ordered = [(job, result) for job, result in played if not job.replicate]
    # Worker seconds per strategy × embedding: what each configuration costs to measure.
    by_strategy: dict[str, float] = {}
    for job, _ in played:
        by_strategy[job.group] = by_strategy.get(job.group, 0.0) + done[job.index][1]
    records = aggregate(
        [(job.suite, job.strategy, job.embedding, result) for job, result in ordered],
        seed=options.seed,
        answer_model=options.answer_model,
    )
    out.mkdir(parents=True, exist_ok=True)
    tag = {"run": run_id, "config": label}
    _write_jsonl(
        out / "results.jsonl", ({**tag, **r.to_json()} for _, res in ordered for r in res.probes)
    )
    _write_jsonl(
        out / "trace.jsonl", ({**tag, **c.to_json()} for _, res in ordered for c in res.calls)
    )
    real = [s for s in suites if s in REAL_DATA_SUITES]
    if not options.resume:  # a real-data table left in this folder by an earlier run goes
        clear_real_sections(out, keep=real)
    root = shared_datasets_dir(options.real_datasets)
    sections = write_real_sections(
        out,
        [(job, result) for job, result in ordered if job.suite in real],
        root=root,
        embeddings=options.embeddings,
        limit=real_limit(options),
        transformer_model=options.config().transformer_model,
    )
    tagged = [{**tag, **record} for record in records]
    summary: dict[str, Any] = {
        "schema": SUMMARY_SCHEMA,
        "run": run_id,
        "config_label": label,
        "provenance": provenance(options, suites),
        "config": options.config_json(),
        "records": [r for r in tagged if r["suite"] != ALL_SUITES],
        "pooled": [r for r in tagged if r["suite"] == ALL_SUITES],
    }
    if replicas.count > 1:
        write_replicate_rows(out, replicas, played, tag)
        summary["replicates"] = replicates_section(
            replicas, played, seed=options.seed, answer_model=options.answer_model, tag=tag
        )
    summary["timing"] = {
        "started_at": started_at,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_s": round(time.perf_counter() - wall, 1),
        "jobs": options.jobs,
        "strategy_s": {key: round(value, 1) for key, value in by_strategy.items()},
    }
    if real or skipped:
        summary["real_data"] = {
            "datasets": str(root),
            "suites": real,
            "skipped": skipped,
            "sections": sections,
            "pooled": False,  # real-data suites stand alone (memctx.harness.schema)
        }
    if limits is not None:
        summary["timing"]["llm"] = llm_timing(limits)
        if options.max_cost is not None:
            summary["budget"] = budget_section(limits, stopped, len(done), len(jobs))
        clear_limits(limits)
    (out / "summary.json").write_text(
        json.dumps(summary, indent=2, ensure_ascii=False, sort_keys=False) + "\n",
        encoding="utf-8",
    )
    if stopped is None:  # else the journal stays: --resume completes the run
        journal.close(remove=True)  # summary.json is written: the run is complete
    if out.resolve().parent == (options.reports_dir / RUNS).resolve():
        point_latest(options.reports_dir, out)
    return out


def _write_jsonl(path: Path, rows: Any) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")

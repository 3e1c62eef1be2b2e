"""Running the jobs of an evaluation: one replay per scenario × strategy × embedding × window.

:func:`execute_jobs` hands the jobs, bundled (:func:`bundles`: heaviest first, the transformer
jobs of one scenario together so one worker embeds its messages once), to an
:class:`Executor`: :class:`LocalExecutor` (the default: this process for one job or
``jobs=1``, else a spawned process pool) or, with ``executor="ray"``,
:class:`memctx.harness.ray_executor.RayExecutor`. Either way a callback in this process hears
of every finished job, and the results are the same.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memctx.config import MemoryContextConfig

from .scenario import Scenario

if TYPE_CHECKING:
    from .run import EvalOptions

__all__ = [
    "EXECUTORS",
    "Executor",
    "Job",
    "LocalExecutor",
    "Report",
    "bundles",
    "execute_jobs",
    "make_executor",
    "report_until_failure",
    "run_job",
    "start_worker",
]

# The ways to run the jobs (``memctx eval --executor``); ``local`` is the default.
EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class Job:
    """One replay: a scenario of a suite through a strategy with an embedder at a window,
    with the run's config (``--config`` and ``--set`` applied once, for every job), in one
    replicate of the run (0: the run's own scenarios; ``r``: the suite regenerated with the
    seed ``seed + r``, :mod:`memctx.harness.replicates`). To the executors a replicate's jobs
    are jobs like any other: more scenarios."""

    index: int
    suite: str
    scenario: Scenario
    strategy: str
    embedding: str
    window: int | None
    config: MemoryContextConfig
    replicate: int = 0

    @property
    def group(self) -> str:
        """Its configuration, ``strategy/embedding``."""
        return f"{self.strategy}/{self.embedding}"

    @property
    def heavy(self) -> bool:
        """It embeds with the transformer (~30x the work per message)."""
        return self.embedding == "transformer"

    @property
    def label(self) -> str:
        where = (
            f"{self.scenario.id} (replicate {self.replicate})"
            if self.replicate
            else self.scenario.id
        )
        return f"{where} {self.strategy}/{self.embedding}"

    def weight(self) -> int:
        # Expected cost, for the order (long jobs first, so the pool does not end on one big
        # straggler) and the ETA: messages, x30 with the transformer (measured: a job embeds
        # ~30x longer than the same job with hash replays).
        size = sum(len(s.messages) for s in self.scenario.sessions)
        return size * (30 if self.embedding == "transformer" else 1)


def start_worker(threads: int, plugins: Sequence[str]) -> None:
    """Worker start-up: share the cores, and register the plugins' strategies here too.

    torch and numpy's BLAS each start one thread per core in every worker; with two workers
    on two cores, four busy threads embed ~20 % slower than two (measured with the
    transformer). Set before torch is imported, which happens later, in the first job.
    """
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(name, str(threads))
    from .run import import_plugins  # run imports this module: import when called

    import_plugins(plugins)


def run_job(job: Job, options: EvalOptions, work_root: str) -> tuple[int, Any, float]:
    """Replay one job (runs in a worker process); its index, result and seconds."""
    from .engine import run_scenario

    started = time.perf_counter()
    work_dir = Path(work_root) / f"job-{job.index:05d}"
    work_dir.mkdir(parents=True, exist_ok=True)
    try:
        result = run_scenario(
            job.scenario,
            job.strategy,
            job.embedding,
            window=job.window,
            config=job.config,
            answer_model=options.answer_model,
            work_dir=work_dir,
            llm=options.llm,
        )
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    return job.index, result, time.perf_counter() - started


def _run_order(jobs: Sequence[Job]) -> list[Job]:
    """Heaviest first, so that the pool does not end on one big straggler."""
    return sorted(jobs, key=lambda j: (-j.weight(), j.index))


def bundles(jobs: Sequence[Job]) -> list[list[Job]]:
    """The units a worker runs: the transformer jobs of one scenario together, every other
    job alone; heaviest first.

    A worker keeps one transformer embedder and its cache of embedded texts: strategies that
    archive the same messages of a scenario (memory-context, meerkat) then embed them once,
    not once per strategy and worker. Hash embeds at the cost of a hash and gains nothing.
    """
    by_scenario: dict[tuple[int, str, str, int | None], list[Job]] = {}
    out: list[list[Job]] = []
    for job in _run_order(jobs):
        if job.embedding == "transformer":
            # Replicates reuse scenario ids: the replicate tells their scenarios apart.
            key = (job.replicate, job.suite, job.scenario.id, job.window)
            if key not in by_scenario:
                by_scenario[key] = []
                out.append(by_scenario[key])
            by_scenario[key].append(job)
        else:
            out.append([job])
    return sorted(out, key=lambda b: (-sum(j.weight() for j in b), b[0].index))


def _run_bundle(
    bundle: list[Job], options: EvalOptions, work_root: str
) -> list[tuple[int, Any, float]]:
    """Run a bundle's jobs one after the other (in a worker process)."""
    return [run_job(job, options, work_root) for job in bundle]


# Hears of each finished job, in the process that runs the evaluation: (job, result, seconds).
Report = Callable[[Job, Any, float], None]


class Executor(Protocol):
    """Runs bundles of jobs (:func:`bundles`), each bundle's jobs on one worker in order, and
    calls ``report`` in this process as each job finishes. The jobs, their inputs and their
    results are the same whatever the executor: only where they run differs."""

    name: str

    def run(self, planned: Sequence[list[Job]], options: EvalOptions, report: Report) -> None:
        """Run every job of ``planned``; an exception in a job is raised here."""
        ...


class LocalExecutor:
    """This machine: in this process for ``jobs=1`` (or a single bundle), else a spawned
    process pool of ``options.jobs`` workers."""

    name = "local"

    def run(self, planned: Sequence[list[Job]], options: EvalOptions, report: Report) -> None:
        by_index = {job.index: job for bundle in planned for job in bundle}

        def report_bundle(rows: list[tuple[int, Any, float]]) -> None:
            for index, result, seconds in rows:
                report(by_index[index], result, seconds)

        with tempfile.TemporaryDirectory(prefix="memctx-eval-") as work_root:
            if options.jobs <= 1 or len(planned) <= 1:
                for bundle in planned:
                    for job in bundle:
                        _, result, seconds = run_job(job, options, work_root)
                        report(job, result, seconds)
                return
            # spawn, not fork: torch and litellm start threads that a fork would copy half-way.
            threads = max(1, (os.cpu_count() or 1) // options.jobs)
            with ProcessPoolExecutor(
                options.jobs,
                mp_context=get_context("spawn"),
                initializer=start_worker,
                initargs=(threads, options.plugins),
            ) as pool:
                futures = [
                    pool.submit(_run_bundle, bundle, options, work_root) for bundle in planned
                ]
                report_until_failure(futures, report_bundle)


def report_until_failure(
    futures: Sequence[Future[list[tuple[int, Any, float]]]],
    report_bundle: Callable[[list[tuple[int, Any, float]]], object],
) -> None:
    """Report each bundle as it lands; after the first failure start nothing more.

    At the first bundle that raises, every future not yet started is cancelled (a pool
    would otherwise run the whole queue before the error surfaced: a run stopped at its
    cost budget kept starting jobs). Bundles already running still land and are reported,
    so the resume journal keeps work that was paid for; then the first error is raised.
    """
    first: BaseException | None = None
    remaining = set(futures)
    while remaining:
        done, remaining = wait(remaining, return_when=FIRST_COMPLETED)
        for future in done:
            if future.cancelled():
                continue
            error = future.exception()
            if error is None:
                report_bundle(future.result())
            elif first is None:
                first = error
                for other in remaining:
                    other.cancel()
        # A cancelled future is done only once its executor notices; do not wait for that.
        remaining = {f for f in remaining if not f.cancelled()}
    if first is not None:
        raise first


def make_executor(options: EvalOptions) -> Executor:
    """The executor ``options.executor`` names (Ray imported only when it is ``"ray"``)."""
    if options.executor == "ray":
        from .ray_executor import RayExecutor  # imports ray lazily, when it runs

        return RayExecutor(options.ray_address)
    if options.executor != "local":
        raise ValueError(f"unknown executor {options.executor!r}; valid: {', '.join(EXECUTORS)}")
    return LocalExecutor()


def execute_jobs(
    jobs: list[Job],
    options: EvalOptions,
    report: Report,
    executor: Executor | None = None,
) -> dict[int, tuple[Any, float]]:
    """Every job's result and its own run time in seconds, by job index; ``report`` hears of
    each job as it finishes (job, result, seconds). ``executor`` defaults to
    :func:`make_executor`'s for ``options``."""
    results: dict[int, tuple[Any, float]] = {}

    def collect(job: Job, result: Any, seconds: float) -> None:
        results[job.index] = (result, seconds)
        report(job, result, seconds)

    if jobs:
        (executor or make_executor(options)).run(bundles(jobs), options, collect)
    return results

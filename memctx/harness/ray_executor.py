"""The evaluation matrix on Ray (``memctx eval --executor ray [--ray-address HOST:6379]``).

The same jobs, inputs and results as the local process pool (:mod:`.executor`), on a Ray
cluster: an existing one (``ray_address``) or one started here with ``jobs`` CPUs.

- **Workers.** One actor per worker (``jobs`` of them, one CPU each), alive for the whole
  run: an actor loads the transformer model once (the harness keeps one embedder and its
  cache of embedded texts per process) and runs one bundle of :func:`.executor.bundles` at a
  time, so the transformer jobs of a scenario share it as they do in the pool. An actor that
  finishes its bundle takes the next one, heaviest first.
- **Datasets by reference.** Each scenario goes into Ray's object store once (``ray.put``);
  a job travels as its index, suite, strategy, embedding and window plus the scenario's
  reference; an actor fetches a scenario the first time it needs it and keeps it.
- **Environment.** The driver's ``MEMCTX_*`` variables are set in every actor, as the
  pool's workers inherit them.
- **Results.** Each job is its own call, so the driver hears of every job as it finishes
  (``ray.wait``): the progress line and the resume journal work as with the pool.

Ray is an optional extra (``pip install 'memctx[ray]'``) imported only when this executor
runs; :func:`require_ray` says in one line how to install it.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .executor import Job, Report, run_job, start_worker

if TYPE_CHECKING:
    from .run import EvalOptions

__all__ = ["RAY_INSTALL", "RayExecutor", "RayUnavailable", "require_ray"]

RAY_INSTALL = "pip install 'memctx[ray]'"


class RayUnavailable(ImportError):
    """Ray cannot be imported here (the message says how to install it)."""


def require_ray() -> Any:
    """The ``ray`` module.

    Raises:
        RayUnavailable: Ray is not installed or cannot be imported (one line, with the fix).
    """
    try:
        import ray
    except ImportError as exc:
        if isinstance(exc, ModuleNotFoundError) and exc.name == "ray":
            cause = "Ray is not installed"
        else:  # installed but broken, or blocked
            cause = f"Ray cannot be imported ({type(exc).__name__}: {exc})"
        raise RayUnavailable(f"--executor ray: {cause}; {RAY_INSTALL}") from None
    return ray


class _Runner:
    """One worker of the run (a Ray actor): the jobs it is given, one after the other."""

    def __init__(self, options: EvalOptions, cwd: str, env: dict[str, str]) -> None:
        # The driver's MEMCTX_* settings (input limits, a real model's call limits), which
        # the pool's workers inherit and an actor on another machine would not have.
        os.environ.update(env)
        # Plugins next to the user's files are found as with the pool, when this machine
        # shares the driver's folder (a local cluster).
        if os.path.isdir(cwd) and cwd not in sys.path:
            sys.path.insert(0, cwd)
        start_worker(1, options.plugins)  # one CPU per actor: one thread per library
        self._options = options
        self._config = options.config()
        self._scenarios: dict[int, Any] = {}

    def run(
        self, index: int, suite: str, key: int, boxed: list[Any], strategy: str, embedding: str,
        window: int | None,
    ) -> tuple[int, Any, float]:  # fmt: skip
        """Replay one job; ``boxed`` holds the scenario's reference (a list, so Ray passes the
        reference and this actor fetches the scenario once)."""
        import ray

        if key not in self._scenarios:
            self._scenarios[key] = ray.get(boxed[0])
        job = Job(index, suite, self._scenarios[key], strategy, embedding, window, self._config)
        with tempfile.TemporaryDirectory(prefix="memctx-ray-") as work_root:
            return run_job(job, self._options, work_root)


class RayExecutor:
    """Runs the bundles on a Ray cluster (see the module's docstring).

    Args:
        address: An existing cluster (``HOST:6379``, or ``"auto"``); ``None`` starts a local
            one with ``options.jobs`` CPUs and stops it afterwards. When Ray is already
            initialised in this process, that cluster is used and left running.
    """

    name = "ray"

    def __init__(self, address: str | None = None) -> None:
        self.address = address

    def run(self, planned: Sequence[list[Job]], options: EvalOptions, report: Report) -> None:
        ray = require_ray()
        started = self._connect(ray, options)
        actors: list[Any] = []
        try:
            # Each scenario into the object store once, whatever the number of its jobs.
            keys: dict[int, int] = {}
            refs: list[Any] = []
            for bundle in planned:
                for job in bundle:
                    if id(job.scenario) not in keys:
                        keys[id(job.scenario)] = len(refs)
                        refs.append(ray.put(job.scenario))
            runner = ray.remote(num_cpus=1)(_Runner)
            count = max(1, min(options.jobs, len(planned)))
            env = {k: v for k, v in os.environ.items() if k.startswith("MEMCTX_")}
            actors = [runner.remote(options, os.getcwd(), env) for _ in range(count)]
            queue = deque(planned)
            pending: dict[Any, tuple[Job, int]] = {}
            left = [0] * count

            def assign(worker: int) -> None:
                bundle = queue.popleft()
                for job in bundle:
                    key = keys[id(job.scenario)]
                    call = actors[worker].run.remote(
                        job.index, job.suite, key, [refs[key]], job.strategy, job.embedding,
                        job.window,
                    )  # fmt: skip
                    pending[call] = (job, worker)
                left[worker] = len(bundle)

            for worker in range(count):
                if queue:
                    assign(worker)
            first: BaseException | None = None
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                job, worker = pending.pop(ready[0])
                left[worker] -= 1
                try:
                    _, result, seconds = ray.get(ready[0])
                except Exception as exc:  # a job's own error, re-raised once the rest lands
                    if first is None:
                        # As the pool does (executor.report_until_failure): start nothing
                        # more, report what is already running, then raise the first error.
                        first = exc
                        queue.clear()
                    continue
                report(job, result, seconds)
                if not left[worker] and queue:
                    assign(worker)
            if first is not None:
                raise first
        finally:
            for actor in actors:
                ray.kill(actor)
            if started:
                ray.shutdown()

    def _connect(self, ray: Any, options: EvalOptions) -> bool:
        """Join or start the cluster; whether this call started Ray (and so stops it)."""
        if ray.is_initialized():
            return False
        quiet: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
        if self.address is not None:
            ray.init(address=self.address, **quiet)
        else:
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no reporting home
            ray.init(num_cpus=options.jobs, include_dashboard=False, **quiet)
        return True

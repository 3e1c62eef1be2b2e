"""pytest plugin: quality gates over an evaluation run (``evals/``).

Registered as the ``pytest11`` entry point ``memctx``, so it is loaded by every pytest run in
the environment: at load it imports only the standard library and pytest, and it runs nothing
until a test asks for a fixture.

Fixtures:

- ``memctx_run`` (session): a :class:`MemctxRun` over ``--memctx-run DIR`` when given;
  otherwise one ``memctx eval`` run made for the session (quick set, hash embedder; the full
  benchmark with ``--memctx-full``) in a temporary folder. Under pytest-xdist the workers
  share it: the first worker to ask makes it, the others wait for it and read it.
- ``memctx_thresholds`` (session): ``evals/thresholds.toml`` of the rootdir (or
  ``--memctx-thresholds FILE``) as a dict.
"""

from __future__ import annotations

import fcntl
import json
import os
import tomllib
from collections.abc import Callable, Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "MemctxRun",
    "memctx_run",
    "memctx_thresholds",
    "pytest_addoption",
    "pytest_report_header",
]

_THRESHOLDS = Path("evals") / "thresholds.toml"


class MemctxRun:
    """Read access to one run directory (``summary.json`` and ``results.jsonl``).

    Attributes:
        path: The run directory.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        summary = self.path / "summary.json"
        if not summary.is_file():
            raise FileNotFoundError(f"{self.path} is not a run directory: summary.json is missing")
        from .schema import upgrade_summary  # on use: the plugin loads with every pytest

        self.summary: dict[str, Any] = upgrade_summary(
            json.loads(summary.read_text(encoding="utf-8"))
        )

    def records(self, suite: str | None = None) -> list[dict[str, Any]]:
        """Every record (the pooled ones last), or those of one suite (``"all"`` is the
        pooled aggregate)."""
        records: list[dict[str, Any]] = [*self.summary["records"], *self.summary.get("pooled", [])]
        return [r for r in records if suite is None or r["suite"] == suite]

    def record(self, suite: str, strategy: str, embedding: str = "none") -> dict[str, Any]:
        """The record of ``suite`` × ``strategy`` × ``embedding``.

        Raises:
            KeyError: No such record (the message lists the run's pairs and suites).
        """
        for r in self.records(suite):
            if r["strategy"] == strategy and r["embedding"] == embedding:
                return r
        pairs = sorted({f"{r['strategy']}/{r['embedding']}" for r in self.records()})
        raise KeyError(
            f"no record {suite}/{strategy}/{embedding} in {self.path}; "
            f"suites: {', '.join(self.suites())}; pairs: {', '.join(pairs)}"
        )

    def suites(self) -> list[str]:
        """The run's suites in record order (without ``"all"``; the real-data ones, which
        are never pooled into it, included)."""
        return list(dict.fromkeys(r["suite"] for r in self.records() if r["suite"] != "all"))

    def pairs(self) -> list[tuple[str, str]]:
        """The run's (strategy, embedding) pairs in record order."""
        return list(dict.fromkeys((r["strategy"], r["embedding"]) for r in self.records()))

    @cached_property
    def probes(self) -> list[dict[str, Any]]:
        """The rows of ``results.jsonl`` (one per probe × strategy × embedding), each with
        its ``question`` and ``answers`` (None in a run written before schema 3)."""
        from .schema import upgrade_probe_row

        return [upgrade_probe_row(row) for row in self._jsonl("results.jsonl")]

    def _jsonl(self, name: str) -> Iterator[dict[str, Any]]:
        with (self.path / name).open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)

    def __repr__(self) -> str:
        return f"MemctxRun({str(self.path)!r})"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("memctx", "memctx evaluation gates")
    group.addoption(
        "--memctx-run",
        metavar="DIR",
        help="use this existing run directory (summary.json, results.jsonl) instead of running "
        "the benchmark",
    )
    group.addoption(
        "--memctx-full",
        action="store_true",
        help="run the full benchmark (frozen datasets, every embedder) instead of --quick",
    )
    group.addoption(
        "--memctx-thresholds",
        metavar="FILE",
        help=f"thresholds file (default: {_THRESHOLDS.as_posix()} under the rootdir)",
    )


def pytest_report_header(config: pytest.Config) -> str | None:
    run = config.getoption("memctx_run", None)
    return f"memctx: using run directory {run}" if run else None


@pytest.fixture(scope="session")
def memctx_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> MemctxRun:
    """The evaluation run the quality gates read (given, or made once per session)."""
    given = request.config.getoption("memctx_run")
    if given:
        try:
            return MemctxRun(Path(given))
        except (OSError, ValueError) as exc:
            raise pytest.UsageError(f"--memctx-run {given}: {exc}") from exc
    try:
        from .run import EvalOptions, run_eval
    except ImportError as exc:
        pytest.skip(f"memctx.harness.run is not importable ({exc}); pass --memctx-run DIR")
    full = bool(request.config.getoption("memctx_full"))

    def make(out: Path) -> Path:
        options = (
            EvalOptions(out_dir=out, progress=False)
            if full
            else (EvalOptions(quick=True, embeddings=("hash",), out_dir=out, progress=False))
        )
        return run_eval(options)

    try:
        if not hasattr(request.config, "workerinput"):  # not an xdist worker
            return MemctxRun(make(tmp_path_factory.mktemp("memctx-eval") / "run"))
        shared = tmp_path_factory.getbasetemp().parent / "memctx-eval"
        return MemctxRun(made_once(shared, make))
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("memctx."):
            raise
        pytest.skip(f"the evaluation harness is incomplete ({exc}); pass --memctx-run DIR")


def made_once(shared: Path, make: Callable[[Path], Path]) -> Path:
    """``make(folder)``'s result, made by the first process to ask; the others wait for it.

    Each xdist worker is a session of its own, so a session fixture alone makes the run once
    per worker (tens of seconds each, on the same cores). The workers' temporary folders
    share a parent, ``shared`` here: a lock in it serialises them and a note names the
    finished run. A run that failed leaves no note, so the next worker makes its own (in a
    folder of its own) and reports its own failure.
    """
    shared.mkdir(parents=True, exist_ok=True)
    note = shared / "run-path.txt"
    with (shared / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if note.is_file():
            return Path(note.read_text(encoding="utf-8"))
        path = make(shared / f"run-{os.getpid()}")
        note.write_text(str(path), encoding="utf-8")
        return path


@pytest.fixture(scope="session")
def memctx_thresholds(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The thresholds TOML as a dict (skips, naming the file, when it is absent)."""
    given = request.config.getoption("memctx_thresholds")
    path = Path(given) if given else request.config.rootpath / _THRESHOLDS
    if not path.is_file():
        pytest.skip(f"no thresholds file at {path}")
    with path.open("rb") as fh:
        return tomllib.load(fh)

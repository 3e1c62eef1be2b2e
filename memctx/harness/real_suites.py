"""The real-data suites of ``memctx eval``: external data played in the same pipeline.

Three suites come from the datasets folder outside the repository (``../shared/datasets``,
or ``$MEMCTX_DATASETS``, or ``EvalOptions.real_datasets``):

- ``locomo``: each LoCoMo conversation a scenario at a 16K window, its questions asked at
  the end (:mod:`memctx.harness.locomo.scenarios`);
- ``claude-code``: each real Claude Code session with hand-written probes a scenario, the
  history before its compaction and every probe asked at Claude Code's 200K window
  (:mod:`memctx.harness.claude_code`);
- ``trajectories``: each SWE-agent, OpenHands and Claude Code trajectory a probe-less
  scenario at 16K and 32K (:mod:`memctx.harness.trajectories`).

Their scenarios are planned, replayed, aggregated and written like the synthetic suites'
(``results.jsonl``, ``trace.jsonl``, records in ``summary.json``), so the report, the gate,
``memctx compare``, ``load_run`` and the pytest plugin read them; they are never pooled
(:mod:`memctx.harness.schema` says why). What a suite measures beyond its records stays an
extra table beside them (:func:`write_real_sections`): LoCoMo's evidence recall at k and at a
token budget beside the published figures (``locomo.md``, ``locomo.json``), Claude Code's own
summary against memctx (``claude_code.md``, ``claude_code.json``), the trajectories per
dataset with the share of tokens saved (``trajectories.md``); the report shows them under
"Real data".

When a suite's data is absent the suite is skipped with the reason (:class:`RealDataMissing`),
and the run plays the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, cast

from memctx.config import DEFAULT_TRANSFORMER_MODEL, TransformerModelName

from .claude_code import (
    CLAUDE_CODE_SUITE,
    HAND_PROBES,
    ProbesError,
    claude_code_scenarios,
    write_claude_code_section,
)
from .locomo import LOCOMO_SUITE, locomo_scenarios, run_locomo_suite
from .scenario import Scenario
from .schema import REAL_DATA_SUITES
from .trajectories import (
    TRAJECTORIES_SUITE,
    TRAJECTORY_WINDOWS,
    format_trajectory_table,
    trajectory_rows,
    trajectory_scenarios,
)

__all__ = [
    "QUICK_REAL_LIMIT",
    "REAL_DATA_FILES",
    "RealDataMissing",
    "clear_real_sections",
    "real_suite_scenarios",
    "write_real_sections",
]

# ../shared/datasets beside the checkout.
# With --quick: at most this many scenarios per real-data source.
QUICK_REAL_LIMIT = 1
# The extra tables each real-data suite writes into the run folder (the report shows the
# Markdown ones; the chart is drawn by the report from locomo.json).
REAL_DATA_FILES: Mapping[str, tuple[str, ...]] = {
    LOCOMO_SUITE: ("locomo.md", "locomo.json", "charts/locomo_recall.png"),
    CLAUDE_CODE_SUITE: ("claude_code.md", "claude_code.json"),
    TRAJECTORIES_SUITE: ("trajectories.md",),
}
assert tuple(REAL_DATA_FILES) == REAL_DATA_SUITES
_Embedder = Literal["hash", "transformer"]


class RealDataMissing(Exception):
    """A real-data suite's data is not on this machine (the message says where it was
    looked for and how to point at it); the suite is skipped."""


def _where(root: Path, folder: str) -> str:
    return (
        f"{root / folder} is absent or empty; set MEMCTX_DATASETS (or pass --real-datasets) to "
        f"the folder holding {folder}/"
    )


def _locomo_file(root: Path) -> Path:
    found = sorted((root / "locomo").glob("*.json"))
    if not found:
        raise RealDataMissing(f"no LoCoMo file: {_where(root, 'locomo')}")
    return found[0]


def real_suite_scenarios(
    suite: str, root: Path, *, windows: Sequence[int] = (), limit: int | None = None
) -> list[Scenario]:
    """The scenarios of real-data ``suite`` from the datasets folder ``root``.

    Args:
        suite: One of :data:`~memctx.harness.schema.REAL_DATA_SUITES`.
        root: The external datasets folder (:func:`shared_datasets_dir`).
        windows: The run's own windows (``--window``); when set, trajectories are made once
            each (the jobs' windows apply) instead of once per :data:`TRAJECTORY_WINDOWS`.
        limit: At most this many conversations, sessions, or trajectories per dataset.

    Raises:
        RealDataMissing: The suite's data is absent (the suite is skipped).
        ValueError: The data is there but unusable (the message names the file).
    """
    if suite == LOCOMO_SUITE:
        path = _locomo_file(root)
        try:
            return locomo_scenarios(path, limit=limit)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise ValueError(f"{path} is not a LoCoMo file ({type(exc).__name__}: {exc})") from None
    if suite == CLAUDE_CODE_SUITE:
        sessions = root / "claude-code"
        if not any(sessions.glob("*.jsonl")):
            raise RealDataMissing(f"no Claude Code session: {_where(root, 'claude-code')}")
        try:
            return claude_code_scenarios(sessions, HAND_PROBES, limit=limit)
        except ProbesError as exc:
            raise RealDataMissing(str(exc)) from None
    if suite == TRAJECTORIES_SUITE:
        found = trajectory_scenarios(root, () if windows else TRAJECTORY_WINDOWS, limit=limit)
        if not found:
            raise RealDataMissing(
                "no trajectory: none of "
                f"{', '.join(f'{root}/{d}/' for d in ('swe-agent', 'openhands-swe-gym'))}, ... "
                "holds one; set MEMCTX_DATASETS (or pass --real-datasets) to the datasets folder"
            )
        return found
    raise ValueError(f"{suite!r} is not a real-data suite ({', '.join(REAL_DATA_SUITES)})")


def clear_real_sections(out: Path, keep: Sequence[str] = ()) -> None:
    """Remove the extra tables of the real-data suites not in ``keep`` from a run folder
    written before, so a folder shows what its run played."""
    for suite, files in REAL_DATA_FILES.items():
        if suite not in keep:
            for name in files:
                (out / name).unlink(missing_ok=True)


def write_real_sections(
    out: Path,
    played: Sequence[tuple[Any, Any]],
    *,
    root: Path,
    embeddings: Sequence[str],
    limit: int | None = None,
    transformer_model: TransformerModelName = DEFAULT_TRANSFORMER_MODEL,
) -> list[str]:
    """The real-data suites' extra tables (module docstring) for the suites ``played``.

    Args:
        out: The run folder.
        played: ``(job, ScenarioResult)`` of every job of the run
            (:class:`memctx.harness.executor.Job`); the real-data ones are used.
        root: The external datasets folder the scenarios came from.
        embeddings: The run's embedders (LoCoMo's table is made per embedder that exists:
            ``hash``, ``transformer``).
        limit: The run's limit on scenarios per source.
        transformer_model: The run's ``transformerModel``.

    Returns:
        The Markdown files written (names within ``out``).
    """
    by_suite: dict[str, list[tuple[Any, Any]]] = {}
    for job, result in played:
        by_suite.setdefault(job.suite, []).append((job, result))
    written = []
    if LOCOMO_SUITE in by_suite:
        chosen = [e for e in embeddings if e in ("hash", "transformer")] or ["hash"]
        run_locomo_suite(
            _locomo_file(root),
            out,
            embeddings=cast(list[_Embedder], chosen),
            limit=limit,
            transformer_model=transformer_model,
        )
        written.append("locomo.md")
    if CLAUDE_CODE_SUITE in by_suite:
        rows = [(job.scenario, result.probes) for job, result in by_suite[CLAUDE_CODE_SUITE]]
        write_claude_code_section(out, root / "claude-code", HAND_PROBES, rows, limit=limit)
        written.append("claude_code.md")
    if TRAJECTORIES_SUITE in by_suite:
        items = [
            (job.scenario, job.strategy, job.embedding, job.window or job.scenario.window, result)
            for job, result in by_suite[TRAJECTORIES_SUITE]
        ]
        table = format_trajectory_table(trajectory_rows(items))
        out.mkdir(parents=True, exist_ok=True)
        (out / "trajectories.md").write_text(
            "# Real agent trajectories at small windows\n\n"
            "Per dataset, strategy and window, the trajectories pooled; saved is the share of "
            "the whole transcript's tokens not sent, against full in the same run (its "
            "records are the trajectories suite's).\n\n" + table + "\n",
            encoding="utf-8",
        )
        written.append("trajectories.md")
    return written

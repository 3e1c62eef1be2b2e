"""Real agent trajectories through every strategy at small windows: the ``trajectories`` suite.

Claude Code sessions (``claude-code/*.jsonl``), SWE-agent (``swe-agent/*.traj``), OpenHands
(``openhands-swe-gym/sample_raw.json``) and SWE-agent-on-nebius
(``swe-agent-nebius/sample_raw.json``) trajectories were written by agents nobody here built,
for windows far larger than 16K or 32K tokens. :func:`trajectory_scenarios` makes each one a
probe-less scenario of the ``trajectories`` suite per window, and ``memctx eval --suite
trajectories`` (or ``memctx trajectories``) plays them through the replay engine like every
other scenario: every strategy has to trim or compact, and every call is checked like a
synthetic one (tool pairing, recall cap, the window, secrets on disk). The records are the
synthetic suites' (calls, tokens per call, compactions, trims, hook latency, cost,
violations, which must be zero); with no probes, their shares are null: recall accuracy on
real data is the LoCoMo and Claude Code suites' job.

A trajectory whose own record already breaks tool pairing (a SWE-agent replay reuses call ids)
is repaired first, as an agent would before sending it, and its scenario says how many
defects it had (``meta["input_defects"]``): the checks then judge the strategy, not the
recording.

:func:`trajectory_rows` and :func:`format_trajectory_table` give the suite's own table (one
line per dataset × strategy × window): the largest transcript, the mean context sent and the
share of the whole transcript's tokens not sent (``saved``, against what ``full`` sends in
the same run), beside the figures of the records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memctx.messages import pairing_violations, repair_tool_pairing
from memctx.transcripts import Transcript, load_transcripts

from .adapters import transcript_scenario
from .metrics import percentile
from .scenario import Scenario
from .schema import NO_EMBEDDING

__all__ = [
    "TRAJECTORIES_SUITE",
    "TRAJECTORY_DATASETS",
    "TRAJECTORY_WINDOWS",
    "TrajectoryRow",
    "find_trajectories",
    "format_trajectory_table",
    "trajectory_rows",
    "trajectory_scenarios",
]

TRAJECTORIES_SUITE = "trajectories"
# Folder under the datasets root -> the files it holds.
TRAJECTORY_DATASETS: dict[str, str] = {
    "claude-code": "*.jsonl",
    "swe-agent": "*.traj",
    "openhands-swe-gym": "sample_raw.json",
    "swe-agent-nebius": "sample_raw.json",
}
TRAJECTORY_WINDOWS = (16_000, 32_000)


@dataclass(frozen=True, slots=True)
class TrajectoryRow:
    """One trajectory through one strategy × embedding at one window.

    Attributes:
        dataset: The folder it came from (``swe-agent``, ...).
        name: The trajectory (file stem, ``#n`` for the n-th of a file holding several).
        strategy: The strategy played.
        embedding: Its embedder (``none`` when it does not search).
        window: The context window (tokens, as counted).
        calls: Model calls replayed.
        max_history: The largest transcript the agent held (tokens).
        whole_tokens: The uncompacted transcript's tokens, summed over the calls (what
            ``full`` sends); ``None`` when the run did not play ``full``.
        sent_tokens: The contexts' tokens, summed over the calls.
        compactions: Agent compactions.
        trims: Calls whose context left transcript messages out.
        p50_ms: Context hook latency, median.
        p95_ms: And 95th percentile.
        violations: Failed checks (must be 0).
        input_defects: Pairing violations of the recorded trajectory itself, repaired before
            the replay.
    """

    dataset: str
    name: str
    strategy: str
    embedding: str
    window: int
    calls: int
    max_history: int
    whole_tokens: int | None
    sent_tokens: int
    compactions: int
    trims: int
    p50_ms: float
    p95_ms: float
    violations: int
    input_defects: int = 0

    @property
    def saved(self) -> float | None:
        """Share of the uncompacted transcript's tokens not sent, over all calls (``None``
        without ``full`` to measure it against)."""
        if self.whole_tokens is None:
            return None
        return 1 - self.sent_tokens / self.whole_tokens if self.whole_tokens else 0.0


def find_trajectories(root: Path) -> Iterator[tuple[str, str, Transcript]]:
    """Every trajectory under ``root`` (the datasets folder): ``(dataset, name, transcript)``,
    in a fixed order; folders that are absent are skipped."""
    for dataset, pattern in TRAJECTORY_DATASETS.items():
        for path in sorted((root / dataset).glob(pattern)):
            found = load_transcripts(path)
            for k, transcript in enumerate(found):
                name = path.stem if len(found) == 1 else f"{path.stem}#{k}"
                yield dataset, name, transcript


def trajectory_scenarios(
    root: Path, windows: Sequence[int] = TRAJECTORY_WINDOWS, *, limit: int | None = None
) -> list[Scenario]:
    """The trajectories under ``root`` as scenarios of the ``trajectories`` suite, one per
    trajectory and window (``windows`` empty: one each, at the first of
    :data:`TRAJECTORY_WINDOWS`, for a run that sets its own windows).

    Args:
        root: The datasets folder (``../shared/datasets``).
        windows: Context windows in tokens.
        limit: At most this many trajectories per dataset (a quick slice), ``None`` for all.

    Raises:
        ValueError: A window that is not positive.
        TranscriptError: A trajectory file cannot be read.
    """
    if any(w <= 0 for w in windows):
        raise ValueError(f"windows must be positive token counts, got {list(windows)}")
    played = tuple(windows) or TRAJECTORY_WINDOWS[:1]
    out: list[Scenario] = []
    taken: dict[str, int] = {}
    for dataset, name, transcript in find_trajectories(root):
        if limit is not None and taken.get(dataset, 0) >= limit:
            continue
        taken[dataset] = taken.get(dataset, 0) + 1
        defects = len(pairing_violations(transcript.messages))
        if defects:
            transcript = dataclasses.replace(
                transcript, messages=repair_tool_pairing(transcript.messages)
            )
        for window in played:
            base = transcript_scenario(transcript, window=window)
            suffix = f"@{window}" if len(played) > 1 else ""
            out.append(
                dataclasses.replace(
                    base,
                    id=f"trajectories-{dataset}-{name}{suffix}",
                    suite=TRAJECTORIES_SUITE,
                    meta={
                        **base.meta,
                        "dataset": dataset,
                        "name": name,
                        "input_defects": defects,
                    },
                )
            )
    return out


def trajectory_rows(played: Sequence[tuple[Scenario, str, str, int, Any]]) -> list[TrajectoryRow]:
    """One row per trajectory × strategy × embedding × window, from the run's results.

    Args:
        played: ``(scenario, strategy, embedding, window, ScenarioResult)`` of the
            trajectories suite's jobs (the window the job played at).
    """
    whole: dict[tuple[str, int], int] = {}
    for scenario, strategy, _, window, result in played:
        if strategy == "full":  # full sends the whole transcript at every call: the reference
            whole[(scenario.id, window)] = sum(c.sent_tokens for c in result.calls)
    rows = []
    for scenario, strategy, embedding, window, result in played:
        calls, stats = result.calls, result.stats
        latency = [float(c.latency_ms) for c in calls]
        kinds = stats.get("violation_kinds", {})
        shown = next((c.embedding for c in calls), embedding)
        rows.append(
            TrajectoryRow(
                dataset=str(scenario.meta.get("dataset", "")),
                name=str(scenario.meta.get("name", scenario.id)),
                strategy=strategy,
                embedding=shown,
                window=window,
                calls=len(calls),
                max_history=max((c.history_tokens for c in calls), default=0),
                whole_tokens=whole.get((scenario.id, window)),
                sent_tokens=sum(c.sent_tokens for c in calls),
                compactions=int(stats.get("compactions", 0)),
                trims=int(stats.get("trims", 0)),
                p50_ms=round(percentile(latency, 50), 2),
                p95_ms=round(percentile(latency, 95), 2),
                violations=sum(int(v) for v in kinds.values()),
                input_defects=int(scenario.meta.get("input_defects", 0)),
            )
        )
    return rows


def format_trajectory_table(rows: Sequence[TrajectoryRow]) -> str:
    """A Markdown table, one line per dataset × strategy × embedding × window (trajectories
    pooled; ``saved`` is ``-`` when the run did not play ``full``)."""
    groups: dict[tuple[str, str, str, int], list[TrajectoryRow]] = {}
    for row in rows:
        groups.setdefault((row.dataset, row.strategy, row.embedding, row.window), []).append(row)
    lines = [
        "| dataset | strategy | window | trajectories | calls | largest transcript | "
        "mean sent | saved | compactions | trimmed calls | hook p50 / p95 ms | violations | "
        "input repaired |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (dataset, strategy, embedding, window), group in groups.items():
        calls = sum(r.calls for r in group)
        sent = sum(r.sent_tokens for r in group)
        wholes = [r.whole_tokens for r in group]
        if any(w is None for w in wholes):
            saved = "-"
        else:
            history = sum(w or 0 for w in wholes)
            saved = f"{100 * (1 - sent / history if history else 0.0):.1f} %"
        label = strategy if embedding == NO_EMBEDDING else f"{strategy} × {embedding}"
        lines.append(
            f"| {dataset} | {label} | {window:,} | {len(group)} | {calls:,} | "
            f"{max(r.max_history for r in group):,} | {sent / calls if calls else 0:,.0f} | "
            f"{saved} | {sum(r.compactions for r in group)} | "
            f"{sum(r.trims for r in group)} | {max(r.p50_ms for r in group):.2f} / "
            f"{max(r.p95_ms for r in group):.2f} | {sum(r.violations for r in group)} | "
            f"{sum(r.input_defects > 0 for r in group)} |"
        )
    return "\n".join(lines)

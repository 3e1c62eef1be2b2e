"""Real agent trajectories through every strategy at small windows (issue 14, part 3).

Claude Code sessions (``claude-code/*.jsonl``), SWE-agent (``swe-agent/*.traj``), OpenHands
(``openhands-swe-gym/sample_raw.json``) and SWE-agent-on-nebius
(``swe-agent-nebius/sample_raw.json``) trajectories were written by agents nobody here built,
for windows far larger than 16K or 32K tokens. Replayed at those
windows, every strategy has to trim or compact, and every call is checked like a synthetic
one (tool pairing, recall cap, the window, secrets on disk). A row reports the calls, the
largest transcript, the mean context sent, the share of the whole transcript's tokens not
sent (``saved``, against what ``full`` sends), compactions, calls that trimmed, hook latency
and the violations, which must be zero. A trajectory whose own record already breaks tool
pairing (a SWE-agent replay reuses call ids) is repaired first, as an agent would before
sending it, and the row says how many defects it had (``input_defects``): the checks then
judge the strategy, not the recording. There are no probes: recall accuracy on real data
is the LoCoMo and Claude Code suites' job.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from memctx.messages import pairing_violations, repair_tool_pairing
from memctx.transcripts import Transcript, load_transcripts

from .replay import ReplayReport, replay_transcript

__all__ = [
    "TRAJECTORY_DATASETS",
    "TRAJECTORY_WINDOWS",
    "TrajectoryRow",
    "find_trajectories",
    "format_trajectory_table",
    "replay_trajectories",
]

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
    """One trajectory through one strategy at one window.

    Attributes:
        dataset: The folder it came from (``swe-agent``, ...).
        name: The trajectory (file stem, ``#n`` for the n-th of a file holding several).
        strategy: The strategy played.
        window: The context window (tokens, as counted).
        calls: Model calls replayed.
        max_history: The largest transcript the agent held (tokens).
        whole_tokens: The uncompacted transcript's tokens, summed over the calls (what
            ``full`` sends).
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
    window: int
    calls: int
    max_history: int
    whole_tokens: int
    sent_tokens: int
    compactions: int
    trims: int
    p50_ms: float
    p95_ms: float
    violations: int
    input_defects: int = 0

    @property
    def saved(self) -> float:
        """Share of the uncompacted transcript's tokens not sent, over all calls."""
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


def replay_trajectories(
    root: Path,
    strategies: Sequence[str],
    windows: Sequence[int] = TRAJECTORY_WINDOWS,
    *,
    limit: int | None = None,
) -> list[TrajectoryRow]:
    """Replay the trajectories under ``root`` through each strategy at each window.

    Args:
        root: The datasets folder (``../shared/datasets``).
        strategies: Registered strategy names (embedding ``hash`` where one searches).
        windows: Context windows in tokens.
        limit: At most this many trajectories per dataset (a quick slice), ``None`` for all.

    Raises:
        ValueError: Unknown strategy or a window that is not positive.
        TranscriptError: A trajectory file cannot be read.
    """
    rows = []
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
        for window in windows:
            # full sends the whole transcript at every call: the reference for ``saved``.
            whole = replay_transcript(transcript, window=window, strategy="full")
            reference = sum(c.sent_tokens for c in whole.calls)
            for strategy in strategies:
                report = (
                    whole
                    if strategy == "full"
                    else replay_transcript(transcript, window=window, strategy=strategy)
                )
                rows.append(_row(dataset, name, report, reference, defects))
    return rows


def _row(dataset: str, name: str, report: ReplayReport, whole: int, defects: int) -> TrajectoryRow:
    """One row from the replay's own totals (:meth:`ReplayReport.summary`)."""
    totals = report.summary()
    return TrajectoryRow(
        dataset=dataset,
        name=name,
        strategy=report.strategy,
        window=report.window,
        calls=totals["calls"],
        max_history=totals["max_history"],
        whole_tokens=whole,
        sent_tokens=sum(c.sent_tokens for c in report.calls),
        compactions=totals["compactions"],
        trims=totals["trims"],
        p50_ms=totals["p50_ms"],
        p95_ms=totals["p95_ms"],
        violations=totals["violations"],
        input_defects=defects,
    )


def format_trajectory_table(rows: Sequence[TrajectoryRow]) -> str:
    """A Markdown table, one line per dataset × strategy × window (trajectories pooled)."""
    groups: dict[tuple[str, str, int], list[TrajectoryRow]] = {}
    for row in rows:
        groups.setdefault((row.dataset, row.strategy, row.window), []).append(row)
    lines = [
        "| dataset | strategy | window | trajectories | calls | largest transcript | "
        "mean sent | saved | compactions | trimmed calls | hook p50 / p95 ms | violations | "
        "input repaired |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (dataset, strategy, window), group in groups.items():
        calls = sum(r.calls for r in group)
        sent = sum(r.sent_tokens for r in group)
        history = sum(r.whole_tokens for r in group)
        saved = 1 - sent / history if history else 0.0
        lines.append(
            f"| {dataset} | {strategy} | {window:,} | {len(group)} | {calls:,} | "
            f"{max(r.max_history for r in group):,} | {sent / calls if calls else 0:,.0f} | "
            f"{100 * saved:.1f} % | {sum(r.compactions for r in group)} | "
            f"{sum(r.trims for r in group)} | {max(r.p50_ms for r in group):.2f} / "
            f"{max(r.p95_ms for r in group):.2f} | {sum(r.violations for r in group)} | "
            f"{sum(r.input_defects > 0 for r in group)} |"
        )
    return "\n".join(lines)

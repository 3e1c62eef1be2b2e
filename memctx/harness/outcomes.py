"""Each probe's yes/no outcome per record: what comparing two figures probe by probe needs.

A record's share (recall accuracy, tool accuracy, stale rate) is the mean of one yes/no per
probe in ``results.jsonl``. Two records over the same probes (two configurations of one run,
or one configuration in two runs of the same scenarios) can then be compared probe by probe
(:func:`paired_change`, through :func:`memctx.harness.noise.paired_noise`): the probes both
answer, or both miss, cancel out. :func:`paired_change` pairs only when that is sound: the
same probes on both sides, and outcomes that give the records' own figures (a summary edited
by hand, or rows of another run, are not paired); otherwise the caller falls back to the
independent-samples rule, :func:`memctx.harness.noise.noise_for`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .comparability import run_differences
from .noise import paired_noise
from .pooling import to_number
from .runs import find_run

__all__ = ["Outcomes", "ProbeKey", "paired_change", "probe_rows_of", "same_scenarios"]

ProbeKey = tuple[str, str, str]  # suite, scenario, probe id
_RecordKey = tuple[str, str, str]  # suite, strategy, embedding
_ROUNDING = 5e-4  # summary.json's shares are rounded to 4 decimal places


@dataclass(frozen=True)
class Outcomes:
    """A run's probe rows by record.

    Attributes:
        rows: Per (suite, strategy, embedding), the run's probe rows (``results.jsonl``).
        suites: The suites whose probes may be paired; ``None``: every suite.
    """

    rows: Mapping[_RecordKey, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    suites: frozenset[str] | None = None

    @classmethod
    def from_probes(
        cls, probes: Iterable[Mapping[str, Any]], suites: Iterable[str] | None = None
    ) -> Outcomes:
        """Group a run's probe rows by record (``suites``: only those may be paired)."""
        grouped: dict[_RecordKey, list[Mapping[str, Any]]] = {}
        for row in probes:
            key = (str(row.get("suite")), str(row.get("strategy")), str(row.get("embedding")))
            grouped.setdefault(key, []).append(row)
        allowed = None if suites is None else frozenset(suites)
        return cls({key: tuple(rows) for key, rows in grouped.items()}, allowed)

    def of(self, record: Mapping[str, Any], metric: str) -> dict[ProbeKey, bool] | None:
        """The outcome of every scored probe of ``record`` (a pooled record: of every suite);
        ``None`` when there are no rows for it, one of its suites may not be paired, or
        ``metric`` is not a yes/no per probe."""
        suite = str(record.get("suite"))
        pair = (str(record.get("strategy")), str(record.get("embedding")))
        keys = [k for k in self.rows if (k[1], k[2]) == pair and suite in ("all", k[0])]
        if self.suites is not None and any(k[0] not in self.suites for k in keys):
            return None
        out: dict[ProbeKey, bool] = {}
        for key in keys:
            for row in self.rows[key]:
                value = row.get(metric)
                if value is None:
                    continue  # not scored (a probe whose context did not fit)
                if not isinstance(value, bool):
                    return None  # a fraction per probe (evidence recall): not paired
                out[(key[0], str(row.get("scenario")), str(row.get("probe")))] = value
        return out or None


def _agrees(outcomes: Mapping[ProbeKey, bool], record: Mapping[str, Any], metric: str) -> bool:
    """The outcomes average to the record's figure (rounded to 4 places in summary.json)."""
    value = to_number(record.get(metric))
    if not outcomes or value is None:
        return False
    return abs(sum(outcomes.values()) / len(outcomes) - value) < _ROUNDING


def paired_change(
    after: Mapping[str, Any],
    after_outcomes: Outcomes | None,
    before: Mapping[str, Any],
    before_outcomes: Outcomes | None,
    metric: str,
) -> tuple[float, float] | None:
    """``(change, noise)`` of ``after[metric] − before[metric]`` probe by probe, or ``None``
    when the two cannot be paired (see the module docstring)."""
    if after_outcomes is None or before_outcomes is None:
        return None
    mine, theirs = after_outcomes.of(after, metric), before_outcomes.of(before, metric)
    if not mine or not theirs or mine.keys() != theirs.keys():
        return None
    if not (_agrees(mine, after, metric) and _agrees(theirs, before, metric)):
        return None
    return paired_noise(theirs, mine)


def same_scenarios(before: Mapping[str, Any], after: Mapping[str, Any]) -> frozenset[str]:
    """The suites two runs played on identical scenarios (equal checksums in their
    ``provenance``, :func:`memctx.harness.comparability.run_differences`): the only ones
    whose probes pair up across the runs."""
    return frozenset(run_differences(before, after).same)


def probe_rows_of(spec: str | Path, reports: Path = Path("reports")) -> list[dict[str, Any]] | None:
    """The probe rows (``results.jsonl``) next to a run given as ``memctx compare`` takes it
    (a run folder, its ``summary.json``, a run id or ``latest``); ``None`` when there are
    none or they cannot be read: pairing is then skipped, never the comparison."""
    path = Path(spec)
    try:
        if path.is_file() or path.is_dir():
            folder = path.parent if path.is_file() else path
        else:
            folder = find_run(spec, reports)
        rows = []
        with (folder / "results.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    row = json.loads(line)
                    if not isinstance(row, dict):
                        return None
                    rows.append(row)
    except (OSError, ValueError, RecursionError):
        return None
    return rows

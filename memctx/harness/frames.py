"""A run's files as pandas DataFrames: the way to analyse results without traps.

>>> run = load_run("reports/latest")                                   # doctest: +SKIP
>>> run.probes.groupby(["suite", "strategy", "embedding"]).recall_accuracy.mean()  # doctest: +SKIP

gives ``summary.json``'s ``recall_accuracy`` per record: unfitted probes hold ``<NA>`` in the
metric columns, which ``mean()`` skips, and the pooled records (``suite == "all"``) are a
frame of their own, so summing ``records`` counts every call once.

Every probe row holds its ``question`` and ``answers`` (None in a run written before schema
3). The real-data suites (``locomo``, ``claude-code``, ``trajectories``) are rows and records
like any suite's; they are in no pooled record (:mod:`memctx.harness.schema`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .runs import find_run
from .schema import upgrade_probe_row, upgrade_summary

if TYPE_CHECKING:  # pandas takes a second to import: loaded by the functions that build frames
    import pandas as pd

__all__ = ["RunFrames", "load_run", "probe_frame"]

# Nullable dtypes: a probe that did not fit has no accuracy, which is neither True nor False.
_PROBE_DTYPES = {
    "fits": "boolean",
    "recall_accuracy": "boolean",
    "tool_accuracy": "boolean",
    "stale_rate": "boolean",
    "evidence_recall": "Float64",
    "has_tool": "boolean",
    "judged": "boolean",
    "sent_tokens": "Int64",
    "recall_tokens": "Int64",
}
_CALL_DTYPES = {
    "sent_tokens": "Int64",
    "cached_tokens": "Int64",
    "recall_tokens": "Int64",
    "history_tokens": "Int64",
    "output_tokens": "Int64",
}


@dataclass(frozen=True)
class RunFrames:
    """One run as DataFrames.

    Attributes:
        probes: ``results.jsonl``, one row per probe × strategy × embedding.
        calls: ``trace.jsonl``, one row per model call.
        records: ``summary.json``'s per-suite records.
        pooled: Its pooled records (one per strategy × embedding, ``suite == "all"``).
        summary: The whole ``summary.json`` (provenance, config, timing).
        path: The run folder.
    """

    probes: pd.DataFrame
    calls: pd.DataFrame
    records: pd.DataFrame
    pooled: pd.DataFrame
    summary: dict[str, Any]
    path: Path


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def probe_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Probe rows (``results.jsonl`` dicts) as a frame with nullable metric columns."""
    import pandas as pd

    frame = pd.DataFrame(rows)
    return frame.astype({k: v for k, v in _PROBE_DTYPES.items() if k in frame.columns})


def load_run(path: str | Path, reports: Path = Path("reports")) -> RunFrames:
    """Load a run folder (or its ``summary.json``, its id, or ``latest``) as DataFrames.

    Raises:
        FileNotFoundError: No such run (the message lists recent ones).
        ValueError: ``summary.json`` is not a run summary.
    """
    folder = find_run(path, reports)
    raw = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    if not isinstance(raw, dict) or not isinstance(raw.get("records"), list):
        raise ValueError(f"{folder / 'summary.json'} is not a run summary (no 'records' list)")
    summary = upgrade_summary(raw)
    import pandas as pd

    calls = pd.DataFrame(_read_jsonl(folder / "trace.jsonl"))
    calls = calls.astype({k: v for k, v in _CALL_DTYPES.items() if k in calls.columns})
    return RunFrames(
        probes=probe_frame([upgrade_probe_row(r) for r in _read_jsonl(folder / "results.jsonl")]),
        calls=calls,
        records=pd.DataFrame(summary.get("records", [])),
        pooled=pd.DataFrame(summary.get("pooled", [])),
        summary=summary,
        path=folder,
    )

"""Comparing two run folders apart from what depends on the clock (run ids, wall times)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memctx.harness.schema import TIMING_KEYS

# Row columns that name the time: the run's id (it starts with the time) and the hook's wall time.
ROW_TIMING = frozenset({"run", "latency_ms"})


def without_timing(value: Any) -> Any:
    """``value`` (a summary, or part of one) with every key of TIMING_KEYS dropped, deeply."""
    if isinstance(value, dict):
        return {k: without_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timing(v) for v in value]
    return value


def rows_without_timing(path: Path) -> list[dict[str, Any]]:
    """A run's JSONL rows without the columns that name the time."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert rows, f"{path} holds no rows"
    return [{k: v for k, v in row.items() if k not in ROW_TIMING} for row in rows]

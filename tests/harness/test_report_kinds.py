"""The report's breakdown of recall accuracy by probe kind (from results.jsonl rows)."""

from __future__ import annotations

from typing import Any

from memctx.harness.report.tables import kind_table


def _row(suite: str, strategy: str, embedding: str, probe: str, kind: str, hit: Any) -> dict:
    return {
        "suite": suite,
        "scenario": f"{suite}-000",
        "strategy": strategy,
        "embedding": embedding,
        "probe": probe,
        "kind": kind,
        "recall_accuracy": hit,
    }


def test_kinds_by_configuration_with_intervals_and_n() -> None:
    rows = [
        # rule: truncate 0 of 3, memory-context 3 of 3 (one probe in another suite)
        *(_row("rules", "truncate", "none", f"p{i}", "rule", False) for i in range(2)),
        *(_row("rules", "memory-context", "hash", f"p{i}", "rule", True) for i in range(2)),
        _row("multi-cycle", "truncate", "none", "q1", "rule", False),
        _row("multi-cycle", "memory-context", "hash", "q1", "rule", True),
        # artifact: an unfitted probe (None) is not counted; the other one is a miss
        _row("artifacts", "truncate", "none", "a1", "artifact", None),
        _row("artifacts", "truncate", "none", "a2", "artifact", False),
        _row("artifacts", "memory-context", "hash", "a1", "artifact", True),
        _row("artifacts", "memory-context", "hash", "a2", "artifact", False),
        # real-data suites stand alone: never in this table
        _row("locomo", "memory-context", "hash", "l1", "locomo-single", True),
    ]
    table = kind_table(rows)
    assert table.header == ("kind", "probes", "truncate", "memory-context × hash")
    by_kind = {row[0]: row[1:] for row in table.rows}
    assert list(by_kind) == ["artifact", "rule"]
    assert by_kind["rule"][0] == "3"
    assert by_kind["rule"][1].startswith("0.0 % (0–") and by_kind["rule"][1].endswith("n=3")
    assert by_kind["rule"][2].startswith("100.0 % (") and by_kind["rule"][2].endswith("n=3")
    assert by_kind["artifact"][0] == "2"
    assert by_kind["artifact"][1].startswith("0.0 %") and by_kind["artifact"][1].endswith("n=1")
    assert by_kind["artifact"][2].startswith("50.0 %") and by_kind["artifact"][2].endswith("n=2")


def test_no_rows_without_probe_rows() -> None:
    assert kind_table(None).rows == () and kind_table([]).rows == ()

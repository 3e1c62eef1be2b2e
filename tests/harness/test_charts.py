"""The run charts: valid PNGs of sensible size, stable bytes, the session they plot."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from helpers.imports import modules_loaded_by
from helpers.synthetic_run import build_run

from memctx.harness.report.charts import pick_session, session_calls, write_charts

PNG = b"\x89PNG\r\n\x1a\n"
BASELINE = Path(__file__).resolve().parents[2] / "reports" / "baseline" / "summary.json"


def _size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.fixture(scope="module")
def charts(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    run = build_run()
    key = pick_session(run.calls)
    assert key is not None
    return write_charts(run.summary, session_calls(run.calls, key), tmp_path_factory.mktemp("c"))


def test_every_chart_is_a_png_of_sensible_size(charts: list[Any]) -> None:
    assert [c.path.stem for c in charts] == [
        "recall_vs_tokens",
        "cost",
        "frontier",
        "accuracy_by_suite",
        "hash_vs_transformer",
        "hook_latency",
        "tokens_over_calls",
    ]
    for chart in charts:
        data = chart.path.read_bytes()
        width, height = _size(data)
        assert 600 <= width <= 2000 and 300 <= height <= 1000, (chart.path.name, width, height)
        assert len(data) > 10_000, chart.path.name  # not blank
        assert b"Software" not in data[:200]  # no version stamp: byte-stable
        assert chart.title and chart.caption


def test_same_data_gives_the_same_bytes(charts: list[Any], tmp_path: Path) -> None:
    run = build_run()
    key = pick_session(run.calls)
    assert key is not None
    again = write_charts(run.summary, session_calls(run.calls, key), tmp_path)
    assert [c.path.read_bytes() for c in again] == [c.path.read_bytes() for c in charts]


def test_session_is_the_longest_long_haul_one_else_the_longest() -> None:
    calls = build_run().calls
    assert pick_session(calls) == ("long-haul", "long-haul-000", "long-haul-000-s0")
    others = [c for c in calls if c["suite"] != "long-haul"]
    longer = [dict(c, call=c["call"] + 30) for c in others if c["scenario"] == "cjk-000"]
    key = pick_session(others + longer)
    assert key == ("cjk", "cjk-000", "cjk-000-s0")
    assert pick_session([]) is None
    rows = session_calls(calls, ("needle", "needle-000", "needle-000-s0"))
    assert len(rows) == 4 * 30 and {r["suite"] for r in rows} == {"needle"}


def _only(summary: dict[str, Any], keep: Any) -> dict[str, Any]:
    """``summary`` with only the records, per suite and pooled, for which ``keep(record)``."""
    return {
        **summary,
        "records": [r for r in summary["records"] if keep(r)],
        "pooled": [r for r in summary["pooled"] if keep(r)],
    }


def test_charts_without_data_are_left_out(tmp_path: Path) -> None:
    run = build_run()
    written = write_charts(
        _only(run.summary, lambda r: r["embedding"] != "transformer"), [], tmp_path
    )
    assert [c.path.stem for c in written] == [
        "recall_vs_tokens",
        "cost",
        "frontier",
        "accuracy_by_suite",
        "hook_latency",
    ]


def test_the_frontier_chart_names_what_it_leaves_out(charts: list[Any], tmp_path: Path) -> None:
    chart = next(c for c in charts if c.path.name == "frontier.png")
    assert chart.title == "Cost vs recall accuracy: the frontier"
    # The synthetic full is scored on 144 of its 216 probes: not drawn, named in the caption.
    assert chart.caption.endswith(
        "Not drawn, not comparable: full (accuracy over 144 of 216 probes only)."
    )
    run = build_run()
    for record in run.summary["records"] + run.summary["pooled"]:
        record["fit"] = record["probes"]
    drawn = write_charts(run.summary, [], tmp_path)
    again = next(c for c in drawn if c.path.name == "frontier.png")
    assert "Not drawn" not in again.caption
    assert again.path.read_bytes() != chart.path.read_bytes()  # full is drawn now


def test_no_frontier_chart_when_nothing_is_comparable(tmp_path: Path) -> None:
    run = build_run()
    (tmp_path / "frontier.png").write_bytes(b"stale")
    written = write_charts(_only(run.summary, lambda r: r["strategy"] == "full"), [], tmp_path)
    assert "frontier" not in [c.path.stem for c in written]
    assert not (tmp_path / "frontier.png").exists()


def test_the_frontier_chart_of_the_baseline_is_a_png(tmp_path: Path) -> None:
    summary = json.loads(BASELINE.read_text(encoding="utf-8"))
    written = write_charts(summary, [], tmp_path)
    chart = next(c for c in written if c.path.name == "frontier.png")
    width, height = _size(chart.path.read_bytes())
    assert 600 <= width <= 2000 and 300 <= height <= 1000
    assert chart.caption.endswith(
        "Not drawn, not comparable: full (accuracy over 11 of 668 probes only)."
    )


def test_importing_the_report_modules_loads_no_heavy_module() -> None:
    # The front doors and the CLI are checked in tests/test_startup.py; these are the
    # modules that draw charts, which load matplotlib only when a chart is drawn.
    statement = (
        "import memctx.harness.report.report, memctx.harness.report.charts, "
        "memctx.harness.gate, memctx.harness.pytest_plugin"
    )
    assert modules_loaded_by([statement]) == {statement: []}

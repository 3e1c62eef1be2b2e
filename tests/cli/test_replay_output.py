"""``memctx replay`` has one output format: ``--json`` is one document shape whatever the
other options, and the text is one layout (a section per report, then the table) in which
``--per-turn`` only adds the call lines; names are never cut."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers.eval_sessions import PLANT, session

from memctx.cli import main
from memctx.strategies import register_strategy, strategy_names
from memctx.strategies.memory_context import MemoryContextStrategy

LONG_FILE = "0f3c2a9e-5b1d-4c7e-9a6f-2d8b7e1c4a30-a-session-with-a-long-name.json"
LONG_STRATEGY = "memory-context-under-a-long-registered-name"
REPORT_KEYS = {
    "summary",
    "violation_kinds",
    "calibration",
    "compactions",
    "recorded_compactions",
    "recovery_paths",
    "calls",
}


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    """Long enough for a 6,000-token window to trim and compact."""
    path = tmp_path / LONG_FILE
    path.write_text(json.dumps(session("s", 10, plants={1: PLANT}, tool_words=400)))
    return path


@pytest.fixture
def long_strategy() -> str:
    if LONG_STRATEGY not in strategy_names():
        register_strategy(LONG_STRATEGY, MemoryContextStrategy)
    return LONG_STRATEGY


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[dict[str, Any]]:
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)  # raises when --json was not honoured
    assert isinstance(doc, list)
    return doc


@pytest.mark.parametrize(
    ("extra", "reports"),
    [
        ([], 1),
        (["--strategy", "truncate"], 1),
        (["--strategy", "truncate", "--per-turn"], 1),
        (["--strategy", "truncate", "--strategy", "full", "--window", "9000"], 4),
        (["--per-turn", "--no-calibrate"], 1),
    ],
    ids=["default", "strategy", "strategy+per-turn", "2 strategies x 2 windows", "per-turn"],
)
def test_json_is_one_shape_whatever_the_options(
    transcript: Path, capsys: pytest.CaptureFixture[str], extra: list[str], reports: int
) -> None:
    plain = _json(capsys, ["replay", str(transcript), "--window", "6000", "--json"])
    doc = _json(capsys, ["replay", str(transcript), "--window", "6000", *extra, "--json"])
    assert len(doc) == reports
    for report in doc:
        assert set(report) == REPORT_KEYS
        assert set(report["summary"]) == set(plain[0]["summary"])
        assert report["summary"]["source"] == LONG_FILE  # whole
        assert len(report["calls"]) == report["summary"]["calls"] > 0
        assert set(report["calls"][0]) == set(plain[0]["calls"][0])


def _shape(text: str) -> list[str]:
    """The text with its figures blanked (hook latencies vary from run to run)."""
    return [re.sub(r"[\d.,+%-]+", "#", " ".join(line.split())) for line in text.splitlines()]


def test_per_turn_only_adds_the_call_lines_to_one_layout(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["replay", str(transcript), "--window", "6000", "--strategy", "memory-context"]
    argv += ["--strategy", "truncate"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert main([*argv, "--per-turn"]) == 0
    per_turn = capsys.readouterr().out.splitlines()
    header = [i for i, line in enumerate(per_turn) if line.split()[:2] == ["call", "at"]]
    assert len(header) == 2  # one block of call lines in each report's section
    calls = {i for h in header for i in range(h, len(per_turn)) if _in_block(per_turn, h, i)}
    kept = "\n".join(line for i, line in enumerate(per_turn) if i not in calls)
    assert _shape(kept) == _shape(text)


def _in_block(lines: list[str], header: int, i: int) -> bool:
    """Line ``i`` is the call header at ``header`` or one of the call lines below it."""
    return i == header or all(
        re.match(r"\s+\d+\s+\d+\s", lines[j]) for j in range(header + 1, i + 1)
    )


def test_names_are_printed_whole(
    transcript: Path, long_strategy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["replay", str(transcript), "--window", "6000", "--strategy", long_strategy]
    assert main([*argv, "--strategy", "truncate"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"{LONG_FILE} through {long_strategy} at 6,000 tokens" in lines
    # Its compactions are labelled with the whole name, the columns widened to fit it.
    ours = [line for line in lines if line.startswith(f"  {long_strategy} #")]
    assert ours, lines
    header = next(line for line in lines if line.lstrip().startswith("compaction "))
    at = re.match(rf"  {re.escape(long_strategy)} #1 +(\d+) ", ours[0])
    assert at is not None  # the message column still lines up under its header
    assert at.end(1) == header.index("message") + len("message")
    top = next(i for i, line in enumerate(lines) if line.split()[:1] == ["source"])
    rows = [line.split()[:2] for line in lines[top + 1 :]]
    assert rows == [[LONG_FILE, long_strategy], [LONG_FILE, "truncate"]]

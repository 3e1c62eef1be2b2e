"""``memctx calibrate`` and ``memctx foundation`` take files (``FILE#N`` too) or folders:
the shared datasets root, its ``claude-code`` folder or any folder of transcripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.datasets import dataset_path
from helpers.eval_sessions import session

from memctx.cli import main

SESSIONS = (
    "258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    "4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
    "8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl",
)


def _calibrated(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[str]:
    """The sessions of the ceil(len/3) rows of ``memctx calibrate``'s table."""
    assert main(["calibrate", *argv]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    return [line.split()[1] for line in out.splitlines() if line.startswith("ceil(len/3) ")]


@pytest.mark.dataset
def test_calibrate_reads_the_datasets_root_or_its_claude_code_folder(
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = dataset_path()
    for folder in (root, dataset_path("claude-code")):
        assert _calibrated(capsys, ["--datasets", str(folder)]) == list(SESSIONS), folder


@pytest.mark.dataset
def test_calibrate_reads_one_session_file(capsys: pytest.CaptureFixture[str]) -> None:
    one = dataset_path("claude-code", SESSIONS[1])
    assert _calibrated(capsys, [str(one)]) == [SESSIONS[1]]
    assert _calibrated(capsys, [f"{one}#0"]) == [SESSIONS[1]]
    assert _calibrated(capsys, ["--datasets", str(one)]) == [SESSIONS[1]]
    # A session without a compaction cannot be calibrated: one line saying so.
    short = dataset_path("claude-code", "short.jsonl")
    assert main(["calibrate", str(short)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no Claude Code session with a compaction" in err


@pytest.mark.dataset
def test_foundation_on_one_file_checks_it_and_calibrates_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    one = dataset_path("claude-code", SESSIONS[0])
    assert main(["foundation", str(one), "--trials", "1"]) == 0
    out = capsys.readouterr().out
    rows = [line.split()[:2] for line in out.splitlines()]
    assert [SESSIONS[0], "claude-code"] in rows  # the check
    assert ["ceil(len/3)", SESSIONS[0]] in rows  # the calibration


def _transcripts(folder: Path) -> None:
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps(session("a", 2)))
    items = [{"instance_id": f"i{n}", "messages": session(f"i{n}", 1 + n)} for n in range(2)]
    (folder / "b.json").write_text(json.dumps(items))


def test_foundation_takes_any_folder_and_a_file_hash_n(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "mine"
    _transcripts(folder)
    assert main(["foundation", str(folder), "--trials", "1"]) == 0
    out = capsys.readouterr().out
    names = [line.split()[0] for line in out.splitlines()[2:5]]
    assert names == ["a.json", "b.json#0", "b.json#1"]
    assert "no token calibration: no Claude Code session with a compaction" in out
    assert main(["foundation", f"{folder / 'b.json'}#1", "--trials", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[2].split()[:3] == ["b.json#1", "openhands", "9"]


def test_calibrate_says_in_one_line_when_nothing_can_be_calibrated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "mine"
    _transcripts(folder)
    assert main(["calibrate", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no Claude Code session with a compaction" in err
    assert main(["calibrate", "--datasets", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "--datasets" in err and "not found" in err

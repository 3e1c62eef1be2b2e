"""Transcript arguments, the same for every command: ``FILE`` (all of its transcripts),
``FILE#N`` (the N-th, counted from 0, as ``check`` lists them) and folders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.eval_sessions import session

from memctx.cli import main
from memctx.cli.inputs import folder_transcripts, load_transcript_arg, split_transcript_arg
from memctx.cli.options import OptionError
from memctx.transcripts import load_transcripts

INSTANCES = ("acme__widgets-101", "acme__widgets-202", "acme__gadgets-303")
TURNS = (2, 3, 4)  # a different number of calls in each, so a wrong pick shows


def _openhands(tmp_path: Path, name: str = "trajectories.json") -> Path:
    """An OpenHands-shaped file holding three transcripts."""
    items = [
        {"instance_id": sid, "messages": session(sid, turns, seed=n)}
        for n, (sid, turns) in enumerate(zip(INSTANCES, TURNS, strict=True))
    ]
    path = tmp_path / name
    path.write_text(json.dumps(items))
    return path


def _calls(turns: int) -> int:
    return 2 * turns  # each turn of helpers.eval_sessions.session: a tool call and a reply


def _replay(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    status = main(["replay", *argv, "--window", "50000", "--strategy", "truncate", "--json"])
    out, err = capsys.readouterr()
    return status, json.loads(out) if out else None, err


def test_file_hash_n_is_the_nth_transcript_counted_from_0(tmp_path: Path) -> None:
    path = _openhands(tmp_path)
    assert split_transcript_arg(f"{path}#2") == (path, 2)
    assert split_transcript_arg(str(path)) == (path, None)
    [second] = load_transcript_arg(f"{path}#1")
    # The same transcript load_transcripts returns at that index, named FILE#N.
    assert second.messages == load_transcripts(path)[1].messages
    assert (second.session_id, second.source) == (INSTANCES[1], f"{path}#1")
    every = load_transcript_arg(str(path))
    assert [t.source for t in every] == [f"{path}#{n}" for n in range(3)]
    assert [t.session_id for t in every] == list(INSTANCES)


def test_a_bad_number_says_how_many_there_are(tmp_path: Path) -> None:
    path = _openhands(tmp_path)
    with pytest.raises(OptionError, match=r"holds 3 transcripts, #0 to #2 \(counted from 0\)"):
        load_transcript_arg(f"{path}#3")
    with pytest.raises(OptionError, match="counted from 0"):
        split_transcript_arg(f"{path}#-1")
    single = tmp_path / "one.json"
    single.write_text(json.dumps(session("s", 1)))
    assert [t.source for t in load_transcript_arg(f"{single}#0")] == [str(single)]
    with pytest.raises(OptionError, match="holds one transcript"):
        load_transcript_arg(f"{single}#1")


def test_a_file_whose_name_holds_a_hash_is_that_file(tmp_path: Path) -> None:
    odd = tmp_path / "run#2.json"
    odd.write_text(json.dumps(session("s", 1)))
    assert split_transcript_arg(str(odd)) == (odd, None)
    assert [t.source for t in load_transcript_arg(str(odd))] == [str(odd)]


def test_replay_plays_every_transcript_of_a_file_or_the_one_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _openhands(tmp_path)
    status, reports, _ = _replay(capsys, str(path))
    assert status == 0
    summaries = [r["summary"] for r in reports]
    assert [s["source"] for s in summaries] == [f"{path.name}#{n}" for n in range(3)]
    assert [s["session"] for s in summaries] == list(INSTANCES)
    assert [s["calls"] for s in summaries] == [_calls(t) for t in TURNS]
    status, [one], _ = _replay(capsys, f"{path}#2")
    assert status == 0
    assert one["summary"]["source"] == f"{path.name}#2"
    assert one["summary"]["session"] == INSTANCES[2]
    assert one["summary"]["calls"] == _calls(TURNS[2])
    # One store folder per replay: the transcript's number only when there are several.
    argv = ["replay", str(path), "--window", "50000", "--store", str(tmp_path / "st")]
    assert main([*argv, "--strategy", "truncate", "--json"]) == 0
    assert sorted(p.name for p in (tmp_path / "st").iterdir()) == [f"t{n}-w50000" for n in range(3)]
    argv[1] = f"{path}#1"
    assert main([*argv[:-1], str(tmp_path / "one"), "--strategy", "truncate", "--json"]) == 0
    assert [p.name for p in (tmp_path / "one").iterdir()] == ["w50000"]
    capsys.readouterr()
    # The text names each one in full: FILE#N and its session.
    assert main(["replay", str(path), "--window", "50000", "--strategy", "truncate"]) == 0
    out = capsys.readouterr().out
    for n, sid in enumerate(INSTANCES):
        assert f"{path.name}#{n} (session {sid}) through truncate at 50,000 tokens" in out


def test_replay_refuses_a_number_past_the_last_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _openhands(tmp_path)
    status, out, err = _replay(capsys, f"{path}#3")
    assert status == 2 and out is None
    assert err.count("\n") == 1 and err.startswith("memctx: error: ")
    assert "holds 3 transcripts, #0 to #2" in err


def test_check_lists_them_as_file_hash_n_and_takes_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _openhands(tmp_path)
    assert main(["check", str(path), "--trials", "1"]) == 0
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines()[2:] if line]
    assert rows[:3] == [f"{path.name}#{n}" for n in range(3)]
    assert main(["check", f"{path}#1", "--trials", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2].split()[0] == f"{path.name}#1" and out[3] == ""
    assert "1 transcripts" in out[-1]


def test_a_folder_is_read_flat_and_names_stay_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        _openhands(tmp_path / sub, "sample_raw.json")  # the datasets root's layout
    (tmp_path / "notes.txt").write_text("not a transcript")
    assert folder_transcripts(tmp_path) == [
        tmp_path / "a" / "sample_raw.json",
        tmp_path / "b" / "sample_raw.json",
    ]
    assert folder_transcripts(tmp_path / "a") == [tmp_path / "a" / "sample_raw.json"]
    assert main(["check", str(tmp_path), "--trials", "1"]) == 0
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines()[2:] if line]
    assert rows[:6] == [f"{sub}/sample_raw.json#{n}" for sub in "ab" for n in range(3)]

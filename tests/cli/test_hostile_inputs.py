"""The command line under hostile input: never a traceback, never a hang, never a file's
content in a message. Bad input is one line, ``memctx: error: <problem>; <fix>``, exit 2."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.eval_sessions import scenario
from helpers.files import make_fifo

import memctx.cli.foundation
from memctx.cli import main
from memctx.errors import StoreError
from memctx.harness import dump_scenarios
from memctx.retrieval import HashEmbedder
from memctx.store import RawStore
from memctx.transcripts import MAX_INPUT_BYTES_ENV

SECRET = "hunter2-SECRET-VALUE-9f8e7d"
pytestmark = pytest.mark.timeout(120)


def _run(capsys: pytest.CaptureFixture[str], argv: list[str], status: int = 2) -> tuple[str, str]:
    """Run ``memctx argv``; check the exit status and that any error is one clean line."""
    assert main(argv) == status, capsys.readouterr()
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if status == 2 and argv[0] not in ("check",):
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("memctx: error: "), err
    return out, err


# -- replay: devices, FIFOs, directories, secrets ----------------------------------------


@pytest.mark.timeout(30)
def test_replay_refuses_dev_zero(capsys: pytest.CaptureFixture[str]) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    _, err = _run(capsys, ["replay", "/dev/zero"])
    assert "/dev/zero: cannot read the transcript: it is a character device" in err


@pytest.mark.timeout(30)
def test_replay_refuses_a_fifo_and_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, err = _run(capsys, ["replay", str(make_fifo(tmp_path))])
    assert "it is a FIFO (named pipe), not a regular file" in err
    _, err = _run(capsys, ["replay", str(tmp_path)])
    assert "it is a directory, not a regular file" in err


@pytest.mark.timeout(30)
def test_replay_names_the_size_cap_and_how_to_raise_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "x" * 5000}) + "\n", encoding="utf-8")
    monkeypatch.setenv(MAX_INPUT_BYTES_ENV, "4K")
    _, err = _run(capsys, ["replay", str(path)])
    assert "4 KiB input limit" in err and f"{MAX_INPUT_BYTES_ENV}=" in err


def test_replay_never_prints_the_files_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text(f"root:{SECRET}:0:0::/root:/bin/sh\n", encoding="utf-8")
    link = tmp_path / "session.jsonl"
    link.symlink_to(secret)
    _, err = _run(capsys, ["replay", str(link)])
    assert SECRET not in err and "root:" not in err
    assert "line 1 (byte offset 0)" in err
    passwd = Path("/etc/passwd")
    if passwd.is_file():
        other = tmp_path / "passwd.json"
        other.symlink_to(passwd)
        _, err = _run(capsys, ["replay", str(other)])
        first = passwd.read_text(encoding="utf-8", errors="replace").splitlines()[0]
        assert first[:10] not in err


# -- report: summaries of the wrong shape --------------------------------------------------


def _run_dir(tmp_path: Path, summary: str, results: str = "", trace: str = "") -> Path:
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    (run / "summary.json").write_text(summary, encoding="utf-8")
    (run / "results.jsonl").write_text(results, encoding="utf-8")
    (run / "trace.jsonl").write_text(trace, encoding="utf-8")
    return run


_RECORD = {"suite": "all", "strategy": "full", "embedding": "-", "recall_accuracy": 0.5}


@pytest.mark.parametrize(
    ("summary", "said"),
    [
        ('{"records": []}', "holds no records"),
        ("[{}]", "holds a list, not an object with a 'records' list"),
        ('{"records": [{}]}', "records[0] has no 'suite' string"),
        ('{"records": [1]}', "records[0] is a number, not an object"),
        ('{"records": {"a": 1}}', "'records' is an object, not a list"),
        ("null", "holds null"),
        ("", "not JSON"),
        ("{", "not JSON"),
        (json.dumps({"records": [{**_RECORD, "recall_accuracy": "high"}]}), "'recall_accuracy'"),
        (json.dumps({"records": [{**_RECORD, "recall_accuracy_ci": [0.1]}]}), "two numbers"),
        (json.dumps({"records": [{**_RECORD, "violation_kinds": [1]}]}), "'violation_kinds'"),
        (json.dumps({"records": [_RECORD], "provenance": []}), "'provenance' is a list"),
        (json.dumps({"records": [_RECORD], "provenance": {"git": "x"}}), "'provenance.git'"),
        (json.dumps({"records": [_RECORD], "provenance": {"scenarios": {"a": 1}}}), "entry"),
        ('{"records": [' * 5000 + "]}" * 5000, "summary"),
    ],
)
def test_report_rejects_a_summary_of_the_wrong_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], summary: str, said: str
) -> None:
    run = _run_dir(tmp_path, summary)
    _, err = _run(capsys, ["report", str(run)])
    assert said in err and "summary.json" in err
    assert "memctx eval" in err  # the fix


def test_report_on_a_summary_without_pooled_records_renders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No "all" record: the headline table is empty, not a crash.
    record = {**_RECORD, "suite": "needle"}
    run = _run_dir(tmp_path, json.dumps({"records": [record]}))
    out, _ = _run(capsys, ["report", str(run)], status=0)
    assert out.startswith("strategy") and "report.md" in out


@pytest.mark.parametrize(
    ("results", "trace", "said"),
    [
        ("[{}]\n", "", "results.jsonl:1: the row is a list, not an object"),
        ("5\n", "", "results.jsonl:1: the row is a number"),
        ('{"suite": 1}\n', "", "results.jsonl:1: 'suite' is a number, want a string"),
        ("{not json\n", "", "results.jsonl:1: not JSON"),
        ("", '{"suite": "a"}\n', "trace.jsonl:1: 'scenario' is null, want a string"),
        ("", "\n\n[1]\n", "trace.jsonl:3: the row is a list"),
    ],
)
def test_report_rejects_rows_of_the_wrong_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], results: str, trace: str, said: str
) -> None:
    run = _run_dir(tmp_path, json.dumps({"records": [_RECORD]}), results, trace)
    _, err = _run(capsys, ["report", str(run)])
    assert said in err


@pytest.mark.timeout(30)
def test_report_refuses_run_files_that_are_not_regular_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run_dir(tmp_path, json.dumps({"records": [_RECORD]}))
    (run / "trace.jsonl").unlink()
    os.mkfifo(run / "trace.jsonl")
    _, err = _run(capsys, ["report", str(run)])
    assert "trace.jsonl: cannot read the trace.jsonl: it is a FIFO" in err
    (run / "summary.json").unlink()
    (run / "summary.json").mkdir()
    _, err = _run(capsys, ["report", str(run)])
    assert "it is a directory" in err
    (run / "summary.json").rmdir()
    (run / "summary.json").write_bytes(b"\xff\xfe\x00garbage")
    (run / "trace.jsonl").unlink()
    (run / "trace.jsonl").write_text("")
    _, err = _run(capsys, ["report", str(run)])
    assert "not UTF-8 text: invalid byte at line 1, byte offset 0" in err


# -- eval: invalid session ids, bad options -------------------------------------------------


def _bad_session_suite(tmp_path: Path, bad: str) -> Path:
    data = tmp_path / "mine"
    data.mkdir()
    good = scenario(turns=6).to_json()
    old = good["sessions"][0]["id"]
    quoted = json.dumps(bad)
    text = json.dumps(good).replace(f'"{old}"', quoted).replace(f'"{old}:', f"{quoted[:-1]}:")
    (data / "my-suite.jsonl").write_text(text + "\n", encoding="utf-8")
    return data


@pytest.mark.parametrize("bad", ["bad id/x", "../up", "..", "x" * 129, "tab\there"])
def test_eval_rejects_an_invalid_session_id_up_front(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    data = _bad_session_suite(tmp_path, bad)
    argv = ["eval", "--datasets", str(data), "--jobs", "1", "--embedding", "hash"]
    _, err = _run(capsys, [*argv, "--no-progress", "--out", str(tmp_path / "run")])
    assert f"{data / 'my-suite.jsonl'}:1 " in err  # the file and line
    assert "'needle-000'" in err or "scenario" in err
    assert "cannot name a memctx session" in err and "rename it" in err
    assert not (tmp_path / "run").exists()


def test_memctx_errors_reaching_the_top_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: Any, **kwargs: Any) -> int:
        raise StoreError("the store is broken\n  segments.jsonl: line 3\nrebuild it")

    monkeypatch.setattr(memctx.cli.foundation, "check_transcripts", boom)
    _, err = _run(capsys, ["check", str(tmp_path / "x.json")])
    assert err == "memctx: error: the store is broken; segments.jsonl: line 3; rebuild it\n"


def test_a_bug_is_an_internal_error_without_a_traceback_or_the_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: Any, **kwargs: Any) -> int:
        raise RuntimeError(SECRET)

    monkeypatch.setattr(memctx.cli.foundation, "check_transcripts", boom)
    assert main(["check", str(tmp_path / "x.json")]) == 1
    _, err = capsys.readouterr()
    assert err.startswith("memctx: internal error: RuntimeError at main.py:")
    assert "MEMCTX_DEBUG=1" in err and SECRET not in err and "Traceback" not in err
    monkeypatch.setenv("MEMCTX_DEBUG", "1")
    with pytest.raises(RuntimeError):
        main(["check", str(tmp_path / "x.json")])


def _store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    with RawStore(store, embedder=HashEmbedder(), eviction_days=None) as raw:
        raw.add("s1", "user", "the staging database runs on port 5433")
    return store


def _files(tmp_path: Path) -> dict[str, str]:
    """Hostile files by name, written under ``tmp_path``."""
    (tmp_path / "empty.json").write_text("")
    (tmp_path / "garbage.bin").write_bytes(bytes(range(256)) * 8)
    (tmp_path / "garbage.json").write_bytes(bytes(range(256)) * 8)
    (tmp_path / "list.json").write_text("[{}]")
    (tmp_path / "emptyrec.json").write_text('{"records": []}')
    (tmp_path / "dir").mkdir()
    (tmp_path / "huge_line.json").write_text("a" * 2_000_000)
    names = (
        "empty.json",
        "garbage.bin",
        "garbage.json",
        "list.json",
        "emptyrec.json",
        "dir",
        "huge_line.json",
    )
    files = {name: str(tmp_path / name) for name in names}
    files["fifo"] = str(make_fifo(tmp_path))
    files["missing"] = str(tmp_path / "missing.json")
    return files


# (argv with {name} placeholders, exit status, a phrase of the message)
HOSTILE: list[tuple[list[str], int, str]] = [
    (["check", "{fifo}", "{dir}", "{garbage.bin}", "--trials", "1"], 1, "ERROR"),
    (["check", "{empty.json}", "--trials", "-1"], 2, "--trials must be 0 or more"),
    (["search", "{store}", "q", "--limit", "0"], 2, "--limit must be a positive number"),
    (["search", "{store}", "q", "--limit", "-3"], 2, "--limit must be a positive number"),
    (["search", "{store}", "q", "--session", "a b/c"], 2, "invalid session id"),
    (["search", "{dir}", "q"], 2, "no segments.jsonl"),
    (["search", "{garbage.bin}", "q"], 2, "no segments.jsonl"),
    (["search", "{fifostore}", "q"], 2, "it is a FIFO"),
    (["calibrate", "--datasets", "{missing}"], 2, "--datasets"),
    (["calibrate", "--datasets", "{garbage.bin}"], 2, "not UTF-8 text"),
    (["calibrate", "--datasets", "{dir}"], 2, "no transcript file in this folder"),
    (["calibrate", "{ok}"], 2, "no Claude Code session with a compaction"),
    (["calibrate", "{missing}"], 2, "not found"),
    (["calibrate", "{ok}#x"], 2, "counted from 0"),
    (["foundation", "--datasets", "{dir}"], 1, "no transcript file in this folder"),
    (["foundation", "--datasets", "{garbage.bin}"], 1, "not UTF-8 text"),
    (["foundation", "{missing}"], 2, "not found"),
    (["foundation", "--datasets", "{dir}", "--trials", "-2"], 2, "--trials"),
    (["report", "{garbage.bin}"], 2, "it is a file"),
    (["report", "{missing}"], 2, "no such folder"),
    (["replay", "{empty.json}"], 2, "the file is empty"),
    (["replay", "{garbage.bin}"], 2, "not UTF-8 text: invalid byte at line 2, byte offset 128"),
    (["replay", "{huge_line.json}"], 2, "no line is valid JSON"),
    (["replay", "{list.json}"], 2, "unrecognised content"),
    (["replay", "{missing}"], 2, "No such file"),
    (["replay", "{ok}", "--window", "0"], 2, "--window must be a positive number"),
    (["replay", "{ok}", "--window", "-5"], 2, "--window must be a positive number"),
    (["replay", "{ok}", "--set", "foo"], 2, "expected KEY=VALUE"),
    (["replay", "{ok}", "--set", "=1"], 2, "expected KEY=VALUE"),
    (["replay", "{ok}", "--set", "noSuchKey=1"], 2, "noSuchKey"),
    (["replay", "{ok}", "--config", "{fifo}"], 2, "it is a FIFO"),
    (["replay", "{ok}", "--config", "{dir}"], 2, "it is a directory"),
    (["replay", "{ok}", "--config", "{garbage.bin}"], 2, "unsupported config format '.bin'"),
    (["replay", "{ok}", "--config", "{garbage.json}"], 2, "not UTF-8 text: invalid byte at line 2"),
    (["replay", "{ok}", "--config", "{list.json}"], 2, "must be an object"),
    (["replay", "{ok}", "--config", "{empty.json}"], 2, "invalid JSON at line 1, column 1"),
    (["replay", "{ok}", "--store", "{garbage.bin}"], 2, "is a file, not a folder"),
    (["replay", "{ok}", "--strategy", "nope"], 2, "valid:"),
    (["replay", "{ok}#1"], 2, "the file holds one transcript"),
    (["replay", "{ok}#x"], 2, "after '#' give the transcript's number, counted from 0"),
    (["replay", "{ok}", "--set", "extractionModel="], 2, "extractionModel"),
    (["gen", "--out", "{garbage.bin}", "--suite", "needle", "--scale", "0.15"], 2, "exists"),
    (["eval", "--quick", "--config", "{fifo}"], 2, "it is a FIFO"),
    (["eval", "--quick", "--config", "{dir}"], 2, "it is a directory"),
    (["eval", "--quick", "--config", "{list.json}"], 2, "must be an object"),
    (["eval", "--quick", "--config", "{garbage.bin}"], 2, "unsupported config format '.bin'"),
    (
        ["eval", "--quick", "--config", "{garbage.json}"],
        2,
        "not UTF-8 text: invalid byte at line 2",
    ),
    (["eval", "--quick", "--config", "{empty.json}"], 2, "invalid JSON at line 1, column 1"),
    (["eval", "--quick", "--config", "{missing}"], 2, "No such file"),
    (["eval", "--quick", "--set", "foo"], 2, "expected KEY=VALUE"),
    (["eval", "--quick", "--set", "noSuchKey=1"], 2, "noSuchKey"),
    (["eval", "--quick", "--jobs", "0"], 2, "--jobs must be a positive number"),
    (["eval", "--quick", "--window", "-4"], 2, "--window must be a positive number"),
    (["eval", "--quick", "--suite", "nope"], 2, "unknown suite"),
    (["eval", "--quick", "--strategy", "nope"], 2, "unknown strategy"),
    (["eval", "--quick", "--baseline", "{list.json}"], 2, "not a run summary"),
    (["eval", "--quick", "--baseline", "{emptyrec.json}"], 2, "holds no records"),
    (["eval", "--quick", "--baseline", "{missing}"], 2, "summary.json is missing"),
    (["eval", "--quick", "--baseline", "{fifo}"], 2, "it is a FIFO"),
    (["eval", "--quick", "--baseline", "{ok}", "--fail-on", "x"], 2, "--fail-on"),
    (["eval", "--quick", "--fail-on", "cost_usd:+5%"], 2, "--baseline"),
    (["eval", "--datasets", "{dir}", "--suite", "x"], 2, "unknown suite"),
]


@pytest.fixture
def hostile(tmp_path: Path) -> Callable[[list[str]], list[str]]:
    files = _files(tmp_path)
    files["store"] = str(_store(tmp_path))
    fifo_store = tmp_path / "fifostore"
    fifo_store.mkdir()
    os.mkfifo(fifo_store / "segments.jsonl")
    files["fifostore"] = str(fifo_store)
    ok = tmp_path / "ok.json"
    ok.write_text(
        json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    )
    files["ok"] = str(ok)
    out = ["--out", str(tmp_path / "run"), "--no-progress", "--jobs", "1"]

    def expand(argv: list[str]) -> list[str]:
        # "{name}" anywhere in an argument ("{ok}#1" too) is the hostile file's path.
        args = [re.sub(r"\{([\w.]+)\}", lambda m: files.get(m[1], m[0]), a) for a in argv]
        return [*args, *out] if argv[0] == "eval" and "--jobs" not in argv else args

    return expand


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("argv", "status", "said"), HOSTILE, ids=[" ".join(h[0]) for h in HOSTILE])
def test_hostile_inputs_give_a_clear_error(
    hostile: Callable[[list[str]], list[str]],
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    status: int,
    said: str,
) -> None:
    out, err = _run(capsys, hostile(argv), status)
    assert said in out + err


def test_eval_refuses_an_out_that_is_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.write_text("keep me")
    _, err = _run(capsys, ["eval", "--quick", "--no-progress", "--out", str(out)])
    assert "--out" in err and "is a file" in err
    assert out.read_text() == "keep me"


def test_eval_scenario_files_that_are_devices_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    data = tmp_path / "data"
    data.mkdir()
    (data / "zero.jsonl").symlink_to("/dev/zero")
    dump_scenarios([scenario(turns=6)], data / "ok.jsonl")
    _, err = _run(
        capsys, ["eval", "--datasets", str(data), "--suite", "zero", "--out", str(tmp_path / "r")]
    )
    assert "zero.jsonl: cannot read the scenario file: it is a character device" in err

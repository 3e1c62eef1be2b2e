"""The scenario format: round trips, reproducible files, validation errors naming the field."""

from __future__ import annotations

import copy
import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest

from memctx.harness.scenario import (
    SCENARIO_SCHEMA,
    Probe,
    Scenario,
    ScenarioError,
    Session,
    content_sha256,
    dump_scenarios,
    load_scenarios,
)


def _scenario(sid: str = "needle-000") -> Scenario:
    messages = (
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Let's bind the API to port 8743."},
        {"role": "assistant", "content": "Noted, 端口 8743."},
        {"role": "user", "content": "ok"},
        {"role": "assistant", "content": "Continuing."},
    )
    probe = Probe(
        id=f"{sid}-p01", session_id="s1", at=5, question="Which port?", answers=("8743",),
        evidence=("s1:1",), evidence_text=("port 8743",), stale=("8080",), kind="config",
        tags=("late",),
    )  # fmt: skip
    return Scenario(
        id=sid, suite="needle", format="openai", seed=7, window=1000,
        sessions=(Session("s1", messages), Session("s2", messages[:3])), probes=(probe,),
        secrets=("sk-proj-abc",), meta={"project": "demo"},
    )  # fmt: skip


def _json() -> dict[str, Any]:
    return _scenario().to_json()


def test_json_round_trip_keeps_every_field() -> None:
    scenario = _scenario()
    data = scenario.to_json()
    assert data["schema"] == SCENARIO_SCHEMA
    back = Scenario.from_json(json.loads(json.dumps(data)))
    assert back == scenario
    assert back.session("s2").messages == scenario.sessions[1].messages
    with pytest.raises(KeyError):
        back.session("s9")


@pytest.mark.parametrize("name", ["set.jsonl", "set.jsonl.gz"])
def test_dump_and_load_files_reproducibly(tmp_path: Path, name: str) -> None:
    scenarios = [_scenario("a-000"), _scenario("a-001")]
    digest = dump_scenarios(scenarios, tmp_path / "x" / name)
    first = (tmp_path / "x" / name).read_bytes()
    assert dump_scenarios(scenarios, tmp_path / "x" / name) == digest
    assert (tmp_path / "x" / name).read_bytes() == first  # no mtime in the gzip header
    assert content_sha256(tmp_path / "x" / name) == digest
    assert load_scenarios(tmp_path / "x" / name) == scenarios
    if name.endswith(".gz"):
        assert first[:2] == b"\x1f\x8b"
        text = gzip.decompress(first).decode()
        assert "端口" in text  # written as UTF-8, not \\u escapes


def test_blank_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("\n" + json.dumps(_json()) + "\n\n")
    assert len(load_scenarios(path)) == 1


def _broken(change: Any) -> dict[str, Any]:
    data = copy.deepcopy(_json())
    change(data)
    return data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(schema=99), "schema 99"),
        (lambda d: d.pop("id"), "id must be a non-empty string"),
        (lambda d: d.update(format="gemini"), "format 'gemini'"),
        (lambda d: d.update(sessions=[]), "sessions is empty"),
        (lambda d: d.update(sessions={}), "sessions must be a list"),
        (lambda d: d["sessions"][1].update(id="s1"), "session ids repeat"),
        (
            lambda d: d["sessions"][0]["messages"].append("hi"),
            "messages[5]: a message must be an object",
        ),
        (lambda d: d.update(window=0), "window must be a positive int"),
        (lambda d: d.update(window=True), "window must be a positive int"),
        (lambda d: d.update(seed="x"), "seed must be an int"),
        (lambda d: d["probes"][0].update(session_id="s7"), "session_id 's7' names no session"),
        (lambda d: d["probes"][0].update(at=6), "at must be an int in 1..5"),
        (lambda d: d["probes"][0].update(at=0), "at must be an int in 1..5"),
        (lambda d: d["probes"][0].update(answers=[]), "answers is empty"),
        (lambda d: d["probes"][0].update(answers=[""]), "answers: expected a list of non-empty"),
        (lambda d: d["probes"][0].update(kind="opinion"), "kind 'opinion'"),
        (lambda d: d["probes"][0].update(evidence=["s1:5"]), "evidence 's1:5' names no message"),
        (lambda d: d["probes"][0].update(evidence=["s1-1"]), "names no message"),
        (lambda d: d["probes"][0].update(question=""), "question must be a non-empty string"),
        (lambda d: d.update(secrets="sk"), "secrets: expected a list"),
        (lambda d: d.update(meta=[]), "meta: expected an object"),
    ],
)
def test_invalid_records_name_the_field(change: Any, message: str) -> None:
    with pytest.raises(ScenarioError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Scenario.from_json(_broken(change))


def test_errors_name_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(_json()) + "\n{not json\n")
    with pytest.raises(ScenarioError, match=r"bad.jsonl:2: not JSON"):
        load_scenarios(path)
    path.write_text(json.dumps(_broken(lambda d: d.update(window=-1))) + "\n")
    with pytest.raises(ScenarioError, match=r"bad.jsonl:1 'needle-000': window"):
        load_scenarios(path)
    path.write_text("[1, 2]\n")
    with pytest.raises(ScenarioError, match="expected an object, got list"):
        load_scenarios(path)


def test_missing_or_corrupt_files_raise_scenario_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read the scenario file: No such file"):
        load_scenarios(tmp_path / "absent.jsonl.gz")
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(b"\x1f\x8b" + b"garbage")
    with pytest.raises(ScenarioError, match="regenerate"):
        load_scenarios(broken)
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes("é".encode("latin-1"))
    with pytest.raises(
        ScenarioError, match="not UTF-8 text: invalid byte at line 1, byte offset 0"
    ):
        load_scenarios(latin)


def _renamed(bad: str) -> dict[str, Any]:
    """The scenario with session ``s1`` renamed to ``bad`` everywhere it is named."""
    quoted = json.dumps(bad)
    text = json.dumps(_json()).replace('"s1"', quoted).replace('"s1:', f"{quoted[:-1]}:")
    data: dict[str, Any] = json.loads(text)
    return data


@pytest.mark.parametrize("bad", ["bad id", "a/b", "..", ".", "x" * 129, "tab\there", "é"])
def test_an_invalid_session_id_is_rejected_with_the_file_scenario_and_fix(
    tmp_path: Path, bad: str
) -> None:
    path = tmp_path / "suite.jsonl"
    path.write_text(json.dumps(_renamed(bad)) + "\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenarios(path)
    message = str(info.value)
    assert message.startswith(f"{path}:1 'needle-000' sessions[0]: session id ")
    assert "cannot name a memctx session" in message and "rename it" in message
    assert len(message) < 400  # a 129-character id is clipped, not repeated in full


def test_valid_session_ids_still_load() -> None:
    for good in ("s-1", "a.b_c:d", "x" * 128):
        assert Scenario.from_json(_renamed(good)).sessions[0].id == good


def test_long_values_are_clipped_in_messages() -> None:
    with pytest.raises(ScenarioError) as info:
        Scenario.from_json(_broken(lambda d: d.update(format="g" * 10_000)))
    assert len(str(info.value)) < 200 and "10002 characters" in str(info.value)
    with pytest.raises(ScenarioError, match="got a list of 3 items"):
        Scenario.from_json(_broken(lambda d: d["probes"][0].update(question=[1, 2, 3])))


@pytest.mark.timeout(30)
def test_scenario_files_that_are_not_regular_files_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(ScenarioError, match="it is a FIFO"):
        load_scenarios(fifo)
    with pytest.raises(ScenarioError, match="it is a directory"):
        load_scenarios(tmp_path)
    if Path("/dev/zero").exists():
        with pytest.raises(ScenarioError, match="character device"):
            load_scenarios(Path("/dev/zero"))
        with pytest.raises(ScenarioError, match="character device"):
            content_sha256(Path("/dev/zero"))


def test_a_gzip_bomb_stops_at_the_size_cap(tmp_path: Path) -> None:
    path = tmp_path / "bomb.jsonl.gz"
    # ~5 KB on disk, 5 MB unpacked, in blank lines of 100 bytes: long enough that reading
    # the 50,000 of them (the second call) is quick, blank so none is a scenario.
    path.write_bytes(gzip.compress((b" " * 99 + b"\n") * 50_000))
    assert path.stat().st_size < 20_000
    with pytest.raises(ScenarioError, match=r"input limit.*MEMCTX_MAX_INPUT_BYTES"):
        load_scenarios(path, max_bytes=1_000_000)
    assert load_scenarios(path, max_bytes=6_000_000) == []

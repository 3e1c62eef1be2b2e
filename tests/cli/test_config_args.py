"""``--config`` and ``--set``: one reader for every command (memctx.config.load_config), the
settings a run records, and errors that name the file, line and column."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import memctx.harness
from memctx.cli.eval_args import options_from_args
from memctx.cli.main import build_parser, main
from memctx.config import MemoryContextConfig

OPENCLAW = """{
  // an agent's settings file: memctx reads its own sections and ignores nothing silently
  agents: {
    defaults: {
      memoryContext: {hardCapTokens: 1500, embeddingModel: 'hash', crossSession: true},
      compaction: {maxHistoryShare: 0.4, memoryFlush: {enabled: false}},
      contextPruning: {mode: "cache-ttl", ttl: "10m",},
    },
  },
}
"""

TOML = """hardCapTokens = 1500
embeddingModel = "hash"
crossSession = true

[compaction]
maxHistoryShare = 0.4
memoryFlush.enabled = false

[contextPruning]
mode = "cache-ttl"
ttl = "10m"
"""

EXPLICIT = {
    "hardCapTokens": 1500,
    "embeddingModel": "hash",
    "crossSession": True,
    "compaction.maxHistoryShare": 0.4,
    "compaction.memoryFlush.enabled": False,
    "contextPruning.mode": "cache-ttl",
    "contextPruning.ttl": "10m",
}


def _eval_settings(*argv: str) -> dict[str, Any]:
    """The overrides ``memctx eval`` records for these arguments (EvalOptions.overrides)."""
    options = options_from_args(build_parser().parse_args(["eval", "--quick", *argv]))
    assert options.config_json()["overrides"] == dict(options.overrides)  # what summary.json holds
    return dict(options.overrides)


def _replay_settings(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp: Path, *argv: str
) -> dict[str, Any]:
    """The overrides ``memctx replay`` plays a transcript with (caught on the way in)."""
    seen: list[dict[str, Any]] = []
    real = memctx.harness.replay_transcript

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(dict(kwargs["overrides"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(memctx.harness, "replay_transcript", spy)
    transcript = tmp / "t.json"
    transcript.write_text(
        json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    )
    status = main(["replay", str(transcript), "--window", "8000", "--json", *argv])
    capsys.readouterr()
    assert status == 0 and len(seen) == 1
    return seen[0]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "openclaw.json").write_text(OPENCLAW, encoding="utf-8")
    (tmp_path / "memctx.toml").write_text(TOML, encoding="utf-8")
    return {"openclaw": tmp_path / "openclaw.json", "toml": tmp_path / "memctx.toml"}


def test_openclaw_json_and_toml_give_one_config_through_eval_and_replay(
    files: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = []
    for file in files.values():
        settings.append(_eval_settings("--config", str(file)))
        settings.append(_replay_settings(monkeypatch, capsys, tmp_path, "--config", str(file)))
    # Recorded as the explicit settings only, dotted camelCase: the summary reproduces the run.
    assert all(s == EXPLICIT for s in settings), settings
    config = MemoryContextConfig().with_overrides(EXPLICIT)
    assert config.hard_cap_tokens == 1500 and config.compaction.max_history_share == 0.4
    assert config.context_pruning.ttl_seconds == 600
    assert config.compaction.memory_flush.enabled is False


def test_set_wins_over_the_file(
    files: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    given = ("--config", str(files["openclaw"]), "--set", "hard_cap_tokens=900")
    given += ("--set", "compaction.maxHistoryShare=0.6")
    expected = {**EXPLICIT, "hardCapTokens": 900, "compaction.maxHistoryShare": 0.6}
    assert _eval_settings(*given) == expected  # one key per setting, whatever the spelling
    assert _replay_settings(monkeypatch, capsys, tmp_path, *given) == expected


def test_no_config_records_only_what_set_gives() -> None:
    assert _eval_settings() == {}
    assert _eval_settings("--set", "hardCapTokens=2000") == {"hardCapTokens": 2000}


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        (
            "openclaw.json",
            "{\n  agents: {\n    defaults: {memoryContext: {hardCapTokens 5}}\n",
            "line 3, column 32",  # JSON5: the unquoted key without its colon
        ),
        ("memctx.json", '{"hardCapTokens": 1500\n "recallWindowRatio": 0.2}', "line 2, column 2"),
        ("memctx.toml", "hardCapTokens = 1500\nrecallWindowRatio = = 0.2\n", "line 2, column 21"),
    ],
)
@pytest.mark.parametrize("command", ["eval", "replay"])
def test_a_malformed_file_is_named_with_line_and_column(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    name: str,
    text: str,
    where: str,
) -> None:
    file = tmp_path / name
    file.write_text(text, encoding="utf-8")
    assert main(_with_config(tmp_path, command, file)) == 2
    err = capsys.readouterr().err
    assert str(file) in err and where in err, err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("command", ["eval", "replay"])
def test_an_invalid_setting_in_a_file_names_its_path_in_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    file = tmp_path / "openclaw.json"
    file.write_text('{"agents": {"defaults": {"compaction": {"maxHistoryShare": 2}}}}')
    assert main(_with_config(tmp_path, command, file)) == 2
    err = capsys.readouterr().err
    assert str(file) in err
    assert "agents.defaults.compaction.maxHistoryShare: must be a number in [0.1, 0.9]" in err


def _with_config(tmp_path: Path, command: str, file: Path) -> list[str]:
    """``memctx eval`` (quick, into ``tmp_path/run``) or ``memctx replay`` of a one-message
    transcript, with ``--config file``."""
    if command == "eval":
        return ["eval", "--quick", "--out", str(tmp_path / "run"), "--config", str(file)]
    transcript = tmp_path / "t.json"
    transcript.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    return ["replay", str(transcript), "--config", str(file)]

"""``memctx claude-code install`` / ``uninstall``: Claude Code's settings.json and MCP file,
idempotent, other hooks and servers kept, only memctx's removed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memctx.cli.main import main
from memctx.integrations import HOOK_EVENTS, install, settings_paths, uninstall

THEIRS = {
    "model": "opus",
    "hooks": {
        "PreCompact": [
            {"matcher": "manual", "hooks": [{"type": "command", "command": "backup.sh"}]}
        ],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}],
    },
}
THEIR_SERVERS = {"mcpServers": {"github": {"command": "gh-mcp", "args": []}}}


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _ours(settings: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (event, entry)
        for event, entries in settings.get("hooks", {}).items()
        for entry in entries
        if any("memctx.cli claude-code hook" in h["command"] for h in entry["hooks"])
    ]


def _paths(tmp_path: Path) -> tuple[Path, Path]:
    settings, mcp_file = settings_paths(project=tmp_path, user=False)
    assert settings == tmp_path / ".claude" / "settings.json"
    assert mcp_file == tmp_path / ".mcp.json"
    return settings, mcp_file


def test_install_adds_the_three_hooks_and_the_server_once_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    settings, mcp_file = _paths(tmp_path)
    settings.parent.mkdir()
    settings.write_text(json.dumps(THEIRS), encoding="utf-8")
    mcp_file.write_text(json.dumps(THEIR_SERVERS), encoding="utf-8")
    install(settings, mcp_file, store_dir=tmp_path / "store")
    first = _read(settings)
    install(settings, mcp_file, store_dir=tmp_path / "store")
    assert _read(settings) == first  # idempotent
    ours = _ours(first)
    assert sorted(event for event, _ in ours) == sorted(HOOK_EVENTS)
    session_start = next(entry for event, entry in ours if event == "SessionStart")
    assert session_start["matcher"] == "compact|resume"
    command = ours[0][1]["hooks"][0]["command"]
    assert "--store" in command and str(tmp_path / "store") in command
    assert first["model"] == "opus"
    assert first["hooks"]["PreToolUse"] == THEIRS["hooks"]["PreToolUse"]
    assert THEIRS["hooks"]["PreCompact"][0] in first["hooks"]["PreCompact"]
    servers = _read(mcp_file)["mcpServers"]
    assert servers["github"] == THEIR_SERVERS["mcpServers"]["github"]
    assert servers["memctx"]["args"][-3:] == ["mcp", "--store", str(tmp_path / "store")]


def test_uninstall_removes_only_memctx(tmp_path: Path) -> None:
    settings, mcp_file = _paths(tmp_path)
    settings.parent.mkdir()
    settings.write_text(json.dumps(THEIRS), encoding="utf-8")
    mcp_file.write_text(json.dumps(THEIR_SERVERS), encoding="utf-8")
    install(settings, mcp_file)
    uninstall(settings, mcp_file)
    assert _read(settings) == THEIRS
    assert _read(mcp_file) == THEIR_SERVERS
    uninstall(settings, mcp_file)  # twice: nothing more to remove
    assert _read(settings) == THEIRS


def test_install_into_an_empty_project_then_uninstall_leaves_no_hooks(tmp_path: Path) -> None:
    settings, mcp_file = _paths(tmp_path)
    install(settings, mcp_file)
    assert len(_ours(_read(settings))) == len(HOOK_EVENTS)
    uninstall(settings, mcp_file)
    assert _read(settings) == {}
    assert _read(mcp_file) == {"mcpServers": {}}


def test_the_commands_write_the_project_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["claude-code", "install", "--project", str(tmp_path)]) == 0
    settings, mcp_file = _paths(tmp_path)
    assert len(_ours(_read(settings))) == len(HOOK_EVENTS)
    assert "memctx" in _read(mcp_file)["mcpServers"]
    assert main(["claude-code", "uninstall", "--project", str(tmp_path)]) == 0
    assert _ours(_read(settings)) == []
    capsys.readouterr()


def test_a_settings_file_that_is_not_an_object_is_refused_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings, _ = _paths(tmp_path)
    settings.parent.mkdir()
    settings.write_text("[1, 2]", encoding="utf-8")
    assert main(["claude-code", "install", "--project", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "settings.json does not hold a JSON object" in err
    assert settings.read_text(encoding="utf-8") == "[1, 2]"


def test_the_user_scope_writes_under_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    settings, mcp_file = settings_paths(project=None, user=True)
    assert settings == tmp_path / ".claude" / "settings.json"
    assert mcp_file == tmp_path / ".claude.json"
    assert main(["claude-code", "install", "--user"]) == 0
    assert len(_ours(_read(settings))) == len(HOOK_EVENTS)
    assert main(["claude-code", "uninstall", "--user"]) == 0
    assert _ours(_read(settings)) == []

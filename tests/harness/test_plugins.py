"""Strategy plugins through ``memctx eval``: an installed package's entry point, a plugin's
mistakes reported as the plugin's, one run (and one label) for a strategy that never searches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.eval_sessions import scenario

from memctx.cli import main
from memctx.harness.scenario import dump_scenarios

REPO = Path(__file__).resolve().parents[2]

_LASTN = '''
from memctx.strategies import BaseStrategy, Prepared


class LastN(BaseStrategy):
    """The system prompt and the last six messages: a deliberately small context."""

    name = "lastn"

    def prepare(self, transcript):
        tail = transcript[-6:]
        while tail and tail[0].get("role") == "tool":
            tail = tail[1:]  # a result whose call was cut off
        return Prepared([transcript[0], *tail], trimmed=len(tail) + 1 < len(transcript))
'''

_RETURNS_LIST = """
from memctx.strategies import BaseStrategy, register_strategy


class ContextOnly(BaseStrategy):
    name = "context-only"

    def prepare(self, transcript):
        return list(transcript)  # the context itself, not a Prepared


register_strategy("context-only", ContextOnly, replace=True)
"""


def _suite(root: Path) -> Path:
    data = root / "data"
    data.mkdir()
    dump_scenarios([scenario(turns=24)], data / "mine.jsonl")
    return data


def _install(site: Path, name: str, module: str, source: str, entry: str) -> None:
    """A throwaway installed distribution: its module and a dist-info with entry points,
    found by ``importlib.metadata`` on ``sys.path`` as pip would leave them."""
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(source, encoding="utf-8")
    info = site / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[memctx.strategies]\n{entry}\n", encoding="utf-8")


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_an_installed_packages_entry_point_is_a_strategy_of_memctx_eval(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _install(site, "lastn_strategy", "lastn_strategy", _LASTN, "lastn = lastn_strategy:LastN")
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    argv = [sys.executable, "-m", "memctx.cli", "eval", "--datasets", str(_suite(tmp_path))]
    argv += ["--strategy", "lastn", "--strategy", "truncate", "--jobs", "2", "--no-progress"]
    done = subprocess.run(
        [*argv, "--no-report", "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,  # no --plugin, nothing importable from the folder: the entry point alone
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    labels = {(r["strategy"], r["embedding"]) for r in summary["records"] + summary["pooled"]}
    # lastn never searches (BaseStrategy's default): one run, labelled the same everywhere,
    # although the run asked for both embedders.
    assert labels == {("lastn", "none"), ("truncate", "none")}
    for name in ("results.jsonl", "trace.jsonl"):
        rows = [r for r in _rows(out / name) if r["strategy"] == "lastn"]
        assert rows and {r["embedding"] for r in rows} == {"none"}, name


def test_a_plugin_that_returns_the_wrong_type_is_named_with_the_expected_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad_plugin.py").write_text(_RETURNS_LIST, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    argv = ["eval", "--datasets", str(_suite(tmp_path)), "--plugin", "bad_plugin"]
    argv += ["--strategy", "context-only", "--jobs", "1", "--no-progress", "--no-report"]
    code = main([*argv, "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code != 0
    assert "'context-only' (from bad_plugin): prepare() returned list" in err
    assert "it must return memctx.strategies.Prepared" in err
    assert "bug in memctx" not in err and "internal error" not in err


def test_a_name_setting_that_contradicts_set_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", "--quick", "--suite", "needle", "--strategy", "openclaw:pruning=off"]
    code = main([*argv, "--set", "contextPruning.mode=cache-ttl", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2
    assert "contextPruning.mode='off'" in err and "contextPruning.mode='cache-ttl'" in err
    code = main(["eval", "--quick", "--set", "embeddingModel=transformer", "--embedding", "hash"])
    assert code == 2 and "choose them with --embedding transformer" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()

"""memctx.integrations loads without its optional extras: each adapter's dependency is
imported by the adapter's own module or when a server is built, never by the package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OPTIONAL = ("aiohttp", "mcp", "langchain", "langgraph", "pydantic_ai", "agents", "inspect_ai")

_SCRIPT = f"""
import importlib.abc, sys

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {OPTIONAL!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Refuse())
import memctx.integrations
from memctx.integrations import ProxySettings, StrategyRunner, install, run_hook
try:
    from memctx.integrations import build_proxy_app
    build_proxy_app(ProxySettings(upstream="http://127.0.0.1:9", store_dir=".", window=1000))
except ModuleNotFoundError as exc:
    print("refused:", exc.name)
"""


def test_the_package_imports_without_any_optional_extra() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    # Building the proxy is what needs aiohttp, and it says so.
    assert "refused: aiohttp" in result.stdout

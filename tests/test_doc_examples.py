"""The Python examples of the README and of docs/ run as written, through public names only.

Each ```python block runs in a fresh interpreter, in an empty folder that is also its home
(the examples write to ``~/.memctx``), offline. Names an example leaves to the reader (your
``messages``) are given a small real conversation first; an ``openclaw.json`` is there for
``load_config``. A block that stops working, or that reaches into a module's inside, fails
here before a user copies it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
# What the examples take for granted: the caller's own conversation.
_PRELUDE = """
messages = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Where is the webhook signature verified?"},
    {"role": "assistant", "content": "In src/payment/webhook.ts, with the Stripe secret."},
    {"role": "user", "content": "Run the webhook tests, please."},
]
messages_to_compact = messages[1:3]
"""
_OPENCLAW = {"agents": {"defaults": {"memoryContext": {"enabled": True, "hardCapTokens": 2000}}}}


DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _blocks() -> list[tuple[str, str]]:
    """``(where, code)`` for every Python example, ``where`` as ``FILE#N``."""
    found = []
    for doc in DOCS:
        for n, code in enumerate(_BLOCK.findall(doc.read_text(encoding="utf-8")), 1):
            found.append((f"{doc.relative_to(REPO)}#{n}", code))
    return found


def test_the_readme_has_python_examples() -> None:
    assert sum(where.startswith("README.md#") for where, _ in _blocks()) >= 2


@pytest.mark.parametrize(("where", "code"), _blocks(), ids=[w for w, _ in _blocks()])
def test_a_doc_example_runs(where: str, code: str, tmp_path: Path) -> None:
    assert not re.search(r"memctx\.[a-z_.]*\._|from memctx[\w.]* import _", code), (
        f"{where}: examples use public names only"
    )
    (tmp_path / "openclaw.json").write_text(json.dumps(_OPENCLAW))
    if "load_run(" in code:  # an example that reads a run: give it one, as `memctx eval` would
        from helpers.synthetic_run import write_run

        from memctx.harness import point_latest

        reports = tmp_path / "reports"
        point_latest(reports, write_run(reports / "runs" / "20260101-000000-default"))
    script = tmp_path / "example.py"
    # A placeholder list ("[...]") stands for the caller's messages: use the prelude's.
    body = code.replace("messages = [...]", "")
    script.write_text(_PRELUDE + body)
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO),
        "HF_HUB_OFFLINE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"{where} failed:\n{code}\n{result.stderr}"

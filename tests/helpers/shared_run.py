"""What a spawned process of ``tests/harness/test_pytest_plugin.py`` runs: it asks for the
run that :func:`memctx.harness.pytest_plugin.made_once` makes once for every worker.

A module of its own so that the spawned process does not import the test module (and with
it the harness).
"""

from __future__ import annotations

import time
from pathlib import Path

from memctx.harness.pytest_plugin import made_once


def ask_for_run(shared: str, answers: str) -> None:
    """Get the shared run; note each making in ``shared``'s ``made.txt`` and the answer."""

    def make(out: Path) -> Path:
        with open(Path(shared) / "made.txt", "a", encoding="utf-8") as fh:
            fh.write(f"{out}\n")
        time.sleep(0.3)  # long enough that the other processes ask while it is being made
        out.mkdir()
        return out

    path = made_once(Path(shared), make)
    with open(answers, "a", encoding="utf-8") as fh:
        fh.write(f"{path}\n")

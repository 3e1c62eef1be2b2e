"""Files that are not regular files, for the tests that attack input and store paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def make_fifo(directory: Path, name: str = "pipe.jsonl") -> Path:
    """A named pipe at ``directory / name``; skips the test where FIFOs do not exist."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    path = directory / name
    os.mkfifo(path)
    return path

"""What a spawned process of ``tests/llm/test_llm_limits.py`` runs: it takes a provider slot
a few times and notes each entry and exit.

It lives here, not in the test module: a spawned process imports the module of its target,
and the test module imports litellm (seconds of start-up for each process).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from memctx.llm import ProviderSlots


def hold_slot(folder: str, record: str, limit: int, rounds: int) -> None:
    """Take a slot ``rounds`` times, writing ``+ pid`` on entry and ``- pid`` on exit."""
    slots = ProviderSlots(Path(folder), limit)
    for _ in range(rounds):
        with slots.slot("openai"):
            with open(record, "a", encoding="utf-8") as fh:
                fh.write(f"+ {os.getpid()}\n")
                fh.flush()
            time.sleep(0.02)
            with open(record, "a", encoding="utf-8") as fh:
                fh.write(f"- {os.getpid()}\n")
                fh.flush()

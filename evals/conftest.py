"""Set-up for the quality gates: offline environment and the memctx pytest plugin.

The plugin (``memctx.harness.pytest_plugin``) is normally loaded through its ``pytest11`` entry
point; it is named here only when that entry point is not installed yet, since registering it
twice is an error.

Every gate reads the one evaluation run the session-scoped ``memctx_run`` fixture makes (tens
of seconds): under ``pytest -n 2`` they are one ``xdist_group``, so one worker makes it
(``--dist loadgroup`` in pyproject.toml), not each worker that gets a gate.
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from pathlib import Path

import pytest

# Before anything imports litellm or transformers: never touch the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

if not any(ep.value == "memctx.harness.pytest_plugin" for ep in entry_points(group="pytest11")):
    pytest_plugins = ["memctx.harness.pytest_plugin"]


_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Called with the items of the whole session: only this folder's tests join the group.
    for item in items:
        if _HERE in item.path.parents:
            item.add_marker(pytest.mark.xdist_group("memctx-run"))

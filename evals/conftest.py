"""Set-up for the quality gates: offline environment and the memctx pytest plugin.

The plugin (``memctx.harness.pytest_plugin``) is normally loaded through its ``pytest11`` entry
point; it is named here only when that entry point is not installed yet, since registering it
twice is an error.
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points

# Before anything imports litellm or transformers: never touch the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

if not any(ep.value == "memctx.harness.pytest_plugin" for ep in entry_points(group="pytest11")):
    pytest_plugins = ["memctx.harness.pytest_plugin"]

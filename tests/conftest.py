"""Shared test set-up: offline environment and the location of the external datasets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Before anything imports litellm or transformers: never touch the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO_ROOT = Path(__file__).resolve().parent.parent
DATASETS = Path(os.environ.get("MEMCTX_DATASETS", REPO_ROOT.parent / "shared" / "datasets"))


def dataset_path(*parts: str) -> Path:
    """Path under ../shared/datasets, or skip the calling test with the reason."""
    path = DATASETS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"external dataset not present: {path} (set MEMCTX_DATASETS to its folder)")
    return path


@pytest.fixture
def datasets_dir() -> Path:
    return dataset_path()

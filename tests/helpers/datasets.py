"""Where the external datasets are, and skipping a test with the reason when they are absent.

These helpers live here, not in ``tests/conftest.py``: pytest imports every ``conftest.py``
as the top-level module ``conftest``, so with ``evals/conftest.py`` in the same run
``from conftest import ...`` would find whichever was imported last.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DATASETS = Path(os.environ.get("MEMCTX_DATASETS", REPO_ROOT.parent / "shared" / "datasets"))


def dataset_path(*parts: str) -> Path:
    """Path under ../shared/datasets, or skip the calling test with the reason."""
    path = DATASETS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"external dataset not present: {path} (set MEMCTX_DATASETS to its folder)")
    return path

"""Where a run's numbers come from: code version, package versions, data and seeds.

Recorded in ``summary.json`` so that a report can be traced back and two runs compared
knowingly. Nothing here depends on the clock, so re-running the same command gives the same
provenance.
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["git_state", "package_versions", "provenance", "scenarios_digest"]

_PACKAGES = ("memctx", "litellm", "numpy", "pydantic", "sentence-transformers", "torch")
_ROOT = Path(__file__).resolve().parents[2]  # the repository root


def git_state(root: Path = _ROOT) -> dict[str, Any]:
    """The checkout's commit and whether it has uncommitted changes (``None`` outside git)."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip()

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def package_versions(names: Sequence[str] = _PACKAGES) -> dict[str, str | None]:
    """Installed versions of the packages that shape the numbers (``None`` when absent)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def scenarios_digest(suites: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    """Per suite: scenario count, probe count and a sha256 over the scenarios' JSON."""
    import json

    out: dict[str, Any] = {}
    for suite, scenarios in suites.items():
        digest = hashlib.sha256()
        probes = 0
        for scenario in scenarios:
            digest.update(json.dumps(scenario.to_json(), sort_keys=True).encode("utf-8"))
            probes += len(scenario.probes)
        out[suite] = {
            "scenarios": len(scenarios),
            "probes": probes,
            "sha256": digest.hexdigest(),
            "seeds": sorted({s.seed for s in scenarios}),
        }
    return out


def provenance(options: Any, suites: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    """The provenance block of ``summary.json``."""
    from .gen.generate import GENERATOR_VERSION

    datasets = (
        "generated (quick)"
        if options.quick and options.datasets_dir is None
        else str(options.datasets_dir or "datasets/v1")
    )
    return {
        "git": git_state(),
        "versions": package_versions(),
        "generator_version": GENERATOR_VERSION,
        "datasets": datasets,
        "scenarios": scenarios_digest(suites),
        # Each suite's own windows: what a run without --window plays (the report's recall
        # cap note reads them).
        "scenario_windows": {
            suite: sorted({scenario.window for scenario in scenarios})
            for suite, scenarios in suites.items()
        },
        "seed": options.seed,
        "answer_model": options.answer_model,
        "judge_model": options.llm,
    }

"""A benchmark case's own peak memory, measured in the fresh process that runs it.

The memory bounds of ``make bench`` hold for one case (one hook call on a huge input, one
reopened store), so each case runs in a process of its own and reports the peak of that
process. The figure must be the case's own, and two of the obvious ones are not:

- ``getrusage(RUSAGE_CHILDREN).ru_maxrss`` in the parent is a maximum over every child it
  ever waited for: the largest case, printed for all of them.
- ``getrusage(RUSAGE_SELF).ru_maxrss`` in the child survives ``exec`` on Linux: a process
  that ``subprocess`` forks (or vforks) from a large parent and then execs reports the
  parent's peak whenever that is higher than its own. Started from a ``make bench`` process
  at 1,080 MB, all three bounded-cost cases printed 1,080 MB, and two were marked MISS.

The kernel's high-water mark of the process's own address space, ``VmHWM`` in
``/proc/self/status``, starts afresh at ``exec``: :func:`own_peak_mb` reads it in the child
at the end of the case, and :func:`run_case_process` runs a case's command and reads back
the JSON figures it prints.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["CaseFailed", "child_env", "own_peak_mb", "run_case_process"]

_STATUS = Path("/proc/self/status")


class CaseFailed(RuntimeError):
    """A benchmark case's process exited with an error or printed no JSON figures."""


def own_peak_mb() -> float:
    """Peak resident memory of this process since it was exec'd, in MB (MiB).

    Reads ``VmHWM`` from ``/proc/self/status`` (Linux). Where there is no ``/proc`` it falls
    back to ``ru_maxrss`` of this process, which on Linux would include a larger parent's
    peak (see the module docstring); macOS reports it in bytes, Linux and BSD in KiB.
    """
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # "VmHWM:   123456 kB"
    except (OSError, ValueError, IndexError):
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def run_case_process(
    argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 900.0
) -> dict[str, Any]:
    """Run one case as ``argv`` in a process of its own; the JSON object it printed last.

    The case prints its figures (with ``own_peak_mb()`` among them, taken at its end) as one
    JSON line on stdout, after anything else it prints.

    Raises:
        CaseFailed: The process exited non-zero, timed out, or its last line is not a JSON
            object; the message carries the end of its stderr.
    """
    try:
        done = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            env=dict(env) if env is not None else None,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise CaseFailed(f"{argv[-1]}: no result within {timeout:.0f} s") from exc
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise CaseFailed(
            f"{argv[-1]}: exit status {done.returncode}\n{done.stderr[-2000:]}".rstrip()
        )
    try:
        figures = json.loads(lines[-1])
    except json.JSONDecodeError:
        figures = None
    if not isinstance(figures, dict):
        raise CaseFailed(f"{argv[-1]}: the last line printed is not a JSON object: {lines[-1]!r}")
    return figures


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment for a case process: offline, plus ``extra``."""
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        **extra,
    }

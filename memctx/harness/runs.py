"""Run folders: where each evaluation run is written, and how a run is named and found.

Every ``memctx eval`` without ``--out`` writes a fresh folder
``reports/runs/<UTC time>-<short config>/`` and, once it has finished, points
``reports/latest`` at it (a relative symlink), so a quick run or a failed one never replaces
an earlier result. A run is found again by its folder, its ``summary.json``, its id (the
folder's name, looked up under ``reports/runs``) or ``latest``; :func:`read_summary` reads
its ``summary.json`` from any of those, upgraded to the current schema.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memctx.transcripts import InputFileError, read_input_bytes

from .schema import upgrade_summary

__all__ = [
    "LATEST",
    "RUNS",
    "config_label",
    "find_run",
    "new_run_id",
    "point_latest",
    "read_summary",
]

RUNS = "runs"  # the folder of run folders, under the reports folder
LATEST = "latest"  # the link to the newest finished run, beside it
_UNSAFE = re.compile(r"[^A-Za-z0-9._=+-]+")
_MAX_LABEL = 60


def config_label(
    *,
    quick: bool = False,
    suites: Sequence[str] = (),
    strategies: Sequence[str] = (),
    default_strategies: Sequence[str] = (),
    embeddings: Sequence[str] = (),
    default_embeddings: Sequence[str] = (),
    windows: Sequence[int] = (),
    overrides: Mapping[str, Any] | None = None,
    llm: str | None = None,
) -> str:
    """A short, file-name-safe label of what a run changes from the defaults.

    ``default`` for the embedded defaults; otherwise the parts that differ, e.g.
    ``quick-needle-memory-context-hardCapTokens=300``. Labels longer than 60 characters are
    cut and end in a hash of the whole, so two different configurations never share one.
    """
    parts: list[str] = []
    if quick:
        parts.append("quick")
    parts += list(suites)
    if strategies and tuple(strategies) != tuple(default_strategies):
        parts += list(strategies)
    if embeddings and tuple(embeddings) != tuple(default_embeddings):
        parts += list(embeddings)
    parts += [f"w{w}" for w in windows]
    parts += [f"{key}={value}" for key, value in sorted((overrides or {}).items())]
    if llm:
        parts.append(f"llm-{llm}")
    label = _UNSAFE.sub("_", "-".join(parts)).strip("._-") or "default"
    if len(label) > _MAX_LABEL:
        digest = hashlib.sha256(label.encode()).hexdigest()[:8]
        label = f"{label[: _MAX_LABEL - 9].rstrip('._-')}-{digest}"
    return label


def new_run_id(label: str, now: datetime | None = None) -> str:
    """``<YYYYmmdd-HHMMSS>-<label>`` in UTC: sortable by time, readable by configuration."""
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{label}"


def point_latest(reports: Path, run_dir: Path) -> Path:
    """Point ``reports/latest`` at ``run_dir`` (a relative symlink, replaced atomically).

    A real folder found at ``reports/latest`` (written before run folders existed) is moved
    into ``reports/runs/`` under a name of its own, never deleted.

    Returns:
        The link's path.
    """
    link = reports / LATEST
    if link.is_dir() and not link.is_symlink():
        stamp = datetime.fromtimestamp(link.stat().st_mtime, UTC).strftime("%Y%m%d-%H%M%S")
        moved = reports / RUNS / f"{stamp}-moved-from-latest"
        n = 1
        while moved.exists():
            n += 1
            moved = reports / RUNS / f"{stamp}-moved-from-latest-{n}"
        moved.parent.mkdir(parents=True, exist_ok=True)
        link.rename(moved)
    elif link.exists() and not link.is_symlink():
        raise FileExistsError(f"{link} is a file; move it away so the latest run can link there")
    target = os.path.relpath(run_dir.resolve(), reports.resolve())
    temp = reports / f".{LATEST}.{os.getpid()}"
    temp.unlink(missing_ok=True)
    temp.symlink_to(target, target_is_directory=True)
    os.replace(temp, link)
    return link


def find_run(spec: str | Path, reports: Path = Path("reports")) -> Path:
    """The run folder that ``spec`` names.

    Args:
        spec: A run folder, its ``summary.json``, a run id under ``reports/runs`` (or a
            unique prefix of one), or ``latest``.
        reports: The reports folder the ids are looked up in.

    Raises:
        FileNotFoundError: Nothing matches, or a prefix matches several runs (the message
            lists them and says what to pass).
    """
    path = Path(spec)
    if path.is_file() and path.name == "summary.json":
        return path.parent
    if (path / "summary.json").is_file():
        return path
    for candidate in (reports / str(spec), reports / RUNS / str(spec)):
        if (candidate / "summary.json").is_file():
            return candidate
    runs = reports / RUNS
    # Only a bare id can be a prefix: a path (absolute or with a folder) names one place.
    bare = str(spec) and "/" not in str(spec) and not any(c in str(spec) for c in "*?[")
    found = runs.glob(f"{spec}*") if bare and runs.is_dir() else ()
    matches = sorted(p for p in found if (p / "summary.json").is_file())
    if len(matches) == 1:
        return matches[0]
    if matches:
        names = ", ".join(p.name for p in matches[:5])
        raise FileNotFoundError(f"run {spec!r} is ambiguous ({names}, ...); pass more of the id")
    listed = runs.glob("*") if runs.is_dir() else ()
    known = sorted(p.name for p in listed if (p / "summary.json").is_file())[-5:]
    hint = f"; recent runs: {', '.join(known)}" if known else f"; {runs} holds no runs yet"
    raise FileNotFoundError(
        f"no run {str(spec)!r}: pass a run folder, its summary.json, a run id under {runs} "
        f"or 'latest'{hint}"
    )


def read_summary(
    spec: str | Path, *, reports: Path = Path("reports"), what: str = "run"
) -> dict[str, Any]:
    """The summary of a run, upgraded to the current schema.

    Args:
        spec: A ``summary.json`` (or any JSON file holding one), a run folder, a run id under
            ``reports/runs`` or ``latest`` (:func:`memctx.harness.find_run`).
        reports: The reports folder run ids are looked up in.
        what: What the run is, for messages (``"baseline"``).

    Raises:
        ValueError: Nothing there, unreadable, not JSON or not a run summary; the message
            names the file and what to pass instead.
    """
    path = Path(spec)
    forms = f"pass a summary.json, a run folder, a run id under {reports / 'runs'} or 'latest'"
    if not path.is_file():
        if path.suffix == ".json" or (path.is_absolute() and not path.is_dir()):
            raise ValueError(f"{what} {path} does not exist; {forms}")
        if path.is_dir() and not (path / "summary.json").is_file():
            raise ValueError(
                f"{what} {path} holds no summary.json: it is not a run folder; {forms}"
            )
        try:
            path = find_run(spec, reports) / "summary.json"
        except FileNotFoundError as exc:
            raise ValueError(f"{what}: {exc}") from None
    try:
        data = json.loads(read_input_bytes(path, what=f"{what} summary"))
    except InputFileError as exc:
        raise ValueError(str(exc)) from None
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"cannot read {what} {path}: not JSON ({type(exc).__name__})") from None
    records = data.get("records") if isinstance(data, dict) else None
    if not isinstance(records, list):
        raise ValueError(
            f"{what} {path} is not a summary.json (no 'records' list); pass the summary.json "
            "a `memctx eval` run wrote"
        )
    for n, record in enumerate([*records, *(data.get("pooled") or [])]):
        if not isinstance(record, dict) or not all(
            isinstance(record.get(k), str) for k in ("suite", "strategy", "embedding")
        ):
            raise ValueError(
                f"{what} {path}: record {n} lacks suite/strategy/embedding; regenerate the "
                "summary with `memctx eval`"
            )
    return upgrade_summary(data)

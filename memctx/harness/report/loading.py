"""Reading a run directory: the files ``memctx eval`` writes, checked before anything is drawn.

Every error is a :class:`RunDirError` naming the file, the line or record, what is wrong and
the fix, so ``memctx report`` fails in one line instead of a traceback half-way through a
render.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from memctx.errors import MemctxError
from memctx.transcripts import InputFileError, InputLine, check_input_file, open_input_file

from ..runs import find_run
from ..schema import RECORD_METRICS, upgrade_probe_row, upgrade_summary

__all__ = [
    "RUN_FILES",
    "RunDirError",
    "iter_calls",
    "load_baseline",
    "load_probes",
    "load_summary",
    "require_run_dir",
    "upgrade_probe_row",
    "validate_summary",
]

RUN_FILES = ("summary.json", "results.jsonl", "trace.jsonl")


class RunDirError(MemctxError, ValueError):
    """The folder is not a run directory, or one of its files is not what ``memctx eval``
    writes (the message names the file, the line or record, and the fix)."""


_REWRITE = "re-run `memctx eval --out DIR` to write the run directory again"
# The fields of a results.jsonl / trace.jsonl row the report reads, and their JSON types.
_PROBE_LABELS: dict[str, tuple[type, ...]] = dict.fromkeys(
    ("suite", "scenario", "probe", "strategy", "embedding"), (str,)
)
_CALL_FIELDS: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(("suite", "scenario", "session", "strategy", "embedding"), (str,)),
    **dict.fromkeys(("call", "history_tokens", "sent_tokens"), (int, float)),
}
_WANT = {str: "a string", bool: "a boolean", int: "a number"}
_LABELS = ("suite", "strategy", "embedding")
_LISTS = ("recall_accuracy_ci", "evidence_recall_ci")
_SECTIONS = ("provenance", "config", "timing")


def require_run_dir(run_dir: Path) -> None:
    """Refuse a folder that lacks one of :data:`RUN_FILES` or holds one that is not a file.

    Raises:
        RunDirError: What is missing or wrong, and how to write a run directory.
    """
    if not run_dir.is_dir():
        what = "it is a file" if run_dir.exists() else "no such folder"
        raise RunDirError(
            f"{run_dir} is not a run directory: {what} (pass the folder `memctx eval --out` wrote)"
        )
    for name in RUN_FILES:
        path = run_dir / name
        if not path.exists():
            raise RunDirError(
                f"{run_dir} is not a run directory: {name} is missing "
                f"(a run directory holds {', '.join(RUN_FILES)}; write one with `memctx eval`)"
            )
        try:
            check_input_file(path, what=name)
        except InputFileError as exc:
            raise RunDirError(str(exc)) from None


def _type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, Mapping) else type(value).__name__


def _is_num(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_record(record: object, where: str) -> None:
    if not isinstance(record, Mapping):
        raise RunDirError(f"{where} is {_type(record)}, not an object; {_REWRITE}")
    for key in _LABELS:
        if not isinstance(record.get(key), str) or not record[key]:
            raise RunDirError(
                f"{where} has no {key!r} string (it is {_type(record.get(key))}); every record "
                f"names its suite, strategy and embedding; {_REWRITE}"
            )
    for key in RECORD_METRICS:
        value = record.get(key)
        if value is None:
            continue
        if key in _LISTS:
            ok = isinstance(value, list) and len(value) in (0, 2) and all(map(_is_num, value))
            want = "a list of two numbers (or [])"
        elif key == "violation_kinds":
            ok = isinstance(value, Mapping) and all(map(_is_num, value.values()))
            want = "an object of counts"
        else:
            ok, want = _is_num(value), "a number or null"
        if not ok:
            raise RunDirError(f"{where}: {key!r} is {_type(value)}, want {want}; {_REWRITE}")


def validate_summary(data: object, source: str) -> dict[str, Any]:
    """``data`` if it has the shape of a run's ``summary.json``, else a :class:`RunDirError`.

    A summary is an object whose ``records`` list is not empty (``memctx eval`` never writes
    an empty run: it refuses to start one), each record an object naming its ``suite``,
    ``strategy`` and ``embedding`` with numbers (or null) for its metrics; ``provenance``,
    ``config`` and ``timing``, when present, are objects.

    Raises:
        RunDirError: What is wrong, where (``records[3]``, ``provenance.git``) and the fix.
    """
    if not isinstance(data, dict):
        raise RunDirError(
            f"{source} is not a run summary: it holds {_type(data)}, not an object with a "
            f"'records' list; {_REWRITE}"
        )
    records = data.get("records")
    if not isinstance(records, list):
        raise RunDirError(
            f"{source} is not a run summary: 'records' is {_type(records)}, not a list; {_REWRITE}"
        )
    if not records:
        raise RunDirError(
            f"{source} holds no records (its 'records' list is empty), so there is nothing to "
            f"report; {_REWRITE} (a run with no scenario to play is refused, never written)"
        )
    for index, record in enumerate(records):
        _check_record(record, f"{source}: records[{index}]")
    pooled = data.get("pooled", [])
    if not isinstance(pooled, list):
        raise RunDirError(f"{source}: 'pooled' is {_type(pooled)}, not a list; {_REWRITE}")
    for index, record in enumerate(pooled):
        _check_record(record, f"{source}: pooled[{index}]")
    for key in _SECTIONS:
        if data.get(key) is not None and not isinstance(data[key], Mapping):
            raise RunDirError(f"{source}: {key!r} is {_type(data[key])}, not an object; {_REWRITE}")
    provenance = data.get("provenance") or {}
    for key in ("git", "versions", "scenarios"):
        if provenance.get(key) is not None and not isinstance(provenance[key], Mapping):
            raise RunDirError(
                f"{source}: 'provenance.{key}' is {_type(provenance[key])}, not an object; "
                f"{_REWRITE}"
            )
    for suite, info in (provenance.get("scenarios") or {}).items():
        if not isinstance(info, Mapping):
            raise RunDirError(
                f"{source}: 'provenance.scenarios' entry {str(suite)[:40]!r} is {_type(info)}, "
                f"not an object; {_REWRITE}"
            )
    return data


def load_summary(run_dir: Path) -> dict[str, Any]:
    """``run_dir/summary.json`` (or ``run_dir`` itself when it is a file), validated.

    Raises:
        RunDirError: The file is missing, not a regular file, too large, not JSON, or not a
            summary (see :func:`validate_summary`).
    """
    run_dir = Path(run_dir)
    path = run_dir / "summary.json" if run_dir.is_dir() else run_dir
    if not path.exists():
        raise RunDirError(f"{run_dir} is not a run directory: summary.json is missing")
    try:
        with open_input_file(path, what="summary.json") as handle:
            text = handle.read_text()
    except InputFileError as exc:
        raise RunDirError(str(exc)) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RunDirError(
            f"{path} is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); {_REWRITE}"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise RunDirError(
            f"{path} is not a run summary ({type(exc).__name__}); {_REWRITE}"
        ) from None
    return upgrade_summary(validate_summary(data, str(path)))


def load_probes(run_dir: Path) -> list[dict[str, Any]]:
    """``run_dir/results.jsonl`` (one row per probe), or ``[]`` when the file is absent.

    Raises:
        RunDirError: The file is not a regular file, or a line is not a probe row (the
            message names the line and what is wrong).
    """
    path = Path(run_dir) / "results.jsonl"
    if not path.exists():
        return []
    return [_checked(upgrade_probe_row(row), path) for row in _iter_jsonl(path, _PROBE_LABELS)]


def _checked(row: dict[str, Any], path: Path) -> dict[str, Any]:
    if not isinstance(row.get("fits"), bool):
        raise RunDirError(
            f"{path}: probe {str(row.get('probe'))[:60]!r} has no 'fits' boolean (it is "
            f"{_type(row.get('fits'))}); {_REWRITE}"
        )
    return row


def _iter_jsonl(path: Path, fields: Mapping[str, tuple[type, ...]]) -> Iterator[dict[str, Any]]:
    """The rows of a run's JSONL file, each an object with ``fields`` of the right types."""
    try:
        with open_input_file(path, what=path.name) as handle:
            for line in handle.lines():
                if line.text.strip():
                    yield _row(line, path, fields)
    except InputFileError as exc:
        raise RunDirError(str(exc)) from None


def _row(line: InputLine, path: Path, fields: Mapping[str, tuple[type, ...]]) -> dict[str, Any]:
    where = f"{path}:{line.number}"
    try:
        row = json.loads(line.text)
    except json.JSONDecodeError as exc:
        raise RunDirError(
            f"{where}: not JSON ({exc.msg} at column {exc.colno}); {_REWRITE}"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise RunDirError(f"{where}: not a row ({type(exc).__name__}); {_REWRITE}") from None
    if not isinstance(row, dict):
        raise RunDirError(f"{where}: the row is {_type(row)}, not an object; {_REWRITE}")
    for key, types in fields.items():
        value = row.get(key)
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            raise RunDirError(
                f"{where}: {key!r} is {_type(value)}, want {_WANT[types[0]]}; {_REWRITE}"
            )
    events = row.get("events")
    if events is not None and not (
        isinstance(events, list) and all(isinstance(e, str) for e in events)
    ):
        raise RunDirError(
            f"{where}: 'events' is {_type(events)}, want a list of strings; {_REWRITE}"
        )
    return row


def iter_calls(run_dir: Path) -> Iterator[dict[str, Any]]:
    """The rows of ``run_dir/trace.jsonl`` (one per model call), each checked.

    Raises:
        RunDirError: A line is not a call row (the message names the line).
    """
    return _iter_jsonl(Path(run_dir) / "trace.jsonl", _CALL_FIELDS)


def load_baseline(spec: str | Path, reports: Path = Path("reports")) -> dict[str, Any]:
    """The summary a report compares with: a run folder, a summary JSON file of any name, a
    run id under ``reports/runs`` or ``latest``.

    Raises:
        RunDirError: Nothing matches (the message lists recent runs), or the file is not a
            run summary.
    """
    path = Path(spec)
    if path.is_file() or (path / "summary.json").is_file():
        return load_summary(path)
    try:
        return load_summary(find_run(spec, reports))
    except FileNotFoundError as exc:
        raise RunDirError(f"baseline: {exc}") from None

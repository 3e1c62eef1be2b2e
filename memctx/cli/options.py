"""What the commands share: ``--set KEY=VALUE``, option checks, the one-line error.

Every error the command line prints is one line, ``memctx: error: <problem>; <fix>``, on
stderr, with exit status 2 (bad input); argparse's own usage errors look the same.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memctx.errors import MemctxError

__all__ = [
    "ERROR_STATUS",
    "OptionError",
    "describe_os_error",
    "existing_dir",
    "fail",
    "one_line",
    "parse_set",
    "positive",
]

ERROR_STATUS = 2


class OptionError(MemctxError, ValueError):
    """A command-line option has a bad value (the message names the option and the fix)."""


def one_line(message: str) -> str:
    """``message`` on one line: its non-blank lines joined with ``"; "`` (with a space after
    a line that ends in a colon, which introduces the next)."""
    out = ""
    for line in (line.strip() for line in str(message).splitlines()):
        if line:
            out += ("" if not out else " " if out.endswith(":") else "; ") + line
    return out


def fail(message: str) -> int:
    """Print ``memctx: error: <message>`` on stderr; return the exit status 2."""
    print(f"memctx: error: {one_line(message)}", file=sys.stderr)
    return ERROR_STATUS


def describe_os_error(exc: OSError) -> str:
    """An :class:`OSError` as a message naming the file, the problem and the fix."""
    reason = exc.strerror or type(exc).__name__
    where = f"{exc.filename}: " if exc.filename is not None else ""
    return f"{where}{reason}; check the path and its permissions"


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def parse_set(items: Sequence[str] | None) -> dict[str, Any]:
    """``--set KEY=VALUE`` items as a dict; a value that is JSON is parsed (``2000``,
    ``true``, ``[1, 2]``), anything else stays a string.

    Raises:
        OptionError: An item without ``=`` or with an empty key (the message shows the form).
    """
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            shown = item if len(item) <= 60 else f"{item[:57]}..."
            raise OptionError(f"--set {shown!r}: expected KEY=VALUE, e.g. --set hardCapTokens=2000")
        out[key.strip()] = _parse_value(value.strip())
    return out


def positive(option: str, values: Sequence[int] | int | None, *, zero: bool = False) -> None:
    """Check that every value of a numeric option is positive (or >= 0 with ``zero``).

    Raises:
        OptionError: The first bad value, naming the option and what is allowed.
    """
    if values is None:
        return
    for value in [values] if isinstance(values, int) else values:
        if value < 0 or (value == 0 and not zero):
            want = "0 or more" if zero else "a positive number"
            raise OptionError(f"{option} must be {want}, got {value}")


def existing_dir(option: str, path: Path) -> None:
    """Check that ``path`` is a folder.

    Raises:
        OptionError: It is missing or a file (the message names the option).
    """
    if not path.is_dir():
        what = "a file, not a folder" if path.exists() else "missing"
        raise OptionError(f"{option} {path} is {what}; pass an existing folder")


SHARED_DATASETS = Path(__file__).resolve().parents[3] / "shared" / "datasets"


def shared_datasets_dir(value: str | None = None) -> Path:
    """The external datasets folder: ``value``, else ``$MEMCTX_DATASETS``, else
    ``../shared/datasets`` beside the checkout."""
    return Path(value or os.environ.get("MEMCTX_DATASETS") or SHARED_DATASETS)

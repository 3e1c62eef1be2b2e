"""Memory files' paths and reads: which paths are memory files, how one is read, its date.

:class:`memctx.store.memory_files.MemoryFiles` describes the rules; these are their pieces.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
from pathlib import Path, PurePosixPath
from typing import Final

from memctx.errors import StoreError
from memctx.fs import note_refusal

from .files import read_regular

__all__ = [
    "MAX_FILE_BYTES",
    "MEMORY_DIR",
    "MEMORY_MD",
    "daily_date",
    "memory_path",
    "read_memory_file",
]

logger = logging.getLogger("memctx")

MEMORY_MD: Final = "MEMORY.md"
MEMORY_DIR: Final = "memory"
MAX_FILE_BYTES: Final = 4 * 1024 * 1024  # read from one memory file at most (~1.3M tokens)
_DAILY_RE: Final = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[-_. ].*)?\.md")


def memory_path(root: Path, path: str | os.PathLike[str]) -> Path:
    """The real path of an allowed memory file under the workspace ``root``.

    Raises:
        StoreError: ``path`` is not ``MEMORY.md`` or a ``memory/<name>.md`` relative path
            with no symlink on the way (a link is refused and counted, wherever it points);
            the message names the rule.
    """
    raw = os.fspath(path)

    def refuse(why: str) -> StoreError:
        return StoreError(
            f"memory path {raw!r} refused: {why}; allowed: {MEMORY_MD} or "
            f"{MEMORY_DIR}/<name>.md, relative to {root}"
        )

    rel = PurePosixPath(raw.replace("\\", "/"))
    if not raw or "\x00" in raw:
        raise refuse("empty or contains NUL")
    if rel.is_absolute() or re.match(r"[A-Za-z]:", raw):
        raise refuse("absolute paths are not allowed")
    if ".." in rel.parts:
        raise refuse("'..' is not allowed")
    if rel.suffix.lower() != ".md":
        raise refuse("only .md files")
    walked = root
    for part in rel.parts:  # the store is a boundary: no link below the workspace is followed
        walked = walked / part
        if os.path.islink(walked):
            note_refusal(walked)
            raise refuse(f"{walked} is a symlink (memctx follows no link in the workspace)")
    real = (root / rel).resolve()
    memory_dir = root / MEMORY_DIR
    inside = real == root / MEMORY_MD or (real.is_relative_to(memory_dir) and real != memory_dir)
    if not inside or real.suffix.lower() != ".md":
        raise refuse(f"it resolves to {real}, outside the memory files (symlink?)")
    return real


def read_memory_file(path: Path) -> bytes:
    """A memory file's bytes, at most :data:`MAX_FILE_BYTES` cut at a line end.

    Raises:
        FileNotFoundError: It does not exist.
        StoreError: It is not a regular file (a FIFO, socket...) or cannot be read.
    """
    data, size = read_regular(path, MAX_FILE_BYTES, doing="read memory file")
    if size > len(data):
        cut = data.rfind(b"\n") + 1
        data = data[:cut] if cut else data
        logger.warning(
            "memory file %s has %d bytes: only the first %d are read", path, size, len(data)
        )
    return data


def daily_date(rel: str) -> dt.date | None:
    """The day of a daily log (``memory/YYYY-MM-DD.md``, or with a suffix such as
    ``memory/2026-02-28-deploy.md``); ``None`` for an evergreen file (``MEMORY.md``, undated
    ``memory/`` files, files in subfolders of ``memory/``), which temporal decay never touches.
    """
    parts = PurePosixPath(rel).parts
    match = _DAILY_RE.fullmatch(parts[-1]) if len(parts) == 2 else None
    if parts[0] != MEMORY_DIR or match is None:
        return None
    try:
        return dt.date.fromisoformat(match.group(1))
    except ValueError:
        return None  # "2026-13-40.md" is a name, not a date

"""The gateway's ``/compact``: keep the last ``maxLines`` lines of a JSONL transcript file.

Seed 001 §1.2 (``sessions.compact``): no summary, the transcript file is backed up and cut
to its last :data:`DEFAULT_TRANSCRIPT_MAX_LINES` (100) lines. :func:`trim_transcript_file` does it
without ever losing data:

- **Regular files only**, within the input size cap: the file is opened through
  :func:`memctx.transcripts.open_input_file`, which refuses directories, FIFOs, sockets and
  devices with a clear error. A symlink is followed: the file it names is trimmed and the
  link stays valid.
- **The backup first.** The original bytes go to ``<file>.bak`` before the file changes.
  An existing backup is never overwritten: the next free name ``<file>.bak.1``,
  ``<file>.bak.2``, … is taken instead, so the first trim's backup (the longest history)
  survives every later trim. Each write goes to a temporary file in the same directory,
  is flushed to disk, then linked (the backup: no clobbering, even by a concurrent trim) or
  renamed (the transcript: ``os.replace``) into place (:mod:`memctx.fs`), so a crash leaves
  either the old or the new file, never half of one.
- **Lines** are JSONL records: blank lines are dropped and not counted; the kept lines are
  the original bytes, each ending in ``\\n``. A file with at most ``max_lines`` records is
  left alone (no backup).
- **A file that changes while it is trimmed** (an agent appending) is not replaced: the
  error says to retry when the session is idle.

The seed also zeroes the session's token counters; memctx keeps none for a file, so the
caller resets its own.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memctx.fs import atomic_write, write_new_file
from memctx.transcripts import open_input_file

from .budget import CompactionError

__all__ = [
    "DEFAULT_TRANSCRIPT_MAX_LINES",
    "TRANSCRIPT_BACKUP_SUFFIX",
    "TranscriptTrim",
    "TranscriptTrimError",
    "transcript_backup_path",
    "trim_transcript_file",
]

DEFAULT_TRANSCRIPT_MAX_LINES = 100
TRANSCRIPT_BACKUP_SUFFIX = ".bak"
_MAX_BACKUPS = 10_000  # numbered backups tried before giving up (a directory gone wrong)


class TranscriptTrimError(CompactionError):
    """A transcript file cannot be trimmed; it was left as it was.

    The message names the file, the problem and the fix.
    """


@dataclass(frozen=True, slots=True)
class TranscriptTrim:
    """What :func:`trim_transcript_file` did.

    Attributes:
        path: The file trimmed (a symlink resolved).
        backup: Where the original went; ``None`` when nothing was trimmed.
        lines_before: Non-blank lines before.
        lines_kept: Non-blank lines after.
        bytes_before: Size before.
        bytes_after: Size after.
    """

    path: Path
    backup: Path | None
    lines_before: int
    lines_kept: int
    bytes_before: int
    bytes_after: int

    @property
    def trimmed(self) -> bool:
        return self.backup is not None


def transcript_backup_path(path: str | Path, number: int = 0) -> Path:
    """``<path>.bak`` for ``number`` 0, else ``<path>.bak.<number>``."""
    base = Path(path)
    suffix = TRANSCRIPT_BACKUP_SUFFIX if number == 0 else f"{TRANSCRIPT_BACKUP_SUFFIX}.{number}"
    return base.with_name(base.name + suffix)


def _backup_names(target: Path) -> Iterator[Path]:
    """Backup names of ``target`` in order: ``.bak``, then ``.bak.1``, ``.bak.2``, ..."""
    return (transcript_backup_path(target, number) for number in range(_MAX_BACKUPS))


def _records(data: bytes) -> list[bytes]:
    # Split on b"\n" only (JSONL); a record that lacks its final newline gets one.
    lines = io.BytesIO(data).readlines()
    return [line if line.endswith(b"\n") else line + b"\n" for line in lines if line.strip()]


def trim_transcript_file(
    path: str | Path, *, max_lines: int = DEFAULT_TRANSCRIPT_MAX_LINES, max_bytes: int | None = None
) -> TranscriptTrim:
    """Back up a JSONL transcript, then keep its last ``max_lines`` lines (module docstring).

    Args:
        path: The transcript file.
        max_lines: Records kept (the seed's ``maxLines``, 100).
        max_bytes: Size cap of the file read; ``None`` means the input default.

    Returns:
        The file, its backup (``None`` when the file already had at most ``max_lines``
        records) and the sizes.

    Raises:
        InputFileError: Missing, not a regular file, over the size cap
            (:mod:`memctx.transcripts`).
        TranscriptTrimError: The backup or the new file cannot be written, or the file
            changed while it was trimmed; the transcript is as it was.
        ValueError: ``max_lines`` is not a positive int.
    """
    if isinstance(max_lines, bool) or not isinstance(max_lines, int) or max_lines <= 0:
        raise ValueError(f"max_lines must be a positive number of lines, got {max_lines!r}")
    with open_input_file(path, what="transcript", max_bytes=max_bytes) as handle:
        data = handle.read_bytes()
        before = os.fstat(handle.stream.fileno())
    target = Path(os.path.realpath(path))
    records = _records(data)
    if len(records) <= max_lines:
        return TranscriptTrim(target, None, len(records), len(records), len(data), len(data))
    kept = b"".join(records[-max_lines:])
    mode = stat.S_IMODE(before.st_mode)
    directory = target.parent
    backup: Path | None = None

    def unchanged() -> None:
        now = os.stat(target)
        if (now.st_ino, now.st_size, now.st_mtime_ns) != (
            before.st_ino,
            before.st_size,
            before.st_mtime_ns,
        ):
            raise TranscriptTrimError(
                f"{path}: the transcript changed while it was being trimmed (another "
                "process is writing it); nothing was trimmed: retry when the session is idle"
            )

    try:
        try:
            backup = write_new_file(_backup_names(target), data, mode=mode)
        except FileExistsError as exc:
            raise TranscriptTrimError(
                f"{target}: {_MAX_BACKUPS} backups named {target.name}"
                f"{TRANSCRIPT_BACKUP_SUFFIX}.N already exist; move the old backups away and "
                "trim again"
            ) from exc
        # The check runs once the new content is on disk, just before the rename.
        atomic_write(target, kept, mode=mode, sync_dir=True, before_replace=unchanged)
    except TranscriptTrimError:
        if backup is not None:
            backup.unlink(missing_ok=True)  # the file is unchanged: the backup is redundant
        raise
    except OSError as exc:
        if backup is not None:
            backup.unlink(missing_ok=True)
        reason = exc.strerror or type(exc).__name__
        raise TranscriptTrimError(
            f"{path}: cannot trim the transcript: {reason}; it was left as it was. Check "
            f"that its directory ({directory}) is writable and has free space"
        ) from exc
    return TranscriptTrim(target, backup, len(records), max_lines, len(data), len(kept))

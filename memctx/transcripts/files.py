"""Reading input files the user names: regular files only, a size cap, bounded lines.

Every file memctx reads because a user named it (a transcript, a scenario file, a run's
``summary.json`` / ``results.jsonl`` / ``trace.jsonl``, a config file) goes through here, so
that none of them can hang the process or exhaust its memory:

- **Regular files only.** A directory, FIFO, socket or device (``/dev/zero``) is refused
  before it is read; the file is opened non-blocking, so a FIFO swapped in after the check
  cannot block either (the opened file is checked again).
- **A size cap.** :data:`DEFAULT_MAX_INPUT_BYTES` (512 MiB; real agent sessions are a few
  MB), raised or lowered with the ``MEMCTX_MAX_INPUT_BYTES`` environment variable or a
  ``max_bytes`` argument. A file over the cap is refused by its size, and reading stops at the
  cap too, for files whose size the system does not report (``/proc``) or that grow.
- **Bounded lines.** :func:`iter_lines` reads one line at a time, never more than what is
  left of the cap, and decodes it as UTF-8, naming the line and byte offset of a bad byte.

Errors are :class:`InputFileError` (a :class:`~memctx.errors.TranscriptError`): they name
the file, what is wrong and the fix, and never quote the file's content.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

from memctx.errors import TranscriptError

__all__ = [
    "DATASETS_ENV",
    "DEFAULT_MAX_INPUT_BYTES",
    "MAX_INPUT_BYTES_ENV",
    "SHARED_DATASETS",
    "InputFile",
    "InputFileError",
    "InputLine",
    "check_input_file",
    "file_kind",
    "iter_lines",
    "max_input_bytes",
    "open_input_file",
    "read_input_bytes",
    "shared_datasets_dir",
]

DEFAULT_MAX_INPUT_BYTES = 512 * 1024 * 1024
# The external datasets (LoCoMo, Claude Code sessions, agent trajectories) live outside the
# repository, beside the checkout, and are never copied in.
SHARED_DATASETS = Path(__file__).resolve().parents[3] / "shared" / "datasets"
DATASETS_ENV = "MEMCTX_DATASETS"
MAX_INPUT_BYTES_ENV = "MEMCTX_MAX_INPUT_BYTES"
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class InputFileError(TranscriptError):
    """An input file cannot be read: missing, not a regular file, too large, not UTF-8.

    The message names the file, the problem and the fix, never the file's content.
    """


def _size(count: int) -> str:
    for unit, name in ((1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB")):
        if count >= unit:
            return f"{count / unit:g} {name}"
    return f"{count} bytes"


def max_input_bytes(max_bytes: int | None = None) -> int:
    """The size cap: ``max_bytes``, else ``$MEMCTX_MAX_INPUT_BYTES``, else 512 MiB.

    The variable takes a byte count with an optional K, M, G or T suffix (powers of 1024):
    ``MEMCTX_MAX_INPUT_BYTES=2G``.

    Raises:
        InputFileError: ``max_bytes`` or the variable is not a positive size.
    """
    if max_bytes is not None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
            raise InputFileError(f"max_bytes must be a positive byte count, got {max_bytes!r}")
        return max_bytes
    raw = os.environ.get(MAX_INPUT_BYTES_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_INPUT_BYTES
    text = raw.lower().removesuffix("ib").removesuffix("b")
    unit = text[-1:] if text[-1:] in _UNITS else ""
    digits = text[: len(text) - len(unit)].strip()
    if not digits.isdigit() or int(digits) <= 0:
        raise InputFileError(
            f"{MAX_INPUT_BYTES_ENV}={raw[:40]!r} is not a size: set it to a positive byte "
            f"count with an optional K, M, G or T suffix, e.g. {MAX_INPUT_BYTES_ENV}=2G"
        )
    return int(digits) * _UNITS[unit]


def _too_large(source: str, what: str, limit: int, size: str) -> InputFileError:
    return InputFileError(
        f"{source}: the {what} is larger than the {_size(limit)} input limit ({size}); "
        f"raise the limit with {MAX_INPUT_BYTES_ENV}=BYTES (K, M, G suffixes allowed, e.g. "
        f"{MAX_INPUT_BYTES_ENV}=2G) if the file is really that large"
    )


def file_kind(mode: int) -> str | None:
    """What a non-regular file is, in words ("a FIFO (named pipe)"); ``None`` for a regular
    file. The one naming of file kinds: the stores' errors use it too.

    Args:
        mode: ``st_mode`` from ``os.stat`` / ``os.fstat``.
    """
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _not_regular(source: str, what: str, kind: str) -> InputFileError:
    return InputFileError(
        f"{source}: cannot read the {what}: it is {kind}, not a regular file; "
        f"pass the path of a {what} (a regular file)"
    )


def _os_error(source: str, what: str, exc: OSError) -> InputFileError:
    reason = exc.strerror or type(exc).__name__
    return InputFileError(f"{source}: cannot read the {what}: {reason}; check the path")


def check_input_file(path: str | Path, *, what: str = "file", max_bytes: int | None = None) -> int:
    """Check that ``path`` is a readable regular file within the size cap, without reading it.

    For a file another reader will open (a config file, a store's ``segments.jsonl``).

    Returns:
        The file's size in bytes.

    Raises:
        InputFileError: Missing, not a regular file (directory, FIFO, socket, device), or
            over the cap.
    """
    source = str(path)
    limit = max_input_bytes(max_bytes)
    try:
        info = os.stat(path)
    except OSError as exc:
        raise _os_error(source, what, exc) from exc
    kind = file_kind(info.st_mode)
    if kind is not None:
        raise _not_regular(source, what, kind)
    if info.st_size > limit:
        raise _too_large(source, what, limit, _size(info.st_size))
    return info.st_size


@dataclass(frozen=True)
class InputLine:
    """One line of an input file.

    Attributes:
        number: 1-based line number.
        offset: Byte offset of the line's first byte in the file (or the decompressed
            stream).
        text: The line decoded as UTF-8 (a leading byte-order mark dropped), with its end of
            line.
    """

    number: int
    offset: int
    text: str


def iter_lines(
    stream: IO[bytes], *, source: str, limit: int, what: str = "file"
) -> Iterator[InputLine]:
    """The lines of a binary stream, decoded as UTF-8, ``limit`` bytes at most in all.

    A line is never read past what is left of ``limit``, so one endless line cannot exhaust
    memory.

    Raises:
        InputFileError: The stream holds more than ``limit`` bytes, or a line is not UTF-8
            (the message names the line and the byte offset, not the bytes).
    """
    total = 0
    number = 0
    while True:
        raw = stream.readline(limit - total + 1)
        if not raw:
            return
        offset = total
        total += len(raw)
        if total > limit:
            raise _too_large(source, what, limit, f"more than {limit:,} bytes")
        number += 1
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputFileError(
                f"{source}: the {what} is not UTF-8 text: invalid byte at line {number}, "
                f"byte offset {offset + exc.start}; pass a UTF-8 text file"
            ) from None
        if number == 1:
            text = text.removeprefix("\ufeff")
        yield InputLine(number, offset, text)


class InputFile:
    """An opened input file (see :func:`open_input_file`); a context manager.

    Attributes:
        source: The path as the user gave it (for messages).
        what: What the file is meant to be (for messages), e.g. ``"transcript"``.
        limit: The size cap in bytes.
        stream: The binary file object, positioned at the start.
    """

    def __init__(self, stream: IO[bytes], source: str, what: str, limit: int) -> None:
        self.stream = stream
        self.source = source
        self.what = what
        self.limit = limit

    def __enter__(self) -> InputFile:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self.stream.close()

    def read_bytes(self) -> bytes:
        """The whole file from its start (at most ``limit`` bytes).

        Raises:
            InputFileError: The file holds more than ``limit`` bytes.
        """
        self.stream.seek(0)
        data = self.stream.read(self.limit + 1)
        if len(data) > self.limit:
            raise _too_large(self.source, self.what, self.limit, f"more than {self.limit:,} bytes")
        return data

    def read_text(self) -> str:
        """The whole file decoded as UTF-8 (a leading byte-order mark dropped).

        Raises:
            InputFileError: Over the cap, or not UTF-8 (naming the byte offset).
        """
        data = self.read_bytes()
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise InputFileError(
                f"{self.source}: the {self.what} is not UTF-8 text: invalid byte at line "
                f"{line}, byte offset {exc.start}; pass a UTF-8 text file"
            ) from None

    def lines(self) -> Iterator[InputLine]:
        """The file's lines from its start (see :func:`iter_lines`)."""
        self.stream.seek(0)
        return iter_lines(self.stream, source=self.source, limit=self.limit, what=self.what)


def open_input_file(
    path: str | Path, *, what: str = "file", max_bytes: int | None = None
) -> InputFile:
    """Open a regular file for reading, refusing anything that could hang or flood memory.

    Args:
        path: The file.
        what: What it is meant to be, for messages (``"transcript"``, ``"scenario file"``).
        max_bytes: The size cap; ``None`` means :func:`max_input_bytes`'s default.

    Raises:
        InputFileError: Missing or unreadable, not a regular file, or over the cap.
    """
    source = str(path)
    limit = max_input_bytes(max_bytes)
    check_input_file(path, what=what, max_bytes=limit)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise _os_error(source, what, exc) from exc
    try:
        info = os.fstat(fd)  # the file opened may not be the one checked
        kind = file_kind(info.st_mode)
        if kind is not None:
            raise _not_regular(source, what, kind)
        if info.st_size > limit:
            raise _too_large(source, what, limit, _size(info.st_size))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        stream = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    return InputFile(stream, source, what, limit)


def read_input_bytes(
    path: str | Path, *, what: str = "file", max_bytes: int | None = None
) -> bytes:
    """The bytes of a regular file within the size cap (see :func:`open_input_file`)."""
    with open_input_file(path, what=what, max_bytes=max_bytes) as handle:
        return handle.read_bytes()


def shared_datasets_dir(value: str | os.PathLike[str] | None = None) -> Path:
    """The external datasets folder: ``value``, else ``$MEMCTX_DATASETS``, else
    ``../shared/datasets`` beside the checkout (:data:`SHARED_DATASETS`)."""
    return Path(value or os.environ.get(DATASETS_ENV) or SHARED_DATASETS)

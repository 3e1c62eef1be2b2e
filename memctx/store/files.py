"""Store directories and store files: resolved one way, opened safely, errors that say the fix.

Every store (:class:`~memctx.store.RawStore`, :class:`~memctx.store.KnowledgeStore`,
:class:`~memctx.store.MemoryFiles`) goes through this module, so that:

- a directory argument means the same place to each of them (:func:`resolve_store_dir`: ``~``
  expanded once, made absolute, symlinks resolved; a blank path or a path that is a file is
  refused before anything is created);
- a store file is only ever a regular file (:func:`open_regular`): a directory, a named pipe,
  a socket or a device in its place is refused with an error, and opening never blocks (a FIFO
  opened for reading waits for a writer forever without ``O_NONBLOCK``). The check is an
  ``fstat`` of the descriptor opened, not a ``stat`` of the path first, so nothing can be
  swapped in between;
- the store is a boundary: a store file is never opened through a symlink (``O_NOFOLLOW``;
  files in folders below the store directory are opened by :func:`open_in_store`, which
  follows no link on the way either, :mod:`memctx.fs.beneath`), and a file with a second
  hard link is never written in place (it may be a link planted to a file elsewhere). Both
  are refused with a :class:`StoreFileError` and counted (:func:`refused_paths`);
- an ``OSError`` becomes a :class:`~memctx.errors.StoreError` that names the path, the problem
  and the fix (:func:`os_error`, :func:`problem_and_fix`). Nothing here deletes, truncates or
  replaces a file it did not create: whatever is on disk stays as it was.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path
from typing import Final

from memctx.errors import StoreError
from memctx.fs import check_single_link, note_refusal, open_beneath, refusals_under
from memctx.transcripts import file_kind

__all__ = [
    "O_CLOEXEC",
    "StoreFileError",
    "open_in_store",
    "open_nonblocking",
    "open_regular",
    "os_error",
    "problem_and_fix",
    "read_regular",
    "refused_paths",
    "resolve_store_dir",
]

O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_WRITE_FLAGS: Final = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_TRUNC

# errno -> (what it means here, when the system's words do not say it; the fix)
_FIXES: Final[dict[int, tuple[str, str]]] = {
    errno.EISDIR: ("", "move or rename that directory away"),
    errno.ENOTDIR: (
        "a component of the path is not a directory",
        "use a store directory whose parents are all directories",
    ),
    errno.EACCES: ("", "give this user access (chmod u+rw, chown) or use another store_dir"),
    errno.EPERM: ("", "give this user access (chmod u+rw, chown) or use another store_dir"),
    errno.EROFS: ("", "remount it read-write or put the store on a writable file system"),
    errno.ENOSPC: ("", "free some space or move the store to a larger disk"),
    errno.EDQUOT: ("", "free some space or raise the quota"),
    errno.ENXIO: (
        "a named pipe or a socket is in place of the file",
        "move it away; the store recreates its file",
    ),
    errno.ELOOP: ("a symlink loop or a refused symlink", "replace it with a regular file"),
    errno.ENAMETOOLONG: ("", "use a shorter store_dir"),
    errno.EMFILE: ("", "raise the limit (ulimit -n) or close other stores"),
    errno.ENFILE: ("", "close other programs' files"),
    errno.EIO: ("the disk may be failing", "check it (dmesg, fsck) and restore from a backup"),
    errno.ENOENT: (
        "was the store directory removed?",
        "recreate the directory or point store_dir at the right one",
    ),
}


class StoreFileError(StoreError):
    """A store file exists but is not a regular file (a directory, a FIFO, a socket...)."""


def problem_and_fix(exc: BaseException) -> tuple[str, str]:
    """What an error means for a store file, and what to do about it, as two phrases."""
    if not isinstance(exc, OSError):
        return str(exc), "check the file, its directory and the disk"
    problem = exc.strerror or str(exc)
    meaning, fix = _FIXES.get(exc.errno or 0, ("", "check the file, its directory and the disk"))
    return (f"{problem} ({meaning})" if meaning else problem), fix


def os_error(path: Path | str, exc: BaseException, doing: str) -> StoreError:
    """The :class:`StoreError` for ``exc`` while ``doing`` something to ``path``.

    Args:
        path: The store file or directory.
        exc: The error (usually an ``OSError``).
        doing: What was attempted, as a verb phrase ("read", "append to", "create").

    Returns:
        ``cannot <doing> <path>: <problem>; <fix>``: an error of its own for a store file that
        is not a regular file (:class:`StoreFileError`).
    """
    if isinstance(exc, StoreError):
        return exc
    problem, fix = problem_and_fix(exc)
    return StoreError(f"cannot {doing} {path}: {problem}; {fix}")


def _not_regular(path: Path | str, mode: int, doing: str) -> StoreFileError:
    kind = file_kind(mode) or "not a regular file"
    return StoreFileError(
        f"cannot {doing} {path}: it is {kind}, not a regular file; move it away (memctx "
        "never deletes it) so that the store can create its own file there"
    )


def open_nonblocking(
    path: Path | str, flags: int, mode: int = 0o600, *, doing: str = "open"
) -> int:
    """Open ``path`` without blocking and only if it is a regular file.

    Opens with ``O_NONBLOCK`` (a FIFO does not wait for a writer), ``O_NOFOLLOW`` (a symlink
    in the file's place is refused, never followed) and ``O_CLOEXEC``, checks the descriptor
    with ``fstat`` (no window between a check and the open), then clears ``O_NONBLOCK``
    again. A file opened to write in place that has a second hard link is refused.

    Args:
        path: The file.
        flags: ``os.open`` flags (``O_RDONLY``, ``O_RDWR | O_APPEND | O_CREAT``...).
        mode: Permissions of a file created now.
        doing: What the caller does, for the message ("read", "append to").

    Returns:
        The open descriptor of a regular file.

    Raises:
        OSError: The open failed (``FileNotFoundError`` when it does not exist).
        StoreFileError: It is a symlink, a directory, a FIFO, a socket or a device, or a
            hard-linked file opened to write (the last two counted, :func:`refused_paths`).
    """
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | O_CLOEXEC | _NOFOLLOW, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path):
            note_refusal(path)
            raise _symlink(path, doing) from exc
        raise
    return _checked(fd, path, flags, doing)


def _checked(fd: int, path: Path | str, flags: int, doing: str) -> int:
    """``fd`` if it is a regular file (not hard-linked, when opened to write), blocking again;
    closed and refused otherwise."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(path, st.st_mode, doing)
        if flags & _WRITE_FLAGS:
            try:
                check_single_link(fd, path)
            except OSError as exc:
                raise StoreFileError(f"cannot {doing} {path}: {exc.strerror}") from exc
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _symlink(path: Path | str, doing: str) -> StoreFileError:
    return StoreFileError(
        f"cannot {doing} {path}: it is a symlink; memctx never follows links inside its store, "
        "so nothing was read or written through it. Remove the link (memctx never deletes "
        "it); the store creates its own file there"
    )


def open_in_store(
    root: Path | str,
    path: Path | str,
    flags: int,
    mode: int = 0o600,
    *,
    doing: str = "open",
    create_dirs: bool = False,
) -> int:
    """:func:`open_regular` for a file in a folder below the store directory ``root``.

    No component below ``root`` is followed if it is a symlink (each is opened relative to
    its parent's descriptor, :func:`memctx.fs.open_beneath`), so a folder swapped for a link
    cannot lead the open outside the store.

    Raises:
        FileNotFoundError: The file (or a folder, without ``create_dirs``) is missing.
        StoreError: As :func:`open_regular`; a symlink anywhere below ``root`` or a
            hard-linked file opened to write is a :class:`StoreFileError` (counted).
    """
    try:
        fd = open_beneath(root, path, flags, mode, create_dirs=create_dirs)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise StoreFileError(f"cannot {doing} {path}: {exc.strerror}") from exc
        raise os_error(path, exc, doing) from exc
    except ValueError as exc:
        raise StoreError(f"cannot {doing} {path}: {exc}") from exc
    return _checked(fd, path, flags, doing)


def refused_paths(root: Path | str) -> int:
    """How many times, in this process, memctx refused a symlink or a hard-linked file under
    the store directory ``root`` (what ``stats()`` reports as ``store_paths_refused``)."""
    return refusals_under(root)


def open_regular(path: Path | str, flags: int, mode: int = 0o600, *, doing: str = "open") -> int:
    """:func:`open_nonblocking`, every failure but a missing file as a :class:`StoreError`.

    Args:
        path: The file.
        flags: ``os.open`` flags.
        mode: Permissions of a file created now.
        doing: What the caller does, for the message ("read", "append to").

    Returns:
        The open descriptor of a regular file.

    Raises:
        FileNotFoundError: ``path`` (or its directory) does not exist: callers that accept a
            missing file catch this one.
        StoreError: Any other failure, or a file that is not regular (:class:`StoreFileError`);
            the message names the path, the problem and the fix.
    """
    try:
        return open_nonblocking(path, flags, mode, doing=doing)
    except FileNotFoundError:
        raise
    except OSError as exc:
        err = os_error(path, exc, doing)
        if exc.errno == errno.ENXIO:  # O_WRONLY on a FIFO without a reader, or a socket
            err = StoreFileError(str(err))
        raise err from exc


def read_regular(path: Path | str, limit: int, *, doing: str = "read") -> tuple[bytes, int]:
    """Up to ``limit`` bytes of a regular file, and its size (:func:`open_regular` rules).

    Raises:
        FileNotFoundError: The file does not exist.
        StoreError: As :func:`open_regular`, or the read failed.
    """
    fd = open_regular(path, os.O_RDONLY, doing=doing)
    try:
        size = os.fstat(fd).st_size
        want = min(limit, size)
        parts = [os.read(fd, want)]  # one read for all of it, as a rule
        got = len(parts[0])
        while got < limit and parts[-1]:
            parts.append(os.read(fd, min(1 << 20, limit - got)))  # it grew, or a short read
            got += len(parts[-1])
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        return data, max(size, got)
    except OSError as exc:
        raise os_error(path, exc, doing) from exc
    finally:
        os.close(fd)


def resolve_store_dir(path: object) -> Path:
    """The one way every store turns its directory argument into a path.

    ``~`` is expanded once (``"~/.memctx/store"`` is under ``$HOME`` for every store, never a
    directory named ``~`` in the working directory), then the path is made absolute with its
    symlinks resolved. Nothing is created.

    Args:
        path: A ``str`` or ``os.PathLike`` naming a directory (which need not exist yet).

    Returns:
        The absolute, resolved directory.

    Raises:
        StoreError: ``path`` is ``None``, not a path, empty or only whitespace, or names
            something that exists and is not a directory; the message says what to pass.
    """
    if path is None or isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
        raise StoreError(
            f"store_dir must be a path (str or pathlib.Path), got {path!r}; pass the directory "
            "the store should live in, e.g. '~/.memctx/store'"
        )
    raw = os.fspath(path)
    if not isinstance(raw, str) or not raw.strip():
        raise StoreError(
            f"store_dir must be a non-empty path, got {path!r}; pass the directory the store "
            "should live in, e.g. '~/.memctx/store' (use '.' for the working directory)"
        )
    try:
        resolved = Path(os.path.expanduser(raw)).resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        raise StoreError(
            f"cannot resolve store_dir {raw!r}: {exc}; pass a valid directory path"
        ) from exc
    try:
        st = os.stat(resolved)
    except FileNotFoundError:
        return resolved  # created by the first write
    except OSError as exc:
        raise os_error(resolved, exc, "create store_dir") from exc
    if not stat.S_ISDIR(st.st_mode):
        kind = file_kind(st.st_mode) or "a file"
        raise StoreError(
            f"store_dir {resolved} is {kind}, not a directory; pass a directory (or a path "
            "that does not exist yet: it is created on the first write)"
        )
    return resolved

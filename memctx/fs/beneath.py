"""Paths beneath a trusted directory, opened without following a symlink anywhere below it.

A store directory is a boundary: whoever can plant a symlink inside it (another program, a
restored backup, a checked-out repository) must not make memctx read or write a file outside
it. Checking a path (``realpath``, ``lstat``) and then opening it leaves a window in which a
component can be swapped for a link, so nothing here checks first: the walk opens the trusted
root, then each component below it relative to the descriptor of its parent
(``os.open(name, O_NOFOLLOW, dir_fd=parent)``), creating missing folders the same way. A
symlink at any step fails that very open, and is refused with an :class:`OSError` of errno
``ELOOP`` whose message names the link and the fix. The root itself is the caller's choice
and is trusted (stores resolve it once, :func:`memctx.store.resolve_store_dir`).

Hard links: a file whose ``st_nlink`` is above 1 may be a link planted to a file elsewhere;
opening one to write into it in place (an append) is refused with ``EMLINK`` (callers that
replace files atomically create a new inode and are not affected).

Every refusal is counted per path (:func:`refusals_under`), so a store can report how many
of its paths were refused.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path, PurePath
from typing import Final

__all__ = [
    "NOFOLLOW",
    "check_single_link",
    "note_refusal",
    "open_beneath",
    "open_dir_beneath",
    "refusals_under",
    "refuse_link_at",
    "split_beneath",
]

NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS: Final = (
    os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
)
_WRITE_FLAGS: Final = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_TRUNC

_refused: Counter[str] = Counter()
_refused_lock = threading.Lock()

PathArg = str | os.PathLike[str]


def note_refusal(path: PathArg) -> None:
    """Count one refused path (a symlink or a hard-linked file under a store)."""
    with _refused_lock:
        _refused[os.fspath(path)] += 1


def refusals_under(root: PathArg) -> int:
    """How many times, in this process, a path under ``root`` was refused."""
    base = os.fspath(root).rstrip(os.sep) + os.sep
    with _refused_lock:
        return sum(n for path, n in _refused.items() if path.startswith(base))


def split_beneath(root: PathArg, path: PathArg) -> tuple[str, ...]:
    """The components of ``path`` below ``root`` (``path`` absolute under it, or relative).

    Raises:
        ValueError: ``path`` is not below ``root``, or has an empty, ``.`` or ``..`` part.
    """
    candidate = PurePath(path)
    if candidate.is_absolute():
        try:
            candidate = candidate.relative_to(root)
        except ValueError:
            raise ValueError(f"{path} is not inside {root}") from None
    parts = candidate.parts
    if not parts or any(p in ("", ".", "..") or "/" in p for p in parts):
        raise ValueError(f"{path} must name a file inside {root} without '.' or '..' parts")
    return parts


def _refuse_link(root: PathArg, parts: Sequence[str], exc: OSError) -> OSError:
    """The error for a component that is a symlink."""
    where = Path(root).joinpath(*parts)
    note_refusal(where)
    return OSError(
        errno.ELOOP,
        f"{where} is a symlink inside the store {root}; memctx never "
        "follows links there, so nothing was read or written through it. Remove the link "
        f"(the store recreates what it needs) ({exc.strerror or exc})",
        os.fspath(where),
    )


def open_dir_beneath(root: PathArg, parts: Sequence[str], *, create: bool) -> int:
    """A descriptor of the folder ``root/parts...``, no component below ``root`` followed.

    Args:
        root: The trusted directory (followed if it is a link: the caller chose it).
        parts: Folder names below it (may be empty: ``root`` itself).
        create: Make missing folders (mode 0700, inside their parent's descriptor).

    Raises:
        FileNotFoundError: A folder is missing and ``create`` is false (or ``root`` is).
        OSError: ``ELOOP`` for a symlink (counted), or any other failure.
    """
    if create:
        with contextlib.suppress(FileExistsError):  # a file there: the open below says so
            os.makedirs(root, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        for depth, name in enumerate(parts):
            try:
                child = _open_dir(fd, name, create=create)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(fd, name):
                    raise _refuse_link(root, parts[: depth + 1], exc) from exc
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_dir(parent: int, name: str, *, create: bool) -> int:
    """The folder ``name`` in ``parent``, made first (0700) if missing and ``create``."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    with contextlib.suppress(FileExistsError):  # made meanwhile (or a link: refused next)
        os.mkdir(name, 0o700, dir_fd=parent)
    return os.open(name, _DIR_FLAGS, dir_fd=parent)


def _is_link(parent: int, name: str) -> bool:
    """Whether ``name`` in ``parent`` is a symlink (O_DIRECTORY | O_NOFOLLOW on a link to a
    folder fails with ``ENOTDIR`` on Linux, ``ELOOP`` elsewhere)."""
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        return False


def refuse_link_at(root: PathArg, parts: Sequence[str], dir_fd: int) -> None:
    """Raise the refusal (``ELOOP``, counted) if ``parts[-1]`` in ``dir_fd`` is a symlink."""
    if _is_link(dir_fd, parts[-1]):
        raise _refuse_link(root, parts, OSError(errno.ELOOP, "a symlink"))


def open_beneath(
    root: PathArg, path: PathArg, flags: int, mode: int = 0o600, *, create_dirs: bool = False
) -> int:
    """Open the file ``path`` below ``root`` following no symlink under ``root``.

    ``O_NOFOLLOW``, ``O_NONBLOCK`` (a FIFO in the file's place does not block) and
    ``O_CLOEXEC`` are added; the caller checks the file type with ``fstat`` (and clears
    ``O_NONBLOCK`` if it cares). Opening to write in place (``O_WRONLY``, ``O_RDWR``,
    ``O_APPEND``, ``O_TRUNC``) a file with more than one hard link is refused.

    Args:
        root: The trusted directory.
        path: The file: absolute under ``root``, or relative to it.
        flags: ``os.open`` flags.
        mode: Permissions of a file created now.
        create_dirs: Create the missing folders between ``root`` and the file.

    Raises:
        FileNotFoundError: The file (or a folder, without ``create_dirs``) is missing.
        OSError: ``ELOOP`` for a symlink, ``EMLINK`` for a hard-linked file opened to write
            (both counted), or any other failure.
    """
    parts = split_beneath(root, path)
    dir_fd = open_dir_beneath(root, parts[:-1], create=create_dirs)
    try:
        try:
            fd = os.open(
                parts[-1],
                # O_TRUNC waits for the link check: truncating on open would empty the
                # file a planted hard link shares before it could be refused.
                (flags & ~os.O_TRUNC) | NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0),
                mode,
                dir_fd=dir_fd,
            )
        except OSError as exc:
            if exc.errno == errno.ELOOP or (
                exc.errno == errno.ENOTDIR and _is_link(dir_fd, parts[-1])
            ):
                raise _refuse_link(root, parts, exc) from exc
            raise
    finally:
        os.close(dir_fd)
    if flags & _WRITE_FLAGS:
        try:
            check_single_link(fd, Path(root).joinpath(*parts))
            if flags & os.O_TRUNC and stat.S_ISREG(os.fstat(fd).st_mode):
                os.ftruncate(fd, 0)
        except BaseException:
            os.close(fd)
            raise
    return fd


def check_single_link(fd: int, path: PathArg) -> None:
    """Refuse (``EMLINK``, counted) a regular file with more than one hard link.

    A link planted under a store name shares its inode with a file elsewhere: appending to
    it would write there. memctx never hard-links its own files (atomic replaces make a new
    inode), so a second link is someone else's doing.
    """
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        note_refusal(path)
        raise OSError(
            errno.EMLINK,
            f"{path} has {st.st_nlink} hard links; memctx does not write into a file shared "
            "with another name (a link planted there would make it write elsewhere). Make it "
            "a file of its own (cp FILE FILE.new && mv FILE.new FILE) or move it away",
            os.fspath(path),
        )

"""Atomic file writes: whoever reads the file sees the old content or the new, never a mix.

Every file memctx replaces (a store compacted, a cache entry, a state file, a sidecar, a
trimmed transcript) is written the same way, here: the new content goes in full to a
temporary file in the target's directory (``os.replace`` is atomic only within one file
system), is ``fsync``-ed when the caller wants it on disk before the name points at it, and
is renamed over the target. An error at any step removes the temporary file and leaves the
target as it was; a process killed mid-way can leave one behind, always named
``.<name>.<random>.tmp``, which no reader of memctx's files opens.

The file gets exactly the permissions the caller asks for (``fchmod``, not filtered by the
umask): a file replaced by several processes keeps one mode whoever wrote it last.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final

from .beneath import open_dir_beneath, refuse_link_at, split_beneath

__all__ = ["atomic_write", "atomic_write_beneath", "fsync_dir", "write_new_file"]

_BUFFER: Final = 1 << 20  # small chunks (lines, vector rows) are gathered into 1 MiB writes
_NAME_BYTES: Final = 128  # of the target's name kept in a temporary name (NAME_MAX is 255)
_TEMP_TRIES: Final = 8  # random names tried; a clash means 64 random bits repeated

PathArg = str | os.PathLike[str]
Content = bytes | bytearray | memoryview | Iterable[bytes]


def atomic_write(
    path: PathArg,
    data: Content,
    *,
    mode: int = 0o600,
    fsync: bool = True,
    sync_dir: bool = False,
    before_replace: Callable[[], object] | None = None,
) -> None:
    """Replace ``path`` with ``data`` atomically (module docstring).

    Args:
        path: The file to write; its directory must exist.
        data: The whole content, or its chunks in order (a generator is consumed once, while
            the temporary file is written: a chunk that raises leaves ``path`` untouched).
        mode: The new file's permissions, exactly (0600 by default: most of what memctx
            keeps is conversation text).
        fsync: Put the content on disk before the rename, so that a power loss leaves the
            old file or the new one; without it a crash of the machine (not of the process)
            may leave an empty file. Off for caches, whose loss costs only time.
        sync_dir: ``fsync`` the directory after the rename too, so that the rename itself
            survives a power loss (best effort: not every platform can).
        before_replace: Called once the new content is complete, just before the rename;
            raising there stops the write (temporary file removed, ``path`` untouched). A
            caller checks here that nobody changed the file meanwhile.

    Raises:
        OSError: The file cannot be written or renamed (the caller wraps it in its own
            error); ``path`` is as it was and no temporary file is left.
        ValueError: ``mode`` is not a permission mask.
    """
    target = Path(path)
    tmp = _write_temp(target, data, mode, fsync=fsync)
    try:
        if before_replace is not None:
            before_replace()
        os.replace(tmp, target)
    except BaseException:
        _remove(tmp)
        raise
    if sync_dir:
        fsync_dir(target.parent)


def atomic_write_beneath(
    root: PathArg,
    path: PathArg,
    data: Content,
    *,
    mode: int = 0o600,
    fsync: bool = True,
    sync_dir: bool = False,
) -> None:
    """:func:`atomic_write` of a file below the trusted directory ``root``, following no
    symlink below it (:mod:`memctx.fs.beneath`): the folders on the way are opened (and
    created, mode 0700) one by one without following a link, and the temporary file and the
    rename work inside the last folder's descriptor, so a folder swapped for a link meanwhile
    cannot redirect the write. A symlink in the file's own place is refused like one on the
    way (a rename would only replace it, but a planted link is a sign to stop and say so).

    Raises:
        OSError: As :func:`atomic_write`; ``ELOOP`` for a symlinked folder (counted).
        ValueError: ``path`` is not below ``root``, or a bad ``mode``.
    """
    parts = split_beneath(root, path)
    dir_fd = open_dir_beneath(root, parts[:-1], create=True)
    try:
        name = Path(parts[-1])
        tmp = _write_temp(name, data, mode, fsync=fsync, dir_fd=dir_fd)
        try:
            refuse_link_at(root, parts, dir_fd)
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            _remove(tmp, dir_fd)
            raise
        if sync_dir:
            with contextlib.suppress(OSError):
                os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_new_file(
    candidates: Iterable[PathArg], data: Content, *, mode: int = 0o600, fsync: bool = True
) -> Path:
    """Write ``data`` under the first of ``candidates`` not taken, never replacing a file.

    The content is written once to a temporary file, then hard-linked to each name in turn
    until one is free: a link fails on a taken name, so even two writers racing for the same
    name cannot overwrite each other. Where the file system has no hard links, a name that
    exists is skipped and the file is renamed to the first free one (that check and the
    rename are then two steps).

    Args:
        candidates: Names in one directory, in order of preference (read lazily).
        data: As :func:`atomic_write`.
        mode: As :func:`atomic_write`.
        fsync: As :func:`atomic_write`.

    Returns:
        The name written.

    Raises:
        FileExistsError: Every candidate is taken (nothing was written).
        OSError: The file cannot be written; no temporary file is left.
        ValueError: No candidate, candidates in different directories, or a bad ``mode``.
    """
    names = iter(candidates)
    first = next(names, None)
    if first is None:
        raise ValueError("write_new_file needs at least one candidate name")
    first_path = Path(first)
    tmp = _write_temp(first_path, data, mode, fsync=fsync)
    try:
        for name in itertools.chain([first_path], names):
            candidate = Path(name)
            if candidate.parent != first_path.parent:
                raise ValueError(
                    f"candidate {candidate} is not in {first_path.parent}; give names in one "
                    "directory (a link cannot cross file systems)"
                )
            try:
                os.link(tmp, candidate)
            except FileExistsError:
                continue
            except OSError:
                # No hard links on this file system: the existence check is the best left.
                if os.path.lexists(candidate):
                    continue
                os.replace(tmp, candidate)
                return candidate
            _remove(tmp)
            return candidate
        raise FileExistsError(
            f"every candidate name is taken, the first being {first_path}; move old files away"
        )
    except BaseException:
        _remove(tmp)
        raise


def fsync_dir(directory: PathArg) -> None:
    """Make a rename or a new file in ``directory`` durable.

    Best effort: not every platform lets a directory be opened (Windows), and there the
    rename is the best that can be done.
    """
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_temp(
    target: Path, data: Content, mode: int, *, fsync: bool, dir_fd: int | None = None
) -> Path:
    """``data`` in a new ``.<name>.<random>.tmp`` beside ``target``, complete, with ``mode``
    (``target`` relative to ``dir_fd`` when one is given)."""
    if isinstance(mode, bool) or not isinstance(mode, int) or not 0 <= mode <= 0o7777:
        raise ValueError(f"mode must be a permission mask such as 0o600, got {mode!r}")
    stem = os.fsdecode(os.fsencode(target.name)[:_NAME_BYTES])
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(_TEMP_TRIES):
        tmp = target.with_name(f".{stem}.{os.urandom(8).hex()}.tmp")
        try:
            fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(f"no free temporary name beside {target}")
    try:
        os.fchmod(fd, mode)
        handle = open(fd, "wb", buffering=_BUFFER)  # noqa: SIM115 - closed just below
    except BaseException:
        os.close(fd)
        _remove(tmp, dir_fd)
        raise
    try:
        with handle:
            if isinstance(data, bytes | bytearray | memoryview):
                handle.write(data)
            else:
                for chunk in data:
                    handle.write(chunk)
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
    except BaseException:
        _remove(tmp, dir_fd)
        raise
    return tmp


def _remove(tmp: Path, dir_fd: int | None = None) -> None:
    with contextlib.suppress(OSError):
        os.unlink(tmp, dir_fd=dir_fd)

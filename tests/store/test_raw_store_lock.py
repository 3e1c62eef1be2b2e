"""The store's inter-process lock (:mod:`memctx.store.raw.lock`): exclusion between
processes and with ``filelock.FileLock`` on the same file, timeouts, an unlinked lock file."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock
from filelock import Timeout as FileLockTimeout

from memctx.store.raw import lock as lock_module
from memctx.store.raw.lock import LockTimeout, StoreLock

_HOLDER = r"""
import sys, time
from memctx.store.raw.lock import StoreLock
from pathlib import Path
lock = StoreLock(Path(sys.argv[1]), timeout=30)
lock.acquire()
print("held", flush=True)
time.sleep(float(sys.argv[2]))
Path(sys.argv[1] + ".released").touch()  # written while still holding the lock
lock.release()
"""


def test_acquire_release_and_reacquire(tmp_path: Path) -> None:
    lock = StoreLock(tmp_path / "x.lock", timeout=1)
    assert not lock.held
    lock.acquire()
    assert lock.held and (tmp_path / "x.lock").exists()
    with pytest.raises(RuntimeError, match="already locked"):
        lock.acquire()
    lock.release()
    lock.release()  # a second release does nothing
    assert not lock.held
    lock.acquire()
    lock.release()
    assert (tmp_path / "x.lock").exists()  # never deleted: waiters would split


def test_two_holders_in_one_process_exclude_each_other(tmp_path: Path) -> None:
    first, second = StoreLock(tmp_path / "x.lock", 5), StoreLock(tmp_path / "x.lock", 0.2)
    first.acquire()
    with pytest.raises(LockTimeout, match="still locked"):
        second.acquire()
    assert not second.held
    first.release()
    second.acquire()
    second.release()


def test_excludes_filelock_on_the_same_file_both_ways(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    ours, theirs = StoreLock(path, 0.2), FileLock(path, timeout=0.2)
    ours.acquire()
    with pytest.raises(FileLockTimeout):
        theirs.acquire()
    ours.release()
    theirs.acquire()
    with pytest.raises(LockTimeout):
        ours.acquire()
    theirs.release()
    ours.acquire()
    ours.release()


def test_excludes_another_process(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    args = [sys.executable, "-c", _HOLDER, str(path), "0.6"]
    with subprocess.Popen(args, stdout=subprocess.PIPE, text=True) as holder:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(LockTimeout):
            StoreLock(path, 0.1).acquire()
        waiter = StoreLock(path, 10)
        waiter.acquire()  # polls until the holder lets go
        # The holder marks the file before it lets go: seeing the mark proves the waiter
        # got the lock only after the holder released it, not alongside it.
        assert Path(f"{path}.released").exists()
        waiter.release()
    assert holder.returncode == 0


def test_a_lock_file_unlinked_under_a_waiter_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "x.lock"
    real_flock = lock_module.fcntl.flock
    unlinked: list[int] = []

    def flock_then_unlink_once(fd: int, op: int) -> None:
        real_flock(fd, op)
        if not unlinked and op & lock_module.fcntl.LOCK_EX:
            unlinked.append(fd)
            path.unlink()  # someone deleted the file between our open and our flock

    monkeypatch.setattr(lock_module.fcntl, "flock", flock_then_unlink_once)
    lock = StoreLock(path, 1)
    lock.acquire()  # the first, unlinked inode was dropped and the lock taken again
    assert lock.held and path.exists() and len(unlinked) == 1
    lock.release()


def test_a_lock_file_that_cannot_be_opened_is_an_oserror(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "x.lock"
    path.write_text("")
    real_open = os.open

    def deny(file: object, flags: int, *args: object) -> int:
        if str(file) == str(path) and flags & os.O_RDWR:
            raise PermissionError(errno.EACCES, "denied", str(file))
        return real_open(file, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(lock_module.os, "open", deny)
    with pytest.raises(PermissionError):
        StoreLock(path, 1).acquire()
    with pytest.raises(FileNotFoundError):
        StoreLock(tmp_path / "missing" / "x.lock", 1).acquire()

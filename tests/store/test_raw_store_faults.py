"""Raw store under faults: SIGKILL mid-burst, concurrent writer processes, full or read-only disks.

The inter-process lock is an exclusive ``flock`` on ``segments.jsonl.lock``
(:mod:`memctx.store.raw.lock`). Writers hold it while they read what others appended, dedup,
write their lines with one ``os.write`` on an ``O_APPEND`` descriptor and append their vectors.
"""

from __future__ import annotations

import errno
import json
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import memctx.store.raw.vectors as vectors_module
from memctx.errors import StoreError
from memctx.retrieval.embeddings import HashEmbedder
from memctx.store.files import problem_and_fix
from memctx.store.raw.io import decode_record
from memctx.store.raw.store import RawStore
from memctx.store.vmem import read_vmem
from memctx.text.keywords import tokenize

WRITER = Path(__file__).resolve().parents[1] / "helpers" / "raw_store_writer.py"
# What the message of a failed write tells the user to do, by errno (memctx.store.files).
FIXES = {
    errno.ENOSPC: "free some space or move the store to a larger disk",
    errno.EACCES: "give this user access (chmod u+rw, chown) or use another store_dir",
    errno.EROFS: "remount it read-write or put the store on a writable file system",
}
UUID_LINE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


class CountingEmbedder:
    def __init__(self) -> None:
        self.inner = HashEmbedder()
        self.name, self.dim, self.version = self.inner.name, self.inner.dim, self.inner.version
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        return self.inner.embed(texts)


class Lines:
    """A writer's stdout, read from the descriptor with a buffer of our own.

    ``proc.stdout.readline()`` would read ahead into the stream's buffer, and
    ``communicate()`` reads the descriptor, never that buffer: the ids a writer printed just
    after the line we wanted were silently lost (the flaky ``797 == 800`` under load).
    Everything read here is returned by :meth:`readline` or :meth:`rest`.
    """

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        self.proc, self.fd, self.buffer = proc, proc.stdout.fileno(), b""

    def readline(self) -> str:
        while b"\n" not in self.buffer:
            chunk = os.read(self.fd, 65536)
            if not chunk:
                err = self.proc.stderr.read() if self.proc.stderr else b""
                raise AssertionError(f"writer exited: {err.decode(errors='replace')}")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()

    def rest(self) -> str:
        """Everything still to come, until the writer closes its stdout."""
        while chunk := os.read(self.fd, 65536):
            self.buffer += chunk
        text, self.buffer = self.buffer.decode(), b""
        return text


def start_writer(
    store: Path, session: str, count: int, batch: int = 1, wait: bool = False
) -> tuple[subprocess.Popen[bytes], Lines]:
    args = [sys.executable, str(WRITER), str(store), session, str(count), str(batch)]
    args += ["wait"] if wait else []
    proc = subprocess.Popen(
        args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    lines = Lines(proc)
    assert lines.readline() == "ready"
    return proc, lines


def printed_ids(text: str) -> list[str]:
    return [line for line in text.splitlines() if UUID_LINE.fullmatch(line)]


# -- (1) kill -9 in the middle of a burst -------------------------------------------------------

TRIALS = 6


def test_sigkill_mid_burst_loses_nothing_acknowledged(tmp_path: Path) -> None:
    rng = random.Random(20240611)
    store_dir = tmp_path / "store"
    acknowledged: list[str] = []
    torn_seen = simulated = rebuilt = 0
    for trial in range(TRIALS):
        batch = rng.choice([1, 1, 4])
        proc, lines = start_writer(store_dir, f"trial{trial}", 100_000, batch)
        want = rng.randint(1, 150)
        got = [lines.readline() for _ in range(want)]
        time.sleep(rng.random() * 0.01)  # land anywhere in the next add: lines, vectors, index
        os.kill(proc.pid, signal.SIGKILL)
        rest = lines.rest()  # ids read ahead count too: every one was acknowledged
        proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        acknowledged += printed_ids("\n".join(got) + "\n" + rest)
        simulate = rng.random() < 0.5
        if simulate:
            # A kill inside write() on a file system that tears writes leaves a partial line;
            # Linux completes the write, so simulate what such a crash leaves behind.
            lines = (store_dir / "segments.jsonl").read_bytes().splitlines()
            cut = lines[-1][: rng.randint(1, len(lines[-1]) - 1)]
            with open(store_dir / "segments.jsonl", "ab") as handle:
                handle.write(cut)
            simulated += 1
        store = RawStore(store_dir, embedder=HashEmbedder(), eviction_days=None)
        stats = store.stats()  # reopening never raises
        torn_seen += stats["torn_lines"]
        rebuilt += stats["vectors_rebuilt"] is not None  # killed between lines and vectors
        assert stats["torn_lines"] == 1 if simulate else stats["torn_lines"] in (0, 1)
        missing = [i for i in acknowledged if store.key_of(i) is None]
        assert not missing, f"trial {trial}: {len(missing)} acknowledged segments lost"
        # The store still works after the crash: search and a new append.
        assert store.bm25.top_k(tokenize("schema migration"), 3)
        assert store.add(f"trial{trial}", "user", f"after kill {trial}") is not None
        store.close()
    final = RawStore(store_dir, embedder=HashEmbedder(), eviction_days=None)
    assert all(final.key_of(i) is not None for i in acknowledged)
    assert len(acknowledged) >= TRIALS and torn_seen >= simulated
    print(
        f"kill -9: {TRIALS} trials, {len(acknowledged)} acknowledged ids all present, "
        f"{torn_seen} torn lines skipped ({simulated} simulated), vectors rebuilt {rebuilt}x"
    )


# -- (2) concurrent writer processes -----------------------------------------------------------


def test_four_processes_append_at_once(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    writers = [start_writer(store_dir, f"p{n}", 200, 1, wait=True) for n in range(4)]
    # Released together once all four are ready: a real race however slow each start was.
    for proc, _ in writers:
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
    outputs = [lines.rest() for _, lines in writers]
    for proc, _ in writers:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    ids = [i for out in outputs for i in printed_ids(out)]
    assert len(ids) == 800
    raw = (store_dir / "segments.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    lines = raw.split(b"\n")[:-1]
    assert len(lines) == 800  # nothing lost, nothing extra
    records = [decode_record(line) for line in lines]  # every line parses: none interleaved
    assert sorted(r.id for r in records) == sorted(ids)
    assert {r.session_id for r in records} == {"p0", "p1", "p2", "p3"}
    per_session = [
        sorted(int(r.content.split()[2][:-1]) for r in records if r.session_id == s)
        for s in ("p0", "p1", "p2", "p3")
    ]
    assert per_session == [list(range(200))] * 4
    vec_ids, _ = read_vmem(store_dir / "vectors.bin", 384)
    assert sorted(map(str, vec_ids)) == sorted(ids)  # vector appends were serialised too
    counting = CountingEmbedder()
    store = RawStore(store_dir, embedder=counting, eviction_days=None)
    assert len(store) == 800 and counting.calls == 0
    assert store.stats()["vectors_rebuilt"] is None


# -- (3) disk full, permission denied, read-only file system -----------------------------------


def _snapshot(store: RawStore, root: Path) -> tuple[Any, ...]:
    files = {p.name: p.read_bytes() for p in root.iterdir() if p.suffix in (".jsonl", ".bin")}
    hits = store.bm25.top_k(tokenize("cache latency"), 5)
    return len(store), len(store.vectors), len(store.bm25), hits, files


def _prepared_store(root: Path) -> RawStore:
    store = RawStore(root, embedder=HashEmbedder(), eviction_days=None)
    for i in range(5):
        store.add("s1", "user", f"note {i}: cache latency went up after the deploy")
    return store


def _fail_write(code: int, partial: bool) -> Callable[[int, bytes], int]:
    real = os.write

    def write(fd: int, data: bytes) -> int:
        if partial:  # the disk fills up in the middle of the line
            return real(fd, data[: len(data) // 2])
        raise OSError(code, os.strerror(code))

    return write


@pytest.mark.parametrize(
    ("code", "partial"),
    [(errno.ENOSPC, False), (errno.ENOSPC, True), (errno.EACCES, False), (errno.EROFS, False)],
)
def test_failed_segment_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, partial: bool
) -> None:
    store = _prepared_store(tmp_path)
    before = _snapshot(store, tmp_path)
    with monkeypatch.context() as patch:
        patch.setattr(os, "write", _fail_write(code, partial))
        with pytest.raises(StoreError) as info:
            store.add("s1", "user", "cache latency is fine again")
    message = str(info.value)
    assert f"cannot append to {tmp_path / 'segments.jsonl'}: " in message
    assert "; the segment was not stored; " in message  # then the fix
    assert message.endswith(FIXES[code])
    assert (os.strerror(code) if not partial else "short write") in message
    assert _snapshot(store, tmp_path) == before  # memory and files as before
    store.close()
    assert (
        _snapshot(RawStore(tmp_path, embedder=HashEmbedder(), eviction_days=None), tmp_path)
        == before
    )


def test_failed_vector_append_rolls_the_line_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _prepared_store(tmp_path)
    before = _snapshot(store, tmp_path)

    def full(*_args: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patch:
        patch.setattr(vectors_module, "append_vmem", full)
        with pytest.raises(
            StoreError,
            match=r"vectors\.bin: No space left on device; none of the 2 segments was stored",
        ):
            store.add_many([("s1", "user", "x cache"), ("s1", "user", "y cache")])
    assert _snapshot(store, tmp_path) == before
    assert store.add("s1", "user", "works again after space is freed") is not None
    store.close()
    again = RawStore(tmp_path, embedder=HashEmbedder(), eviction_days=None)
    assert len(again) == 6 and again.stats()["vectors_rebuilt"] is None


def _deny_segment_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.open

    def fake_open(path: Any, flags: int, *args: Any, **kw: Any) -> int:
        if str(path).endswith(("segments.jsonl", ".lock")) and flags & (os.O_WRONLY | os.O_RDWR):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real(path, flags, *args, **kw)

    monkeypatch.setattr(os, "open", fake_open)


def _permissions_enforced(tmp_path: Path) -> bool:
    """False as root with CAP_DAC_OVERRIDE, which writes to read-only files anyway."""
    probe = tmp_path / "probe"
    probe.write_text("")
    probe.chmod(0o400)
    try:
        with open(probe, "a"):
            return False
    except PermissionError:
        return True
    finally:
        probe.unlink()


@pytest.mark.parametrize("how", ["chmod", "monkeypatch"])
def test_permission_denied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    if how == "chmod" and not _permissions_enforced(tmp_path):
        pytest.skip("running as root (file permissions ignored); the monkeypatch variant runs")
    store = _prepared_store(tmp_path)
    store.close()
    before = (tmp_path / "segments.jsonl").read_bytes()
    store = RawStore(tmp_path, embedder=HashEmbedder(), eviction_days=None).open()
    snapshot = _snapshot(store, tmp_path)
    if how == "chmod":
        (tmp_path / "segments.jsonl").chmod(0o400)
        (tmp_path / "segments.jsonl.lock").chmod(0o400)
    else:
        _deny_segment_writes(monkeypatch)
    try:
        with pytest.raises(StoreError, match=r"cannot append to .*Permission denied.*not stored"):
            store.add("s1", "user", "denied")
        assert _snapshot(store, tmp_path) == snapshot
    finally:
        (tmp_path / "segments.jsonl").chmod(0o600)
        (tmp_path / "segments.jsonl.lock").chmod(0o644)
    assert (tmp_path / "segments.jsonl").read_bytes() == before


def test_read_only_directory_still_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _prepared_store(tmp_path)
    store.close()
    (tmp_path / "vectors.bin").unlink()  # a rebuild that cannot be written back
    _deny_segment_writes(monkeypatch)
    monkeypatch.setattr(vectors_module, "write_vmem", _raise_erofs)
    again = RawStore(tmp_path, embedder=HashEmbedder(), eviction_days=None)
    assert len(again) == 5 and again.stats()["vectors_rebuilt"] == "the file is missing"
    assert again.bm25.top_k(tokenize("cache"), 1)


def _raise_erofs(*_args: Any) -> None:
    raise OSError(errno.EROFS, os.strerror(errno.EROFS))


def test_store_error_json_lines_stay_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _prepared_store(tmp_path)
    with monkeypatch.context() as patch:
        patch.setattr(os, "write", _fail_write(errno.ENOSPC, True))
        for _ in range(3):
            with pytest.raises(StoreError):
                store.add("s1", "user", "half written")
    assert store.add("s1", "user", "whole") is not None
    for line in (tmp_path / "segments.jsonl").read_bytes().splitlines():
        json.loads(line)


# -- something else in place of a store file -------------------------------------------------


def _done_within(seconds: float, work: Callable[[], Any], unblock: Path | None = None) -> Any:
    """Run ``work`` in a thread and fail if it does not finish in time (a FIFO opened for
    reading without O_NONBLOCK waits for a writer forever; ``unblock`` is then opened for
    writing so that the thread can end)."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = work()
        except BaseException as exc:  # handed to the test
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if unblock is not None:
            fd = os.open(unblock, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        thread.join(5)
        raise AssertionError(f"blocked for over {seconds}s")
    if "error" in out:
        raise out["error"]
    return out.get("value")


def _files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_something_else_in_place_of_segments_jsonl(tmp_path: Path, kind: str) -> None:
    store = _prepared_store(tmp_path)
    store.close()
    seg = tmp_path / "segments.jsonl"
    seg.rename(tmp_path / "segments.moved")
    if kind == "directory":
        seg.mkdir()
        (seg / "keep.txt").write_text("someone's file")
    else:
        os.mkfifo(seg)
    before = _files(tmp_path)

    def attempt(action: Callable[[RawStore], Any]) -> StoreError:
        fresh = RawStore(tmp_path, embedder=HashEmbedder(), eviction_days=None)
        with pytest.raises(StoreError) as info:
            _done_within(10, lambda: action(fresh), seg if kind == "fifo" else None)
        return info.value

    for action in (
        lambda s: s.open(),
        len,
        lambda s: s.add("s1", "user", "a new note"),
        lambda s: s.stats(),
    ):
        message = str(attempt(action))
        assert str(seg) in message, message
        assert ("a directory" if kind == "directory" else "a FIFO (named pipe)") in message
        assert "move it away" in message  # the fix
    assert _files(tmp_path) == before  # nothing written, nothing truncated
    if kind == "directory":
        assert (seg / "keep.txt").read_text() == "someone's file"
        shutil.rmtree(seg)
    else:
        assert stat.S_ISFIFO(os.stat(seg).st_mode)
        seg.unlink()
    (tmp_path / "segments.moved").rename(seg)
    again = RawStore(tmp_path, embedder=HashEmbedder(), eviction_days=None)
    assert len(again) == 5 and again.stats()["vectors_rebuilt"] is None


def test_a_fifo_in_place_of_the_caches_never_blocks(tmp_path: Path) -> None:
    store = _prepared_store(tmp_path)
    store.close()
    for name in ("bm25.cache", "vectors.meta.json", "vectors.bin"):
        path = tmp_path / name
        if path.exists():
            path.unlink()
        os.mkfifo(path)
    again = _done_within(
        10,
        lambda: RawStore(tmp_path, embedder=HashEmbedder(), eviction_days=None).open(),
        tmp_path / "vectors.bin",
    )
    assert len(again) == 5 and again.bm25.top_k(tokenize("cache"), 1)
    assert again.add("s1", "user", "still works") is not None


def test_a_directory_in_place_of_vectors_bin(tmp_path: Path) -> None:
    store = _prepared_store(tmp_path)
    store.close()
    (tmp_path / "vectors.bin").unlink()
    (tmp_path / "vectors.bin").mkdir()
    again = RawStore(tmp_path, embedder=HashEmbedder(), eviction_days=None)
    assert len(again) == 5  # reads work: the vectors are rebuilt in memory
    with pytest.raises(StoreError) as info:
        again.add("s1", "user", "cannot get a vector file")
    message = str(info.value)
    assert f"cannot append to {tmp_path / 'vectors.bin'}: " in message
    assert "Is a directory" in message and "move or rename that directory away" in message
    assert len(again) == 5 and (tmp_path / "vectors.bin").is_dir()


def test_a_directory_in_place_of_the_lock_file(tmp_path: Path) -> None:
    store = _prepared_store(tmp_path)
    store.close()
    (tmp_path / "segments.jsonl.lock").unlink()
    (tmp_path / "segments.jsonl.lock").mkdir()
    again = RawStore(tmp_path, embedder=HashEmbedder(), eviction_days=None)
    assert len(again) == 5  # read without the lock, as on a read-only disk
    with pytest.raises(StoreError, match=r"segments\.jsonl\.lock.*move or rename"):
        again.add("s1", "user", "no lock, no write")


@pytest.mark.parametrize(
    "code", [errno.EACCES, errno.ENOSPC, errno.EROFS, errno.EIO, errno.EMFILE, errno.EDQUOT]
)
def test_every_os_error_names_the_path_the_problem_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    store = _prepared_store(tmp_path)
    store.close()
    before = _files(tmp_path)
    real = os.open

    def failing(path: Any, flags: int, *args: Any, **kw: Any) -> int:
        if str(path).endswith("segments.jsonl"):
            raise OSError(code, os.strerror(code), str(path))
        return real(path, flags, *args, **kw)

    monkeypatch.setattr(os, "open", failing)
    with pytest.raises(StoreError) as info:
        RawStore(tmp_path, embedder=HashEmbedder(), eviction_days=None).open()
    message = str(info.value)
    path = tmp_path / "segments.jsonl"
    assert message.startswith(f"cannot read {path}: {os.strerror(code)}")
    problem, fix = problem_and_fix(OSError(code, os.strerror(code)))
    assert message == f"cannot read {path}: {problem}; {fix}"
    assert fix != "check the file, its directory and the disk"  # a fix of its own
    monkeypatch.undo()
    assert _files(tmp_path) == before


def test_a_store_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a store")
    with pytest.raises(StoreError, match=r"is a file, not a directory; pass a directory"):
        RawStore(tmp_path / "file", embedder=HashEmbedder())
    with pytest.raises(StoreError, match="Not a directory"):
        RawStore(tmp_path / "file" / "below", embedder=HashEmbedder())
    assert (tmp_path / "file").read_text() == "not a store"

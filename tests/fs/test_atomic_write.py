"""The one atomic write (:mod:`memctx.fs.atomic`): the whole new content or the old one,
never a mix, never a temporary file left behind, the mode asked for, and many writers at once
leaving one whole file."""

from __future__ import annotations

import os
import re
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.fs.atomic import atomic_write, fsync_dir, write_new_file
from tests.strategies import examples

TEMP_NAME = re.compile(r"^\.(?P<name>.+)\.[0-9a-f]{16}\.tmp$")


class Interrupted(Exception):
    """What a content generator raises half-way through (a disk error, a bug, a signal)."""


def chunks_then_fail(chunks: list[bytes], fail_at: int) -> Iterator[bytes]:
    for n, chunk in enumerate(chunks):
        if n == fail_at:
            raise Interrupted(f"chunk {n}")
        yield chunk


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_bytes_and_chunks_replace_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(b"x" * 10_000)  # longer than the new content: nothing of it may remain
    atomic_write(path, b'{"a": 1}\n')
    assert path.read_bytes() == b'{"a": 1}\n'
    chunks = [b"line %d\n" % i for i in range(50_000)]  # past the 1 MiB buffer
    atomic_write(path, iter(chunks))
    assert path.read_bytes() == b"".join(chunks)
    atomic_write(path, [])
    assert path.read_bytes() == b""
    atomic_write(path, bytearray(b"ba") + memoryview(b"mv"))
    assert path.read_bytes() == b"bamv"
    assert names(tmp_path) == ["state.json"]


def test_a_failing_chunk_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "segments.jsonl"
    path.write_bytes(b"old\n")
    with pytest.raises(Interrupted, match="chunk 2"):
        atomic_write(path, chunks_then_fail([b"a\n"] * 5, 2))
    assert path.read_bytes() == b"old\n"
    assert names(tmp_path) == ["segments.jsonl"]
    with pytest.raises(Interrupted):  # no old file: none appears
        atomic_write(tmp_path / "new.bin", chunks_then_fail([b"a"], 0))
    assert names(tmp_path) == ["segments.jsonl"]


def test_a_failing_rename_keeps_the_old_file_and_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "knowledge.jsonl"
    path.write_bytes(b"old\n")
    renamed: list[tuple[str, str]] = []

    def disk_full(src: Any, dst: Any) -> None:
        renamed.append((os.fspath(src), os.fspath(dst)))
        assert Path(src).read_bytes() == b"new\n"  # the temporary file was complete
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    with pytest.raises(OSError, match="No space left"):
        atomic_write(path, b"new\n")
    assert path.read_bytes() == b"old\n"
    assert names(tmp_path) == ["knowledge.jsonl"]
    # One naming scheme: .<name>.<16 hex digits>.tmp, in the target's directory.
    ((src, dst),) = renamed
    assert Path(src).parent == tmp_path and dst == os.fspath(path)
    match = TEMP_NAME.match(Path(src).name)
    assert match is not None and match["name"] == "knowledge.jsonl"


def test_before_replace_sees_the_complete_temp_and_can_stop_the_write(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"old\n")
    seen: list[list[str]] = []

    def changed_meanwhile() -> None:
        seen.append(names(tmp_path))
        temps = [p for p in tmp_path.iterdir() if TEMP_NAME.match(p.name)]
        assert [p.read_bytes() for p in temps] == [b"new\n"]
        raise ValueError("the file changed while it was written")

    with pytest.raises(ValueError, match="changed"):
        atomic_write(path, b"new\n", before_replace=changed_meanwhile)
    assert len(seen) == 1 and len(seen[0]) == 2
    assert path.read_bytes() == b"old\n"
    assert names(tmp_path) == ["t.jsonl"]
    atomic_write(path, b"new\n", before_replace=lambda: None)
    assert path.read_bytes() == b"new\n"


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644, 0o400])
def test_the_mode_is_exactly_the_one_asked_for(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"old")
    path.chmod(0o666)
    old_umask = os.umask(0o077)  # not filtered by the umask: every writer gives one mode
    try:
        atomic_write(path, b"new", mode=mode)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert path.read_bytes() == b"new"
    atomic_write(tmp_path / "g", b"new")
    assert stat.S_IMODE((tmp_path / "g").stat().st_mode) == 0o600  # private by default


@pytest.mark.parametrize("mode", [-1, 0o10000, True, "0o600", 1.5])
def test_a_bad_mode_is_refused_before_anything_is_written(tmp_path: Path, mode: Any) -> None:
    with pytest.raises(ValueError, match="mode must be a permission mask"):
        atomic_write(tmp_path / "f", b"x", mode=mode)
    assert names(tmp_path) == []


def test_fsync_before_the_rename_and_the_directory_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append("fsync dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "fsync file")
        real_fsync(fd)

    def replace(src: Any, dst: Any) -> None:
        events.append("replace")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    atomic_write(tmp_path / "a", b"x")
    assert events == ["fsync file", "replace"]
    events.clear()
    atomic_write(tmp_path / "a", b"x", sync_dir=True)
    assert events == ["fsync file", "replace", "fsync dir"]
    events.clear()
    atomic_write(tmp_path / "a", b"x", fsync=False)  # a cache: its loss costs only time
    assert events == ["replace"]
    events.clear()
    fsync_dir(tmp_path / "missing")  # best effort: nothing to open, nothing raised
    assert events == []


def test_a_long_name_gets_a_temporary_name_the_file_system_takes(tmp_path: Path) -> None:
    path = tmp_path / ("n" * 250)
    atomic_write(path, b"x")
    assert path.read_bytes() == b"x"
    assert names(tmp_path) == [path.name]


def test_concurrent_writers_leave_one_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.bin"
    writers, rounds = 4, 40
    contents = [bytes([65 + w]) * (64 * 1024 + w) for w in range(writers)]
    atomic_write(path, contents[0])
    start = threading.Barrier(writers + 1)
    done = threading.Event()
    errors: list[BaseException] = []
    seen: set[bytes] = set()

    def write(content: bytes) -> None:
        try:
            start.wait()
            for _ in range(rounds):
                atomic_write(path, [content[:1000], content[1000:]], fsync=False)
        except BaseException as exc:
            errors.append(exc)

    def read() -> None:
        start.wait()
        while not done.is_set():
            seen.add(path.read_bytes())

    threads = [threading.Thread(target=write, args=(c,)) for c in contents]
    reader = threading.Thread(target=read)
    for thread in [*threads, reader]:
        thread.start()
    for thread in threads:
        thread.join(60)
    done.set()
    reader.join(60)
    assert not errors
    assert seen <= set(contents)  # every read saw one writer's whole content
    assert path.read_bytes() in contents
    assert names(tmp_path) == ["shared.bin"]


@settings(max_examples=examples(100))
@given(
    old=st.none() | st.binary(max_size=64),
    chunks=st.lists(st.binary(max_size=64), max_size=8),
    fail_at=st.none() | st.integers(0, 8),
)
def test_the_file_is_the_old_content_or_the_whole_new_one(
    old: bytes | None, chunks: list[bytes], fail_at: int | None
) -> None:
    with tempfile.TemporaryDirectory() as where:
        path = Path(where) / "f"
        if old is not None:
            path.write_bytes(old)
        fails = fail_at is not None and fail_at < len(chunks)
        try:
            atomic_write(path, chunks_then_fail(chunks, -1 if fail_at is None else fail_at))
        except Interrupted:
            assert fails
        if fails:
            assert (path.read_bytes() if path.exists() else None) == old
        else:
            assert path.read_bytes() == b"".join(chunks)
        assert names(Path(where)) == ([] if fails and old is None else ["f"])


# -- write_new_file: a file that must never replace another ---------------------------------


def backups(path: Path) -> Iterator[Path]:
    yield path.with_name(path.name + ".bak")
    for n in range(1, 5):
        yield path.with_name(f"{path.name}.bak.{n}")


def test_write_new_file_takes_the_first_free_name_and_never_replaces(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    first = write_new_file(backups(path), b"one", mode=0o640)
    second = write_new_file(backups(path), b"two")
    assert (first.name, second.name) == ("t.jsonl.bak", "t.jsonl.bak.1")
    assert first.read_bytes() == b"one" and second.read_bytes() == b"two"
    assert stat.S_IMODE(first.stat().st_mode) == 0o640
    (tmp_path / "t.jsonl.bak.2").symlink_to(tmp_path / "elsewhere")  # taken, even dangling
    assert write_new_file(backups(path), b"three").name == "t.jsonl.bak.3"
    assert not (tmp_path / "elsewhere").exists()
    write_new_file(backups(path), b"four")
    with pytest.raises(FileExistsError, match="every candidate name is taken"):
        write_new_file(backups(path), b"five")
    assert sorted(p.read_bytes() for p in tmp_path.glob("t.jsonl.bak*") if p.exists()) == [
        b"four",
        b"one",
        b"three",
        b"two",
    ]
    assert not [p for p in tmp_path.iterdir() if TEMP_NAME.match(p.name)]


def test_write_new_file_without_hard_links_still_skips_taken_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(src: Any, dst: Any) -> None:
        raise OSError(1, "Operation not permitted")  # what a FAT or SMB mount answers

    path = tmp_path / "t.jsonl"
    (tmp_path / "t.jsonl.bak").write_bytes(b"kept")
    monkeypatch.setattr(os, "link", no_links)
    assert write_new_file(backups(path), b"new").name == "t.jsonl.bak.1"
    assert (tmp_path / "t.jsonl.bak").read_bytes() == b"kept"
    assert (tmp_path / "t.jsonl.bak.1").read_bytes() == b"new"
    assert names(tmp_path) == ["t.jsonl.bak", "t.jsonl.bak.1"]


def test_write_new_file_refuses_bad_candidates_and_cleans_up(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one candidate"):
        write_new_file([], b"x")
    (tmp_path / "a").write_bytes(b"taken")
    other = tmp_path / "sub"
    other.mkdir()
    with pytest.raises(ValueError, match="not in"):
        write_new_file([tmp_path / "a", other / "b"], b"x")
    with pytest.raises(Interrupted):
        write_new_file([tmp_path / "c"], chunks_then_fail([b"x"], 0))
    assert names(tmp_path) == ["a", "sub"] and names(other) == []

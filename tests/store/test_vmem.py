"""VMEM v1 vector files: layout, round trips, appends, and every kind of damage detected."""

from __future__ import annotations

import os
import struct
import uuid
from pathlib import Path

import numpy as np
import pytest

from memctx.errors import StoreError, VmemError
from memctx.store.vmem import (
    append_vmem,
    bad_vector_rows,
    iter_vmem,
    iter_vmem_raw,
    read_vmem,
    vmem_entry_size,
    vmem_status,
    write_vmem,
)

DIM = 8


def _data(n: int, dim: int = DIM, seed: int = 0) -> tuple[list[uuid.UUID], np.ndarray]:
    rng = np.random.default_rng(seed)
    ids = [uuid.UUID(int=int(rng.integers(0, 2**62)) << 64 | i) for i in range(n)]
    return ids, rng.standard_normal((n, dim)).astype(np.float32)


def test_byte_layout_matches_the_specification(tmp_path: Path) -> None:
    path = tmp_path / "vectors.bin"
    ids, vecs = _data(2)
    write_vmem(path, ids, vecs)
    raw = path.read_bytes()
    assert raw[:16] == struct.pack("<4sIII", b"VMEM", 1, DIM, 2)
    assert raw[:4] == b"VMEM"
    expected = b"".join(
        i.bytes + struct.pack(f"<{DIM}f", *row.tolist()) for i, row in zip(ids, vecs, strict=True)
    )
    assert raw[16:] == expected
    assert len(raw) == 16 + 2 * vmem_entry_size(DIM) == 16 + 2 * (16 + 4 * DIM)


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "vectors.bin"
    ids, vecs = _data(50)
    write_vmem(path, ids, vecs)
    got_ids, got = read_vmem(path, DIM)
    assert got_ids == ids
    assert got.dtype == np.float32 and got.flags.c_contiguous and got.flags.writeable
    np.testing.assert_array_equal(got, vecs)
    assert vmem_status(path, DIM) is None


def test_empty_file_round_trip_and_no_temp_files_left(tmp_path: Path) -> None:
    path = tmp_path / "vectors.bin"
    write_vmem(path, [], np.zeros((0, DIM), np.float32))
    ids, vecs = read_vmem(path, DIM)
    assert ids == [] and vecs.shape == (0, DIM)
    write_vmem(path, *_data(3))  # overwrite in place
    assert [p.name for p in tmp_path.iterdir()] == ["vectors.bin"]


def test_append_creates_then_extends(tmp_path: Path) -> None:
    path = tmp_path / "vectors.bin"
    ids, vecs = _data(10)
    append_vmem(path, ids[:4], vecs[:4])
    append_vmem(path, ids[4:], vecs[4:])
    append_vmem(path, [], np.zeros((0, DIM), np.float32))
    got_ids, got = read_vmem(path, DIM)
    assert got_ids == ids
    np.testing.assert_array_equal(got, vecs)
    assert path.read_bytes()[12:16] == struct.pack("<I", 10)


def test_append_refuses_a_damaged_or_foreign_file(tmp_path: Path) -> None:
    path = tmp_path / "vectors.bin"
    write_vmem(path, *_data(2))
    with pytest.raises(VmemError, match="dimension mismatch"):
        append_vmem(path, *_data(1, dim=DIM + 1))
    with path.open("ab") as handle:
        handle.write(b"\x00" * 5)
    with pytest.raises(VmemError, match="extra bytes"):
        append_vmem(path, *_data(1))


def test_crash_between_entries_and_count_is_detected(tmp_path: Path) -> None:
    # What append_vmem leaves if the process dies after writing entries, before the count.
    path = tmp_path / "vectors.bin"
    ids, vecs = _data(3)
    write_vmem(path, ids[:2], vecs[:2])
    with path.open("ab") as handle:
        handle.write(ids[2].bytes + vecs[2].tobytes())
    with pytest.raises(VmemError, match=r"extra bytes.*says 2 entries.*3 whole entries \+ 0"):
        read_vmem(path, DIM)


def _corrupt(tmp_path: Path, raw: bytes) -> Path:
    path = tmp_path / "bad.bin"
    path.write_bytes(raw)
    return path


def _valid_bytes(n: int = 2) -> bytes:
    ids, vecs = _data(n)
    body = b"".join(i.bytes + v.astype("<f4").tobytes() for i, v in zip(ids, vecs, strict=True))
    return struct.pack("<4sIII", b"VMEM", 1, DIM, n) + body


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"", r"truncated header: the file has 0 bytes"),
        (b"VMEM\x01\x00", r"truncated header: the file has 6 bytes"),
        (b"VMEX" + _valid_bytes()[4:], r"wrong magic b'VMEX'"),
        (struct.pack("<4sIII", b"VMEM", 2, DIM, 0), r"unsupported VMEM version 2"),
        (
            struct.pack("<4sIII", b"VMEM", 1, DIM * 2, 0),
            rf"file holds {DIM * 2}-dim.*expected {DIM}",
        ),
        (_valid_bytes()[:-7], r"file too short: the header says 2 entries"),
        (_valid_bytes() + b"\x00", r"extra bytes after the last entry"),
        (struct.pack("<4sIII", b"VMEM", 1, DIM, 5) + _valid_bytes()[16:], r"too short.*says 5"),
    ],
    ids=["empty", "short-header", "magic", "version", "dim", "torn", "extra", "count"],
)
def test_each_corruption_is_detected_with_its_reason(
    tmp_path: Path, raw: bytes, reason: str
) -> None:
    path = _corrupt(tmp_path, raw)
    with pytest.raises(VmemError, match=reason) as info:
        read_vmem(path, DIM)
    assert str(path) in str(info.value)
    assert isinstance(info.value, StoreError)
    status = vmem_status(path, DIM)
    assert status is not None and status == str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "none.bin"
    with pytest.raises(VmemError, match="cannot read"):
        read_vmem(path, DIM)
    assert vmem_status(path, DIM) is not None


def test_bad_arguments(tmp_path: Path) -> None:
    ids, vecs = _data(3)
    with pytest.raises(ValueError, match="3 ids for 2 vectors"):
        write_vmem(tmp_path / "v.bin", ids, vecs[:2])
    with pytest.raises(ValueError, match="2-D"):
        write_vmem(tmp_path / "v.bin", ids[:1], vecs[0])
    with pytest.raises(TypeError):
        write_vmem(tmp_path / "v.bin", [str(i) for i in ids], vecs)  # type: ignore[misc]
    with pytest.raises(ValueError, match="dim"):
        read_vmem(tmp_path / "v.bin", 0)


def test_reading_20000_by_384(tmp_path: Path) -> None:
    # Its speed (under 0.5 s) is a goal of `make bench`, not a test.
    path = tmp_path / "vectors.bin"
    ids, vecs = _data(20_000, dim=384)
    write_vmem(path, ids, vecs)
    got_ids, got = read_vmem(path, 384)
    assert got_ids == ids and got.shape == (20_000, 384)
    np.testing.assert_array_equal(got, vecs)


def test_iter_vmem_streams_the_same_entries_in_chunks(tmp_path: Path) -> None:
    path = tmp_path / "vectors.bin"
    ids, vecs = _data(10)
    write_vmem(path, ids, vecs)
    for chunk in (1, 3, 10, 64):
        parts = list(iter_vmem(path, DIM, chunk=chunk))
        assert [len(i) for i, _ in parts] == [min(chunk, 10 - s) for s in range(0, 10, chunk)]
        assert [u for i, _ in parts for u in i] == ids
        np.testing.assert_array_equal(np.concatenate([m for _, m in parts]), vecs)
        assert all(m.flags.c_contiguous and m.dtype == np.float32 for _, m in parts)
    write_vmem(path, [], np.zeros((0, DIM), np.float32))
    assert list(iter_vmem(path, DIM)) == []
    with pytest.raises(ValueError):
        list(iter_vmem(path, DIM, chunk=0))


def test_iter_vmem_raw_gives_the_id_bytes_of_the_same_chunks(tmp_path: Path) -> None:
    path = tmp_path / "vectors.bin"
    ids, vecs = _data(10)
    write_vmem(path, ids, vecs)
    for chunk in (1, 4, 64):
        raw = list(iter_vmem_raw(path, DIM, chunk=chunk))
        uuids = list(iter_vmem(path, DIM, chunk=chunk))
        assert [r for r, _ in raw] == [b"".join(u.bytes for u in i) for i, _ in uuids]
        for (_, got), (_, want) in zip(raw, uuids, strict=True):
            np.testing.assert_array_equal(got, want)
    with pytest.raises(VmemError, match="extra bytes"):
        next(iter_vmem_raw(_corrupt(tmp_path, _valid_bytes(3) + b"\x00"), DIM))
    with pytest.raises(ValueError):
        list(iter_vmem_raw(path, DIM, chunk=0))


def test_iter_vmem_checks_the_whole_file_before_the_first_chunk(tmp_path: Path) -> None:
    path = _corrupt(tmp_path, _valid_bytes(3) + b"\x00")
    with pytest.raises(VmemError, match="extra bytes"):
        next(iter_vmem(path, DIM, chunk=1))
    with pytest.raises(VmemError, match="cannot read"):
        next(iter_vmem(tmp_path / "missing.bin", DIM))


def test_raw_id_bytes_write_the_same_file_as_uuids(tmp_path: Path) -> None:
    ids, vecs = _data(5)
    raw = b"".join(i.bytes for i in ids)
    write_vmem(tmp_path / "a.bin", ids, vecs)
    write_vmem(tmp_path / "b.bin", raw, vecs)
    append_vmem(tmp_path / "a.bin", ids[:2], vecs[:2])
    append_vmem(tmp_path / "b.bin", raw[:32], vecs[:2])
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes()
    with pytest.raises(ValueError, match="16 bytes each"):
        write_vmem(tmp_path / "c.bin", raw[:-1], vecs)
    with pytest.raises(ValueError, match="4 ids for 5 vectors"):
        write_vmem(tmp_path / "c.bin", raw[:-16], vecs)


def test_append_fsyncs_only_when_durable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids, vecs = _data(6)
    synced: list[int] = []
    for durable, name in ((True, "d.bin"), (False, "n.bin")):
        write_vmem(tmp_path / name, ids[:2], vecs[:2])
        synced.clear()
        with monkeypatch.context() as patch:
            patch.setattr(os, "fsync", synced.append)
            append_vmem(tmp_path / name, ids[2:4], vecs[2:4], durable)
            append_vmem(tmp_path / name, ids[4:], vecs[4:], durable=durable)
        assert len(synced) == (4 if durable else 0)  # entries, then the count, per append
    assert (tmp_path / "d.bin").read_bytes() == (tmp_path / "n.bin").read_bytes()
    assert read_vmem(tmp_path / "n.bin", DIM)[0] == ids


# -- unusable values: detected like the structural faults ------------------------------------


def _with_value(value: float | None, entry: int = 1, n: int = 3) -> bytes:
    """A valid file whose vector ``entry`` gets ``value`` in its component 2 (``None``: the
    whole vector zeroed), header and length left valid."""
    raw = bytearray(_valid_bytes(n))
    start = 16 + entry * vmem_entry_size(DIM) + 16
    if value is None:
        raw[start : start + 4 * DIM] = bytes(4 * DIM)
    else:
        raw[start + 8 : start + 12] = struct.pack("<f", value)
    return bytes(raw)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (float("nan"), r"entry 1 of 3 is not a usable vector: it holds NaN"),
        (float("inf"), r"entry 1 of 3 is not a usable vector: it holds an infinite value"),
        (float("-inf"), r"entry 1 of 3 .*infinite"),
        (None, r"entry 1 of 3 .*all zeros"),
        (3e37, r"entry 1 of 3 .*norm 3e\+37 is absurd"),
    ],
    ids=["nan", "inf", "-inf", "zeros", "absurd-norm"],
)
def test_each_unusable_value_is_detected_with_its_reason(
    tmp_path: Path, value: float | None, reason: str
) -> None:
    path = _corrupt(tmp_path, _with_value(value))
    with pytest.raises(VmemError, match=reason) as info:
        read_vmem(path, DIM)
    assert str(path) in str(info.value)
    status = vmem_status(path, DIM)
    assert status is not None and status == str(info.value)
    assert vmem_status(path, DIM, values=False) is None  # the structure itself is sound
    with pytest.raises(VmemError, match=reason):
        list(iter_vmem(path, DIM, chunk=1))
    # The raw reader hands every row on: a reader that can spare one sets it aside itself.
    rows = np.vstack([m for _, m in iter_vmem_raw(path, DIM)])
    assert bad_vector_rows(rows).tolist() == [False, True, False]


def test_bad_vector_rows_flags_every_unusable_row() -> None:
    rows = np.ones((7, DIM), np.float32)
    rows[1, 0] = np.nan
    rows[2, 3] = np.inf
    rows[3, 5] = -np.inf
    rows[4] = 0.0
    rows[5, 1] = 2e38  # its square overflows float32
    rows[6] = 1e-8  # a norm under MIN_NORM
    assert bad_vector_rows(rows).tolist() == [False] + [True] * 6
    assert not bad_vector_rows(np.zeros((0, DIM), np.float32)).size


def test_writers_refuse_non_finite_vectors(tmp_path: Path) -> None:
    ids, vecs = _data(3)
    vecs[1, 2] = np.nan
    with pytest.raises(ValueError, match="finite"):
        write_vmem(tmp_path / "v.bin", ids, vecs)
    assert not (tmp_path / "v.bin").exists()
    write_vmem(tmp_path / "v.bin", ids[:1], vecs[:1])
    before = (tmp_path / "v.bin").read_bytes()
    with pytest.raises(ValueError, match="finite"):
        append_vmem(tmp_path / "v.bin", ids[1:], vecs[1:])
    assert (tmp_path / "v.bin").read_bytes() == before


def test_a_fifo_or_directory_in_place_of_the_file_is_refused_without_blocking(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "fifo.bin"
    os.mkfifo(fifo)
    folder = tmp_path / "dir.bin"
    folder.mkdir()
    for path in (fifo, folder):
        # Opening a FIFO for reading without O_NONBLOCK waits for a writer forever.
        with pytest.raises(VmemError, match="not a regular file"):
            read_vmem(path, DIM)
        status = vmem_status(path, DIM)
        assert status is not None and "not a regular file" in status
    ids, vecs = _data(1)
    with pytest.raises(VmemError, match="not a regular file"):
        append_vmem(fifo, ids, vecs)  # O_RDWR would not block, but it is no VMEM file
    with pytest.raises(IsADirectoryError):
        append_vmem(folder, ids, vecs)  # an OSError, as any failed write (the store says why)
    assert fifo.exists() and folder.is_dir() and not any(folder.iterdir())  # left as they were

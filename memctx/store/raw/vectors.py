"""The raw store's ``vectors.bin``: load and check, append, rewrite, and who wrote it.

``vectors.bin`` (VMEM v1, :mod:`memctx.store.vmem`) is a cache of the segments' embeddings, ids =
segment UUIDs: it only saves re-embedding on restart, so any doubt about it means "rebuild it
from ``segments.jsonl``", never an error. Doubts are: a bad header, dimension, count or
length (:func:`memctx.store.vmem.vmem_status`), segments without a vector (a writer killed between
its two appends), unusable vectors (NaN, infinity, all zeros or an absurd norm:
:func:`memctx.store.vmem.bad_vector_rows`; only those segments are re-embedded, and the
file is rewritten without them), or another embedder. VMEM has no room for the embedder, so
``vectors.meta.json`` records ``{embedder, version, dim}``: hash and MiniLM vectors are both
384-dim and would otherwise mix silently after a switch (or a transformer fallback).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import struct
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, NamedTuple

import numpy as np

from memctx.errors import StoreError, VmemError
from memctx.fs import atomic_write_beneath

from ..files import StoreFileError, open_nonblocking, read_regular
from ..vmem import (
    VMEM_HEADER,
    VMEM_MAGIC,
    VMEM_VERSION,
    append_vmem,
    bad_vector_rows,
    iter_vmem_raw,
    vmem_entry_size,
    vmem_status,
    write_vmem,
)
from .io import child_path, file_size
from .records import VECTOR_TEXT_VERSION

__all__ = [
    "VECTORS_FILE",
    "VECTORS_META_FILE",
    "VectorFile",
    "VectorFileState",
    "VectorSink",
    "embedder_identity",
]

logger = logging.getLogger("memctx")

VECTORS_FILE: Final = "vectors.bin"
VECTORS_META_FILE: Final = "vectors.meta.json"


def embedder_identity(embedder: Any) -> tuple[str, str, int]:
    """``(name, version, dim)`` of an embedder, validated (what ``vectors.meta.json`` holds)."""
    name, dim = getattr(embedder, "name", None), getattr(embedder, "dim", None)
    version = getattr(embedder, "version", "")
    if not isinstance(name, str) or not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
        raise StoreError(f"embedder {embedder!r} needs a str name and a positive int dim")
    if not callable(getattr(embedder, "embed", None)):
        raise StoreError(f"embedder {embedder!r} has no embed(texts) method")
    return name, str(version), dim


class VectorFileState(NamedTuple):
    """What :meth:`VectorFile.load` found (the vectors themselves went to its ``sink``).

    Attributes:
        rows: For each requested id, the entry of the file its vector came from, or ``None``.
        reason: Why vectors must be rebuilt; ``None`` when every id has a usable vector.
        appendable: The file's structure is healthy, so missing vectors can be appended to it
            (when ``bad`` is empty: bad rows are only dropped by a rewrite).
        bad: Positions (in the requested ids) whose vector in the file is unusable
            (:func:`memctx.store.vmem.bad_vector_rows`); their ``rows`` are ``None``.
    """

    rows: list[int | None]
    reason: str | None
    appendable: bool
    bad: tuple[int, ...] = ()


VectorSink = Callable[[list[int], np.ndarray], None]
"""Receives ``(positions, matrix)``: the vectors of ``ids[p]`` for each ``p`` in positions."""


class VectorFile:
    """``vectors.bin`` and ``vectors.meta.json`` of one store directory, for one embedder.

    Attributes:
        path: ``vectors.bin``.
        dirty: The file is known to be damaged or behind: the next write rewrites it whole.
    """

    def __init__(self, directory: Path, embedder: Any, *, durable: bool = False) -> None:
        self.path = child_path(directory, VECTORS_FILE)
        self.durable = durable  # fsync appends (see memctx.store.vmem.append_vmem)
        self.meta_path = child_path(directory, VECTORS_META_FILE)
        self.embedder = embedder
        name, version, dim = embedder_identity(embedder)
        # Vectors embed vector_text(): a change to it makes them stale like a new model would.
        self.identity = (name, f"{version}+text{VECTOR_TEXT_VERSION}", dim)
        self.dim = self.identity[2]
        self.dirty = False
        self._meta_ok = False  # vectors.meta.json is known to name this embedder
        # (device, inode, size, mtime) of vectors.meta.json when last found to name this
        # embedder: an unchanged file is not read again before the next append.
        self._meta_seen: tuple[int, int, int, int] | None = None
        self.foreign: tuple[Any, Any, Any] | None = None  # the other embedder load() found

    def reset(self) -> None:
        """Forget what is known about the files (before a reload)."""
        self.dirty = self._meta_ok = False
        self._meta_seen = None

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts``, checking the embedder keeps its promise (shape, finite values)."""
        matrix = np.asarray(self.embedder.embed(texts), dtype=np.float32)
        if matrix.shape != (len(texts), self.dim) or not np.isfinite(matrix).all():
            raise StoreError(
                f"embedder {self.identity[0]!r} returned an array of shape {matrix.shape} (or "
                f"non-finite values) for {len(texts)} texts; expected ({len(texts)}, {self.dim})"
            )
        return matrix

    def _read_meta(self) -> dict[str, Any] | None:
        try:
            obj = json.loads(read_regular(self.meta_path, 1 << 16)[0])
        except (OSError, StoreError, ValueError):  # a FIFO in its place is refused, not read
            return None
        return obj if isinstance(obj, dict) else None

    def load(self, ids: list[str], sink: VectorSink) -> VectorFileState:
        """Hand the vectors of the segment ``ids`` to ``sink``, chunk by chunk, and say
        whether the file must be rebuilt.

        Streaming keeps memory at one chunk plus what the sink keeps: reading the whole file
        first would hold every vector twice (30 MB each at 20,000 x 384) until the sink had
        copied them. A repeated id in the file reaches the sink again; the last one wins.
        """
        nothing: list[int | None] = [None] * len(ids)
        meta = self._read_meta()
        self.foreign = None
        if meta is not None:
            found = (meta.get("embedder"), meta.get("version"), meta.get("dim"))
            if found != self.identity:
                self.foreign = found
                name, version, dim = self.identity
                changed = (
                    f"written by embedder {found[0]!r} ({found[1]}, dim {found[2]}), but this "
                    f"store embeds with {name!r} ({version}, dim {dim})"
                )
                return VectorFileState(nothing, changed, False)
        self._meta_ok = meta is not None
        if not self.path.exists():
            return VectorFileState(nothing, "the file is missing", False)
        # Ids are matched as their 16-byte forms: no UUID object or string per entry.
        want = dict(zip(_split16(_uuid_bytes(ids)), range(len(ids)), strict=True))
        rows: list[int | None] = [None] * len(ids)
        bad: set[int] = set()
        try:
            entry = 0
            for raw_ids, matrix in iter_vmem_raw(self.path, self.dim):
                flagged = bad_vector_rows(matrix)
                found_at: dict[int, int] = {}  # position -> row in this chunk (the last wins)
                for n, pos in enumerate(map(want.get, _split16(raw_ids))):
                    if pos is None:
                        continue
                    if flagged[n]:  # NaN, infinity, zeros: re-embedded, not handed on
                        bad.add(pos)
                        found_at.pop(pos, None)
                        rows[pos] = None
                        continue
                    bad.discard(pos)
                    found_at[pos] = n
                    rows[pos] = entry + n
                if found_at:
                    picks = list(found_at.values())
                    whole = picks == list(range(len(matrix)))  # usual: no 6 MB gather
                    sink(list(found_at), matrix if whole else matrix[picks])
                entry += len(matrix)
        except VmemError as exc:
            # An append cut short leaves whole entries before the damage (the count is
            # written last): keep those, so a crash costs a few embeddings, not all of them.
            salvaged, unusable = self._entries(None)
            if not salvaged:
                return VectorFileState(nothing, str(exc), False)
            bad = {pos for pos, seg in enumerate(ids) if seg in unusable}
            present = [pos for pos, seg in enumerate(ids) if seg in salvaged]
            rows = [None] * len(ids)
            for i in range(0, len(present), 4096):
                part = present[i : i + 4096]
                sink(part, np.stack([salvaged[ids[pos]] for pos in part]))
            for n, pos in enumerate(present):
                rows[pos] = n
            kept = f"{exc}; kept the {len(present)} vectors of whole entries, re-embedding the rest"
            return VectorFileState(rows, kept, False, tuple(sorted(bad)))
        missing = sum(r is None for r in rows)
        reasons = []
        if bad:
            reasons.append(
                f"{len(bad)} vectors are not usable (NaN, infinite, all zeros or an absurd norm)"
            )
        if missing > len(bad):
            reasons.append(f"{missing - len(bad)} of {len(ids)} segments have no vector in it")
        reason = "; ".join(reasons) or None
        return VectorFileState(rows, reason, True, tuple(sorted(bad)))

    def _entries(self, last: int | None) -> tuple[dict[str, np.ndarray], set[str]]:
        """Whole entries of a file with a valid header, all of them or the ``last`` few: the
        usable vectors by id, and the ids whose vector is not usable.

        Trusts neither the count nor the length alone: reads what both allow.
        """
        entry = vmem_entry_size(self.dim)
        try:
            with os.fdopen(open_nonblocking(self.path, os.O_RDONLY), "rb") as handle:
                magic, version, dim, count = VMEM_HEADER.unpack(handle.read(VMEM_HEADER.size))
                whole = min(count, (os.fstat(handle.fileno()).st_size - VMEM_HEADER.size) // entry)
                take = whole if last is None else min(whole, last)
                handle.seek(VMEM_HEADER.size + (whole - take) * entry)
                data = handle.read(take * entry)
        except (OSError, StoreFileError, struct.error):
            return {}, set()
        if (magic, version, dim) != (VMEM_MAGIC, VMEM_VERSION, self.dim):
            return {}, set()
        dtype = np.dtype([("id", "u1", (16,)), ("vec", "<f4", (self.dim,))])
        records = np.frombuffer(data, dtype=dtype, count=len(data) // entry)
        raw_ids = records["id"].tobytes()
        vecs = np.array(records["vec"], dtype=np.float32)
        flagged = bad_vector_rows(vecs)
        good: dict[str, np.ndarray] = {}
        bad: set[str] = set()
        for n in range(len(vecs)):  # the last entry of an id wins, as in load()
            key = str(uuid.UUID(bytes=raw_ids[16 * n : 16 * n + 16]))
            if flagged[n]:
                good.pop(key, None)
                bad.add(key)
            else:
                bad.discard(key)
                good[key] = vecs[n]
        return good, bad

    def tail(self, ids: list[str]) -> tuple[dict[str, np.ndarray], set[str]]:
        """Vectors of ``ids`` found among the last entries of a healthy file, and the ids
        among them whose vector there is not usable (the file is then marked dirty).

        Another process appends its vectors right after its lines, so segments it just added
        are found here instead of being embedded again. Missing ones are simply absent.
        """
        if not ids or vmem_status(self.path, self.dim, values=False) is not None:
            return {}, set()
        if self._foreign_meta() is not None:
            return {}, set()  # another embedder's vectors: ours are made here instead
        wanted = set(ids)
        good, bad = self._entries(2 * len(ids) + 64)
        bad &= wanted
        if bad:
            self.dirty = True  # the next write rewrites the file without them
        return {k: v for k, v in good.items() if k in wanted}, bad

    def _meta_ident(self) -> tuple[int, int, int, int] | None:
        try:
            st = os.lstat(self.meta_path)
        except OSError:
            return None
        return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns

    def _foreign_meta(self) -> tuple[Any, Any, Any] | None:
        """The embedder ``vectors.meta.json`` names now, if it is not this one (``None``:
        it names this one, or there is none to go by). One ``lstat`` when unchanged."""
        ident = self._meta_ident()
        if ident is not None and ident == self._meta_seen:
            return None
        meta = self._read_meta()
        if meta is None:
            self._meta_ok, self._meta_seen = False, None  # missing or unreadable: (re)written
            return None
        found = (meta.get("embedder"), meta.get("version"), meta.get("dim"))
        if found != self.identity:
            self._meta_ok, self._meta_seen = False, None
            return found
        self._meta_ok, self._meta_seen = True, ident
        return None

    def check_owner(self) -> None:
        """Refuse to write vectors if ``vectors.meta.json`` names another embedder.

        Called under the store's lock before every append: another process may have
        written (or rebuilt) the file with another embedder since this one looked, and its
        vectors and ours in one file would be compared as if they were alike (hash and
        MiniLM vectors are both 384-dim). Opening the store is what switches it to another
        embedder (a whole rebuild); an append never does.

        Raises:
            StoreError: The file belongs to another embedder; the message names both and
                the fix. Nothing was written.
        """
        found = self._foreign_meta()
        if found is None:
            return
        name, version, dim = self.identity
        raise StoreError(
            f"{self.path.parent} holds vectors of embedder {found[0]!r} ({found[1]}, dim "
            f"{found[2]}), written by another process since this one opened it, but this "
            f"writer embeds with {name!r} ({version}, dim {dim}); a store never holds two "
            "embedders' vectors, so nothing was written. Give every process that shares "
            "this store_dir the same embedding model, or each its own store_dir; to switch "
            f"this store to {name!r}, stop the other writers and open it again (it is "
            "re-embedded on open)"
        )

    def _write_meta(self) -> None:
        if not self._meta_ok:
            name, version, dim = self.identity
            record = {"format": "VMEM v1", "embedder": name, "version": version, "dim": dim}
            data = json.dumps(record, sort_keys=True).encode() + b"\n"
            # A link in its place is refused (counted), not silently replaced.
            atomic_write_beneath(self.meta_path.parent, self.meta_path.name, data, sync_dir=True)
            self._meta_ok = True
            self._meta_seen = self._meta_ident()

    def confirm(self) -> None:
        """Record the embedder if the file predates ``vectors.meta.json`` (best effort)."""
        with contextlib.suppress(OSError):
            self._write_meta()

    def append(
        self,
        ids: list[str],
        matrix: np.ndarray,
        everything: Callable[[], tuple[list[str], np.ndarray]],
    ) -> None:
        """Append vectors; if the file is damaged, rewrite it from ``everything()`` plus these.

        Raises:
            OSError: The write failed; a partial append has been cut off again.
            StoreError: ``vectors.meta.json`` names another embedder (:meth:`check_owner`).
        """
        self.check_owner()
        if not self.dirty:
            before = file_size(self.path)
            try:
                append_vmem(self.path, _uuid_bytes(ids), matrix, self.durable)
                self._write_meta()
                return
            except VmemError as exc:  # damaged by someone else: rewrite from memory
                logger.warning("%s; rewriting it from memory", exc)
            except OSError:
                if before is not None:  # entries go first, the count last: cut them off
                    with contextlib.suppress(OSError):
                        os.truncate(self.path, before)
                    self.dirty = vmem_status(self.path, self.dim, values=False) is not None
                raise
        all_ids, all_matrix = everything()
        self.rewrite(all_ids + ids, np.vstack([all_matrix, matrix]))

    def rewrite(self, ids: list[str], matrix: np.ndarray, *, take_over: bool = False) -> None:
        """Write the whole file atomically (``write_vmem``), then the embedder record.

        Args:
            ids: Segment ids, one per row.
            matrix: Their vectors, all of this embedder.
            take_over: The store is being opened with this embedder: the file becomes its
                own whoever wrote it before. Otherwise (a compaction) a file another
                embedder owns is refused (:meth:`check_owner`).
        """
        if not take_over:
            self.check_owner()
        write_vmem(self.path, _uuid_bytes(ids), matrix)
        self.dirty = False
        self._meta_ok = False  # whoever wrote it before, the file is this embedder's now
        self._write_meta()


def _split16(raw: bytes) -> list[bytes]:
    """Concatenated 16-byte ids, one by one."""
    return [raw[i : i + 16] for i in range(0, len(raw), 16)]


def _uuid_bytes(ids: list[str]) -> bytes:
    """16-byte forms of canonical UUID strings, in one C call for all of them (a rewrite
    converts 20,000: ``uuid.UUID`` one by one takes ~50 ms of it)."""
    raw = bytes.fromhex("".join(ids).replace("-", ""))
    if len(raw) != 16 * len(ids):  # not all canonical: the slow, strict way
        raw = b"".join(uuid.UUID(i).bytes for i in ids)
    return raw

"""Exact cosine-similarity search over an in-memory float32 matrix.

The raw store holds at most ``maxSegments`` (20,000) segments; at 384 dimensions that is a
30 MB matrix and one matrix-vector product of ~2 ms, so exact brute force beats an
approximate index (HNSW and friends) on both simplicity and recall at this size. The product
runs in one thread (:func:`_row_dots`: a threaded BLAS call is 4-6x slower whenever the
other core is busy), and hybrid search looks keys up in bulk through arrays
(:class:`~memctx.retrieval.keys.DenseKeys`) rather than one dict look-up each.

Layout: live rows ``[0, len)`` of a preallocated matrix, a parallel array of keys and a
``key -> row`` dict. Adding appends (the capacity doubles when full, so adds are amortised
O(dim) and the matrix is not reallocated per add); removing moves the last row into the hole
("swap-remove"), so there are no tombstones to skip or compact and every search touches only
live rows. Row order therefore changes on removal, which is why filters are given as keys,
never as positions.

Vectors are L2-normalised on the way in (the embedders already do; normalising again costs
one norm per row and makes the dot product a true cosine whatever the caller passes). A zero
vector stays zero and scores 0 against everything.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import numpy as np

from .keys import DenseKeys, key_array

__all__ = ["VectorIndex", "VectorScores"]

_MIN_CAPACITY = 16
# Below this share of live rows an allowed-key filter gathers its rows before the product;
# above it one product over all rows and a gather of the scores is cheaper than copying rows.
_GATHER_SHARE = 0.125


def _row_dots(matrix: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``matrix @ q`` (float32), one single-threaded dot product per row.

    ``np.vecdot`` runs BLAS's ``sdot`` row by row in one thread; ``@`` hands the whole
    product to a multi-threaded ``sgemv``, which on a machine whose other core is busy waits
    for a thread that is not scheduled: measured 2 ms against 8-12 ms for 20,000 x 384 on
    a loaded 2-core VM, and about the same when idle. Each row's dot product is computed the
    same way whatever rows come with it, so scores of the full product, of a gathered subset
    and of a single row agree to the bit.
    """
    return _VECDOT(matrix, q)


def _einsum_rows(matrix: np.ndarray, q: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.einsum("ij,j->i", matrix, q)
    return out


# numpy < 2.0 has no vecdot; einsum's own loop is single-threaded too.
_VECDOT: Callable[[np.ndarray, np.ndarray], np.ndarray] = getattr(np, "vecdot", _einsum_rows)


def _normalised_rows(matrix: np.ndarray) -> np.ndarray:
    # np.linalg.norm(matrix, axis=1, keepdims=True) computes exactly this (same rounding),
    # after a few microseconds of argument handling that every add would pay.
    norms = np.sqrt(np.add.reduce(matrix * matrix, axis=1, keepdims=True))
    # Zero rows stay zero rather than becoming NaN.
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix


class VectorIndex:
    """Integer keys to unit vectors, with exact top-k cosine search.

    Args:
        dim: Vector dimension.
        capacity: Rows to preallocate; the store passes its ``maxSegments`` so that a full
            store never doubles past it (20,000 rows, not 32,768).

    Not thread-safe: the owner (the raw store) serialises access.
    """

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self.dim = dim
        cap = max(_MIN_CAPACITY, capacity)
        self._matrix = np.zeros((cap, dim), dtype=np.float32)
        self._keys = np.zeros(cap, dtype=np.int64)
        self._rows: dict[int, int] = {}
        self._dense = DenseKeys()  # the same as _rows, for many keys at once
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    @property
    def capacity(self) -> int:
        """Rows allocated (live rows plus free space)."""
        return int(self._matrix.shape[0])

    def reserve(self, capacity: int) -> None:
        """Grow the allocation to at least ``capacity`` rows (never shrinks)."""
        if capacity <= self.capacity:
            return
        matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        keys = np.zeros(capacity, dtype=np.int64)
        matrix[: self._size] = self._matrix[: self._size]
        keys[: self._size] = self._keys[: self._size]
        self._matrix, self._keys = matrix, keys

    def _ensure_room(self, extra: int) -> None:
        needed = self._size + extra
        if needed > self.capacity:
            self.reserve(max(needed, 2 * self.capacity))

    def _check_vectors(self, matrix: np.ndarray) -> np.ndarray:
        if matrix.ndim != 2 or matrix.shape[1] != self.dim:
            raise ValueError(f"expected vectors of shape (n, {self.dim}), got {matrix.shape}")
        out = np.array(matrix, dtype=np.float32, copy=True)
        if not np.isfinite(out).all():
            raise ValueError("vectors must be finite (no NaN or infinity)")
        return _normalised_rows(out)

    def add(self, key: int, vector: np.ndarray) -> None:
        """Insert ``key`` or replace its vector.

        Args:
            key: Any int (the store maps its segment UUIDs to ints).
            vector: A ``(dim,)`` array; normalised on the way in.
        """
        self.add_many([key], np.asarray(vector).reshape(1, -1))

    def add_many(self, keys: Sequence[int] | np.ndarray, matrix: np.ndarray) -> None:
        """Insert or replace many vectors at once (one copy, at most one growth).

        Args:
            keys: Distinct ints, one per row of ``matrix``.
            matrix: ``(n, dim)`` array; rows are normalised on the way in.

        Raises:
            ValueError: Shapes disagree, keys repeat, or a value is not finite.
        """
        matrix = np.asarray(matrix)
        key_list = [int(k) for k in keys]
        if (
            matrix.ndim == 2
            and matrix.shape == (len(key_list), self.dim)
            and not any(map(self._rows.__contains__, key_list))
            and len(set(key_list)) == len(key_list)
        ):
            self._append_new(key_list, matrix)
            return
        rows = self._check_vectors(matrix)
        if len(key_list) != rows.shape[0]:
            raise ValueError(f"{len(key_list)} keys for {rows.shape[0]} vectors")
        if len(set(key_list)) != len(key_list):
            raise ValueError("keys passed to add_many must be distinct")
        fresh = [i for i, k in enumerate(key_list) if k not in self._rows]
        for i, key in enumerate(key_list):
            if key in self._rows:  # replace in place: the key keeps its row
                self._matrix[self._rows[key]] = rows[i]
        if not fresh:
            return
        self._ensure_room(len(fresh))
        start, stop = self._size, self._size + len(fresh)
        self._matrix[start:stop] = rows[fresh]
        self._keys[start:stop] = [key_list[i] for i in fresh]
        for offset, i in enumerate(fresh):
            self._rows[key_list[i]] = start + offset
        self._size = stop
        self._dense.set(self._keys[start:stop], np.arange(start, stop), stop)

    def _append_new(self, keys: list[int], matrix: np.ndarray) -> None:
        """:meth:`add_many` of keys not in the index (an add; a load): the rows are
        converted, checked and normalised where they will live, not in a copy first (a
        load's 4,096-row chunks would otherwise cost three 6 MB temporaries each)."""
        n = len(keys)
        self._ensure_room(n)
        start, stop = self._size, self._size + n
        block = self._matrix[start:stop]
        block[...] = matrix  # as float32, like _check_vectors' copy (rows not live yet)
        if not np.isfinite(block).all():
            raise ValueError("vectors must be finite (no NaN or infinity)")
        _normalised_rows(block)
        self._keys[start:stop] = keys
        self._rows.update(zip(keys, range(start, stop), strict=True))
        self._size = stop
        if n == 1:
            self._dense.set_one(keys[0], start, stop)
        else:
            self._dense.set(self._keys[start:stop], np.arange(start, stop), stop)

    def remove(self, key: int) -> None:
        """Delete ``key`` by moving the last row into its place.

        Raises:
            KeyError: ``key`` is not in the index.
        """
        row = self._rows.pop(key)
        last = self._size - 1
        self._dense.set_one(key, -1, last)
        if row != last:
            moved = int(self._keys[last])
            self._matrix[row] = self._matrix[last]
            self._keys[row] = moved
            self._rows[moved] = row
            self._dense.set_one(moved, row, last)
        self._size = last

    def _rows_of(self, keys: Collection[int] | np.ndarray) -> np.ndarray:
        """Rows of ``keys`` in order (``KeyError`` for a key not in the index)."""
        arr = key_array(keys)
        rows = self._dense.find(arr)
        if rows is None:
            return np.fromiter(map(self._rows.__getitem__, arr.tolist()), np.intp, len(arr))
        if len(rows) and int(rows.min()) < 0:
            raise KeyError(int(arr[np.argmin(rows)]))
        return rows

    def discard(self, key: int) -> bool:
        """Delete ``key`` if present; return whether it was."""
        if key not in self._rows:
            return False
        self.remove(key)
        return True

    def get(self, key: int) -> np.ndarray:
        """A copy of the stored (normalised) vector of ``key``; ``KeyError`` if absent."""
        return np.array(self._matrix[self._rows[key]], copy=True)

    def keys(self) -> np.ndarray:
        """The live keys (int64) in row order, as a copy."""
        return self._keys[: self._size].copy()

    def vectors(self) -> np.ndarray:
        """A read-only view of the live rows, aligned with :meth:`keys` (for persisting)."""
        view = self._matrix[: self._size]
        view.flags.writeable = False
        return view

    def _query(self, query: np.ndarray) -> np.ndarray:
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValueError(f"query has {q.shape[0]} dimensions, the index {self.dim}")
        if not np.isfinite(q).all():
            raise ValueError("query must be finite (no NaN or infinity)")
        norm = float(np.linalg.norm(q))
        return q / np.float32(norm) if norm > 0 else q

    def similarities(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cosine similarity of ``query`` to every live row.

        Returns:
            ``(keys, sims)``: int64 keys in row order and float32 similarities in [-1, 1]
            (one float32 matrix-vector product; no float64 copy of the matrix).
        """
        q = self._query(query)
        return self.keys(), _row_dots(self._matrix[: self._size], q)

    def similarities_of(self, query: np.ndarray, keys: Sequence[int]) -> np.ndarray:
        """Cosine similarity of ``query`` to the vectors of ``keys``, in that order.

        One gather and one product over those rows only: hybrid search scores a few hundred
        candidates, so this is much cheaper than :meth:`similarities` over every row.

        Raises:
            KeyError: A key is not in the index.
        """
        q = self._query(query)
        return _row_dots(self._matrix[self._rows_of(keys)], q)

    def query(self, query: np.ndarray, allowed: Collection[int] | None = None) -> VectorScores:
        """Score ``query`` once against the ``allowed`` rows (all by default), for
        :meth:`VectorScores.top` and :meth:`VectorScores.of` (what :meth:`top_k` does, plus
        the similarities of any other keys without a second product)."""
        q = self._query(query)
        size = self._size
        if allowed is None:
            return VectorScores(self, q, None, _row_dots(self._matrix[:size], q))
        rows = self._known_rows(allowed)
        if rows.size < _GATHER_SHARE * size:
            sims = np.full(size, np.nan, dtype=np.float32)  # NaN: not scored yet
            sims[rows] = _row_dots(self._matrix[rows], q)
        else:
            sims = _row_dots(self._matrix[:size], q)
        return VectorScores(self, q, rows, sims)

    def _known_rows(self, keys: Collection[int]) -> np.ndarray:
        """Rows of those ``keys`` that are in the index, in ``keys`` order."""
        rows = self._dense.find(key_array(keys))
        if rows is None:
            rows_of = self._rows
            return np.fromiter((rows_of[k] for k in keys if k in rows_of), dtype=np.intp)
        return rows[rows >= 0]

    def top_k(
        self, query: np.ndarray, k: int, allowed: Collection[int] | None = None
    ) -> list[tuple[int, float]]:
        """The ``k`` most similar keys, best first.

        Args:
            query: A ``(dim,)`` vector (normalised here).
            k: How many results at most; ``k <= 0`` gives ``[]``.
            allowed: If given, only these keys are candidates (unknown keys are ignored).
                A key collection rather than a mask, because swap-remove reorders rows.

        Returns:
            ``(key, similarity)`` pairs, similarity descending, ties by key ascending, so the
            result is deterministic.
        """
        if k <= 0 or self._size == 0:
            return []
        return self.query(query, allowed).top(k)


class VectorScores:
    """Cosine similarities of one query, as the index stood when it was scored.

    Made by :meth:`VectorIndex.query`; read it before the index changes (the store holds its
    lock while it searches).
    """

    __slots__ = ("_index", "_q", "_rows", "_sims")

    def __init__(
        self, index: VectorIndex, q: np.ndarray, rows: np.ndarray | None, sims: np.ndarray
    ) -> None:
        self._index, self._q, self._rows, self._sims = index, q, rows, sims

    def top(self, k: int) -> list[tuple[int, float]]:
        """The ``k`` most similar allowed keys, as :meth:`VectorIndex.top_k` gives them."""
        keys, sims = self._ranked(k)
        return list(zip(keys.tolist(), sims.tolist(), strict=True))

    def top_keys(self, k: int) -> np.ndarray:
        """The keys of :meth:`top`, as an int64 array (no pair per key)."""
        return self._ranked(k)[0]

    def _ranked(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Keys and similarities of the ``k`` best allowed rows, in :meth:`top` order."""
        all_keys = self._index._keys
        if self._rows is None:
            keys, sims = all_keys[: len(self._sims)], self._sims
        else:
            keys, sims = all_keys[self._rows], self._sims[self._rows]
        n = sims.shape[0]
        if k <= 0 or n == 0:
            return keys[:0], sims[:0]
        if k < n:
            # partition finds the k-th best score in O(n) (without argpartition's index
            # array: twice as fast); keeping every candidate at least that good (not just k
            # of them) lets ties at the cut be settled by key.
            kth = n - k
            threshold = np.partition(sims, kth)[kth]
            candidates = np.flatnonzero(sims >= threshold)
        else:
            candidates = np.arange(n)
        order = np.lexsort((keys[candidates], -sims[candidates]))[:k]
        chosen = candidates[order]
        return keys[chosen], sims[chosen]

    def of(self, keys: Sequence[int] | np.ndarray) -> np.ndarray:
        """float32 similarities of ``keys`` (allowed or not); ``KeyError`` for unknown keys."""
        index = self._index
        rows = index._rows_of(keys)
        out: np.ndarray = self._sims[rows]
        todo = np.flatnonzero(np.isnan(out))  # rows the allowed filter left unscored
        if len(todo):
            out[todo] = _row_dots(index._matrix[rows[todo]], self._q)
        return out

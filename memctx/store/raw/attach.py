"""Vectors of the raw store's segments: taken from ``vectors.bin`` or embedded again.

:class:`AttachingStore` fills the vector index after a load (:meth:`_attach_all_vectors`)
and after other processes' appends (:meth:`_attach_new_vectors`), from ``vectors.bin`` where
its vectors are usable, by embedding the segments' text where they are not. What counts as a
doubt, and why any doubt means "rebuild", is in :mod:`memctx.store.raw.vectors`. An unusable
vector (NaN, infinity, all zeros, an absurd norm) is counted once in ``bad_vectors`` and only
its segment is embedded again; the file is rewritten without it at once (or, if the
directory is read-only, at the next write). A vector the embedder itself gives as unusable
(say an all-zero row) is its own output, not damage: it is neither counted nor reported.
"""

from __future__ import annotations

import logging
from typing import Final

import numpy as np

from memctx.errors import StoreError

from ..vmem import bad_vector_rows
from .base import RawStoreBase
from .records import search_text

__all__ = ["AttachingStore"]

logger = logging.getLogger("memctx")

_EMBED_BATCH: Final = 256


class AttachingStore(RawStoreBase):
    """:class:`RawStoreBase` with its vectors; see :class:`memctx.store.raw.store.RawStore`."""

    def _embed_keys(self, keys: list[int]) -> set[int]:
        """Embed the segments ``keys`` again; return those whose fresh vector is itself
        unusable (the embedder's own output: not damage)."""
        own: set[int] = set()
        for i in range(0, len(keys), _EMBED_BATCH):
            batch = keys[i : i + _EMBED_BATCH]
            infos = [self._idx.info[k] for k in batch]
            texts = [
                search_text(self._content(k), info.timestamp, info.name)
                for k, info in zip(batch, infos, strict=True)
            ]
            matrix = self._vfile.embed(texts)
            own.update(k for k, bad in zip(batch, bad_vector_rows(matrix), strict=True) if bad)
            self._idx.vectors.add_many(batch, matrix)
        return own

    def _count_bad(self, bad: set[int], own: set[int]) -> int:
        """Count (and say once) the unusable vectors of ``bad`` that are damage."""
        damaged = len(bad - own)
        if damaged:
            self._bad_vectors += damaged
            logger.warning(
                "%s: %d vectors were not usable (NaN, infinite, all zeros or an absurd norm); "
                "their segments were embedded again and the file is rewritten without them",
                self._vfile.path,
                damaged,
            )
        return damaged

    def _attach_all_vectors(self, keys: list[int], *, can_write: bool) -> None:
        """Vectors of a fresh load from ``vectors.bin``; rebuild (and report once) if off."""
        keys = [k for k in dict.fromkeys(keys) if k in self._idx.info]  # a repeated id: once
        if not keys and not self._vfile.path.exists():
            return
        vectors = self._idx.vectors

        def sink(positions: list[int], matrix: np.ndarray) -> None:
            vectors.add_many([keys[p] for p in positions], matrix)

        state = self._vfile.load(self._idx.ids(keys), sink)
        missing = [k for k, row in zip(keys, state.rows, strict=True) if row is None]
        if state.reason is None:
            if can_write:
                self._vfile.confirm()
            return
        own = self._embed_keys(missing)
        bad = {keys[p] for p in state.bad}
        damaged = self._count_bad(bad, own)
        if state.appendable and not damaged and set(missing) <= own:
            if can_write:  # only the embedder's own unusable rows: nothing to repair
                self._vfile.confirm()
            return
        self._vectors_rebuilt = state.reason
        logger.warning(
            "%s: %s; re-embedded %d segments", self._vfile.path, state.reason, len(missing)
        )
        try:
            if not can_write:
                raise OSError("the store directory is not writable")
            if state.appendable and not damaged:
                # The embedder's own unusable rows are in the file already: not appended again.
                fresh = [k for k in missing if k not in own]
                matrix = np.stack([self._idx.vectors.get(k) for k in fresh])
                self._vfile.append(self._idx.ids(fresh), matrix, self._idx.snapshot_vectors)
            else:
                self._vfile.rewrite(*self._idx.snapshot_vectors())
        except (OSError, StoreError, ValueError) as exc:
            self._vfile.dirty = True  # the next add rewrites it whole
            logger.warning("cannot rewrite %s (%s); rebuilt at next open", self._vfile.path, exc)

    def _attach_new_vectors(self, keys: list[int]) -> None:
        """Vectors of segments other processes appended: from the end of ``vectors.bin``."""
        keys = [k for k in dict.fromkeys(keys) if k in self._idx.info]  # a repeated id: once
        tail, unusable = self._vfile.tail(self._idx.ids(keys))
        have = [k for k in keys if self._idx.info[k].id in tail]
        if have:
            self._idx.vectors.add_many(have, np.stack([tail[self._idx.info[k].id] for k in have]))
        missing = [k for k in keys if self._idx.info[k].id not in tail]
        own = self._embed_keys(missing)
        self._count_bad({k for k in missing if self._idx.info[k].id in unusable}, own)

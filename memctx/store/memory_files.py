"""Memory files (seed 003): ``MEMORY.md`` and ``memory/*.md``, chunked, indexed and searched.

Layout under a workspace directory: ``MEMORY.md`` (curated long-term memory), daily logs
``memory/YYYY-MM-DD.md`` (append-only; a name may carry a suffix, ``2026-02-28-deploy.md``) and
other ``memory/**/*.md`` topic files. Files are the source of truth; the index is in memory
and rebuilt from them.

Settings come from a :class:`~memctx.config.MemorySearchConfig` (``memorySearch`` of a memctx
config or an ``openclaw.json``); every field is honoured, as below.

- **Chunks.** Each file is cut on line boundaries into chunks of at most ``chunkTokens`` (400)
  estimated tokens (``estimate_tokens``, so at most 1,200 characters), consecutive chunks
  sharing up to ``chunkOverlapTokens`` (80) tokens of whole lines, so a fact near a boundary
  is whole in one chunk. A single line longer than a chunk is cut into pieces that all carry
  its line number. Chunks remember ``(path, start_line, end_line, text)`` with 1-based
  inclusive lines, the numbering :meth:`MemoryFiles.memory_get` reads.
- **Index.** A :class:`~memctx.retrieval.BM25Index` and a :class:`~memctx.retrieval.VectorIndex`
  over the chunks. :meth:`MemoryFiles.sync` re-reads a file only when its ``(mtime_ns, size)``
  changed or its mtime is within 2 s of when it was last hashed (the "racy" window of git's
  index: a same-size edit inside one mtime tick would be missed otherwise), and re-chunks it only
  when its sha256 changed. Vectors are kept per chunk text, so appending to a daily log embeds
  only the chunks whose text changed. Files that vanished drop out of the index.
- **Search.** The one hybrid fusion, :func:`memctx.retrieval.hybrid_search`, with these
  parameters: ``vectorWeight * max(cosine, 0) + textWeight * BM25 / max BM25 of the query``
  (``query.hybrid``; with ``enabled`` false, cosine alone), every chunk a candidate, no
  neighbour smoothing. With ``temporalDecay.enabled`` a *daily log* chunk is multiplied by
  ``0.5 ** (age_days / halfLifeDays)``, the age counted in whole days from the date in its
  file name to ``clock()``'s local date (today = 100 %); evergreen files (``MEMORY.md`` and
  undated ``memory/`` files) are never decayed. Hits scoring 0 are left out; ties go by path
  and line. The hits returned hold at most ``maxInjectedChars`` (4,000) characters of text
  together: best first, the first hit that would pass the cap cut to its whole lines that fit
  (the best hit, when its first line alone is longer, to the cap inside that line), and
  nothing after it, so what a search puts into a prompt is bounded whatever ``limit`` asks.
- **Paths.** :meth:`MemoryFiles.memory_get` and :meth:`MemoryFiles.append_daily` accept only
  relative ``.md`` paths without ``..`` that resolve (symlinks followed) to
  ``<workspace>/MEMORY.md`` or into ``<workspace>/memory/``; anything else is a
  :class:`~memctx.errors.StoreError`. Indexing applies the same rule, so a symlink pointing
  out of the workspace is never read.
- **Files only, bounded.** A memory file must be a regular file: a FIFO, socket or device
  named like one is refused (checked on the descriptor opened with ``O_NONBLOCK``, so opening
  never blocks and nothing can be swapped in between), and at most :data:`MAX_FILE_BYTES` of
  one file are read (cut at the last whole line; a warning says so).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memctx.config import MemorySearchConfig
from memctx.errors import StoreError
from memctx.retrieval import BM25Index, SearchParams, VectorIndex, hybrid_search
from memctx.text import (
    CHUNK_OVERLAP_TOKENS,
    CHUNK_TOKENS,
    Redactor,
    chunk_lines,
    split_lines,
    tokenize,
)

from .files import open_in_store, os_error, resolve_store_dir
from .memory_paths import (
    MAX_FILE_BYTES,
    MEMORY_DIR,
    MEMORY_MD,
    daily_date,
    memory_path,
    read_memory_file,
)

if TYPE_CHECKING:
    from memctx.retrieval import Embedder

__all__ = [
    "CHUNK_OVERLAP_TOKENS",
    "CHUNK_TOKENS",
    "MAX_FILE_BYTES",
    "MemoryChunk",
    "MemoryFiles",
    "MemoryHit",
    "chunk_lines",
    "split_lines",
]

logger = logging.getLogger("memctx")

_RACY_NS = 2_000_000_000


@dataclass(frozen=True)
class MemoryChunk:
    """A piece of a memory file: ``path`` relative to the workspace, 1-based inclusive lines."""

    path: str
    start_line: int
    end_line: int
    text: str


@dataclass(frozen=True)
class MemoryHit:
    """A search result: a chunk and its score (higher is better)."""

    path: str
    start_line: int
    end_line: int
    text: str
    score: float


@dataclass
class _FileState:
    mtime_ns: int
    size: int
    sha256: str
    hashed_at_ns: int
    keys: list[int] = field(default_factory=list)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _day_seconds(day: dt.date) -> float:
    """A day as seconds on one scale (only differences count): whole days apart, exactly."""
    return day.toordinal() * 86_400.0


def _within_chars(hits: list[MemoryHit], max_chars: int) -> list[MemoryHit]:
    """The best hits holding at most ``max_chars`` characters of text together.

    The first hit that would pass the cap keeps its whole lines that fit, its ``end_line``
    the last line it still shows, and nothing after it is returned. A piece of a line is
    returned only when the best hit's first line alone is longer than the cap: a search
    that found something never returns nothing.
    """
    out: list[MemoryHit] = []
    left = max_chars
    for hit in hits:
        if len(hit.text) <= left:
            out.append(hit)
            left -= len(hit.text)
            continue
        brk = hit.text.rfind("\n", 0, left + 1)
        text = hit.text[:brk] if brk > 0 else ("" if out else hit.text[:left])
        if text:
            out.append(replace(hit, text=text, end_line=hit.start_line + text.count("\n")))
        break
    return out


class MemoryFiles:
    """The memory files of one workspace, with hybrid search and guarded reads and appends.

    Args:
        workspace_dir: Directory holding ``MEMORY.md`` and ``memory/`` (need not exist yet;
            resolved by :func:`memctx.store.files.resolve_store_dir`).
        embedder: Embeds chunks and queries (see :mod:`memctx.retrieval.embeddings`).
        clock: Epoch seconds; sets "today" for decay and for :meth:`append_daily`.
        redactor: Masks secrets in text written by :meth:`append_daily`.
        config: ``memorySearch``: fusion weights, temporal decay, the cap on returned text
            and the chunk sizes (see the module docstring); the defaults when omitted.

    Raises:
        TypeError: ``config`` is not a :class:`~memctx.config.MemorySearchConfig`.

    Thread-safe.
    """

    def __init__(
        self,
        workspace_dir: str | os.PathLike[str],
        *,
        embedder: Embedder,
        clock: Callable[[], float] = time.time,
        redactor: Redactor | None = None,
        config: MemorySearchConfig | None = None,
    ) -> None:
        if config is not None and not isinstance(config, MemorySearchConfig):
            raise TypeError(
                f"config must be a MemorySearchConfig, got {type(config).__name__}: pass "
                "MemoryContextConfig.memory_search, or MemorySearchConfig.from_dict({...}) "
                "for a memorySearch section"
            )
        self._config = config if config is not None else MemorySearchConfig()
        self._root = resolve_store_dir(workspace_dir)
        self._embedder = embedder
        self._clock = clock
        self._redactor = redactor if redactor is not None else Redactor()
        self._lock = threading.RLock()
        self._bm25 = BM25Index()
        self._vectors = VectorIndex(embedder.dim)
        self._files: dict[str, _FileState] = {}
        self._chunks: dict[int, MemoryChunk] = {}
        self._vec_by_text: dict[str, np.ndarray] = {}  # sha256(chunk text) -> vector
        self._next_key = 0
        self._refused: set[str] = set()
        self._counts = {"syncs": 0, "files_reindexed": 0, "texts_embedded": 0}

    @property
    def config(self) -> MemorySearchConfig:
        """The ``memorySearch`` settings this instance searches with."""
        return self._config

    @property
    def workspace_dir(self) -> Path:
        """The (resolved) workspace directory."""
        return self._root

    # -- paths

    def _resolve(self, path: str | os.PathLike[str]) -> Path:
        """The real path of an allowed memory file; ``StoreError`` naming the rule otherwise."""
        return memory_path(self._root, path)

    def _list_files(self) -> dict[str, Path]:
        found: dict[str, Path] = {}
        candidates = [self._root / MEMORY_MD]
        # os.walk does not follow directory symlinks: no loops, no trees outside the workspace.
        for dirpath, dirnames, filenames in os.walk(self._root / MEMORY_DIR):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            candidates += [Path(dirpath, f) for f in sorted(filenames) if f.endswith(".md")]
        for cand in candidates:
            rel = cand.relative_to(self._root).as_posix()
            if cand.name.startswith(".") or not (cand.is_file() or cand.is_symlink()):
                continue  # a link goes on to be refused (and counted), wherever it points
            try:
                self._resolve(rel)
            except StoreError as exc:
                if rel not in self._refused:  # once per path, not on every search
                    self._refused.add(rel)
                    logger.warning("not indexing memory file: %s", exc)
                continue
            found[rel] = cand
        return found

    # -- indexing

    def _drop(self, rel: str) -> None:
        state = self._files.pop(rel, None)
        for key in state.keys if state else ():
            self._bm25.remove(key)
            self._vectors.remove(key)
            del self._chunks[key]

    def sync(self) -> int:
        """Bring the index up to date with the files; returns how many files were re-chunked."""
        with self._lock:
            self._counts["syncs"] += 1
            current = self._list_files()
            for rel in set(self._files) - set(current):
                self._drop(rel)
            pending: list[tuple[str, _FileState, list[MemoryChunk]]] = []
            for rel, path in current.items():
                changed = self._check(rel, path)
                if changed is not None:
                    pending.append(changed)
            if not pending:
                return 0
            texts = {_sha(c.text.encode()): c.text for _, _, cs in pending for c in cs}
            missing = [(d, t) for d, t in texts.items() if d not in self._vec_by_text]
            if missing:
                matrix = self._embedder.embed([t for _, t in missing])
                self._counts["texts_embedded"] += len(missing)
                self._vec_by_text.update((d, matrix[i]) for i, (d, _) in enumerate(missing))
            for rel, state, chunks in pending:
                self._drop(rel)
                for chunk in chunks:
                    key, self._next_key = self._next_key, self._next_key + 1
                    self._bm25.add(key, tokenize(chunk.text))
                    self._vectors.add(key, self._vec_by_text[_sha(chunk.text.encode())])
                    self._chunks[key] = chunk
                    state.keys.append(key)
                self._files[rel] = state
            self._counts["files_reindexed"] += len(pending)
            live = {_sha(c.text.encode()) for c in self._chunks.values()}
            self._vec_by_text = {d: v for d, v in self._vec_by_text.items() if d in live}
            return len(pending)

    def _check(self, rel: str, path: Path) -> tuple[str, _FileState, list[MemoryChunk]] | None:
        """The new state and chunks of ``rel`` if its content changed, else None."""
        old = self._files.get(rel)
        try:
            st = path.stat()
            if (
                old is not None
                and (old.mtime_ns, old.size) == (st.st_mtime_ns, st.st_size)
                and st.st_mtime_ns + _RACY_NS <= old.hashed_at_ns
            ):
                return None
            hashed_at = time.time_ns()
            data = read_memory_file(path)
        except (OSError, StoreError) as exc:  # keep the last good index of a file we cannot read
            logger.warning("cannot read memory file %s: %s", path, exc)
            return None
        state = _FileState(st.st_mtime_ns, st.st_size, _sha(data), hashed_at)
        if old is not None and old.sha256 == state.sha256:
            old.mtime_ns, old.size, old.hashed_at_ns = state.mtime_ns, state.size, hashed_at
            return None
        lines = split_lines(data.decode("utf-8", errors="replace"))
        sizes = self._config.chunk_tokens, self._config.chunk_overlap_tokens
        chunks = [MemoryChunk(rel, s, e, t) for s, e, t in chunk_lines(lines, *sizes) if t.strip()]
        return rel, state, chunks

    # -- search

    def search(self, query: str, limit: int = 5) -> list[MemoryHit]:
        """Hybrid search over the memory files (syncs first); best first, scores > 0 only,
        at most ``maxInjectedChars`` of text in all (see the module docstring)."""
        self.sync()
        if limit <= 0 or not query.strip():
            return []
        hybrid = self._config.query.hybrid
        decay = hybrid.temporal_decay
        params = SearchParams(
            vector_weight=hybrid.vector_weight if hybrid.enabled else 1.0,
            text_weight=hybrid.text_weight if hybrid.enabled else 0.0,
            neighbour_weight=0.0,
            episode_weight=0.0,
            half_life_days=decay.half_life_days if decay.enabled else None,
            candidates=None,
        )
        with self._lock:
            if not self._chunks:
                return []
            chunks = self._chunks
            # A daily log's timestamp is its day, counted in whole days (ages are exact
            # multiples of a day); an evergreen file has none and is never decayed.
            days = {c.path: daily_date(c.path) for c in chunks.values()}

            def day_of(key: int) -> float | None:
                day = days[chunks[key].path]
                return None if day is None else _day_seconds(day)

            found = hybrid_search(
                query,
                bm25=self._bm25,
                vectors=self._vectors,
                embedder=self._embedder,
                timestamp_of=day_of,
                now=_day_seconds(dt.date.fromtimestamp(self._clock())) if decay.enabled else None,
                params=params,
                limit=len(chunks),
            )
            hits: list[MemoryHit] = []
            for hit in found:
                if hit.score > 0:
                    c = chunks[hit.key]
                    hits.append(MemoryHit(c.path, c.start_line, c.end_line, c.text, hit.score))
        hits.sort(key=lambda h: (-h.score, h.path, h.start_line))
        return _within_chars(hits[:limit], self._config.max_injected_chars)

    # -- reading and writing files

    def memory_get(
        self, path: str | os.PathLike[str], from_line: int = 1, lines: int | None = None
    ) -> str:
        """Lines ``from_line`` .. ``from_line + lines - 1`` (1-based; all the rest when ``lines``
        is None) of a memory file, joined with ``\\n``; ``""`` past the end or for a missing file.

        Raises:
            StoreError: The path is not an allowed memory file (see the module docstring),
                is not a regular file (a FIFO is refused at once, never waited on) or cannot
                be read. At most :data:`MAX_FILE_BYTES` of the file are read.
            ValueError: ``from_line < 1`` or ``lines < 0``.
        """
        real = self._resolve(path)
        if from_line < 1 or (lines is not None and lines < 0):
            raise ValueError(f"need from_line >= 1 and lines >= 0, got {from_line}, {lines}")
        try:
            text = read_memory_file(real).decode("utf-8", errors="replace")
        except FileNotFoundError:
            return ""
        stop = None if lines is None else from_line - 1 + lines
        return "\n".join(split_lines(text)[from_line - 1 : stop])

    def append_daily(self, text: str, *, date: dt.date | str | None = None) -> Path:
        """Append ``text`` (redacted, newline-terminated) to ``memory/YYYY-MM-DD.md``.

        Args:
            text: Notes to keep; must not be blank.
            date: The log's day (a date or ``"YYYY-MM-DD"``); default: today by ``clock()``.

        Returns:
            The daily log's path.

        Raises:
            StoreError: The daily log is not writable or would resolve outside ``memory/``.
            ValueError: ``text`` is blank or ``date`` is not a date.
        """
        if not text.strip():
            raise ValueError("append_daily needs non-blank text")
        if date is None:
            day = dt.date.fromtimestamp(self._clock())
        else:
            day = dt.date.fromisoformat(date) if isinstance(date, str) else date
        rel = f"{MEMORY_DIR}/{day.isoformat()}.md"
        body = self._redactor.redact(text).encode()
        body += b"" if body.endswith(b"\n") else b"\n"
        try:
            # No link is followed (memory/ or the log itself) and a hard-linked log is not
            # written into: an append must never land outside the workspace.
            flags = os.O_RDWR | os.O_APPEND | os.O_CREAT
            fd = open_in_store(self._root, rel, flags, 0o644, doing="append to", create_dirs=True)
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    body = b"\n" + body  # a hand-edited log may lack its final newline
                if os.write(fd, body) != len(body):  # one write: concurrent appends stay whole
                    raise OSError("short write (disk full?)")
            finally:
                os.close(fd)
        except OSError as exc:
            raise os_error(self._root / rel, exc, "append to") from exc
        return self._root / rel

    def chunks(self) -> list[MemoryChunk]:
        """The indexed chunks (after :meth:`sync`), by path and line."""
        self.sync()
        with self._lock:
            return sorted(self._chunks.values(), key=lambda c: (c.path, c.start_line, c.end_line))

    def stats(self) -> dict[str, int]:
        """Files and chunks indexed, syncs, files re-chunked, texts embedded."""
        with self._lock:
            return {"files": len(self._files), "chunks": len(self._chunks), **self._counts}

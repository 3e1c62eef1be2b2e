"""The knowledge store's log: ``knowledge.jsonl`` read back, appended to and compacted.

:class:`KnowledgeLog` keeps the in-memory state (the latest version of every fact and a token
index) equal to the file; :class:`memctx.store.knowledge.KnowledgeStore` adds the update
operations and the queries. The module docstring there describes the format and protocol.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from memctx.errors import StoreError
from memctx.fs import atomic_write
from memctx.text import Redactor, tokenize_unique

from .checksum import ChecksumError, canonical_json, seal_record, verify_record
from .files import StoreFileError, open_regular, os_error, resolve_store_dir
from .knowledge_rules import Fact
from .raw.lock import LockTimeout, StoreLock
from .raw.records import clean_text

__all__ = ["KNOWLEDGE_FILE", "KnowledgeLog"]

logger = logging.getLogger("memctx")

KNOWLEDGE_FILE = "knowledge.jsonl"
_LOCK_TIMEOUT_S = 30.0


def _line(fact: Fact) -> bytes:
    # A lone surrogate in a fact (a model may answer "\ud83d") cannot be UTF-8: it is written
    # as U+FFFD, as the raw store does, instead of failing the append of the whole batch.
    return seal_record(clean_text(canonical_json(fact.to_record())).encode()) + b"\n"


class KnowledgeLog:
    """The log of :class:`memctx.store.knowledge.KnowledgeStore` (same arguments)."""

    def __init__(
        self,
        store_dir: str | os.PathLike[str],
        *,
        redactor: Redactor | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._dir = resolve_store_dir(store_dir)
        self._path = self._dir / KNOWLEDGE_FILE
        self._redactor = redactor if redactor is not None else Redactor()
        self._clock = clock
        self._mutex = threading.RLock()
        self._counters = {"unknown_targets": 0, "compactions": 0}
        self._reset()
        try:
            self._dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise os_error(self._dir, exc, "create the knowledge store directory") from exc
        # The raw store's lock (the same flock py-filelock takes, so older writers still
        # exclude us): it opens the lock file with O_NOFOLLOW and never truncates it, so a
        # link planted as knowledge.jsonl.lock changes nothing outside the store.
        self._file_lock = StoreLock(Path(str(self._path) + ".lock"), _LOCK_TIMEOUT_S)
        self._lock_depth = 0
        with self._locked():
            pass

    @property
    def path(self) -> Path:
        """The ``knowledge.jsonl`` file."""
        return self._path

    # -- reading the log

    def _reset(self) -> None:
        self._facts: dict[str, Fact] = {}
        self._tokens: dict[str, frozenset[str]] = {}
        self._postings: dict[str, set[str]] = {}
        self._file_id: tuple[int, int] | None = None
        self._offset = 0
        self._lines = 0  # non-empty lines in the file, readable or not
        # Of the file as read now.
        self._bad = {"skipped_lines": 0, "torn_lines": 0, "checksum_mismatches": 0}

    def _put(self, fact: Fact) -> None:
        for tok in self._tokens.pop(fact.id, frozenset()):
            self._postings[tok].discard(fact.id)
            if not self._postings[tok]:
                del self._postings[tok]
        toks = frozenset(tokenize_unique(f"{fact.content}\n{fact.context}"))
        self._tokens[fact.id] = toks
        for tok in toks:
            self._postings.setdefault(tok, set()).add(fact.id)
        self._facts[fact.id] = fact

    def _withdraw(self, fact_id: str) -> None:
        """Forget a fact (its latest version failed its checksum)."""
        for tok in self._tokens.pop(fact_id, frozenset()):
            self._postings[tok].discard(fact_id)
            if not self._postings[tok]:
                del self._postings[tok]
        del self._facts[fact_id]

    def _read_new(self) -> None:
        """Read what was appended since the last read (caller holds the file lock)."""
        try:
            st = os.lstat(self._path)  # a symlink is refused below, never followed
        except FileNotFoundError:
            if self._file_id is not None:
                self._reset()
            return
        except OSError as exc:
            raise os_error(self._path, exc, "read") from exc
        if not stat.S_ISREG(st.st_mode):
            # A FIFO says size 0 and would never be read; a directory would fail later.
            open_regular(self._path, os.O_RDONLY, doing="read")  # raises StoreFileError
        if (st.st_dev, st.st_ino) != self._file_id or st.st_size < self._offset:
            self._reset()  # compacted (replaced) or truncated by someone: read it all again
            self._file_id = (st.st_dev, st.st_ino)
        if st.st_size == self._offset:
            return
        try:
            with os.fdopen(open_regular(self._path, os.O_RDONLY, doing="read"), "rb") as fh:
                fh.seek(self._offset)
                for raw in fh:  # streaming: never the whole file in memory at once
                    self._offset += len(raw)
                    self._ingest(raw)
        except FileNotFoundError:
            self._reset()  # removed between the stat and the open
        except OSError as exc:
            raise os_error(self._path, exc, "read") from exc

    def _ingest(self, raw: bytes) -> None:
        if not raw.strip():
            return
        self._lines += 1
        try:
            record = json.loads(raw)
            if isinstance(record, dict) and "crc" in record:
                verify_record(raw, record)
            self._put(Fact.from_record(record))
        except ChecksumError:
            self._bad["checksum_mismatches"] += 1
            fid = record.get("id")
            if isinstance(fid, str) and fid in self._facts:
                self._withdraw(fid)  # its latest version is unknown: serve none
            logger.warning(
                "%s: the record at byte %d does not match its checksum (changed on disk); "
                "not served",
                self._path,
                self._offset - len(raw),
            )
        except ValueError:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            self._bad["skipped_lines"] += 1
            torn = not raw.endswith(b"\n")  # we hold the lock, so no writer is mid-line
            self._bad["torn_lines"] += torn
            kind = "torn last" if torn else "unreadable"
            logger.warning(
                "%s: skipped %s line at byte %d", self._path, kind, self._offset - len(raw)
            )

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._mutex:
            if self._lock_depth:  # re-entered by this thread: the lock is held already
                self._lock_depth += 1
                try:
                    self._read_new()
                    yield
                finally:
                    self._lock_depth -= 1
                return
            try:
                self._file_lock.acquire()
            except LockTimeout as exc:
                raise StoreError(
                    f"cannot lock {self._path}.lock: {exc}; another process holds it, try again"
                ) from exc
            except OSError as exc:
                raise os_error(f"{self._path}.lock", exc, "lock") from exc
            self._lock_depth = 1
            try:
                self._read_new()
                yield
            finally:
                self._lock_depth = 0
                self._file_lock.release()

    def _refresh(self) -> None:
        """Catch up with other processes; a stat when nothing changed, the lock otherwise."""
        with self._mutex:
            try:
                st = os.lstat(self._path)
                if (st.st_dev, st.st_ino) == self._file_id and st.st_size == self._offset:
                    return
            except OSError:
                pass
            with self._locked():
                pass

    def reload(self) -> None:
        """Forget the in-memory state and replay the whole log."""
        with self._mutex:
            self._reset()
            self._refresh()

    # -- writing

    def _append(self, facts: list[Fact]) -> None:
        """Append complete lines with one write, then read them back (caller holds the lock)."""
        data = b"".join(_line(f) for f in facts)
        try:
            flags = os.O_RDWR | os.O_APPEND | os.O_CREAT
            fd = open_regular(self._path, flags, 0o600, doing="append to")
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    data = b"\n" + data  # end a torn line so it stays a line of its own
                if os.write(fd, data) != len(data):
                    raise OSError("short write (disk full?)")
            finally:
                os.close(fd)
        except OSError as exc:
            raise os_error(self._path, exc, "append to") from exc
        finally:
            with contextlib.suppress(StoreFileError):
                self._read_new()  # memory mirrors disk, even after a partial write
        if self._lines - len(self._facts) > len(self._facts):
            self._compact_locked()

    def _compact_locked(self) -> None:
        try:
            # 0600 as the appends create it: facts come from the user's conversations.
            atomic_write(self._path, (_line(f) for f in self._facts.values()))
        except OSError as exc:
            raise os_error(self._path, exc, "compact") from exc
        self._counters["compactions"] += 1
        self._reset()
        self._read_new()

    def compact(self) -> None:
        """Rewrite the log with only the latest version of each fact (atomic replace)."""
        with self._locked():
            self._compact_locked()

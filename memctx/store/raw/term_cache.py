"""``bm25.cache``: the segments' BM25 term counts, so that reopening a store skips tokenizing.

Counting terms is most of a reopen without it, even in bulk
(:mod:`memctx.store.raw.term_counter`): ~0.8 s of ~1.8 s for 20,000 segments of ~900 characters,
against ~0.9 s in all with it. The cache maps a segment's dedup digest (``sha256(sessionId + role +
content)``; the content decides the tokens) to its term counts, and the loader uses an entry
only for a line whose digest it has just computed. So the file can be stale, partial or left
over from another store without ever giving wrong counts, and it is never needed: anything
wrong with it (magic, format or tokenizer version, length, checksum) means "no cache", and a
missing entry means "tokenize this line". It is a cache of ``segments.jsonl`` like
``vectors.bin``, but one that nothing else reads, so it has its own simple format.

Layout (little-endian)::

    header   magic b"MCBM", u32 format version, u32 tokenizer version,
             u32 n_terms, u32 n_docs, u64 n_pairs, u64 terms_bytes
    terms    terms_bytes of UTF-8: n_terms terms joined by "\\n" ("" for an unused id;
             tokens never contain whitespace)
    digests  n_docs x 32 bytes
    lengths  n_docs x u32 (tokens in the document)
    sizes    n_docs x u32 (distinct terms in the document)
    pairs    n_pairs x (u32 term index, u32 count), document after document
    check    16-byte blake2b of everything above

The store writes it (:func:`memctx.fs.atomic_write`, mode 0600: tokens are conversation text)
when it closes, after a compaction, and after a load, whenever at least
:data:`STALE_MIN` segments (and 10% of them) are not in it yet; never on the add path. No
fsync: losing the file costs one slower reopen, nothing else.
"""

from __future__ import annotations

import hashlib
import logging
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final, NamedTuple

import numpy as np

from memctx.errors import StoreError
from memctx.fs import atomic_write
from memctx.retrieval import BM25Index, TermCounts
from memctx.text import TOKENIZER_VERSION

from ..files import read_regular

__all__ = ["STALE_MIN", "TERMS_FILE", "TermCache", "read_term_cache", "write_term_cache"]

logger = logging.getLogger("memctx")

TERMS_FILE: Final = "bm25.cache"
STALE_MIN: Final = 1024  # segments missing from the file before it is worth rewriting
_MAGIC: Final = b"MCBM"
_VERSION: Final = 2  # 2: counts of search_text() (the date and name added)
_HEADER: Final = struct.Struct("<4sIIIIQQ")
_DIGEST: Final = 32
_CHECK: Final = 16
_MAX_BYTES: Final = 1 << 32  # a cache this large is damage, or another file
_CHUNK: Final = 4096  # documents exported at a time: the writer's memory stays flat


class TermCache(NamedTuple):
    """A loaded ``bm25.cache``: every document's counts and the row of each digest."""

    counts: TermCounts
    row_of: dict[bytes, int]


def read_term_cache(path: Path) -> TermCache | None:
    """Load ``path``; ``None`` if it is missing, damaged, or from another tokenizer."""
    try:
        data, _size = read_regular(path, _MAX_BYTES)  # a FIFO in its place: refused, not read
    except (OSError, StoreError):
        return None
    try:
        return _parse(data)
    except (ValueError, UnicodeDecodeError, struct.error) as exc:
        logger.info("%s: ignored (%s); the segments are tokenized instead", path, exc)
        return None


def _parse(data: bytes) -> TermCache | None:
    magic, version, tokenizer, n_terms, n_docs, n_pairs, terms_bytes = _HEADER.unpack_from(data)
    if (magic, version) != (_MAGIC, _VERSION):
        raise ValueError(f"not a version-{_VERSION} term cache")
    if tokenizer != TOKENIZER_VERSION:
        return None  # written by another tokenizer: its counts are not ours
    size = _HEADER.size + terms_bytes + n_docs * (_DIGEST + 8) + n_pairs * 8 + _CHECK
    if len(data) != size:
        raise ValueError(f"{len(data)} bytes, the header implies {size}")
    body = memoryview(data)[:-_CHECK]
    if hashlib.blake2b(body, digest_size=_CHECK).digest() != data[-_CHECK:]:
        raise ValueError("checksum mismatch")
    pos = _HEADER.size
    blob = bytes(body[pos : pos + terms_bytes]).decode("utf-8")
    terms = blob.split("\n") if n_terms else []
    pos += terms_bytes
    if len(terms) != n_terms:
        raise ValueError(f"{len(terms)} terms, the header says {n_terms}")
    digests = body[pos : pos + n_docs * _DIGEST].tobytes()
    pos += n_docs * _DIGEST
    lengths = np.frombuffer(data, "<u4", n_docs, pos)
    sizes = np.frombuffer(data, "<u4", n_docs, pos + 4 * n_docs)
    pos += 8 * n_docs
    # Views into the file's bytes, not int64 copies: the pairs are the bulk of the file.
    pairs = np.frombuffer(data, "<u4", 2 * n_pairs, pos).reshape(-1, 2)
    term, tf = pairs[:, 0], pairs[:, 1]
    if int(sizes.sum(dtype=np.int64)) != n_pairs or (n_pairs and int(term.max()) >= n_terms):
        raise ValueError("pairs do not match the documents or the terms")
    row_of = {digests[i : i + _DIGEST]: n for n, i in enumerate(range(0, len(digests), _DIGEST))}
    return TermCache(TermCounts(terms, lengths, sizes, term, tf), row_of)


def write_term_cache(
    path: Path, bm25: BM25Index, keys: Sequence[int], digests: Sequence[bytes]
) -> None:
    """Write the counts of the documents ``keys`` of ``bm25`` under their ``digests``.

    Raises:
        OSError: The file cannot be written (the old one, if any, is left as it was).
    """
    first = bm25.term_counts(keys[:0])  # the vocabulary and nothing else
    terms = "\n".join(first.terms).encode("utf-8")
    lengths, sizes = bm25.doc_sizes(keys)
    header = _HEADER.pack(
        _MAGIC,
        _VERSION,
        TOKENIZER_VERSION,
        len(first.terms),
        len(keys),
        int(sizes.sum()),
        len(terms),
    )

    def sections() -> Iterator[bytes]:
        """The file's sections in order, the checksum of all of them last."""
        check = hashlib.blake2b(digest_size=_CHECK)
        table = (lengths.astype("<u4").tobytes(), sizes.astype("<u4").tobytes())
        for chunk in (header, terms, b"".join(digests), *table):
            check.update(chunk)
            yield chunk
        for i in range(0, len(keys), _CHUNK):
            counts = bm25.term_counts(keys[i : i + _CHUNK])
            # Term-id order within each document, whichever order it was indexed in
            # (one add tokenizes, a reopen counts in bulk): the same store, the same bytes.
            doc = np.repeat(np.arange(len(counts.sizes)), counts.sizes)
            order = np.lexsort((counts.term, doc))
            pairs = np.empty((len(counts.term), 2), dtype="<u4")
            pairs[:, 0], pairs[:, 1] = counts.term[order], counts.tf[order]
            chunk = pairs.tobytes()
            check.update(chunk)
            yield chunk
        yield check.digest()

    atomic_write(path, sections(), fsync=False)  # a cache: losing it costs one slow reopen

"""The raw store (the seed's WarmStore): every archived message, redacted, in
``segments.jsonl`` + ``vectors.bin`` + a BM25 index, safe for several processes at once.

:class:`RawStore` is the whole public surface; the modules beside it are its engine (state,
file I/O, records, vectors, term counts, the inter-process lock, compaction).
"""

from __future__ import annotations

from .lock import LockTimeout
from .records import validate_name, validate_role
from .store import NewSegment, RawStore, Segment, SegmentInfo, validate_session_id

__all__ = [
    "LockTimeout",
    "NewSegment",
    "RawStore",
    "Segment",
    "SegmentInfo",
    "validate_name",
    "validate_role",
    "validate_session_id",
]

"""The raw store (the seed's WarmStore): every archived message, redacted, in
``segments.jsonl`` + ``vectors.bin`` + a BM25 index, safe for several processes at once.

:class:`RawStore` (one class, in :mod:`.store`) is the whole public surface. The modules
beside it are helpers that hold none of its state: the record format (``records``), bytes and
files (``io``), the in-memory indexes (``index``), bulk term counting (``term_counter``), the
``bm25.cache`` file (``term_cache``), the per-message quota (``quota``), the inter-process lock
(``lock``) and ``vectors.bin`` (``vectors``).
"""

from __future__ import annotations

from .lock import LockTimeout
from .records import clean_text, validate_name, validate_role
from .store import NewSegment, RawStore, Segment, SegmentInfo, validate_session_id

__all__: list[str] = []

"""What memctx keeps on disk: the raw store (``segments.jsonl`` + ``vectors.bin`` + BM25), the
VMEM vector file, the knowledge store (``knowledge.jsonl``), memory files (``MEMORY.md``,
``memory/*.md``) and ``memory_search``.

May import: the foundations, :mod:`memctx.retrieval`, :mod:`memctx.llm`.
"""

from __future__ import annotations

from .checksum import ChecksumError
from .files import StoreFileError, open_in_store, read_regular, refused_paths, resolve_store_dir
from .knowledge import KNOWLEDGE_FILE, KnowledgeStore
from .knowledge_rules import Fact, FactType, NewFact, UpdateDecision, UpdateOp, decide_update
from .knowledge_rules import least_trusted as least_trusted
from .knowledge_rules import origin_trust as origin_trust
from .memory_files import MemoryChunk, MemoryFiles, MemoryHit
from .memory_search import MAX_LIMIT, memory_search, search_store
from .payloads import OUTPUT_DIR, OutputRef, read_output_ref, write_output_ref
from .raw import (
    LockTimeout,
    NewSegment,
    RawStore,
    Segment,
    SegmentInfo,
    clean_text,
    validate_name,
    validate_role,
    validate_session_id,
)
from .vmem import (
    VMEM_MAGIC,
    VMEM_VERSION,
    append_vmem,
    bad_vector_rows,
    iter_vmem,
    read_vmem,
    vmem_status,
    write_vmem,
)

__all__ = [
    "KnowledgeStore",
    "MemoryFiles",
    "RawStore",
    "memory_search",
    "read_output_ref",
]

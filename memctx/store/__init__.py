"""What memctx keeps on disk: the raw store (``segments.jsonl`` + ``vectors.bin`` + BM25), the
VMEM vector file, the knowledge store (``knowledge.jsonl``), memory files (``MEMORY.md``,
``memory/*.md``) and ``memory_search``.

May import: the foundations, :mod:`memctx.retrieval`, :mod:`memctx.llm`.
"""

from __future__ import annotations

from .knowledge import KNOWLEDGE_FILE, KnowledgeStore
from .knowledge_rules import Fact, FactType, NewFact, UpdateDecision, UpdateOp, decide_update
from .memory_files import MemoryChunk, MemoryFiles, MemoryHit
from .memory_search import MAX_LIMIT, memory_search, search_store
from .raw import (
    LockTimeout,
    NewSegment,
    RawStore,
    Segment,
    SegmentInfo,
    validate_name,
    validate_session_id,
)
from .vmem import (
    VMEM_MAGIC,
    VMEM_VERSION,
    append_vmem,
    iter_vmem,
    read_vmem,
    vmem_status,
    write_vmem,
)

__all__ = [
    "KNOWLEDGE_FILE",
    "MAX_LIMIT",
    "VMEM_MAGIC",
    "VMEM_VERSION",
    "Fact",
    "FactType",
    "KnowledgeStore",
    "LockTimeout",
    "MemoryChunk",
    "MemoryFiles",
    "MemoryHit",
    "NewFact",
    "NewSegment",
    "RawStore",
    "Segment",
    "SegmentInfo",
    "UpdateDecision",
    "UpdateOp",
    "append_vmem",
    "decide_update",
    "iter_vmem",
    "memory_search",
    "read_vmem",
    "search_store",
    "validate_name",
    "validate_session_id",
    "vmem_status",
    "write_vmem",
]

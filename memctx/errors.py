"""Exceptions memctx raises. Every message names the problem and the fix."""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "MemctxError",
    "StoreError",
    "StrategyError",
    "TranscriptError",
    "VmemError",
]


class MemctxError(Exception):
    """Base class for every error memctx raises on purpose."""


class ConfigError(MemctxError, ValueError):
    """A configuration file or value is invalid.

    The message lists each bad field by its dotted path, what is wrong, and what is allowed.
    """


class TranscriptError(MemctxError, ValueError):
    """A transcript file cannot be read as any supported format."""


class StoreError(MemctxError):
    """A persisted store (segments, knowledge, vectors, caches) cannot be read or written."""


class VmemError(StoreError):
    """A ``vectors.bin`` file is not a valid VMEM v1 file.

    The message names the file, what is wrong (magic, version, dimension, count against the
    file length, truncated header) and the expected value; the store rebuilds the vectors
    from ``segments.jsonl`` when it sees one.
    """


class StrategyError(MemctxError):
    """A strategy from outside memctx (a plugin) broke the strategy protocol.

    The message names the strategy, where it comes from (its module or entry point), the
    method, and what it returned or raised; the original exception is chained.
    """

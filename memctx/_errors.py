"""Exceptions memctx raises. Every message names the problem and the fix."""

from __future__ import annotations

__all__ = ["ConfigError", "MemctxError", "TranscriptError"]


class MemctxError(Exception):
    """Base class for every error memctx raises on purpose."""


class ConfigError(MemctxError, ValueError):
    """A configuration file or value is invalid.

    The message lists each bad field by its dotted path, what is wrong, and what is allowed.
    """


class TranscriptError(MemctxError, ValueError):
    """A transcript file cannot be read as any supported format."""

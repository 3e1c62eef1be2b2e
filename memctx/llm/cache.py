"""Disk cache of LLM responses, keyed by a sha256 of everything that shapes the output.

Layout: one small JSON file per response at ``<dir>/<k[0:2]>/<k[2:4]>/<k>.json`` where ``k``
is the hex key. The caller chooses ``<dir>``; memctx uses ``<store_dir>/llm-cache/``
(:func:`default_cache_dir`). One file per key rather than one append-only JSONL because:

- several sessions (threads or processes) share a store directory and call the LLM at the
  same time; a file written to a temporary name and moved into place with ``os.replace`` is
  atomic on POSIX and Windows, so writers need no lock and readers never see half a record;
- a lookup opens one file, where a JSONL log would have to be read whole (or indexed) at
  start-up and grow without bound as entries are replaced;
- a corrupt entry damages one key, which is then treated as a miss and overwritten.

The two-level fan-out keeps directories small (65,536 buckets) for large eval runs.

Nothing of the prompt is stored, only its hash, so the cache cannot leak conversation
text. A response that itself contains a secret is not stored at all (see
:meth:`ResponseCache.put`): memctx never persists an unredacted secret, and storing a
redacted copy would make a cache hit return different text than the miss did.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memctx.fs import atomic_write_beneath, open_beneath
from memctx.text import redact

__all__ = [
    "CACHE_DIRNAME",
    "CACHE_FORMAT_VERSION",
    "CachedResponse",
    "ResponseCache",
    "cache_key",
    "default_cache_dir",
]

# Bump when the key recipe or the stored record changes: old entries then simply miss.
CACHE_FORMAT_VERSION = 1
CACHE_DIRNAME = "llm-cache"

_log = logging.getLogger(__name__)
_MAX_ENTRY_BYTES = 64 << 20  # a response is kilobytes; a larger file is not ours (a miss)


def default_cache_dir(store_dir: str | os.PathLike[str]) -> Path:
    """Where memctx keeps LLM responses for a store: ``<store_dir>/llm-cache``."""
    return Path(store_dir) / CACHE_DIRNAME


@dataclass(frozen=True, slots=True)
class CachedResponse:
    """One stored response, with what the original call cost.

    Attributes:
        text: The response text.
        model: The model that produced it (as the provider reported it).
        prompt_tokens: Input tokens the original call used.
        completion_tokens: Output tokens the original call used.
        cost_usd: What the original call cost (0.0 when unpriced).
        priced: Whether ``cost_usd`` came from a price table.
        task: The memctx task of the original call.
    """

    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    priced: bool
    task: str


def _canonical(value: Any) -> Any:
    """A JSON-stable form of ``value``: pydantic classes become their schema, objects repr."""
    if isinstance(value, type):
        schema = getattr(value, "model_json_schema", None)
        name = f"{value.__module__}.{value.__qualname__}"
        # A response-format class shapes the output through its schema, not its name alone.
        return {"class": name, "schema": schema() if callable(schema) else None}
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    dump = getattr(value, "model_dump", None)  # pydantic objects (e.g. litellm Message)
    if callable(dump):
        return _canonical(dump())
    return repr(value)


def cache_key(
    *,
    model: str,
    messages: Sequence[Any],
    temperature: float,
    max_tokens: int | None,
    response_format: Any = None,
    params: Mapping[str, Any] | None = None,
) -> str:
    """The sha256 hex key of one request.

    The key covers the cache format version, the model string, the messages (every field,
    canonical JSON with sorted keys), temperature, max_tokens, response_format and any other
    parameter that reaches the model (``params``, e.g. ``mock_response``). Two requests with
    the same key would be sent identically, so they may share a response.

    Args:
        model: The litellm model string.
        messages: The messages as sent.
        temperature: The sampling temperature as sent.
        max_tokens: The output limit as sent (``None`` for the provider default).
        response_format: The response format as sent, if any.
        params: Any further request parameters that can change the output.

    Returns:
        64 lowercase hex characters.
    """
    payload = {
        "v": CACHE_FORMAT_VERSION,
        "model": model,
        "messages": _canonical(list(messages)),
        # float() so that 0 and 0.0 (same request) share a key.
        "temperature": float(temperature),
        "max_tokens": max_tokens,
        "response_format": _canonical(response_format),
        "params": _canonical(dict(params or {})),
    }
    raw = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


class ResponseCache:
    """A directory of cached responses; safe to share between threads and processes.

    Args:
        directory: Root of the cache, created on first write (e.g.
            ``default_cache_dir(store_dir)``).

    Reads and writes never raise for cache problems: an unreadable or corrupt entry is a
    miss, and a failed write is logged and skipped, because a cache must never be the
    reason an LLM call fails.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self._dir = Path(directory)
        # The directory's parent (the store) is trusted; nothing below it is followed through
        # a symlink, the cache directory itself included: a link planted as llm-cache/ (or
        # one of its folders, or an entry) is refused, never written through.
        self._root = self._dir.absolute().parent

    @property
    def directory(self) -> Path:
        """The cache root."""
        return self._dir

    def path_for(self, key: str) -> Path:
        """The file that holds ``key``'s entry (it may not exist)."""
        _check_key(key)
        return self._dir / key[0:2] / key[2:4] / f"{key}.json"

    def get(self, key: str) -> CachedResponse | None:
        """The entry for ``key``, or ``None`` when absent, unreadable or corrupt."""
        path = self.path_for(key)
        try:
            raw = self._read(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            _log.warning("memctx LLM cache: cannot read %s (%s); treating as a miss", path, exc)
            return None
        entry = _parse(raw, key)
        if entry is None:
            # Overwritten by the caller's next put(); nothing else to do.
            _log.info("memctx LLM cache: ignoring corrupt entry %s", path)
        return entry

    def put(self, key: str, entry: CachedResponse) -> bool:
        """Store ``entry`` under ``key`` atomically, replacing any previous file.

        A response whose text contains a secret (anything :func:`memctx.text.redaction.redact`
        would mask) is not stored.

        Returns:
            True when the entry was written.
        """
        path = self.path_for(key)
        if redact(entry.text) != entry.text:
            _log.info("memctx LLM cache: not caching a response that contains a secret")
            return False
        record = {"v": CACHE_FORMAT_VERSION, "key": key, **asdict(entry)}
        # ASCII JSON: a lone surrogate in a response ("\ud83d", half an emoji) is written as
        # its escape and read back as itself; encoded raw it raised and lost the whole call.
        data = json.dumps(record, ensure_ascii=True, sort_keys=True).encode("ascii")
        try:
            # No fsync: losing an entry in a crash costs one repeated call, not correctness.
            atomic_write_beneath(self._root, path.absolute(), data, fsync=False)
            return True
        except OSError as exc:
            _log.warning("memctx LLM cache: cannot write %s (%s); continuing uncached", path, exc)
            return False

    def _read(self, path: Path) -> str:
        """The entry file's text, opened without following a link below the store."""
        fd = open_beneath(self._root, path.absolute(), os.O_RDONLY)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, "not a regular file", str(path))
            return handle.read(_MAX_ENTRY_BYTES).decode("utf-8")


def _check_key(key: str) -> None:
    if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
        raise ValueError(f"LLM cache key must be 64 lowercase hex characters (got {key!r})")


def _parse(raw: str, key: str) -> CachedResponse | None:
    """A validated entry from a file's text, or ``None`` if anything is off."""
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    if record.get("v") != CACHE_FORMAT_VERSION or record.get("key") != key:
        return None
    text, model, task = record.get("text"), record.get("model"), record.get("task")
    prompt, completion = record.get("prompt_tokens"), record.get("completion_tokens")
    cost, priced = record.get("cost_usd"), record.get("priced")
    if not (isinstance(text, str) and isinstance(model, str) and isinstance(task, str)):
        return None
    # bool is an int subclass: a stored ``true`` is not a token count.
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    if isinstance(prompt, bool) or isinstance(completion, bool) or min(prompt, completion) < 0:
        return None
    if isinstance(cost, bool) or not isinstance(cost, int | float) or not isinstance(priced, bool):
        return None
    return CachedResponse(text, model, prompt, completion, float(cost), priced, task)

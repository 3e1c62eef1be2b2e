"""Checksums of store records: a ``crc`` member sealed on write, checked on read.

A record is sealed as its *canonical* JSON (compact separators, non-ASCII as is, members in
their order) with ``"crc": "<8 hex digits>"`` appended as the last member: the CRC-32 of the
canonical bytes *without* that member. memctx writes records canonically, so checking a line
it wrote is one C-speed CRC over the bytes before ``,"crc":`` plus the closing ``}``, nothing
re-encoded. A line that fails that (reformatted by a tool: other spacing, escapes, a BOM, an
encoding) is re-encoded canonically from its parsed members and checked again, so only a
change of its *content* fails: a flipped bit that leaves valid JSON, an edited value, a member
added or removed. CRC-32 finds every burst error of up to 32 bits. Records without ``crc``
(older files) are not checked; to edit a record by hand, drop its ``crc``. The formats are in
:mod:`memctx.store.raw.records` (``segments.jsonl``) and :mod:`memctx.store.knowledge`
(``knowledge.jsonl``).
"""

from __future__ import annotations

import json
import zlib
from typing import Any, Final

__all__ = ["ChecksumError", "canonical_json", "seal_record", "verify_record"]

_CRC_OPEN: Final = b',"crc":"'
_CRC_TAIL: Final = len(_CRC_OPEN) + 8 + 2  # ,"crc":" + 8 hex digits + "}
_HEX: Final = frozenset(b"0123456789abcdef")
_WHITESPACE: Final = b" \t\r\n"
# json.dumps with these arguments builds a new encoder on every call: one, made once.
canonical_json: Final = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False
).encode
"""The canonical JSON text of a record (what is sealed): ``canonical_json(obj) -> str``."""


class ChecksumError(ValueError):
    """A record's ``crc`` does not match its bytes: it changed after it was written."""


def seal_record(body: bytes) -> bytes:
    """``body`` (one compact JSON object, no newline) with its ``crc`` member appended."""
    return body[:-1] + b'%s%08x"}' % (_CRC_OPEN, zlib.crc32(body))


def verify_record(line: bytes, record: dict[str, Any]) -> None:
    """Check the ``crc`` of a record that has one (see the module docstring).

    Args:
        line: The record's line as read (surrounding whitespace and newline allowed).
        record: The line parsed (it has a ``crc`` member).

    Raises:
        ChecksumError: The record's content is not what was sealed.
    """
    start, end = 0, len(line)
    while end and line[end - 1] in _WHITESPACE:
        end -= 1
    while start < end and line[start] in _WHITESPACE:
        start += 1
    cut = end - _CRC_TAIL
    digits = line[cut + len(_CRC_OPEN) : end - 2]
    if (
        cut > start
        and line[cut : cut + len(_CRC_OPEN)] == _CRC_OPEN
        and line[end - 2 : end] == b'"}'
        and _HEX.issuperset(digits)
        and zlib.crc32(b"}", zlib.crc32(memoryview(line)[start:cut])) == int(digits, 16)
    ):
        return  # the bytes memctx wrote
    crc = record.get("crc")
    if not isinstance(crc, str) or len(crc) != 8 or not _HEX.issuperset(crc.encode()):
        raise ChecksumError(f"the record's crc {crc!r} is not 8 hex digits")
    members = {k: v for k, v in record.items() if k != "crc"}
    try:
        canonical = canonical_json(members).encode("utf-8", "surrogatepass")
    except ValueError as exc:  # NaN: memctx never writes one
        raise ChecksumError(f"the record cannot be sealed: {exc}") from exc
    if zlib.crc32(canonical) != int(crc, 16):
        raise ChecksumError("the record's content does not match its crc")

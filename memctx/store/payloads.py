"""Large texts kept whole on disk as file references (``tool-output/<name>.json``).

A tool output of megabytes costs too much to index line by line in a hook (tens of seconds,
hundreds of MB), yet it is the agent's record of what happened and must not be lost. The
archive indexes its head and tail and keeps the rest here, redacted, under a name the
archived text carries; :func:`read_output_ref` gives it back whole.

File format (one JSON object)::

    {"format": "memctx-output/1", "sha256": "<hex of content>", "bytes": <UTF-8 size>,
     "chars": <len>, "what": "<what the text is>", "content": "<the text>"}

Writes are atomic (a temporary file renamed over the target), so a reader sees the whole file
or none; a reader checks the digest, so a damaged file is an error, never a changed text.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from memctx.errors import StoreError
from memctx.fs import atomic_write_beneath

from .files import StoreFileError, open_in_store

__all__ = ["OUTPUT_DIR", "OutputRef", "read_output_ref", "write_output_ref"]

OUTPUT_DIR: Final = "tool-output"
_FORMAT: Final = "memctx-output/1"
_NAME_RE: Final = re.compile(r"[0-9a-f]{16,64}")
_MAX_READ: Final = 1 << 30  # a file ref above 1 GiB is not one memctx wrote


@dataclass(frozen=True, slots=True)
class OutputRef:
    """Where a kept text lives: ``ref`` (``tool-output/<name>.json``, relative to the store
    directory), the digest and size of its content."""

    ref: str
    sha256: str
    bytes: int


def _path_of(store_dir: Path, ref: str) -> Path:
    name = ref.removeprefix(f"{OUTPUT_DIR}/").removesuffix(".json")
    if not _NAME_RE.fullmatch(name) or ref != f"{OUTPUT_DIR}/{name}.json":
        raise StoreError(
            f"invalid output ref {ref!r}: expected '{OUTPUT_DIR}/<hex name>.json' as the "
            "archived note names it"
        )
    return store_dir / OUTPUT_DIR / f"{name}.json"


def _beneath(store_dir: str | Path, ref: str, root: str | Path | None) -> tuple[str | Path, str]:
    """The trusted folder and the path below it that no symlink may be followed on: the
    ref below ``store_dir`` itself, or below the store ``root`` that holds ``store_dir``."""
    if root is None:
        return store_dir, ref
    below = os.path.relpath(os.path.abspath(store_dir), os.path.abspath(root))
    if below == os.pardir or below.startswith(os.pardir + os.sep):
        raise StoreError(f"{store_dir} is not inside the store {root}; pass the store it is in")
    return root, ref if below == os.curdir else f"{below}/{ref}"


def write_output_ref(
    store_dir: str | Path, name: str, content: str, *, what: str, root: str | Path | None = None
) -> OutputRef:
    """Keep ``content`` whole under ``tool-output/<name>.json``; return its reference.

    Args:
        store_dir: The store's directory.
        name: 16-64 lower-case hex characters, chosen by the caller before the text is
            written (so the reference can be archived first).
        content: The text, already redacted by the caller.
        what: A short description (``"tool output of bash, lines 1201-210345"``).
        root: The store ``store_dir`` lies in, when it is a folder of one: no symlink is
            followed from there down (default: from ``store_dir`` down).

    Raises:
        StoreError: The name is invalid or the file cannot be written (the message says why).
    """
    ref = f"{OUTPUT_DIR}/{name}.json"
    path = _path_of(Path(store_dir), ref)
    data = content.encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(data).hexdigest()
    record = {
        "format": _FORMAT,
        "sha256": digest,
        "bytes": len(data),
        "chars": len(content),
        "what": what,
        "content": content,
    }
    try:
        # 0600 like segments.jsonl, which holds the rest of the same conversation. No link
        # below the store is followed: a symlinked tool-output/ is refused, not written into.
        atomic_write_beneath(
            *_beneath(store_dir, ref, root),
            json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogatepass"),
        )
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StoreFileError(f"cannot write {path}: {exc.strerror}") from exc
        raise StoreError(
            f"cannot write {path}: {exc.strerror or exc}; free disk space or make the store "
            "directory writable"
        ) from exc
    return OutputRef(ref, digest, len(data))


def read_output_ref(store_dir: str | Path, ref: str, *, root: str | Path | None = None) -> str:
    """The whole text kept under ``ref`` (as :func:`write_output_ref` returned it); ``root``
    as :func:`write_output_ref`.

    Raises:
        StoreError: The reference is malformed, the file is missing, not a regular file,
            unreadable, or its content does not match its digest.
    """
    path = _path_of(Path(store_dir), ref)
    try:
        # No symlinks, in the file's place or as tool-output/: a link planted under a valid
        # name must not read another file.
        fd = open_in_store(*_beneath(store_dir, ref, root), os.O_RDONLY, doing="open")
    except OSError as exc:
        raise StoreError(f"cannot open {path}: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_READ:
            raise StoreError(f"{path} is not a kept output (not a regular file, or too large)")
        raw = fh.read()
    try:
        record = json.loads(raw)
        content = record["content"]
        expected = record["sha256"]
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"{path} is damaged (not a memctx output file): {exc}") from exc
    if not isinstance(content, str) or not isinstance(expected, str):
        raise StoreError(f"{path} is damaged: content or digest of the wrong type")
    actual = hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
    if actual != expected:
        raise StoreError(f"{path} is damaged: its content does not match its sha256")
    return content

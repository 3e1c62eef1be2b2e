"""Issue 26, item 7: every numeric setting has a checked range, config files have a bounded
size and depth, and whatever the configuration, what ``on_context`` sends fits the window.

The attacks as the issue lists them (``maxSegments=10**8``, ``recallWindowRatio=1.0`` with a
huge ``hardCapTokens``, ``reserveTokens=10**12``, ``protectedRecentMessages=10**9``, an
``openclaw.json`` nested 100,000 deep), then the classes: every numeric field of the model
refuses values just outside its range with its dotted path and the range, and random valid
configurations (every numeric field drawn across its range, ends included) never make the
context hook send more than the window.
"""

from __future__ import annotations

import math
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from strategies import FORMATS, examples, trim_cases

from memctx import MemoryContextConfig
from memctx.config import load_config
from memctx.config.model import Shown
from memctx.errors import ConfigError
from memctx.messages.markers import is_recalled_block
from memctx.messages.pairing import pairing_violations
from memctx.messages.tokens import estimate_message_tokens
from memctx.runtime.engine import MemoryContext
from memctx.trim.smart import protected_mask

WINDOW = 8_000


def _tokens(messages: list[Any]) -> int:
    return sum(estimate_message_tokens(m) for m in messages)


def _conversation(turns: int = 30) -> list[dict[str, Any]]:
    """A chat of ``turns`` exchanges of ~330 tokens each, ending with a question about one."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(turns):
        filler = "lorem ipsum dolor sit amet " * 40
        messages.append({"role": "user", "content": f"zebrafish port {i} is {7000 + i}. {filler}"})
        messages.append({"role": "assistant", "content": f"noted zebrafish port {i}. {filler}"})
    messages.append({"role": "user", "content": "what is the zebrafish port 3?"})
    return messages


def _sent(config: MemoryContextConfig, tmp_path: Path, window: int = WINDOW) -> list[Any]:
    """What ``on_context`` sends on the second call of a session whose history was archived."""
    with MemoryContext(
        config, store_dir=tmp_path, session_id="s", context_window_tokens=window
    ) as mem:
        mem.on_before_compact(_conversation())
        mem.on_context(_conversation())
        out = mem.on_context(_conversation())
        assert not any(k.endswith("_failures") for k in mem.stats()["counts"])
    return out


# --- the attacks as written -----------------------------------------------------------------


def test_max_segments_of_10e8_is_refused_with_its_range() -> None:
    # Accepted before: every archive then failed allocating 143 GiB for the vector matrix.
    with pytest.raises(ConfigError, match=r"maxSegments: must be an integer in \[1, 1,000,000\]"):
        MemoryContextConfig.from_dict({"maxSegments": 10**8})


@pytest.mark.parametrize(
    ("setting", "value", "bound"),
    [
        ("hardCapTokens", 10**9, "[1, 10,000,000]"),
        ("reserveTokens", 10**12, "[0, 10,000,000]"),
        ("protectedRecentMessages", 10**9, "[0, 1,000]"),
    ],
)
def test_the_issues_extreme_values_are_refused(setting: str, value: int, bound: str) -> None:
    with pytest.raises(ConfigError) as caught:
        MemoryContextConfig.from_dict({setting: value})
    assert f"{setting}: must be an integer in {bound}, got {value}" in str(caught.value)


@pytest.mark.parametrize(
    "settings_",
    [
        # 8,971 tokens went to an 8,000 window: a recall cap as large as the window.
        {"recall_window_ratio": 1.0, "hard_cap_tokens": 10_000_000},
        # Everything protected: 12,101 tokens went to an 8,000 window.
        {"protected_recent_messages": 1_000},
        # A reserve larger than the window, at its bound.
        {"reserve_tokens": 10_000_000},
        {"recall_window_ratio": 1.0, "reserve_tokens": 0, "protected_recent_messages": 1_000},
    ],
)
def test_the_largest_valid_values_still_fit_the_window(
    tmp_path: Path, settings_: dict[str, Any]
) -> None:
    config = MemoryContextConfig(knowledge_extraction=False, **settings_)
    out = _sent(config, tmp_path)
    assert _tokens(out) <= WINDOW
    assert pairing_violations(out) == []
    assert _conversation()[-1] in out  # the latest request always goes out


def test_settings_that_leave_no_room_for_history_are_named_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = MemoryContextConfig(knowledge_extraction=False, reserve_tokens=WINDOW)
    with caplog.at_level("WARNING", logger="memctx"):
        out = _sent(config, tmp_path)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1, warnings
    assert "reserveTokens 8000 and the recall cap 800 leave no room" in warnings[0]
    assert "lower reserveTokens, hardCapTokens or recallWindowRatio" in warnings[0]
    assert _tokens(out) <= WINDOW


def test_protected_messages_in_the_reserve_leave_the_block_its_usual_share(
    tmp_path: Path,
) -> None:
    # 16 protected messages (~5,300 tokens) fill window - reserveTokens (4,000) by
    # themselves: the block still gets its cap (a tenth of the window), within the window.
    config = MemoryContextConfig(knowledge_extraction=False, protected_recent_messages=16)
    with MemoryContext(
        config, store_dir=tmp_path, session_id="s", context_window_tokens=WINDOW
    ) as mem:
        mem.on_before_compact(_conversation())
        out = mem.on_context(_conversation())
        record = mem.last_call
        assert "recall_cap_reduced" not in mem.stats()["counts"]
    assert _tokens(out) > WINDOW - config.reserve_tokens  # the agent's messages took it
    assert _tokens(out) <= WINDOW
    block = next(m for m in out if is_recalled_block(m))
    assert "7003" in block["content"]
    assert record is not None and record.recall_tokens <= config.recall_cap_tokens(WINDOW)


def test_a_recall_block_as_large_as_the_window_leaves_the_replys_reserve(tmp_path: Path) -> None:
    # The cap is the whole window; the block gets what the kept messages leave of
    # window - reserveTokens, so the reply keeps its reserve.
    config = MemoryContextConfig(
        knowledge_extraction=False, recall_window_ratio=1.0, hard_cap_tokens=10_000_000
    )
    out = _sent(config, tmp_path)
    assert any(is_recalled_block(m) for m in out)  # recall still works, within the room
    assert _tokens(out) <= WINDOW - config.reserve_tokens


def test_protected_messages_beyond_the_window_are_trimmed_and_archived(tmp_path: Path) -> None:
    config = MemoryContextConfig(knowledge_extraction=False, protected_recent_messages=1_000)
    with MemoryContext(
        config, store_dir=tmp_path, session_id="s", context_window_tokens=WINDOW
    ) as mem:
        out = mem.on_context(_conversation())
        mem.wait_idle(30)
        counts = mem.stats()["counts"]
        found = mem.memory_search("zebrafish port 0", limit=3)
    assert _tokens(out) <= WINDOW
    assert counts["protected_messages_unprotected"] == 1 and counts["trims"] == 1
    assert any("zebrafish port 0 is 7000" in hit["content"] for hit in found)


def test_pruning_never_makes_a_tool_result_longer(tmp_path: Path) -> None:
    # Found by the property below: with the smallest ratios, a 3-character result was
    # "cleared" to the 33-character placeholder (and soft trim's note can outgrow a short
    # result), so a context that fitted the window no longer did.
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "start"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "fix"},
    ]
    pruning = {
        "mode": "cache-ttl",
        "keepLastAssistants": 0,
        "softTrimRatio": 1e-9,
        "hardClearRatio": 1e-9,
        "minPrunableToolChars": 0,
        "softTrim": {"maxChars": 2, "headChars": 0, "tailChars": 0},
    }
    config = MemoryContextConfig(
        knowledge_extraction=False, reserve_tokens=0, context_pruning=pruning
    )
    window = _tokens(messages)
    with MemoryContext(
        config, store_dir=tmp_path, session_id="s", context_window_tokens=window
    ) as mem:
        out = mem.on_context(messages)
    assert out == messages and _tokens(out) <= window


def _nested_openclaw(depth: int) -> str:
    return (
        '{"agents": {"defaults": {"memoryContext": {"hardCapTokens": 2000}}}, "x": '
        + "[" * depth
        + "]" * depth
        + "}"
    )


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("openclaw.json", _nested_openclaw(100_000)),
        ("deep.json", '{"a": ' + '{"b": ' * 100_000 + "1" + "}" * 100_000 + "}"),
        ("deep.toml", "a = " + "[" * 100_000 + "]" * 100_000 + "\n"),
        ("inline.toml", "a = " + "{b = " * 100_000 + "1" + "}" * 100_000 + "\n"),
    ],
    ids=["openclaw.json", "deep.json", "deep.toml", "inline.toml"],
)
def test_deeply_nested_config_files_give_config_error(tmp_path: Path, name: str, text: str) -> None:
    # The openclaw.json raised RecursionError before.
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"nested more than 64 levels deep at line 1, column"):
        load_config(path)


def test_nesting_within_the_bound_and_brackets_in_strings_and_comments_are_fine(
    tmp_path: Path,
) -> None:
    path = tmp_path / "openclaw.json"
    path.write_text(
        _nested_openclaw(60).replace('"x"', '// [[[[ {{{{\n "note": "[[[[[{{{{", "x"'),
        encoding="utf-8",
    )
    assert load_config(path).hard_cap_tokens == 2000
    toml = tmp_path / "memctx.toml"
    toml.write_text(
        '# [[[[[[\nhardCapTokens = 2000\n[compaction]\nmode = "default" # {{{{\n',
        encoding="utf-8",
    )
    assert load_config(toml).compaction.mode == "default"


def test_a_huge_config_file_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    path = tmp_path / "memctx.json"
    with path.open("wb") as handle:  # valid JSON: 64 MiB of spaces, then an empty object
        handle.seek(64 * 1024 * 1024)
        handle.write(b"{}")
    with pytest.raises(ConfigError, match=r"larger than 4,194,304 bytes"):
        load_config(path)


def test_deeply_nested_settings_in_memory_give_config_error() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(100_000):
        node["compaction"] = {}
        node = node["compaction"]
    with pytest.raises(ConfigError, match="nested more than 64 levels deep"):
        MemoryContextConfig.from_dict(deep)
    with pytest.raises(ConfigError, match="nested more than 64 levels deep"):
        MemoryContextConfig().with_overrides(deep)
    with pytest.raises(ConfigError, match="nested more than 64 levels deep"):
        MemoryContextConfig(compaction={"mode": _deep_list()})


def _deep_list() -> list[Any]:
    value: list[Any] = []
    for _ in range(100_000):
        value = [value]
    return value


# --- every numeric field has a range --------------------------------------------------------

_RANGE = re.compile(r"(integer|number) in ([\[(])([-\d.,]+), ([-\d.,]+)\]")


def _numeric_fields(
    model: type[BaseModel] = MemoryContextConfig, prefix: str = ""
) -> Iterator[tuple[str, str, Any]]:
    """``(dotted camelCase path, snake_case path, field)`` of every numeric setting."""
    for name, info in model.model_fields.items():
        key = f"{prefix}{info.alias or name}"
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from (
                (f"{key}.{sub}", f"{name}.{snake}", field)
                for sub, snake, field in _numeric_fields(annotation)
            )
        elif annotation in (int, float):
            yield key, name, info


NUMERIC = list(_numeric_fields())


def _bounds(info: Any) -> tuple[str, float, float, bool]:
    """(kind, low, high, low end open) read from the field's documented range."""
    shown = [m.text for m in info.metadata if isinstance(m, Shown)]
    assert shown, "every numeric setting shows its range in docs/configuration.md"
    match = _RANGE.fullmatch(shown[0])
    assert match is not None, f"not a closed range: {shown[0]!r}"
    kind, opening, low, high = match.groups()
    return kind, float(low.replace(",", "")), float(high.replace(",", "")), opening == "("


def test_every_numeric_setting_has_a_finite_range() -> None:
    assert len(NUMERIC) >= 45  # the walk found the sections' fields, not only the top level
    for path, _snake, info in NUMERIC:
        _kind, low, high, _open = _bounds(info)
        assert math.isfinite(low) and math.isfinite(high) and low < high, path


def _outside(kind: str, low: float, high: float, low_open: bool) -> list[Any]:
    if kind == "integer":
        return [int(low) - 1, int(high) + 1, 10**18]
    below = low if low_open else low - 0.001
    return [below, high + 0.001, math.inf, -math.inf, math.nan, 1e308]


@pytest.mark.parametrize(("path", "info"), [pytest.param(p, i, id=p) for p, _s, i in NUMERIC])
def test_values_outside_a_range_name_the_setting_and_the_range(path: str, info: Any) -> None:
    kind, low, high, low_open = _bounds(info)
    shown = next(m.text for m in info.metadata if isinstance(m, Shown))
    for value in _outside(kind, low, high, low_open):
        with pytest.raises(ConfigError) as caught:
            MemoryContextConfig().with_overrides({path: value})
        message = str(caught.value)
        assert f"{path}: must be {'an' if kind == 'integer' else 'a'} {shown}" in message, (
            value,
            message,
        )


def test_durations_are_bounded() -> None:
    with pytest.raises(ConfigError, match=r"contextPruning.ttl: must be at most 30 days"):
        MemoryContextConfig.from_dict({"contextPruning": {"ttl": "9" * 400 + "d"}})
    assert MemoryContextConfig.from_dict({"contextPruning": {"ttl": "30d"}}).context_pruning


# --- any valid configuration fits the window ------------------------------------------------


def _draw_in_range(kind: str, low: float, high: float, low_open: bool) -> st.SearchStrategy[Any]:
    if kind == "integer":
        return st.sampled_from([int(low), int(high)]) | st.integers(int(low), int(high))
    smallest = math.nextafter(low, math.inf) if low_open else low
    return st.sampled_from([smallest, high]) | st.floats(
        low, high, exclude_min=low_open, allow_nan=False
    )


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    *sections, last = dotted.split(".")
    for section in sections:
        data = data.setdefault(section, {})
    data[last] = value


@st.composite
def valid_configs(draw: st.DrawFn) -> MemoryContextConfig:
    """Every numeric setting drawn across its range (ends included), cross-field rules
    repaired so the draw is valid; no extraction (no model to call) and hash embeddings."""
    data: dict[str, Any] = {}
    for _path, snake, info in NUMERIC:
        _set(data, snake, draw(_draw_in_range(*_bounds(info))))
    data["vector_weight"] = 1.0 - data["text_weight"]
    hybrid = data["memory_search"]["query"]["hybrid"]
    hybrid["vector_weight"] = 1.0 - hybrid["text_weight"]
    compaction = data["compaction"]
    compaction["min_chunk_ratio"] = min(
        compaction["min_chunk_ratio"], compaction["base_chunk_ratio"]
    )
    trim = data["context_pruning"]["soft_trim"]
    trim["max_chars"] = max(trim["max_chars"], 2)
    trim["head_chars"] = min(trim["head_chars"], (trim["max_chars"] - 1) // 2)
    trim["tail_chars"] = min(trim["tail_chars"], (trim["max_chars"] - 1) // 2)
    search = data["memory_search"]
    search["chunk_overlap_tokens"] = min(search["chunk_overlap_tokens"], search["chunk_tokens"] - 1)
    planner = data["planner"]
    planner["tool_payload_max_chars"] = max(planner["tool_payload_max_chars"], 2)
    planner["tool_payload_preview_chars"] = min(
        planner["tool_payload_preview_chars"], planner["tool_payload_max_chars"] - 1
    )
    data["context_pruning"]["mode"] = draw(st.sampled_from(["off", "cache-ttl"]))
    data["recall_placement"] = draw(st.sampled_from(["after-system", "before-request", "end"]))
    data["knowledge_extraction"] = False
    return MemoryContextConfig(**data)


_settings = settings(
    max_examples=examples(30, thorough_at_most=300),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    deadline=None,
)


@pytest.mark.parametrize("fmt", FORMATS)
def test_property_any_valid_config_fits_the_window(fmt: str) -> None:
    @_settings
    @given(config=valid_configs(), case=trim_cases(fmt), data=st.data())
    def run(config: MemoryContextConfig, case: Any, data: st.DataObject) -> None:
        messages = case.messages
        base = [m for m in messages if not is_recalled_block(m)]
        # What stays whatever protectedRecentMessages says: system messages, a summary, the
        # last tool call with its results and the last message. Alone over the window, only
        # the oversized cut can help (its own tests); the property is about the settings.
        kept = protected_mask(base, protected_recent=1)
        floor = _tokens([m for m, k in zip(base, kept, strict=True) if k])
        window = floor + data.draw(st.integers(0, 2 * _tokens(messages)), label="window")
        assume(window > 0)
        with (
            tempfile.TemporaryDirectory() as tmp,
            MemoryContext(
                config, store_dir=Path(tmp), session_id="p", context_window_tokens=window
            ) as mem,
        ):
            mem.on_before_compact(messages[: len(messages) // 2])
            for _ in range(2):
                out = mem.on_context(messages)
                assert _tokens(out) <= window, (window, mem.stats()["counts"])
                assert pairing_violations(out) == []
            counts = mem.stats()["counts"]
            assert not any(k.endswith("_failures") for k in counts), mem.stats()["last_error"]

    run()

"""Tests for memctx.config.model: defaults, spellings, strict validation, files and overrides."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from memctx.config.files import load_config
from memctx.config.model import (
    DEFAULT_CONFIG,
    CompactionConfig,
    ContextPruningConfig,
    MemoryContextConfig,
    SoftTrimConfig,
    defaults,
    parse_duration,
)
from memctx.errors import ConfigError


def config_error(data: dict[str, Any]) -> str:
    """The message of the ConfigError that from_dict raises for ``data``."""
    with pytest.raises(ConfigError) as info:
        MemoryContextConfig.from_dict(data)
    return str(info.value)


# --- defaults -------------------------------------------------------------------------------


def test_top_level_defaults_match_seed_000_and_design() -> None:
    """Seed defaults, except the two that measurement changed (kept in ``seed_preset``) and
    ``enabled``: constructing memctx is the opt-in, ``false`` the explicit off switch."""
    c = MemoryContextConfig()
    assert c.enabled is True
    assert c.hard_cap_tokens == 4000
    assert c.embedding_model == "hash"
    assert c.redaction is True
    assert c.knowledge_extraction is True
    assert c.auto_recall_min_score == 0.0
    assert c.max_segments == 20000
    assert c.cross_session is False
    assert c.eviction_days == 90
    assert c.reserve_tokens == 4000
    assert c.recall_window_ratio == 0.10
    assert c.knowledge_share == 0.3
    assert c.protected_recent_messages == 6
    assert c.knowledge_search_limit == 10
    assert c.time_decay == 1.0
    assert (c.vector_weight, c.text_weight) == (0.7, 0.3)
    assert c.extraction_model == "memctx/offline"
    assert c.token_counter == "estimate"


def test_seed_preset_restores_the_seed_values_and_takes_overrides() -> None:
    seed = MemoryContextConfig.seed_preset()
    assert (seed.auto_recall_min_score, seed.time_decay) == (0.7, 0.995)
    assert MemoryContextConfig.seed_preset(hard_cap_tokens=2000).hard_cap_tokens == 2000


def test_compaction_defaults_match_seeds_001_and_002() -> None:
    c = MemoryContextConfig().compaction
    assert c.mode == "default"
    assert c.reserve_tokens_floor == 20000
    assert c.max_history_share == 0.5
    assert (c.base_chunk_ratio, c.min_chunk_ratio, c.safety_margin) == (0.4, 0.15, 1.2)
    assert c.memory_flush.enabled is True
    assert c.memory_flush.soft_threshold_tokens == 4000
    assert c.memory_flush.prompt.startswith("Pre-compaction memory flush.\n")
    assert "APPEND new content only" in c.memory_flush.prompt
    assert c.memory_flush.prompt.endswith("reply with <NO_REPLY>.")
    assert c.memory_flush.system_prompt == "Session nearing compaction. Store durable memories now."
    assert c.auto_compact_threshold == 100000
    assert c.recent_turn_budget == 4
    assert c.max_summary_tokens == 4096
    assert c.min_turns_between_compactions == 3


def test_pruning_search_and_planner_defaults_match_seeds_003_and_004() -> None:
    c = MemoryContextConfig()
    p = c.context_pruning
    assert (p.mode, p.ttl, p.ttl_seconds, p.keep_last_assistants) == ("off", "5m", 300.0, 3)
    assert (p.soft_trim.max_chars, p.soft_trim.head_chars, p.soft_trim.tail_chars) == (
        4000,
        1500,
        1500,
    )
    assert p.hard_clear.enabled is True
    assert p.hard_clear.placeholder == "[Old tool result content cleared]"
    hybrid = c.memory_search.query.hybrid
    assert (hybrid.enabled, hybrid.vector_weight, hybrid.text_weight) == (True, 0.7, 0.3)
    assert (hybrid.temporal_decay.enabled, hybrid.temporal_decay.half_life_days) == (False, 30.0)
    assert c.memory_search.max_injected_chars == 4000
    assert (c.memory_search.chunk_tokens, c.memory_search.chunk_overlap_tokens) == (400, 80)
    assert c.planner.summary_pressure_ratio == 0.72
    assert 0 < c.planner.safety_ratio <= 1
    assert c.planner.tool_payload_preview_chars < c.planner.tool_payload_max_chars


def test_default_config_helpers() -> None:
    assert defaults() is DEFAULT_CONFIG
    assert MemoryContextConfig() == DEFAULT_CONFIG
    assert MemoryContextConfig.from_dict({}) == DEFAULT_CONFIG


def test_config_is_frozen() -> None:
    with pytest.raises(ValidationError, match="frozen"):
        DEFAULT_CONFIG.hard_cap_tokens = 1
    with pytest.raises(ValidationError, match="frozen"):
        DEFAULT_CONFIG.compaction.mode = "safeguard"


@pytest.mark.parametrize(
    ("window", "cap"), [(200_000, 4000), (20_000, 2000), (12_345, 1234), (0, 0)]
)
def test_recall_cap_is_min_of_hard_cap_and_window_share(window: int, cap: int) -> None:
    assert DEFAULT_CONFIG.recall_cap_tokens(window) == cap


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30.0), ("5m", 300.0), ("1h", 3600.0), ("1.5d", 129600.0)]
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["5", "5 minutes", "0s", "-1m", "m", ""])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ConfigError, match="duration like '30s', '5m' or '1h'"):
        parse_duration(text)


# --- spellings ------------------------------------------------------------------------------

CAMEL: dict[str, Any] = {
    "enabled": True,
    "hardCapTokens": 3000,
    "embeddingModel": "transformer",
    "autoRecallMinScore": 0.5,
    "crossSession": True,
    "evictionDays": 30,
    "recallWindowRatio": 0.2,
    "compaction": {
        "mode": "safeguard",
        "reserveTokensFloor": 10000,
        "maxHistoryShare": 0.6,
        "memoryFlush": {"enabled": False, "softThresholdTokens": 2000},
    },
    "contextPruning": {
        "mode": "cache-ttl",
        "keepLastAssistants": 2,
        "softTrim": {"maxChars": 5000, "headChars": 1000, "tailChars": 1000},
        "hardClear": {"placeholder": "[cleared]"},
    },
    "memorySearch": {
        "query": {
            "hybrid": {"vectorWeight": 0.6, "textWeight": 0.4, "temporalDecay": {"enabled": True}}
        },
        "maxInjectedChars": 2500,
    },
    "planner": {"summaryPressureRatio": 0.8},
}
SNAKE: dict[str, Any] = {
    "enabled": True,
    "hard_cap_tokens": 3000,
    "embedding_model": "transformer",
    "auto_recall_min_score": 0.5,
    "cross_session": True,
    "eviction_days": 30,
    "recall_window_ratio": 0.2,
    "compaction": {
        "mode": "safeguard",
        "reserve_tokens_floor": 10000,
        "max_history_share": 0.6,
        "memory_flush": {"enabled": False, "soft_threshold_tokens": 2000},
    },
    "context_pruning": {
        "mode": "cache-ttl",
        "keep_last_assistants": 2,
        "soft_trim": {"max_chars": 5000, "head_chars": 1000, "tail_chars": 1000},
        "hard_clear": {"placeholder": "[cleared]"},
    },
    "memory_search": {
        "query": {
            "hybrid": {
                "vector_weight": 0.6,
                "text_weight": 0.4,
                "temporal_decay": {"enabled": True},
            }
        },
        "max_injected_chars": 2500,
    },
    "planner": {"summary_pressure_ratio": 0.8},
}


def test_camel_and_snake_spellings_are_equal_at_every_level() -> None:
    camel = MemoryContextConfig.from_dict(CAMEL)
    snake = MemoryContextConfig.from_dict(SNAKE)
    assert camel == snake
    assert camel != DEFAULT_CONFIG
    assert camel.hard_cap_tokens == 3000
    assert camel.compaction.memory_flush.soft_threshold_tokens == 2000
    assert camel.context_pruning.soft_trim.head_chars == 1000
    assert camel.memory_search.query.hybrid.temporal_decay.enabled is True
    assert camel.planner.summary_pressure_ratio == 0.8


def test_direct_construction_accepts_both_spellings() -> None:
    assert MemoryContextConfig(hardCapTokens=123) == MemoryContextConfig(hard_cap_tokens=123)
    assert CompactionConfig(maxHistoryShare=0.3).max_history_share == 0.3


def test_dump_by_alias_uses_camel_case() -> None:
    dumped = DEFAULT_CONFIG.model_dump(by_alias=True)
    assert dumped["hardCapTokens"] == 4000
    assert dumped["compaction"]["memoryFlush"]["softThresholdTokens"] == 4000
    assert dumped["contextPruning"]["softTrim"]["headChars"] == 1500
    assert dumped["memorySearch"]["query"]["hybrid"]["temporalDecay"]["halfLifeDays"] == 30.0
    assert "hard_cap_tokens" not in dumped


@pytest.mark.parametrize("by_alias", [True, False])
def test_round_trip_through_dump_and_from_dict(by_alias: bool) -> None:
    original = MemoryContextConfig.from_dict(CAMEL)
    assert MemoryContextConfig.from_dict(original.model_dump(by_alias=by_alias)) == original


def test_round_trip_through_a_json_file(tmp_path: Path) -> None:
    original = MemoryContextConfig.from_dict(SNAKE)
    path = tmp_path / "memctx.json"
    path.write_text(json.dumps(original.model_dump(by_alias=True)))
    assert load_config(path) == original


# --- validation -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"hardCapTokens": 0}, ["hardCapTokens", "an integer in [1, 10,000,000]", "got 0"]),
        ({"hard_cap_tokens": -5}, ["hard_cap_tokens", "an integer in [1, 10,000,000]"]),
        ({"maxSegments": 0}, ["maxSegments", "an integer in [1, 1,000,000]"]),
        ({"evictionDays": -1}, ["evictionDays", "an integer in [1, 36,500]"]),
        ({"knowledgeSearchLimit": 0}, ["knowledgeSearchLimit", "an integer in [1, 1,000]"]),
        ({"reserveTokens": -1}, ["reserveTokens", "an integer in [0, 10,000,000]"]),
        ({"protectedRecentMessages": -1}, ["protectedRecentMessages", "an integer in [0, 1,000]"]),
        ({"recallWindowRatio": 0}, ["recallWindowRatio", "in (0, 1]"]),
        ({"recallWindowRatio": 1.5}, ["recallWindowRatio", "in (0, 1]", "got 1.5"]),
        ({"knowledgeShare": 0.0}, ["knowledgeShare", "in (0, 1]"]),
        ({"timeDecay": 1.01}, ["timeDecay", "in (0, 1]"]),
        ({"autoRecallMinScore": 1.2}, ["autoRecallMinScore", "in [0, 1]"]),
        ({"vectorWeight": -0.1, "textWeight": 1.1}, ["vectorWeight", "in [0, 1]"]),
        ({"vectorWeight": 0.6}, ["vectorWeight + textWeight must sum to 1", "= 0.9"]),
        ({"textWeight": 0.4}, ["sum to 1", "0.7 + 0.4 = 1.1"]),
        ({"vectorWeight": 0.70001}, ["sum to 1", "1.00001"]),
        ({"embeddingModel": "bert"}, ["embeddingModel", "'hash' or 'transformer'", "'bert'"]),
        ({"extractionModel": "  "}, ["extractionModel", "non-empty"]),
        ({"tokenCounter": ""}, ["tokenCounter", "non-empty"]),
        ({"hardCapTokens": "4000"}, ["hardCapTokens", "valid integer", "'4000'"]),
        ({"hardCapTokens": 4000.5}, ["hardCapTokens", "valid integer"]),
        ({"hardCapTokens": True}, ["hardCapTokens", "valid integer"]),
        ({"enabled": "yes"}, ["enabled", "valid boolean"]),
        ({"compaction": 5}, ["compaction", "valid dictionary"]),
        ({"compaction": {"mode": "fast"}}, ["compaction.mode", "'default' or 'safeguard'"]),
        ({"compaction": {"maxHistoryShare": 0.05}}, ["compaction.maxHistoryShare", "[0.1, 0.9]"]),
        ({"compaction": {"maxHistoryShare": 0.95}}, ["maxHistoryShare", "[0.1, 0.9]"]),
        ({"compaction": {"reserveTokensFloor": -1}}, ["reserveTokensFloor", "in [0, 10,000,000]"]),
        ({"compaction": {"safetyMargin": 0.9}}, ["compaction.safetyMargin", "a number in [1, 10]"]),
        ({"compaction": {"minChunkRatio": 0.5}}, ["minChunkRatio", "<= baseChunkRatio"]),
        ({"compaction": {"baseChunkRatio": 1.2}}, ["baseChunkRatio", "in (0, 1]"]),
        (
            {"compaction": {"autoCompactThreshold": 0}},
            ["autoCompactThreshold", "in [1, 10,000,000]"],
        ),
        ({"compaction": {"recentTurnBudget": 0}}, ["recentTurnBudget", "in [1, 10,000]"]),
        ({"compaction": {"maxSummaryTokens": -1}}, ["maxSummaryTokens", "in [1, 1,000,000]"]),
        (
            {"compaction": {"minTurnsBetweenCompactions": -1}},
            ["minTurnsBetweenCompactions", "in [0, 10,000]"],
        ),
        (
            {"compaction": {"memoryFlush": {"softThresholdTokens": -1}}},
            ["compaction.memoryFlush.softThresholdTokens", "in [0, 10,000,000]"],
        ),
        ({"compaction": {"memoryFlush": {"prompt": ""}}}, ["memoryFlush.prompt", "non-empty"]),
        ({"contextPruning": {"mode": "on"}}, ["contextPruning.mode", "'off' or 'cache-ttl'"]),
        ({"contextPruning": {"ttl": "5 minutes"}}, ["contextPruning.ttl", "'30s', '5m' or '1h'"]),
        ({"contextPruning": {"ttl": "0s"}}, ["contextPruning.ttl", "positive duration"]),
        ({"contextPruning": {"ttl": 300}}, ["contextPruning.ttl", "valid string"]),
        ({"contextPruning": {"keepLastAssistants": -1}}, ["keepLastAssistants", "in [0, 10,000]"]),
        (
            {"contextPruning": {"softTrim": {"headChars": 2000, "tailChars": 2000}}},
            ["contextPruning.softTrim", "headChars + tailChars", "4000", "less than maxChars"],
        ),
        (
            {"contextPruning": {"softTrim": {"maxChars": 0}}},
            ["softTrim.maxChars", "in [1, 100,000,000]"],
        ),
        ({"contextPruning": {"hardClear": {"placeholder": ""}}}, ["placeholder", "non-empty"]),
        (
            {"memorySearch": {"query": {"hybrid": {"vectorWeight": 0.5}}}},
            ["memorySearch.query.hybrid", "must sum to 1", "0.5 + 0.3 = 0.8"],
        ),
        (
            {"memorySearch": {"query": {"hybrid": {"temporalDecay": {"halfLifeDays": 0}}}}},
            ["temporalDecay.halfLifeDays", "a number in (0, 36,500]"],
        ),
        ({"memorySearch": {"maxInjectedChars": 0}}, ["maxInjectedChars", "in [1, 100,000,000]"]),
        (
            {"memorySearch": {"chunkTokens": 80}},
            ["chunkOverlapTokens (80) must be less than chunkTokens (80)"],
        ),
        ({"planner": {"safetyRatio": 0}}, ["planner.safetyRatio", "in (0, 1]"]),
        ({"planner": {"summaryPressureRatio": 1.5}}, ["summaryPressureRatio", "in (0, 1]"]),
        (
            {"planner": {"toolPayloadMaxChars": 1000}},
            ["toolPayloadPreviewChars", "less than toolPayloadMaxChars"],
        ),
    ],
)
def test_invalid_values_are_rejected_with_field_and_allowed_range(
    data: dict[str, Any], expected: list[str]
) -> None:
    message = config_error(data)
    assert message.startswith("invalid memctx config")
    for part in expected:
        assert part in message


@pytest.mark.parametrize(
    "data",
    [
        {"vectorWeight": 0.7000001, "textWeight": 0.3},
        {"vectorWeight": 1.0, "textWeight": 0.0},
        {"autoRecallMinScore": 0.0},
        {"protectedRecentMessages": 0, "reserveTokens": 0},
        {"compaction": {"maxHistoryShare": 0.1}},
        {"compaction": {"maxHistoryShare": 0.9, "minTurnsBetweenCompactions": 0}},
        {"contextPruning": {"softTrim": {"headChars": 1999, "tailChars": 2000}}},
        {"recallWindowRatio": 1, "knowledgeShare": 1, "timeDecay": 1},
    ],
)
def test_boundary_values_are_accepted(data: dict[str, Any]) -> None:
    MemoryContextConfig.from_dict(data)


def test_all_problems_are_reported_at_once_one_per_line() -> None:
    message = config_error(
        {
            "hardCapTokens": 0,
            "embeddingModel": "bert",
            "compaction": {"maxHistoryShare": 2.0, "memoryFlush": {"enabld": True}},
            "contextPruning": {"ttl": "soon"},
        }
    )
    lines = message.splitlines()
    assert lines[0] == "invalid memctx config (5 problems):"
    assert len(lines) == 6
    for line, key in zip(
        sorted(lines[1:]),
        sorted(
            [
                "hardCapTokens",
                "embeddingModel",
                "compaction.maxHistoryShare",
                "compaction.memoryFlush.enabld",
                "contextPruning.ttl",
            ]
        ),
        strict=True,
    ):
        assert line.startswith(f"  {key}: ")


# --- unknown fields -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "path", "suggestion"),
    [
        ({"hardCapTokenz": 1}, "hardCapTokenz", "hardCapTokens"),
        ({"hard_cap_token": 1}, "hard_cap_token", "hard_cap_tokens"),
        ({"HardCapTokens": 1}, "HardCapTokens", "hardCapTokens"),
        (
            {"compaction": {"memoryFlush": {"softThresholdToken": 1}}},
            "compaction.memoryFlush.softThresholdToken",
            "softThresholdTokens",
        ),
        (
            {"context_pruning": {"soft_trim": {"head_char": 1}}},
            "context_pruning.soft_trim.head_char",
            "head_chars",
        ),
        (
            {"memorySearch": {"query": {"hybrid": {"temporalDecay": {"halfLife": 3}}}}},
            "memorySearch.query.hybrid.temporalDecay.halfLife",
            "halfLifeDays",
        ),
    ],
)
def test_unknown_fields_name_the_dotted_path_and_the_nearest_name(
    data: dict[str, Any], path: str, suggestion: str
) -> None:
    message = config_error(data)
    assert f"  {path}: unknown field; did you mean '{suggestion}'?" in message.splitlines()


def test_unknown_field_without_a_close_match_lists_the_allowed_names() -> None:
    message = config_error({"planner": {"zzz": 1}})
    allowed = "reserveTokens, dynamicReserveTokens, safetyRatio, cutToRatio, splitLongTurn"
    assert f"planner.zzz: unknown field; allowed: {allowed}" in message


def test_the_same_field_in_both_spellings_is_rejected() -> None:
    message = config_error({"hardCapTokens": 1, "hard_cap_tokens": 2})
    assert "given twice" in message
    assert "'hard_cap_tokens'" in message
    assert "'hardCapTokens'" in message


def test_direct_construction_raises_config_error_with_the_same_text() -> None:
    with pytest.raises(ConfigError) as info:
        MemoryContextConfig(hardCapTokenz=1)
    assert "hardCapTokenz: unknown field; did you mean 'hardCapTokens'?" in str(info.value)
    with pytest.raises(
        ConfigError, match=r"compaction\.maxHistoryShare: must be a number in \[0\.1"
    ):
        MemoryContextConfig(compaction={"maxHistoryShare": 5.0})
    with pytest.raises(ConfigError, match="headChars \\+ tailChars"):
        SoftTrimConfig(head_chars=5000)
    with pytest.raises(ConfigError, match="'off' or 'cache-ttl'"):
        ContextPruningConfig(mode="sometimes")


def test_config_error_is_not_a_pydantic_validation_error() -> None:
    with pytest.raises(ConfigError) as info:
        MemoryContextConfig.from_dict({"hardCapTokens": -1})
    assert not isinstance(info.value, ValidationError)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ([("hardCapTokens", 1)], "must be a mapping of settings, got list"),
        ({1: 2}, "(top level): key 1 must be a string"),
        ({"compaction": {3: 1}}, "compaction: key 3 must be a string"),
    ],
)
def test_malformed_mappings(data: Any, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        MemoryContextConfig.from_dict(data)
    assert expected in str(info.value)


# --- overrides ------------------------------------------------------------------------------


def test_with_overrides_applies_dotted_keys_in_either_spelling() -> None:
    c = DEFAULT_CONFIG.with_overrides(
        {
            "compaction.maxHistoryShare": 0.4,
            "hard_cap_tokens": 3000,
            "context_pruning.softTrim.max_chars": 6000,
            "memorySearch.query.hybrid.temporalDecay.enabled": True,
        }
    )
    assert c.compaction.max_history_share == 0.4
    assert c.hard_cap_tokens == 3000
    assert c.context_pruning.soft_trim.max_chars == 6000
    assert c.memory_search.query.hybrid.temporal_decay.enabled is True
    assert c.compaction.memory_flush == DEFAULT_CONFIG.compaction.memory_flush
    assert DEFAULT_CONFIG.hard_cap_tokens == 4000  # the original is untouched


def test_with_overrides_coerces_strings_by_field_type() -> None:
    c = DEFAULT_CONFIG.with_overrides(
        {
            "enabled": "true",
            "redaction": "False",
            "hardCapTokens": "2500",
            "timeDecay": "0.99",
            "compaction.maxHistoryShare": "0.3",
            "compaction.memoryFlush.prompt": "123",
            "contextPruning.ttl": "30s",
            "tokenCounter": "gpt-4o",
        }
    )
    assert c.enabled is True
    assert c.redaction is False
    assert c.hard_cap_tokens == 2500
    assert c.time_decay == 0.99
    assert c.compaction.max_history_share == 0.3
    assert c.compaction.memory_flush.prompt == "123"
    assert c.context_pruning.ttl_seconds == 30.0
    assert c.token_counter == "gpt-4o"


def test_with_overrides_accepts_a_nested_mapping_value() -> None:
    c = DEFAULT_CONFIG.with_overrides(
        {"compaction": {"mode": "safeguard", "memoryFlush.enabled": "0"}}
    )
    assert c.compaction.mode == "safeguard"
    assert c.compaction.memory_flush.enabled is False
    assert c.compaction.max_history_share == 0.5


def test_with_overrides_keeps_earlier_non_default_values() -> None:
    base = MemoryContextConfig.from_dict(CAMEL)
    c = base.with_overrides({"compaction.mode": "default"})
    assert c.compaction.mode == "default"
    assert c.compaction.memory_flush.soft_threshold_tokens == 2000
    assert c.hard_cap_tokens == 3000


def test_with_overrides_reports_every_problem_with_the_callers_spelling() -> None:
    with pytest.raises(ConfigError) as info:
        DEFAULT_CONFIG.with_overrides(
            {
                "compaction.memoryFlush.softThresholdToken": 3,
                "hard_cap_tokens": "abc",
                "enabled.x": "1",
                "compaction.max_history_share": "2",
            }
        )
    lines = str(info.value).splitlines()
    assert lines[0] == "invalid memctx overrides (4 problems):"
    assert set(lines[1:]) == {
        "  compaction.memoryFlush.softThresholdToken: unknown field; "
        "did you mean 'softThresholdTokens'?",
        "  enabled: is a setting, not a section; cannot set 'enabled.x'",
        "  hard_cap_tokens: Input should be a valid integer (got 'abc')",
        "  compaction.max_history_share: must be a number in [0.1, 0.9], got 2.0",
    }


def test_with_overrides_checks_rules_across_fields() -> None:
    with pytest.raises(ConfigError) as info:
        DEFAULT_CONFIG.with_overrides({"textWeight": "0.5"})
    assert str(info.value).splitlines()[1:] == [
        "  (top level): vectorWeight + textWeight must sum to 1 (within 1e-6), got 0.7 + 0.5 = 1.2"
    ]
    c = DEFAULT_CONFIG.with_overrides({"textWeight": "0.5", "vectorWeight": "0.5"})
    assert (c.vector_weight, c.text_weight) == (0.5, 0.5)


def test_with_overrides_rejects_bad_booleans_and_numbers() -> None:
    with pytest.raises(
        ConfigError, match=r"enabled: Input should be a valid boolean \(got 'maybe'\)"
    ):
        DEFAULT_CONFIG.with_overrides({"enabled": "maybe"})
    with pytest.raises(ConfigError, match="maxSegments: Input should be a valid integer"):
        DEFAULT_CONFIG.with_overrides({"maxSegments": "1.5"})


# --- files ----------------------------------------------------------------------------------

OPENCLAW_JSON5 = """\
// openclaw.json, JSON5 as in the seeds
{
  gateway: { port: 18789 },  /* not ours: ignored */
  agents: {
    defaults: {
      model: 'anthropic/claude-sonnet-4-5',
      memoryContext: {
        enabled: true,
        hardCapTokens: 3000,
        embeddingModel: "transformer",   // slower, more accurate
        redaction: true,
      },
      compaction: {
        mode: "safeguard",
        reserveTokensFloor: 20000,
        memoryFlush: {
          enabled: true,
          softThresholdTokens: 6000,
          systemPrompt: "Session nearing compaction. Store durable memories now.",
          prompt: "Write notes to memory/YYYY-MM-DD.md // not a comment, /* nor this */",
        },
      },
      contextPruning: {
        mode: "cache-ttl",    // off | cache-ttl
        ttl: "10m",
        keepLastAssistants: 2,
        softTrim: { maxChars: 5000, headChars: 1500, tailChars: 1500 },
        hardClear: { enabled: false, placeholder: 'It\\'s "gone"' },
      },
      memorySearch: {
        query: {
          hybrid: {
            enabled: true,
            vectorWeight: 0.6,
            textWeight: 0.4,
            temporalDecay: { enabled: true, halfLifeDays: 14 },
          },
        },
      },
    },
  },
}
"""


def test_openclaw_json5_loads_the_four_sections(tmp_path: Path) -> None:
    path = tmp_path / "openclaw.json"
    path.write_text(OPENCLAW_JSON5)
    c = load_config(path)
    assert (c.enabled, c.hard_cap_tokens, c.embedding_model) == (True, 3000, "transformer")
    assert c.compaction.mode == "safeguard"
    assert c.compaction.memory_flush.soft_threshold_tokens == 6000
    assert c.compaction.memory_flush.prompt == (
        "Write notes to memory/YYYY-MM-DD.md // not a comment, /* nor this */"
    )
    assert (c.context_pruning.mode, c.context_pruning.ttl_seconds) == ("cache-ttl", 600.0)
    assert c.context_pruning.soft_trim.max_chars == 5000
    assert c.context_pruning.hard_clear.placeholder == 'It\'s "gone"'
    hybrid = c.memory_search.query.hybrid
    assert (hybrid.vector_weight, hybrid.text_weight) == (0.6, 0.4)
    assert hybrid.temporal_decay.half_life_days == 14.0
    assert c.planner == DEFAULT_CONFIG.planner


def test_openclaw_json_with_missing_sections_uses_defaults(tmp_path: Path) -> None:
    path = tmp_path / "openclaw.json"
    path.write_text(json.dumps({"agents": {"defaults": {"memoryContext": {"maxSegments": 5}}}}))
    c = load_config(path)
    assert c.max_segments == 5
    assert c.model_copy(update={"max_segments": 20000}) == DEFAULT_CONFIG
    path.write_text('{"agents": {}}')
    assert load_config(path) == DEFAULT_CONFIG


def test_openclaw_errors_name_the_file_and_the_path_inside_it(tmp_path: Path) -> None:
    path = tmp_path / "openclaw.json"
    path.write_text(
        json.dumps(
            {
                "agents": {
                    "defaults": {
                        "memoryContext": {"hardCapTokens": 0},
                        "compaction": {"maxHistoryShare": 0.95, "reserveTokens": 1},
                    }
                }
            }
        )
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.splitlines()[0] == f"invalid memctx config file {path} (3 problems):"
    assert "  agents.defaults.memoryContext.hardCapTokens: must be an integer in [1," in message
    assert "  agents.defaults.compaction.maxHistoryShare: must be a number in [0.1, 0.9]" in message
    assert "  agents.defaults.compaction.reserveTokens: unknown field; did you mean" in message
    path.write_text(json.dumps({"agents": {"defaults": {"memoryContext": {"vectorWeight": 0.5}}}}))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "  agents.defaults.memoryContext: vectorWeight + textWeight must sum to 1" in str(
        info.value
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"agents": []}, "agents.defaults.memoryContext must be objects"),
        ({"agents": {"defaults": {"memoryContext": 5}}}, "must be objects"),
        (
            {"agents": {"defaults": {"memoryContext": {"compaction": {}}, "compaction": {}}}},
            "'compaction' is given both in agents.defaults and in agents.defaults.memoryContext",
        ),
    ],
)
def test_malformed_openclaw_json(tmp_path: Path, data: Any, expected: str) -> None:
    path = tmp_path / "openclaw.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value)
    assert expected in str(info.value)


def test_memctx_toml_loads(tmp_path: Path) -> None:
    path = tmp_path / "memctx.toml"
    path.write_text(
        "enabled = true\n"
        "hard_cap_tokens = 2000\n"
        "embeddingModel = 'transformer'\n"
        "[compaction]\n"
        "maxHistoryShare = 0.4\n"
        "[compaction.memoryFlush]\n"
        "softThresholdTokens = 1000\n"
        "[context_pruning.soft_trim]\n"
        "max_chars = 8000\n"
    )
    c = load_config(path)
    assert (c.enabled, c.hard_cap_tokens, c.embedding_model) == (True, 2000, "transformer")
    assert c.compaction.max_history_share == 0.4
    assert c.compaction.memory_flush.soft_threshold_tokens == 1000
    assert c.context_pruning.soft_trim.max_chars == 8000


def test_toml_errors_name_the_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "memctx.toml"
    path.write_text("enabled = true\nhard_cap_tokens = = 3\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value)
    assert "invalid TOML" in str(info.value)
    assert "line 2" in str(info.value)
    assert "column" in str(info.value)


def test_toml_with_an_invalid_value_names_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "memctx.toml"
    path.write_text("[compaction]\nmaxHistoryShar = 0.4\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert f"config file {path}" in str(info.value)
    assert "compaction.maxHistoryShar: unknown field; did you mean 'maxHistoryShare'?" in str(
        info.value
    )


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ('{\n  "enabled": true\n  "hardCapTokens": 1\n}', 3, 3),
        ('{\n  // a comment\n  /* a\n  block */ "a": [1, 2,, ]\n}', 4, 25),
        ("{\n  'a': 'x',\n  b: \"y\" \"z\"\n}", 3, 10),
        ('{"a": "\\q"}', 1, 8),
        ('{"a": 1', 1, 8),
        ("", 1, 1),
    ],
)
def test_bad_json_names_the_file_line_and_column(
    tmp_path: Path, text: str, line: int, column: int
) -> None:
    path = tmp_path / "memctx.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: invalid JSON at line {line}, column {column}: ")


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("list.json", "[1, 2]", "the top level must be an object, got list"),
        ("empty.toml", "", None),
        ("config.yaml", "a: 1", "unsupported config format '.yaml'"),
    ],
)
def test_wrong_file_shapes(tmp_path: Path, name: str, text: str, expected: str | None) -> None:
    path = tmp_path / name
    path.write_text(text)
    if expected is None:  # an empty TOML file is an empty table: all defaults
        assert load_config(path) == DEFAULT_CONFIG
        return
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value)
    assert expected in str(info.value)


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(ConfigError, match=f"config file not found: {missing}"):
        load_config(missing)
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path)  # a directory
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"{}\n\xff\xfe\x00{")
    with pytest.raises(ConfigError, match="not UTF-8 text: invalid byte at line 2, byte offset 3"):
        load_config(binary)


def test_load_config_accepts_a_string_path_and_a_bom(tmp_path: Path) -> None:
    path = tmp_path / "memctx.json"
    path.write_bytes(b'\xef\xbb\xbf{"hardCapTokens": 1234}')
    assert load_config(str(path)).hard_cap_tokens == 1234


def test_explicit_settings_are_what_was_given_not_the_defaults() -> None:
    config = MemoryContextConfig(hardCapTokens=500)
    assert config.explicit_settings() == {"hardCapTokens": 500}
    later = config.with_overrides({"contextPruning.mode": "off", "compaction.safetyMargin": "1.5"})
    assert later.explicit_settings() == {
        "hardCapTokens": 500,
        "contextPruning.mode": "off",
        "compaction.safetyMargin": 1.5,
    }
    # A value equal to the default is still explicit once given.
    assert later.context_pruning.mode == MemoryContextConfig().context_pruning.mode
    assert MemoryContextConfig().explicit_settings() == {}
    assert later.with_overrides({}).explicit_settings() == later.explicit_settings()


def test_a_dotted_key_in_a_file_says_how_to_nest_it(tmp_path: Path) -> None:
    path = tmp_path / "memctx.json"
    path.write_text('{"compaction.maxHistoryShare": 0.4}', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "compaction.maxHistoryShare: unknown field; dotted keys are for --set" in str(info.value)
    assert '{"compaction": {"maxHistoryShare": ...}} in JSON, [compaction] in TOML' in str(
        info.value
    )

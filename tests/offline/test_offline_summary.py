"""The offline model's extractive summarizer: what it keeps, its budget, its determinism."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.messages.tokens import estimate_tokens
from memctx.offline.summary import SECTION_TITLES, summarize_text
from tests.strategies import examples

SESSION = """\
user: The nightly export job crashes on large accounts.
assistant: Let me check the worker first.
tool: $ cat services/export/worker.py
import os
from export.client import ExportClient
def run_export(account_id):
    return ExportClient(account_id).run()
assistant: Sure, that makes sense.
tool: Traceback (most recent call last):
  File "/srv/app/services/export/worker.py", line 88, in run_export
    rows = fetch_all(account_id)
MemoryError: cannot allocate 2.5 GB
assistant: We decided to stream rows in batches of 500 instead of loading everything.
assistant: Okay.
assistant: The batch size lives in config/export.toml as batch_size.
tool: FAILED tests/test_export.py::test_large_account - AssertionError: 3 != 4
assistant: Fixed the off-by-one in paginate() so the last page is no longer dropped.
user: Don't touch the legacy CSV exporter, finance still depends on it.
assistant: Great, thanks!
user: TODO: add a metric for export duration in ms.
user: Please now write the release notes."""


def sections(summary: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = ""
    for line in summary.splitlines():
        if line.endswith(":") and line[:-1] in SECTION_TITLES:
            current = line[:-1]
            out[current] = []
        elif line.startswith("- "):
            out[current].append(line[2:])
    return out


def test_keeps_decisions_errors_files_tasks_and_drops_chit_chat() -> None:
    summary = summarize_text(SESSION, 600)
    found = sections(summary)
    decisions = " ".join(found["Decisions"])
    assert "stream rows in batches of 500 instead of loading everything" in decisions
    assert "Fixed the off-by-one in paginate()" in decisions
    assert "Don't touch the legacy CSV exporter" in decisions
    errors = " ".join(found["Errors"])
    assert "MemoryError: cannot allocate 2.5 GB" in errors
    assert "FAILED tests/test_export.py::test_large_account" in errors
    assert {"services/export/worker.py", "config/export.toml"} <= set(found["Files"])
    assert any("TODO: add a metric" in t for t in found["Open tasks"])
    assert found["Open tasks"][-1] == "Latest request: Please now write the release notes."
    for noise in ("Sure, that makes sense", "Okay.", "Great, thanks", "Let me check"):
        assert noise not in summary


def test_stack_frames_and_pasted_code_are_left_out() -> None:
    summary = summarize_text(SESSION, 600)
    assert 'File "/srv/app' not in summary
    assert "rows = fetch_all" not in summary
    assert "Traceback (most recent call last)" not in summary
    assert "def run_export" not in summary and "import os" not in summary
    assert "/srv/app/services/export/worker.py" not in sections(summary)["Files"]


def test_respects_every_budget() -> None:
    for budget in range(0, 260, 7):
        summary = summarize_text(SESSION, budget)
        assert estimate_tokens(summary) <= budget, budget


def test_a_tight_budget_keeps_the_most_important_lines() -> None:
    summary = summarize_text(SESSION, 70)
    assert "Latest request: Please now write the release notes." in summary
    assert "MemoryError" in summary
    assert "Great, thanks" not in summary
    assert "Details:" not in summary  # plain detail lines come last


def test_the_latest_request_is_kept_even_when_long_and_the_budget_small() -> None:
    request = "user: " + "please refactor the importer " * 40
    summary = summarize_text("assistant: We must keep the API stable.\n" + request, 40)
    assert summary.startswith("Open tasks:\n- Latest request: please refactor the importer")
    assert estimate_tokens(summary) <= 40


def test_an_explicit_last_request_wins() -> None:
    summary = summarize_text(SESSION, 600, last_request="Ship it on Friday.")
    assert sections(summary)["Open tasks"][-1] == "Latest request: Ship it on Friday."
    # The line detected by default is now an ordinary (unscored) line.
    assert "Please now write the release notes" not in summary


def test_original_order_within_sections() -> None:
    text = "\n".join(
        [
            "We decided to use Postgres.",
            "ValueError: bad port",
            "We must not log tokens.",
            "Switched to httpx instead of requests.",
        ]
    )
    found = sections(summarize_text(text, 300))
    assert found["Decisions"] == [
        "We decided to use Postgres.",
        "We must not log tokens.",
        "Switched to httpx instead of requests.",
    ]


def test_duplicates_are_kept_once() -> None:
    text = "user: We decided to use uv.\nassistant: we decided to use uv.\nWe decided to use uv."
    assert summarize_text(text, 200).count("decided to use uv") == 1


def test_sections_appear_only_with_content() -> None:
    summary = summarize_text("RuntimeError: disk full", 100)
    assert summary == "Errors:\n- RuntimeError: disk full"


def test_long_lines_are_split_into_sentences() -> None:
    filler = "The weather was nice and we talked about many unrelated things at length. " * 3
    text = filler + "We decided to use SQLite for the cache. " + filler
    summary = summarize_text(text, 200)
    assert "We decided to use SQLite for the cache." in summary
    assert "weather" not in summary


def test_chinese_decisions_and_errors_are_kept() -> None:
    text = "我们决定改用 PostgreSQL 数据库。\n好的。\n部署失败：端口 8080 被占用。"
    summary = summarize_text(text, 200)
    assert "决定改用 PostgreSQL" in summary and "部署失败" in summary
    assert "好的" not in summary


def test_with_no_cues_the_most_recent_lines_are_kept() -> None:
    text = "\n".join(f"line number {n} of plain chat" for n in range(20))
    summary = summarize_text(text, 200)
    assert "line number 19 of plain chat" in summary
    assert "line number 0 of plain chat" not in summary


def test_empty_and_degenerate_inputs() -> None:
    assert summarize_text("", 100) == ""
    assert summarize_text("   \n\n ", 100) == ""
    assert summarize_text(SESSION, 0) == ""
    assert summarize_text(SESSION, -5) == ""


def test_is_deterministic() -> None:
    assert summarize_text(SESSION, 150) == summarize_text(SESSION, 150)


def test_large_inputs_stay_within_budget() -> None:
    text = "\n".join(
        f"assistant: step {n}: edited src/module_{n % 37}.py and fixed TypeError in parse_{n}()"
        for n in range(3000)
    )
    summary = summarize_text(text, 500)
    assert 400 < estimate_tokens(summary) <= 500
    # Ties go to the latest lines: the current state of a session is at its end.
    assert "step 2999:" in summary and "step 0:" not in summary
    assert re.search(r"^Files:$", summary, re.M)


@settings(max_examples=examples(200), deadline=None)
@given(text=st.text(max_size=2000), budget=st.integers(min_value=-5, max_value=400))
def test_never_exceeds_the_budget(text: str, budget: int) -> None:
    summary = summarize_text(text, budget)
    assert estimate_tokens(summary) <= max(budget, 0)

"""Knowledge extraction and update against scripted models and a real store (no network).

Fake secrets are generated at run time, so the file holds no secret-looking literal.
"""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.extraction.extract import ExtractionReport, extract_and_update
from memctx.extraction.prompt import (
    CONVERSATION_OPEN,
    MAX_CONTENT_CHARS,
    ParseError,
    chunk_conversation,
    parse_decision,
    parse_facts,
    prompt_overhead_tokens,
)
from memctx.llm.client import LLMClient, LLMError
from memctx.messages import recalled_block_text
from memctx.messages.tokens import estimate_tokens
from memctx.store.knowledge import Fact, FactType, KnowledgeStore, NewFact, UpdateDecision
from tests.strategies import examples, multiline_texts

Reply = str | Exception


@dataclass(frozen=True)
class FakeResponse:
    text: str
    prompt_tokens: int = 100
    completion_tokens: int = 20
    cost_usd: float = 0.25
    cached: bool = False


@dataclass
class ScriptedClient:
    """Answers from a list (in order) or a function of (messages, task); records every call."""

    script: list[Reply] | Callable[[list[dict[str, Any]], str], Reply]
    is_offline: bool = False
    calls: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)

    def complete(
        self, messages: list[dict[str, Any]], *, task: str, max_tokens: int | None = None
    ) -> FakeResponse:
        self.calls.append((task, [dict(m) for m in messages]))
        reply = self.script.pop(0) if isinstance(self.script, list) else self.script(messages, task)
        if isinstance(reply, Exception):
            raise reply
        return FakeResponse(reply)

    def tasks(self) -> list[str]:
        return [task for task, _ in self.calls]


def ticking_clock(start: float = 1_700_000_000.0) -> Callable[[], float]:
    now = [start]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    return clock


@pytest.fixture
def store(tmp_path: Path) -> KnowledgeStore:
    return KnowledgeStore(tmp_path / "store", clock=ticking_clock())


def facts_json(*facts: tuple[str, str] | tuple[str, str, str]) -> str:
    return json.dumps(
        [{"type": f[0], "content": f[1], "context": f[2] if len(f) > 2 else ""} for f in facts]
    )


def chat(*texts: str) -> list[dict[str, Any]]:
    roles = ("user", "assistant")
    return [{"role": roles[i % 2], "content": t} for i, t in enumerate(texts)]


def add(store: KnowledgeStore, kind: str, content: str) -> Fact:
    fact = store.apply(UpdateDecision("ADD", NewFact(FactType(kind), content)))
    assert fact is not None
    return fact


def conversation_of(messages: list[dict[str, Any]]) -> str:
    return str(messages[-1]["content"])


def assert_balanced(report: ExtractionReport) -> None:
    r = report
    assert r.facts_proposed == (
        r.items_dropped + r.secrets_dropped + r.added + r.updated + r.superseded + r.unchanged
    )


def fake_secret(prefix: str, n: int = 40, seed: int = 11) -> str:
    rng = random.Random(seed)
    return prefix + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


# --- extraction answers -----------------------------------------------------------------------


def test_valid_array_is_stored_with_provenance(store: KnowledgeStore) -> None:
    client = ScriptedClient(
        [
            facts_json(
                ("decision", "Use PostgreSQL 16 instead of MySQL", "user, db setup"),
                ("config", "API listens on port 8080"),
            )
        ]
    )
    report = extract_and_update(
        chat("We'll use PostgreSQL 16 instead of MySQL.", "OK, and the API listens on 8080."),
        store=store,
        client=client,
        session_id="s-1",
        source_ids=["seg-1", "seg-2"],
    )
    assert report.as_dict() == {
        **ExtractionReport().as_dict(),
        "chunks": 1,
        "llm_calls": 1,
        "facts_proposed": 2,
        "added": 2,
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "cost_usd": 0.25,
    }
    ((task, sent),) = client.calls
    assert task == "extract-knowledge"
    assert "[memctx-task: extract-knowledge]" in sent[0]["content"]
    assert "[user] We'll use PostgreSQL 16 instead of MySQL." in conversation_of(sent)
    live = store.live_facts()
    assert [(f.type, f.content, f.context) for f in live] == [
        (FactType.DECISION, "Use PostgreSQL 16 instead of MySQL", "user, db setup"),
        (FactType.CONFIG, "API listens on port 8080", ""),
    ]
    assert all(f.session_id == "s-1" and f.source == ("seg-1", "seg-2") for f in live)


@pytest.mark.parametrize(
    "answer",
    [
        '```json\n[{"type": "issue", "content": "Login fails on Safari 17"}]\n```',
        'Here are the facts:\n```\n[{"type": "issue", "content": "Login fails on Safari 17"}]\n```',
        '{"facts": [{"type": "issue", "content": "Login fails on Safari 17", "context": null}]}',
        '  [{"type": "Issue", "content": "  Login fails\\n on Safari 17 "}]  ',
    ],
)
def test_accepted_answer_shapes(store: KnowledgeStore, answer: str) -> None:
    client = ScriptedClient([answer])
    report = extract_and_update(chat("Login fails on Safari 17."), store=store, client=client)
    assert (report.added, report.repairs, report.llm_calls) == (1, 0, 1)
    assert [(f.type, f.content) for f in store.live_facts()] == [
        (FactType.ISSUE, "Login fails on Safari 17")
    ]


def test_broken_json_is_repaired_with_one_retry(store: KnowledgeStore) -> None:
    broken = '[{"type": "decision", "content": "Use Redis for sessions",]'
    client = ScriptedClient([broken, facts_json(("decision", "Use Redis for sessions"))])
    report = extract_and_update(chat("Use Redis for sessions."), store=store, client=client)
    assert len(client.calls) == 2
    assert (report.repairs, report.parse_failures, report.added) == (1, 0, 1)
    retry = client.calls[1][1]
    assert retry[:2] == client.calls[0][1]  # the original prompt, then the bad answer
    assert retry[2] == {"role": "assistant", "content": broken}
    assert retry[3]["role"] == "user" and "invalid JSON" in retry[3]["content"]
    assert report.llm_calls == 2 and report.prompt_tokens == 200


def two_chunk_chat() -> tuple[list[dict[str, Any]], int]:
    """Two user messages that cannot share a chunk under the returned budget."""
    alpha = "ALPHA chunk. " + "We'll use Kafka for the order events. " * 15
    bravo = "BRAVO chunk. " + "The API listens on port 9000 in staging. " * 15
    return chat(alpha, "ok", bravo), prompt_overhead_tokens() + 250


def test_broken_twice_skips_the_chunk_and_the_others_go_on(store: KnowledgeStore) -> None:
    def reply(messages: list[dict[str, Any]], task: str) -> Reply:
        if "ALPHA" in conversation_of(messages) or CONVERSATION_OPEN not in conversation_of(
            messages
        ):
            return "Sure! The facts are: decision Kafka"  # prose, twice
        return facts_json(("config", "API listens on port 9000 in staging"))

    messages, budget = two_chunk_chat()
    client = ScriptedClient(reply)
    report = extract_and_update(messages, store=store, client=client, max_input_tokens=budget)
    assert report.chunks == 2
    assert (report.parse_failures, report.repairs, report.llm_calls) == (1, 1, 3)
    assert [f.content for f in store.live_facts()] == ["API listens on port 9000 in staging"]
    assert_balanced(report)


def test_llm_error_on_one_chunk_is_counted_and_the_rest_applied(store: KnowledgeStore) -> None:
    def reply(messages: list[dict[str, Any]], task: str) -> Reply:
        if "ALPHA" in conversation_of(messages):
            return LLMError("rate limited", model="fake", task=task)
        return facts_json(("config", "API listens on port 9000 in staging"))

    messages, budget = two_chunk_chat()
    report = extract_and_update(
        messages, store=store, client=ScriptedClient(reply), max_input_tokens=budget
    )
    assert (report.chunks, report.llm_calls, report.llm_failures) == (2, 2, 1)
    assert (report.parse_failures, report.added) == (0, 1)
    assert [f.content for f in store.live_facts()] == ["API listens on port 9000 in staging"]


def test_invalid_items_are_dropped_and_valid_ones_kept(store: KnowledgeStore) -> None:
    answer = json.dumps(
        [
            {"type": "decision", "content": "Use ruff for linting"},
            {"type": "opinion", "content": "The code is ugly"},  # unknown type
            {"type": "design", "content": "Hexagonal layout"},  # ambiguous: not guessed
            {"type": "config"},  # no content
            {"type": "config", "content": "   "},
            {"type": "config", "content": 8080},
            {"type": "config", "content": "Port 8080", "context": ["user"]},
            "API on port 8080",
            {"type": "issue", "content": "x" * (MAX_CONTENT_CHARS + 1)},  # a dump, not a fact
            {"type": "bug", "content": "CSV export garbles UTF-8 file names"},
            {"type": "TODO", "content": "Add pagination to /orders"},
            {"type": "decisions", "content": "Squash-merge feature branches"},
            {"type": "task-state", "content": "Signup flow is done"},
        ]
    )
    report = extract_and_update(chat("..."), store=store, client=ScriptedClient([answer]))
    assert (report.facts_proposed, report.items_dropped, report.added) == (13, 8, 5)
    assert [(f.type.value, f.content) for f in store.live_facts()] == [
        ("decision", "Use ruff for linting"),
        ("issue", "CSV export garbles UTF-8 file names"),
        ("task_state", "Add pagination to /orders"),
        ("decision", "Squash-merge feature branches"),
        ("task_state", "Signup flow is done"),
    ]


def test_secrets_never_reach_the_knowledge_file(store: KnowledgeStore) -> None:
    key = fake_secret("sk-proj-")
    token = fake_secret("ghp_", 36, seed=5)
    answer = facts_json(
        ("config", f"OPENAI_API_KEY={key}"),  # nothing but the secret: dropped
        ("config", f"The staging deploy calls OpenAI with api_key={key} from the vault"),
        ("implementation", "CI pushes images to GHCR", f"user pasted token {token}"),
        ("decision", "Use GHCR for container images"),
    )
    client = ScriptedClient([answer], is_offline=True)  # rules decide: one call in all
    report = extract_and_update(
        chat(f"The key is {key}, and the CI token is {token}."), store=store, client=client
    )
    assert (report.secrets_dropped, report.secrets_redacted, report.added) == (1, 2, 3)
    data = store.path.read_bytes()
    assert key.encode() not in data and token.encode() not in data
    assert key[8:24].encode() not in data  # not even a fragment
    assert b"[REDACTED:" in data
    sent = json.dumps([m for _, msgs in client.calls for m in msgs])
    assert key not in sent and token not in sent  # the model never saw them either
    assert_balanced(report)


# --- update decisions -------------------------------------------------------------------------


def decide_by(
    rules: dict[str, tuple[str, str | None]],
) -> Callable[[list[dict[str, Any]], str], Reply]:
    """A decide-update answerer: for the NEW fact containing a key, answer op + the number of
    the candidate line containing the target text (found in the numbered list it was shown)."""

    def reply(messages: list[dict[str, Any]], task: str) -> Reply:
        assert task == "decide-update"
        assert "[memctx-task: decide-update]" in messages[0]["content"]
        prompt = messages[-1]["content"]
        new = prompt.splitlines()[0]
        for needle, (op, target) in rules.items():
            if needle in new:
                number = None
                if target is not None:
                    found = re.search(rf"^(\d+)\. \[\w+\] .*{re.escape(target)}", prompt, re.M)
                    assert found, prompt
                    number = int(found.group(1))
                return json.dumps({"op": op, "target": number})
        raise AssertionError(f"unexpected decision prompt: {prompt}")

    return reply


def two_task_client(extracted: str, decider: Callable[..., Reply], **kw: Any) -> ScriptedClient:
    def reply(messages: list[dict[str, Any]], task: str) -> Reply:
        return extracted if task == "extract-knowledge" else decider(messages, task)

    return ScriptedClient(reply, **kw)


def test_llm_decisions_are_applied(store: KnowledgeStore) -> None:
    port = add(store, "config", "API listens on port 8000")
    mysql = add(store, "decision", "Use MySQL for the orders database")
    hook = add(store, "implementation", "Stripe webhook handler is in billing.py")
    refund = add(store, "task_state", "Refund logic is not yet implemented")
    extracted = facts_json(
        ("config", "API listens on port 9000"),
        ("implementation", "Stripe webhook handler in billing.py verifies the signature"),
        ("task_state", "Refund logic is not yet implemented"),
        ("decision", "Use Redis for the session cache"),
    )
    decider = decide_by(
        {
            "port 9000": ("SUPERSEDE", "port 8000"),
            "verifies the signature": ("UPDATE", "webhook handler is in billing.py"),
            "Refund logic": ("NONE", "Refund logic"),
            "Redis": ("ADD", None),
        }
    )
    client = two_task_client(extracted, decider)
    report = extract_and_update(chat("..."), store=store, client=client)
    assert client.tasks() == ["extract-knowledge"] + ["decide-update"] * 4
    assert (report.added, report.updated, report.superseded, report.unchanged) == (1, 1, 1, 1)
    assert report.decision_fallbacks == 0 and report.llm_calls == 5
    assert_balanced(report)

    old_port = store.get(port.id)
    assert old_port is not None and old_port.superseded_by is not None
    new_port = store.get(old_port.superseded_by)
    assert new_port is not None and new_port.content == "API listens on port 9000"
    found = [f.id for f, _ in store.search("API listens on port")]
    assert found == [new_port.id]  # the superseded fact is hidden
    updated = store.get(hook.id)
    assert updated is not None and updated.live
    assert updated.content == "Stripe webhook handler in billing.py verifies the signature"
    assert store.get(refund.id) == refund
    live = {f.content for f in store.live_facts()}
    assert live == {
        "API listens on port 9000",
        mysql.content,
        updated.content,
        refund.content,
        "Use Redis for the session cache",
    }


def test_delete_is_refused(store: KnowledgeStore) -> None:
    mysql = add(store, "decision", "Use MySQL for the orders database")
    client = two_task_client(
        facts_json(("decision", "Use MySQL for the orders database, not Oracle")),
        decide_by({"MySQL": ("DELETE", "MySQL")}),
    )
    report = extract_and_update(chat("..."), store=store, client=client)
    assert (report.deletes_refused, report.unchanged, report.decision_fallbacks) == (1, 1, 0)
    assert store.live_facts() == [mysql]
    assert store.stats()["facts"] == 1


@pytest.mark.parametrize(
    "bad",
    [
        ["UPDATE fact 1 please", "still not json"],
        ['{"op": "UPDATE", "target": 7}', '{"op": "MERGE", "target": 1}'],
        [LLMError("down", model="fake", task="decide-update")],
    ],
    ids=["prose", "bad-fields", "llm-error"],
)
def test_unusable_decision_falls_back_to_the_rules(store: KnowledgeStore, bad: list[Reply]) -> None:
    port = add(store, "config", "API listens on port 8000")
    answers = list(bad)
    client = two_task_client(
        facts_json(("config", "API listens on port 9000")), lambda m, t: answers.pop(0)
    )
    report = extract_and_update(chat("..."), store=store, client=client)
    assert client.tasks() == ["extract-knowledge"] + ["decide-update"] * len(bad)
    assert report.decision_fallbacks == 1
    assert report.repairs == (1 if len(bad) == 2 else 0)
    # The rules see a changed value of the same setting: SUPERSEDE.
    assert report.superseded == 1
    old = store.get(port.id)
    assert old is not None and not old.live


def test_no_candidates_means_add_without_a_decision_call(store: KnowledgeStore) -> None:
    add(store, "config", "API listens on port 8000")
    client = two_task_client(
        facts_json(("architecture", "Event-driven: orders publish to NATS")),
        decide_by({}),
    )
    report = extract_and_update(chat("..."), store=store, client=client)
    assert client.tasks() == ["extract-knowledge"]
    assert report.added == 1


def test_offline_client_uses_the_rules_and_no_decision_calls(store: KnowledgeStore) -> None:
    port = add(store, "config", "API listens on port 8000")
    dup = add(store, "decision", "Use Redis for the session cache")
    client = two_task_client(
        facts_json(
            ("config", "API listens on port 9000"),
            ("decision", "Use Redis for the session cache"),
            ("issue", "Login fails on Safari 17"),
        ),
        decide_by({}),
        is_offline=True,
    )
    report = extract_and_update(chat("..."), store=store, client=client)
    assert client.tasks() == ["extract-knowledge"]
    assert (report.superseded, report.unchanged, report.added) == (1, 1, 1)
    assert not store.get(port.id).live  # type: ignore[union-attr]
    assert store.get(dup.id) == dup


# --- input: rendering, budget -----------------------------------------------------------------


def test_what_the_model_sees(store: KnowledgeStore) -> None:
    bulk = "".join(f"line {i}: {'x' * 40}\n" for i in range(400))
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "SYSTEM-PROMPT-TEXT"},
        {
            "role": "user",
            "content": recalled_block_text("OLD"),
        },
        {"role": "user", "content": "Read the config please."},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "PRIVATE-THOUGHT", "signature": "sig"},
                {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "app.cfg"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "HEAD\n" + bulk + "TAIL"}
            ],
        },
    ]
    client = ScriptedClient(["[]"])
    report = extract_and_update(messages, store=store, client=client)
    assert report.chunks == 1 and report.facts_proposed == 0
    text = conversation_of(client.calls[0][1])
    for absent in ("SYSTEM-PROMPT-TEXT", "OLD", "PRIVATE-THOUGHT", "line 200:"):
        assert absent not in text
    assert "[user] Read the config please." in text
    assert '[assistant tool call: read_file] {"path": "app.cfg"}' in text
    assert "[tool result: read_file] HEAD" in text  # the name comes from the call
    assert text.endswith("TAIL\n</conversation>") and "characters omitted" in text
    assert messages[1]["content"].startswith("<recalled-context")  # input not mutated


def test_long_code_blocks_keep_only_their_first_lines(store: KnowledgeStore) -> None:
    code = "\n".join(f"    step_{i}()" for i in range(50))
    text = f"Rewrote the loader:\n```python\ndef load():\n{code}\n```\nIt now streams rows."
    client = ScriptedClient(["[]"])
    extract_and_update(chat("go", text), store=store, client=client)
    sent = conversation_of(client.calls[0][1])
    assert "step_4()" in sent and "step_5()" not in sent and "step_49()" not in sent
    assert "45 more lines of code" in sent and "It now streams rows." in sent


def test_every_request_fits_the_budget(store: KnowledgeStore) -> None:
    messages = chat(
        *[f"Message {i}: " + "we'll keep the port at 8080 for now. " * 30 for i in range(12)]
    )
    messages.append({"role": "user", "content": "Z" * 9000})  # one message larger than a chunk
    budget = prompt_overhead_tokens() + 400
    client = ScriptedClient(lambda m, t: "[]")
    report = extract_and_update(messages, store=store, client=client, max_input_tokens=budget)
    assert report.chunks == len(client.calls) > 12
    for _, sent in client.calls:
        assert sum(estimate_tokens(m["content"]) for m in sent) <= budget
    sent_text = "".join(conversation_of(sent) for _, sent in client.calls)
    assert sent_text.count("Z") == 9000  # split across chunks, nothing lost
    parts = [re.search(r"part (\d+) of (\d+)", conversation_of(s)) for _, s in client.calls]
    assert [(int(p[1]), int(p[2])) for p in parts if p] == [
        (i, report.chunks) for i in range(1, report.chunks + 1)
    ]


def test_an_entry_over_the_budget_is_cut_at_line_breaks_and_loses_nothing() -> None:
    entry = "[assistant] one\n\ntwo\n" + "z" * 20 + "\nend"
    chunks = chunk_conversation(["[user] hi", entry, "[user] bye"], 5)  # 15 characters
    # Whole lines where they fit (the blank line after "one" included), a cut inside a line
    # only for the 20-character line, whose tail goes on with the line after it.
    assert chunks == ["[user] hi", "[assistant] one", "\ntwo", "z" * 15, "zzzzz\nend", "[user] bye"]
    with pytest.raises(ValueError, match="at least 1 token"):
        chunk_conversation(["x"], 0)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(multiline_texts, min_size=1, max_size=6), st.integers(min_value=1, max_value=12))
def test_chunks_fit_keep_the_text_in_order_and_entries_that_fit_whole(
    entries: list[str], budget: int
) -> None:
    chunks = chunk_conversation(entries, budget)
    assert all(estimate_tokens(c) <= budget for c in chunks)
    # Only line breaks and blank lines at a chunk boundary may go; every other character stays.
    visible = [re.sub(r"\s", "", text) for text in ("".join(chunks), "".join(entries))]
    assert visible[0] == visible[1]
    for entry in entries:
        if entry.strip() and len(entry) <= 3 * budget:
            assert any(entry in chunk for chunk in chunks), "an entry that fits was cut"


def test_budget_too_small_says_what_to_use(store: KnowledgeStore) -> None:
    with pytest.raises(ValueError, match="use at least"):
        extract_and_update(chat("hi"), store=store, client=ScriptedClient([]), max_input_tokens=300)


def test_nothing_to_read_makes_no_call(store: KnowledgeStore) -> None:
    client = ScriptedClient([])
    report = extract_and_update(
        [{"role": "system", "content": "You are helpful."}], store=store, client=client
    )
    assert client.calls == [] and report.chunks == 0


# --- parsers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('{"op": "ADD", "target": null}', ("ADD", None)),
        ('{"op": "add", "target": 3}', ("ADD", None)),
        ('{"op": "UPDATE", "target": 2}', ("UPDATE", 1)),
        ('```json\n{"op": "SUPERSEDE", "target": 1}\n```', ("SUPERSEDE", 0)),
        ('{"op": "NONE", "target": null}', ("NONE", None)),
        ('{"op": "NONE", "target": 3}', ("NONE", 2)),
        ('{"op": "DELETE", "target": 1}', (None, None)),
    ],
)
def test_parse_decision_accepts(answer: str, expected: tuple[str | None, int | None]) -> None:
    assert parse_decision(answer, 3) == expected


@pytest.mark.parametrize(
    "answer",
    [
        "UPDATE 2",
        "[]",
        '{"op": "UPDATE"}',
        '{"op": "UPDATE", "target": 0}',
        '{"op": "UPDATE", "target": 4}',
        '{"op": "UPDATE", "target": true}',
        '{"op": "SUPERSEDE", "target": "1"}',
        '{"op": "MERGE", "target": 1}',
        "",
    ],
)
def test_parse_decision_rejects(answer: str) -> None:
    with pytest.raises(ParseError):
        parse_decision(answer, 3)


@pytest.mark.parametrize("answer", ["", "{}", '{"facts": "none"}', "42", '"[]"', "facts: []"])
def test_parse_facts_rejects(answer: str) -> None:
    with pytest.raises(ParseError):
        parse_facts(answer)


# --- with memctx's own LLM client -------------------------------------------------------------


def test_real_client_with_a_scripted_completion(store: KnowledgeStore) -> None:
    answers = [
        facts_json(("config", "API listens on port 9000")),
        json.dumps({"op": "SUPERSEDE", "target": 1}),
    ]
    seen: list[dict[str, Any]] = []

    def completion(**kwargs: Any) -> dict[str, Any]:
        seen.append(kwargs)
        return {
            "choices": [{"message": {"content": answers.pop(0)}}],
            "usage": {"prompt_tokens": 300, "completion_tokens": 12},
        }

    port = add(store, "config", "API listens on port 8000")
    client = LLMClient("openai/gpt-4o-mini", completion=completion, max_retries=0)
    report = extract_and_update(chat("Moving the API to port 9000."), store=store, client=client)
    assert [k["max_tokens"] for k in seen] == [2000, 60]
    assert (report.superseded, report.llm_calls, report.prompt_tokens) == (1, 2, 600)
    assert report.completion_tokens == 24
    assert not store.get(port.id).live  # type: ignore[union-attr]


def test_real_client_failures_are_counted_not_raised(store: KnowledgeStore) -> None:
    def completion(**kwargs: Any) -> dict[str, Any]:
        raise RuntimeError("no route to host")

    client = LLMClient("openai/gpt-4o-mini", completion=completion, max_retries=0)
    report = extract_and_update(chat("We'll use Kafka."), store=store, client=client)
    assert (report.llm_calls, report.llm_failures, report.added) == (1, 1, 0)


# litellm's response types make pydantic warn about a ``ReadOnly`` TypedDict item (third-party,
# not memctx's); -W error would turn it into a failed call.
@pytest.mark.filterwarnings("ignore:.*ReadOnly.*:UserWarning")
def test_offline_model_end_to_end(store: KnowledgeStore) -> None:
    pytest.importorskip("memctx.offline.model", reason="the offline model is not installed yet")
    add(store, "config", "The API listens on port 8000")
    messages = chat(
        "Hi! We'll use Kafka for the order events.",
        "Sure. The API listens on port 9000 now.",
        "Thanks. TODO: add retries to the webhook handler.",
    )
    report = extract_and_update(messages, store=store, client=LLMClient())
    assert report.llm_calls == 1 and report.parse_failures == 0
    live = sorted((f.type.value, f.content) for f in store.live_facts())
    assert live == [
        ("config", "The API listens on port 9000 now"),
        ("decision", "We'll use Kafka for the order events"),
        ("task_state", "TODO: add retries to the webhook handler"),
    ]
    assert report.superseded == 1

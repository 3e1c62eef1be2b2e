"""The offline model's rule-based extractor: types, exclusions, secrets, determinism.

The sentences are hand-written, in the varied wording people use in coding sessions (English
and Chinese); none comes from a generator template. Fake secrets are built at run time so the
file holds no secret-looking literal.
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

import pytest

from memctx.extraction.prompt import extraction_messages, parse_facts, render_messages
from memctx.offline.extract import MAX_FACTS, extract_facts, offline_extract_response


def _types(text: str) -> list[str]:
    return [f["type"] for f in extract_facts(text)]


TYPED = [
    # decision
    ("We'll go with SQLite for the local dev database and Postgres in prod.", "decision"),
    ("Decided to drop the Celery dependency and run jobs with APScheduler.", "decision"),
    ("Let's use ruff instead of flake8 and isort.", "decision"),
    ("Switched the HTTP client over to httpx because it supports HTTP/2.", "decision"),
    ("After benchmarking we chose orjson for serialisation.", "decision"),
    ("Use UUIDv7 for all new primary keys.", "decision"),
    ("We never log full request bodies, only their size.", "decision"),
    ("我们最终决定用 Redis 做会话存储。", "decision"),
    ("前端改用 Vite 构建，不再用 webpack。", "decision"),
    # config
    ("The admin panel runs on port 9001 behind nginx.", "config"),
    ("Set WORKER_CONCURRENCY=8 in the staging env file.", "config"),
    ("The Grafana dashboard lives at https://grafana.internal.example/d/api-latency.", "config"),
    ("Node is pinned to version 20.11 in .nvmrc.", "config"),
    ("The cache TTL is 15 minutes for product pages.", "config"),
    ("The cleanup cron runs every night at 03:30 UTC.", "config"),
    ("数据库连接池大小配置为 20。", "config"),
    ("测试环境的端口是 3000。", "config"),
    # issue
    ("The nightly build is broken since the lockfile update.", "issue"),
    ("Login fails for users whose email contains a plus sign.", "issue"),
    ("psycopg2.OperationalError: could not connect to server: Connection refused", "issue"),
    ("Uploads over 2 GB crash the worker with an out-of-memory kill.", "issue"),
    ("导出 CSV 时中文文件名出现乱码错误。", "issue"),
    ("部署到生产环境失败，镜像拉取超时。", "issue"),
    # task_state
    ("TODO: rotate the signing keys before launch.", "task_state"),
    ("Email verification is not yet wired into the signup flow.", "task_state"),
    ("The search reindex job is finished and deployed.", "task_state"),
    ("All 87 tests pass on the feature branch.", "task_state"),
    ("We still have to add pagination to the /orders listing.", "task_state"),
    ("Next step is writing integration tests for the refund path.", "task_state"),
    ("用户头像上传功能还没做。", "task_state"),
    ("权限模块的重构已经完成。", "task_state"),
    # architecture
    ("The billing service communicates with the ledger over gRPC.", "architecture"),
    ("It's an event-driven design where every state change is an event on NATS.", "architecture"),
    (
        "Requests go through the API gateway, which forwards them to the auth service.",
        "architecture",
    ),
    ("系统采用微服务架构，每个服务有自己的数据库。", "architecture"),
    # implementation
    ("Implemented rate limiting as middleware in api/middleware/ratelimit.py.", "implementation"),
    ("Added a GET /health endpoint that checks the database connection.", "implementation"),
    (
        "The function normalize_phone in utils/phone.py now strips spaces and dashes.",
        "implementation",
    ),
    ("在 services/order.py 里新增了取消订单的接口。", "implementation"),
]


@pytest.mark.parametrize(("sentence", "expected"), TYPED)
def test_sentence_gets_its_type(sentence: str, expected: str) -> None:
    facts = extract_facts(sentence)
    assert [f["type"] for f in facts] == [expected], facts
    # The sentence itself, trimmed, not a paraphrase (a test run's result says what it is).
    assert facts[0]["content"].removeprefix("last test run passed, no test failed: ") in sentence


NOTHING = [
    # greetings and small talk
    "Hello!",
    "Thanks a lot, that works.",
    "Good morning, hope the weekend was good.",
    "你好，辛苦了！",
    "谢谢！",
    "Never mind, it was my fault.",
    # questions
    "Which port does the metrics exporter listen on?",
    "Should we switch to Poetry?",
    "Can you add a test for the broken upload case",
    "这个接口的超时时间是多少？",
    "要不要换成 MongoDB 呢",
    # speculation
    "Maybe we should use Kafka instead of RabbitMQ.",
    "The failure might be caused by the new TLS settings.",
    "Perhaps switch to port 8081 if 8080 is taken.",
    "可能是缓存导致的错误。",
    # narration and temporary debugging
    "Let me open the config file and check the port.",
    "I'll run the failing test again with -vv.",
    "Temporarily added a print in the retry loop to debug the failure.",
    "先调试一下这个函数。",
    # code and file dumps
    "def create_app(config): return Flask(__name__)",
    "from sqlalchemy import create_engine",
    "    engine = create_engine(DATABASE_URL, pool_size=20)",
    '{"name": "web", "port": 8080, "replicas": 3}',
    "if (user == null) { throw new Error('missing user'); }",
    # too little to be a fact
    "Done.",
    "Fixed it.",
    "We decided that.",
]


@pytest.mark.parametrize("text", NOTHING)
def test_non_facts_produce_nothing(text: str) -> None:
    assert extract_facts(text) == []


# The substance and greeting rules count CJK characters with the shared range (memctx.text):
# kana, hangul and the compatibility ideographs count like any Chinese character.
CJK_TAILS = {
    "hiragana": "ひらがな",
    "katakana": "カタカナ",
    "hangul": "한국어로",
    "compat": "豈更車賈",
}


@pytest.mark.parametrize("tail", CJK_TAILS.values(), ids=CJK_TAILS.keys())
def test_every_cjk_script_counts_as_cjk(tail: str) -> None:
    assert _types("决定使用") == []  # four CJK characters are too little to be a fact
    assert _types(f"决定使用 {tail}") == ["decision"]  # eight are enough
    # A greeting opening up to eight CJK characters is small talk; ten are a statement.
    assert _types("谢谢，决定使用表") == []
    assert _types(f"谢谢，决定使用{tail}") == ["decision"]


def test_fenced_code_and_tool_calls_are_skipped() -> None:
    text = "\n".join(
        [
            "[assistant] Here is the new handler:",
            "```python",
            "# We'll use port 7000 instead of 8000",
            "PORT = 7000",
            "```",
            '[assistant tool call: write_file] {"path": "app.py", "note": "switch to port 7000"}',
            "[assistant] The handler now retries twice before giving up.",
        ]
    )
    assert [f["content"] for f in extract_facts(text)] == [
        "The handler now retries twice before giving up"
    ]


def test_tool_output_gives_only_its_error_lines_three_at_most() -> None:
    failures = "\n".join(
        f"FAILED tests/test_api.py::test_case_{i} - AssertionError" for i in range(6)
    )
    text = (
        "[tool result: bash] collected 40 items\n"
        "We'll use the fixture from conftest.py\n"  # prose inside output is not a statement
        f"{failures}\n"
        "[tool error: bash] Traceback (most recent call last):\n"
        '  File "app.py", line 3, in <module>\n'
        "KeyError: 'STRIPE_WEBHOOK_SECRET'\n"
    )
    facts = extract_facts(text)
    assert [f["type"] for f in facts] == ["issue"] * 4
    assert [f["content"] for f in facts[:3]] == [
        f"FAILED tests/test_api.py::test_case_{i} - AssertionError" for i in range(3)
    ]
    assert facts[3] == {
        "type": "issue",
        "content": "KeyError: 'STRIPE_WEBHOOK_SECRET'",
        "context": "bash output",
    }


def test_context_names_the_speaker() -> None:
    text = (
        "[user] Let's use Postgres 16 for the analytics database.\n"
        "[assistant] The CSV importer is implemented in importers/csv_import.py."
    )
    assert [f["context"] for f in extract_facts(text)] == ["said by user", "said by assistant"]


def _fake_key(prefix: str, n: int = 40, seed: int = 7) -> str:
    rng = random.Random(seed)
    return prefix + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


def test_secrets_never_appear() -> None:
    key, token = _fake_key("sk-proj-"), _fake_key("ghp_", 36, seed=3)
    text = "\n".join(
        [
            f"[user] We'll use the key {key} for the OpenAI client.",
            f"[user] Set GITHUB_TOKEN={token} in the CI settings.",
            f"[user] Authorization: Bearer {_fake_key('', 48, seed=5)} fails with a 401 error.",
            "[user] We'll use Postgres 16 for the reporting database.",
        ]
    )
    facts = extract_facts(text)
    dumped = json.dumps(facts)
    assert key not in dumped and token not in dumped and "REDACTED" not in dumped
    assert [f["content"] for f in facts] == ["We'll use Postgres 16 for the reporting database"]


def test_redaction_markers_are_not_facts() -> None:
    assert extract_facts("[user] Set API_KEY=[REDACTED:secret_value] in the deploy settings.") == []


def test_duplicates_keep_their_latest_position_and_the_cap_keeps_the_latest() -> None:
    text = "\n".join(
        [
            "[user] We'll use Redis 7 for caching.",
            "[user] The API listens on port 8000.",
            "[assistant] We'll use Redis 7 for caching!",
        ]
    )
    facts = extract_facts(text)
    assert [f["content"] for f in facts] == [
        "The API listens on port 8000",
        "We'll use Redis 7 for caching",
    ]
    assert facts[1]["context"] == "said by assistant"
    many = "\n".join(f"[user] Service number {i} listens on port {9000 + i}." for i in range(30))
    capped = extract_facts(many)
    assert len(capped) == MAX_FACTS
    assert capped[-1]["content"] == "Service number 29 listens on port 9029"
    assert capped[0]["content"] == f"Service number {30 - MAX_FACTS} listens on port {9010}"


def test_sentences_of_one_line_are_judged_one_by_one() -> None:
    text = "[user] Thanks! Maybe Kafka later. For now we'll use RabbitMQ 3.13 as the broker."
    assert [(f["type"], f["content"]) for f in extract_facts(text)] == [
        ("decision", "For now we'll use RabbitMQ 3.13 as the broker")
    ]


def test_deterministic() -> None:
    text = "\n".join(f"[user] {s}" for s, _ in TYPED) + "\n" + "\n".join(NOTHING)
    first = extract_facts(text)
    assert first == extract_facts(text)
    assert json.dumps(first) == json.dumps(extract_facts(text))


def test_response_reads_the_conversation_of_the_last_user_message() -> None:
    messages = [{"role": "user", "content": "We'll use Kafka for the event bus."}]
    chunk = "\n".join(render_messages(messages))
    prompt = extraction_messages(chunk)
    answer = offline_extract_response(prompt)
    facts, dropped = parse_facts(answer)  # the pipeline's own strict parser accepts it
    assert dropped == 0
    assert [(f.type.value, f.content, f.context) for f in facts] == [
        ("decision", "We'll use Kafka for the event bus", "said by user")
    ]
    # The prompt's own example fact (in the system message) is not part of the conversation.
    assert "PostgreSQL 16" not in answer
    repair = [*prompt, {"role": "assistant", "content": "oops"}, {"role": "user", "content": "fix"}]
    assert offline_extract_response(repair) == "[]"
    assert offline_extract_response([]) == "[]"


def test_response_with_content_blocks() -> None:
    chunk = "[user] 我们决定改用 PostgreSQL，而不是 MySQL。"
    user = extraction_messages(chunk)[1]
    blocks = {"role": "user", "content": [{"type": "text", "text": user["content"]}]}
    answer = json.loads(offline_extract_response([blocks]))
    assert answer == [
        {
            "type": "decision",
            "content": "我们决定改用 PostgreSQL，而不是 MySQL",
            "context": "said by user",
        }
    ]


# --- results of test runs, builds and commands ---------------------------------------------

PASSED = "last test run passed, no test failed: "
FAILED = "last test run failed, not all tests passed: "


def _run(command: str, output: str) -> str:
    lines = output.split("\n")
    body = "\n".join([f"[tool result: Bash] {lines[0]}", *(f"  {ln}" for ln in lines[1:])])
    return f'[assistant tool call: Bash] {{"command": "{command}"}}\n{body}'


def test_a_test_summary_becomes_a_fact_naming_the_run_and_its_command() -> None:
    out = "Running ExUnit with seed: 1\n..F..\nFinished in 2.1 seconds\n297 tests, 11 failures"
    facts = extract_facts(_run("mix test", out))
    assert facts == [
        {
            "type": "issue",
            "content": f"{FAILED}297 tests, 11 failures (mix test)",
            "context": "Bash output",
        }
    ]
    passed = extract_facts(_run("mix test test/a_test.exs", "31 tests, 0 failures"))
    assert [(f["type"], f["content"]) for f in passed] == [
        ("task_state", f"{PASSED}31 tests, 0 failures (mix test test/a_test.exs)")
    ]


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("===== 3 failed, 297 passed, 2 skipped in 12.34s =====", "issue"),
        ("======== 42 passed in 0.51s ========", "task_state"),
        ("Tests:       1 failed, 41 passed, 42 total", "issue"),
        ("test result: ok. 31 passed; 0 failed; 0 ignored; 0 measured", "task_state"),
        ("test result: FAILED. 30 passed; 1 failed; 0 ignored", "issue"),
        ("  2 failing", "issue"),
        ("120 examples, 0 failures", "task_state"),
        ("1 doctest, 31 tests, 2 failures, 1 skipped", "issue"),
    ],
)
def test_summary_lines_of_other_test_runners(line: str, kind: str) -> None:
    facts = extract_facts(_run("run-tests", f"some output\n{line}"))
    assert [f["type"] for f in facts] == [kind]
    prefix = FAILED if kind == "issue" else PASSED
    assert facts[0]["content"].startswith(prefix)
    assert facts[0]["content"].endswith("(run-tests)")


def test_a_non_zero_exit_code_is_an_issue_and_zero_is_nothing() -> None:
    facts = extract_facts(_run("make build", "compiling\nProcess exited with code 2"))
    assert [(f["type"], f["content"]) for f in facts] == [
        ("issue", "last command failed with exit code 2 (make build)")
    ]
    assert extract_facts(_run("make build", "compiling\nexit code 0")) == []


def test_versions_a_resolver_reports_are_one_fact() -> None:
    out = (
        "Resolving Hex dependencies...\nResolution completed in 0.08s\nNew:\n"
        "  phoenix 1.7.14\n  plug 1.15.2 => 1.16.0\n* Getting phoenix (Hex package)"
    )
    facts = extract_facts(_run("mix deps.get", out))
    assert [(f["type"], f["content"]) for f in facts] == [
        ("task_state", "dependency versions resolved (mix deps.get): phoenix 1.7.14, plug 1.16.0")
    ]
    pip = extract_facts(_run("pip install x", "Successfully installed requests-2.31.0 idna-3.4"))
    assert pip[0]["content"].endswith(": requests 2.31.0, idna 3.4")
    cargo = extract_facts(_run("cargo update", "    Updating serde v1.0.187 -> v1.0.188"))
    assert cargo[0]["content"].endswith(": serde v1.0.188")
    # A name and a version outside a resolver's report is no dependency.
    assert extract_facts(_run("cat notes.txt", "notes\n  phoenix 1.7.14")) == []


def test_parallel_calls_give_each_output_its_own_command() -> None:
    text = (
        '[assistant tool call: Bash] {"command": "mix test"}\n'
        '[assistant tool call: Read] {"file_path": "a.ex"}\n'
        '[assistant tool call: Bash] {"command": "npm test"}\n'
        "[tool result: Bash] 5 tests, 0 failures\n"
        "[tool result: Read] 31 tests, 0 failures in a comment\n"
        "[tool result: Bash] Tests:       2 failed, 8 passed, 10 total"
    )
    assert [f["content"] for f in extract_facts(text)] == [
        f"{PASSED}5 tests, 0 failures (mix test)",
        f"{PASSED}31 tests, 0 failures in a comment (Read output)",
        f"{FAILED}Tests: 2 failed, 8 passed, 10 total (npm test)",
    ]


def test_a_call_whose_output_is_not_shown_does_not_name_the_next_output() -> None:
    # An empty output is not rendered: the next step's output must not take its command.
    text = (
        '[assistant tool call: Bash] {"command": "mix format"}\n'
        "[assistant] Formatted; now the tests.\n"
        '[assistant tool call: Bash] {"command": "mix test"}\n'
        "[tool result: Bash] 5 tests, 0 failures\n"
        '[assistant tool call: Bash] {"command": "mix compile"}\n'
        '[assistant tool call: Bash] {"command": "mix test test/b_test.exs"}\n'
        "[tool result: Bash] Compiling 3 files (.ex)\n"
        "[tool result: Bash] 2 tests, 1 failure"
    )
    assert [f["content"].rsplit(" (", 1)[1] for f in extract_facts(text)] == [
        "mix test)",
        "mix test test/b_test.exs)",
    ]


def test_a_result_said_in_a_message_names_the_run() -> None:
    facts = extract_facts("[assistant] All **386 tests pass** now.")
    assert [(f["type"], f["content"]) for f in facts] == [
        ("task_state", f"{PASSED}All 386 tests pass now")
    ]


@pytest.mark.parametrize(
    "text",
    [
        "[user] Please add tests for the parser before committing.",
        "[assistant] The tests live in tests/test_api.py and test/spotter_test.exs.",
        "[user] How many tests failed?",
        "[assistant] I added 3 tests for the parser.",
        _run("cat README.md", "We have many tests and 3 test files.\nrun: mix test"),
        _run("ls", "tests/\ntest_results.xml\nexit_codes.md"),
    ],
)
def test_a_line_that_only_mentions_tests_is_no_result(text: str) -> None:
    assert not any(f["content"].startswith("last ") for f in extract_facts(text))


def test_errors_before_the_summary_do_not_crowd_it_out() -> None:
    errors = "\n".join(f"FAILED tests/test_{n}.py::test_x - AssertionError" for n in range(6))
    facts = extract_facts(_run("pytest", f"{errors}\n=== 6 failed, 10 passed in 1.2s ==="))
    assert f"{FAILED}6 failed, 10 passed in 1.2s (pytest)" in [f["content"] for f in facts]


def test_a_question_about_the_last_test_run_finds_the_result(tmp_path: Path) -> None:
    # The knowledge store's own keyword search: the question shares no word with the numbers.
    from memctx.store import FactType, KnowledgeStore, NewFact
    from memctx.text import Redactor

    store = KnowledgeStore(tmp_path, redactor=Redactor())
    for fact in extract_facts(_run("mix test", "Finished in 2.1 seconds\n297 tests, 11 failures")):
        store.ingest(NewFact(FactType(fact["type"]), fact["content"], fact["context"]))
    for question in ("What was the last test run?", "Did the tests pass?", "Did any test fail?"):
        found = [f.content for f, _ in store.search(question)]
        assert any("297 tests, 11 failures" in text for text in found), question

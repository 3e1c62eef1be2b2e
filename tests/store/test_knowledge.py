"""Knowledge store: update operations, the append-only log, search threshold, decisions.

Fake secrets are generated at run time, so the file holds no secret-looking literal.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import random
import stat
import string
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from memctx.errors import StoreError
from memctx.store.knowledge import (
    Fact,
    FactType,
    KnowledgeStore,
    NewFact,
    UpdateDecision,
    decide_update,
    required_matches,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
NATO = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november "
    "oscar papa quebec romeo sierra tango"
).split()


def ticking_clock(start: float = 1_700_000_000.0) -> Callable[[], float]:
    """A clock that advances one second per reading, so every version has its own time."""
    now = [start]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    return clock


@pytest.fixture
def store(tmp_path: Path) -> KnowledgeStore:
    return KnowledgeStore(tmp_path, clock=ticking_clock())


def add(store: KnowledgeStore, content: str, kind: str = "decision", context: str = "") -> Fact:
    fact = store.apply(UpdateDecision("ADD", NewFact(FactType(kind), content, context)))
    assert fact is not None
    return fact


def records(store: KnowledgeStore) -> list[dict[str, object]]:
    """The readable records of the log (torn lines left out)."""
    out = []
    for line in store.path.read_bytes().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


# --- operations ------------------------------------------------------------------------------


def test_add_writes_the_design_record(store: KnowledgeStore) -> None:
    fact = add(store, "Use PostgreSQL instead of MySQL", context="chosen for JSONB")
    assert fact.type is FactType.DECISION and fact.live
    assert store.live_facts() == [fact]
    (rec,) = records(store)
    crc = rec.pop("crc")  # the record's checksum, its last member (memctx.store.checksum)
    assert isinstance(crc, str) and len(crc) == 8 and int(crc, 16) >= 0
    assert rec == {
        "id": fact.id,
        "type": "decision",
        "content": "Use PostgreSQL instead of MySQL",
        "context": "chosen for JSONB",
        "timestamp": fact.timestamp,
    }


def test_update_keeps_id_and_replaces_content(store: KnowledgeStore) -> None:
    old = add(store, "Webhook endpoint is /api/stripe/webhook")
    new = NewFact(FactType.DECISION, "Webhook endpoint is /api/stripe/webhook (signed)", "v2")
    updated = store.apply(UpdateDecision("UPDATE", new, old.id))
    assert updated is not None
    assert updated.id == old.id and updated.content == new.content and updated.context == "v2"
    assert updated.timestamp > old.timestamp
    assert store.live_facts() == [updated]
    assert [r["id"] for r in records(store)] == [old.id, old.id]  # appended, not rewritten


def test_supersede_soft_deletes_and_hides_from_search(store: KnowledgeStore) -> None:
    old = add(store, "Server port is 3000", "config")
    new = store.apply(
        UpdateDecision("SUPERSEDE", NewFact(FactType.CONFIG, "Server port is 8080"), old.id)
    )
    assert new is not None and new.live
    gone = store.get(old.id)
    assert gone is not None and gone.superseded_by == new.id and not gone.live
    assert [f for f, _ in store.search("server port")] == [new]
    both = {f.id for f, _ in store.search("server port", include_superseded=True)}
    assert both == {old.id, new.id}
    assert [f.id for f in store.history(old.id)] == [old.id, new.id]
    assert [f.id for f in store.history(new.id)] == [old.id, new.id]
    assert store.history("unknown") == []
    assert store.stats()["superseded"] == 1


def test_none_does_nothing(store: KnowledgeStore) -> None:
    add(store, "Event-driven with Redis pub/sub", "architecture")
    before = store.path.read_bytes()
    none = UpdateDecision("NONE", NewFact(FactType.ARCHITECTURE, "Event-driven with Redis"))
    assert store.apply(none) is None
    assert store.path.read_bytes() == before


def test_unknown_or_superseded_target_becomes_add(store: KnowledgeStore) -> None:
    fact = store.apply(UpdateDecision("UPDATE", NewFact(FactType.ISSUE, "SSL error"), "nope"))
    assert fact is not None and fact.content == "SSL error"
    old = add(store, "Deploy to staging", "config")
    new = store.apply(UpdateDecision("SUPERSEDE", NewFact(FactType.CONFIG, "Deploy: prod"), old.id))
    assert new is not None
    again = store.apply(UpdateDecision("UPDATE", NewFact(FactType.CONFIG, "Deploy: qa"), old.id))
    assert again is not None and again.id not in (old.id, new.id)
    assert store.stats()["unknown_targets"] == 2
    assert len(store.live_facts()) == 3


def test_delete_is_not_an_operation(store: KnowledgeStore) -> None:
    fact = add(store, "Refund logic not yet implemented", "task_state")
    with pytest.raises(ValueError, match="DELETE is disabled"):
        store.apply(UpdateDecision("DELETE", NewFact(FactType.TASK_STATE, "x"), fact.id))  # type: ignore[arg-type]
    assert store.live_facts() == [fact]


def test_new_fact_validation() -> None:
    with pytest.raises(ValueError):
        NewFact(FactType.DECISION, "   ")
    with pytest.raises(ValueError):
        NewFact("opinion", "x")  # type: ignore[arg-type]
    assert NewFact("config", "x").type is FactType.CONFIG  # type: ignore[arg-type]


# --- the log ---------------------------------------------------------------------------------


def build_history(store: KnowledgeStore) -> None:
    a = add(store, "Use PostgreSQL for the database")
    add(store, "Event-driven with Redis pub/sub", "architecture")
    store.apply(UpdateDecision("UPDATE", NewFact(FactType.DECISION, "Use PostgreSQL 16"), a.id))
    b = add(store, "Deploy to 10.0.0.5 via Docker", "config")
    store.apply(UpdateDecision("SUPERSEDE", NewFact(FactType.CONFIG, "Deploy to 10.0.0.9"), b.id))


def snapshot(store: KnowledgeStore) -> list[Fact]:
    ids = dict.fromkeys(str(r["id"]) for r in records(store))
    return [f for i in ids if (f := store.get(i)) is not None]


def test_replay_after_reopen_equals_state(tmp_path: Path) -> None:
    store = KnowledgeStore(tmp_path, clock=ticking_clock())
    build_history(store)
    before = snapshot(store)
    reopened = KnowledgeStore(tmp_path)
    assert snapshot(reopened) == before
    store.reload()
    assert snapshot(store) == before
    assert reopened.live_facts() == store.live_facts()
    assert reopened.stats() == store.stats()


def test_torn_last_line_is_skipped_and_counted(tmp_path: Path) -> None:
    store = KnowledgeStore(tmp_path, clock=ticking_clock())
    build_history(store)
    before = snapshot(store)
    with open(store.path, "ab") as fh:  # a writer killed in the middle of a line
        fh.write(b'{"id":"torn","type":"decision","content":"Use Po')
    reopened = KnowledgeStore(tmp_path, clock=ticking_clock(1_800_000_000.0))
    assert reopened.stats()["torn_lines"] == 1
    assert snapshot(reopened) == before
    # The next append ends the torn line first: it never merges with a good record.
    fresh = add(reopened, "Redis for caching", "architecture")
    third = KnowledgeStore(tmp_path)
    assert third.get(fresh.id) == fresh
    assert third.stats()["skipped_lines"] == 1 and third.stats()["torn_lines"] == 0


def test_garbage_lines_are_never_fatal(tmp_path: Path) -> None:
    store = KnowledgeStore(tmp_path)
    fact = add(store, "Use uv for packaging")
    with open(store.path, "ab") as fh:
        fh.write(b"not json\n[1, 2]\n{}\n\xff\xfe\n" + b'{"id":"x","type":"mood"}\n')
    reopened = KnowledgeStore(tmp_path)
    assert reopened.live_facts() == [fact]
    assert reopened.stats()["skipped_lines"] == 5


def test_compaction_keeps_state(tmp_path: Path) -> None:
    store = KnowledgeStore(tmp_path, clock=ticking_clock())
    build_history(store)
    before = snapshot(store)
    store.compact()
    assert len(records(store)) == len(before)
    assert snapshot(store) == before
    assert snapshot(KnowledgeStore(tmp_path)) == before
    assert store.stats()["dead_lines"] == 0
    # Private before and after: the facts come from the user's conversations.
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_compaction_runs_when_dead_versions_outnumber_live(tmp_path: Path) -> None:
    store = KnowledgeStore(tmp_path, clock=ticking_clock())
    fact = add(store, "Retry budget is 1")
    for n in range(2, 12):
        decision = UpdateDecision("UPDATE", NewFact(FactType.DECISION, f"Retry budget is {n}"))
        store.apply(UpdateDecision(decision.op, decision.fact, fact.id))
    stats = store.stats()
    assert stats["compactions"] >= 1 and stats["dead_lines"] <= stats["facts"]
    assert [f.content for f in KnowledgeStore(tmp_path).live_facts()] == ["Retry budget is 11"]


def test_other_instances_see_appends_and_compactions(tmp_path: Path) -> None:
    one, two = KnowledgeStore(tmp_path), KnowledgeStore(tmp_path)
    fact = add(one, "Use ruff for linting")
    assert two.get(fact.id) == fact
    one.compact()
    add(two, "Use mypy strict")
    assert {f.content for f in one.live_facts()} == {"Use ruff for linting", "Use mypy strict"}


def test_concurrent_processes_never_interleave(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(REPO_ROOT)!r})
        from memctx.store.knowledge import FactType, KnowledgeStore, NewFact, UpdateDecision
        store = KnowledgeStore(sys.argv[1])
        for i in range(40):
            fact = NewFact(FactType.TASK_STATE, f"worker {{sys.argv[2]}} step {{i}} " + "x" * 900)
            store.apply(UpdateDecision("ADD", fact))
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(tmp_path), str(w)]) for w in range(4)
    ]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    lines = (tmp_path / "knowledge.jsonl").read_bytes().splitlines()
    assert len(lines) == 160 and all(json.loads(line)["content"] for line in lines)
    assert len(KnowledgeStore(tmp_path).live_facts()) == 160


def test_write_errors_are_store_errors_and_memory_matches_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = KnowledgeStore(tmp_path)
    add(store, "Use PostgreSQL")
    real_write = os.write

    def disk_full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def short_write(fd: int, data: bytes) -> int:
        return real_write(fd, data[: len(data) // 2])

    with monkeypatch.context() as m:
        m.setattr(os, "write", disk_full)
        with pytest.raises(StoreError, match="No space left"):
            add(store, "Use SQLite")
    assert [f.content for f in store.live_facts()] == ["Use PostgreSQL"]
    with monkeypatch.context() as m:
        m.setattr(os, "write", short_write)
        with pytest.raises(StoreError, match="short write"):
            add(store, "Use DuckDB")
    assert [f.content for f in store.live_facts()] == ["Use PostgreSQL"]
    assert store.stats()["torn_lines"] == 1
    fresh = add(store, "Use DuckDB")
    assert KnowledgeStore(tmp_path).live_facts() == store.live_facts()
    assert store.live_facts()[-1] == fresh


def test_unusable_store_dir_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError, match="cannot create"):
        KnowledgeStore(blocker / "store")


def test_secrets_never_reach_the_file(tmp_path: Path) -> None:
    rng = random.Random(7)
    alnum = string.ascii_letters + string.digits
    token = "ghp_" + "".join(rng.choice(alnum) for _ in range(36))
    store = KnowledgeStore(tmp_path)
    fact = add(store, f"CI pushes with token {token}", "config", context=f"GITHUB_TOKEN={token}")
    assert token not in fact.content and token not in fact.context
    assert "[REDACTED:" in fact.content
    old = store.apply(
        UpdateDecision("UPDATE", NewFact(FactType.CONFIG, f"CI token is {token} now"), fact.id)
    )
    assert old is not None and token not in old.content
    again = store.decide(NewFact(FactType.CONFIG, f"CI token is {token} now"))
    assert again.op == "NONE"  # compared after redaction, like the stored fact
    for path in tmp_path.iterdir():
        assert token.encode() not in path.read_bytes()


# --- search ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("q", "need"), [(1, 1), (2, 2), (3, 2), (4, 2), (8, 4), (9, 3), (10, 3), (20, 6), (40, 6)]
)
def test_required_matches(q: int, need: int) -> None:
    assert required_matches(q) == need


@pytest.mark.parametrize("q", [1, 2, 3, 8, 9, 20])
def test_adaptive_threshold_boundary(tmp_path: Path, q: int) -> None:
    store = KnowledgeStore(tmp_path)
    words = NATO[:q]
    need = required_matches(q)
    inside = add(store, " ".join([*words[:need], "zulu"]))
    outside = add(store, " ".join([*words[: need - 1], "yankee"]))
    add(store, "unrelated whiskey xray")
    hits = [f.id for f, _ in store.search(" ".join(words))]
    assert inside.id in hits and outside.id not in hits


def test_idf_makes_rare_words_count_more(store: KnowledgeStore) -> None:
    for i in range(6):
        add(store, f"alpha bravo note {i}")
    rare = add(store, "charlie delta")
    common = store.search("alpha bravo charlie delta")
    assert common[0][0] == rare and 0 < common[-1][1] < common[0][1] <= 1.0


def test_ties_newest_first_and_full_match_scores_one(store: KnowledgeStore) -> None:
    old = add(store, "Use PostgreSQL")
    new = add(store, "Use PostgreSQL", "architecture")
    hits = store.search("postgresql")
    assert [f for f, _ in hits] == [new, old] and hits[0][1] == pytest.approx(1.0)
    assert store.search("postgresql", limit=1) == hits[:1]
    assert store.search("") == [] and store.search("the of") == []


def test_chinese_query_matches_chinese_fact(store: KnowledgeStore) -> None:
    target = add(store, "决定把数据库迁移到 PostgreSQL", context="性能原因")
    add(store, "前端使用 React 组件库", "architecture")
    hits = store.search("数据库迁移")
    assert [f for f, _ in hits] == [target]
    assert store.search("数据库迁移怎么做的") and not store.search("前端测试")


def test_context_is_searchable(store: KnowledgeStore) -> None:
    fact = add(store, "Pin numpy below 3", context="scipy wheels lag behind")
    assert [f for f, _ in store.search("scipy wheels")] == [fact]


# --- rule-based decisions --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "old", "new", "op"),
    [
        ("decision", "Use PostgreSQL for the database", "use postgresql for the database.", "NONE"),
        ("decision", "Use PostgreSQL for the database", "Use PostgreSQL", "NONE"),
        (
            "implementation",
            "Webhook endpoint is /api/stripe/webhook",
            "Webhook endpoint is /api/stripe/webhook and verifies the Stripe signature",
            "UPDATE",
        ),
        ("config", "Server port is 3000", "Server port is 8080", "SUPERSEDE"),
        ("decision", "Use PostgreSQL for the database", "Use SQLite for the database", "SUPERSEDE"),
        ("config", "Deploy to 10.0.0.5 via Docker", "Deploy to 10.0.0.9 via Docker", "SUPERSEDE"),
        ("config", "database = postgres", "database = sqlite", "SUPERSEDE"),
        ("task_state", "Refund logic not yet implemented", "Refund logic implemented", "SUPERSEDE"),
        ("decision", "使用 PostgreSQL 作为数据库", "使用 SQLite 作为数据库", "SUPERSEDE"),
        # Kana, hangul and compatibility ideographs are CJK (memctx.text's one range): their
        # runs are compared as bigrams, not as one opaque word each.
        (
            "decision",
            "データベースはポスグレを使う",
            "データベースはポスグレを使う、レプリカ付き",
            "UPDATE",
        ),
        ("decision", "데이터베이스는 PostgreSQL 사용", "데이터베이스는 SQLite 사용", "SUPERSEDE"),
        ("decision", "豈更車賈滑串", "豈更車賈滑串句龜", "UPDATE"),
        # A directory is a value ("out/" -> "dist/"), though the tokenizer's word is "out".
        ("config", "Build artifacts go to out/", "Build artifacts go to dist/", "SUPERSEDE"),
        # A negation is an English word with its apostrophe ("isn't"), not a keyword token.
        ("issue", "The export job isn't idempotent", "The export job is idempotent", "SUPERSEDE"),
        ("issue", "SSL cert error in staging environment", "Flaky test in CI cache", "ADD"),
        # A documented limit: a replacement sharing no words is not recognised.
        ("decision", "Use PostgreSQL instead of MySQL", "Switched to SQLite for tests", "ADD"),
    ],
)
def test_decide(store: KnowledgeStore, kind: str, old: str, new: str, op: str) -> None:
    existing = add(store, old, kind)
    add(store, "Unrelated fact about logging format", kind)
    decision = store.decide(NewFact(FactType(kind), new))
    assert decision.op == op
    assert decision.target_id == (None if op == "ADD" else existing.id)


def test_decide_only_compares_live_facts_of_the_same_type(store: KnowledgeStore) -> None:
    add(store, "Server port is 3000", "config")
    assert store.decide(NewFact(FactType.ISSUE, "Server port is 3000")).op == "ADD"
    facts = [Fact("a", FactType.CONFIG, "Server port is 3000", "", 1.0, superseded_by="b")]
    assert decide_update(NewFact(FactType.CONFIG, "Server port is 3000"), facts).op == "ADD"


def test_decide_does_not_depend_on_the_order_candidates_come_in() -> None:
    # The store hands candidates over from a set of ids, whose order changes with every
    # process (PYTHONHASHSEED): two equally similar, equally new targets must still give
    # one answer, or the same eval gives different numbers run to run.
    facts = [
        Fact("b", FactType.CONFIG, "Server port is 4000", "", 5.0),
        Fact("a", FactType.CONFIG, "Server port is 3000", "", 5.0),
    ]
    new = NewFact(FactType.CONFIG, "Server port is 8080")
    decisions = {
        (d.op, d.target_id) for d in (decide_update(new, facts), decide_update(new, facts[::-1]))
    }
    assert decisions == {("SUPERSEDE", "a")}


def test_ingest_applies_the_decision(store: KnowledgeStore) -> None:
    first = add(store, "Server port is 3000", "config")
    decision, fact = store.ingest(NewFact(FactType.CONFIG, "Server port is 8080"))
    assert decision.op == "SUPERSEDE" and fact is not None
    assert store.live_facts() == [fact]
    again, nothing = store.ingest(NewFact(FactType.CONFIG, "server port is 8080"))
    assert again.op == "NONE" and nothing is None
    assert [f.id for f in store.history(fact.id)] == [first.id, fact.id]


# --- changed records: checksums ------------------------------------------------------------


def _flip_in(path: Path, needle: bytes, offset: int, bit: int, occurrence: int = 0) -> None:
    data = bytearray(path.read_bytes())
    at = -1
    for _ in range(occurrence + 1):
        at = data.index(needle, at + 1)
    data[at + offset] ^= 1 << bit
    path.write_bytes(bytes(data))


def test_a_changed_record_is_never_served_and_is_counted(tmp_path: Path) -> None:
    store = KnowledgeStore(tmp_path, clock=ticking_clock())
    port = add(store, "API listens on port 8000", "config")
    keep = add(store, "Use Redis for the session cache")
    _flip_in(store.path, b"port 8000", 5, 0)  # "8000" -> "9000": valid JSON, one bit
    assert "port 9000" in store.path.read_text()
    again = KnowledgeStore(tmp_path)
    assert again.live_facts() == [keep] and again.get(port.id) is None
    assert not again.search("API port 9000") and not again.search("API port 8000")
    stats = again.stats()
    assert stats["checksum_mismatches"] == 1 and stats["skipped_lines"] == 0


def test_a_changed_latest_version_withdraws_the_fact(tmp_path: Path) -> None:
    # The version read last decides a fact's state: if it fails, the earlier one (here the
    # live, not yet superseded version) must not come back as if nothing had happened.
    store = KnowledgeStore(tmp_path, clock=ticking_clock())
    old = add(store, "Server port is 3000", "config")
    new = store.apply(
        UpdateDecision("SUPERSEDE", NewFact(FactType.CONFIG, "Server port is 8080"), old.id)
    )
    assert new is not None
    _flip_in(store.path, b'"supersededBy"', 3, 1)  # "supersededBy" -> "suqersededBy"
    again = KnowledgeStore(tmp_path)
    assert again.get(old.id) is None  # withdrawn, not served as live
    assert [f.id for f in again.live_facts()] == [new.id]
    assert again.stats()["checksum_mismatches"] == 1


def test_no_single_bit_flip_of_a_record_is_served_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = KnowledgeStore(tmp_path, clock=ticking_clock())
    fact = add(store, "Use uv", "decision", context="ci")
    line = store.path.read_bytes()
    changed = 0
    reader = KnowledgeStore(tmp_path)
    monkeypatch.setattr(logging.getLogger("memctx"), "disabled", True)  # a warning per flip
    for pos in range(len(line) - 1):  # the newline aside
        for bit in range(8):
            data = bytearray(line)
            data[pos] ^= 1 << bit
            store.path.write_bytes(bytes(data))
            reader.reload()
            got = reader.live_facts()
            assert got in ([], [fact]), (pos, bit, got)
            changed += got == []
    assert changed > 8 * (len(line) - 40)  # nearly every flip is caught


def test_records_without_a_checksum_still_load(tmp_path: Path) -> None:
    store = KnowledgeStore(tmp_path, clock=ticking_clock())
    facts = [add(store, "Use PostgreSQL"), add(store, "Deploy with Docker", "config")]
    legacy = []
    for rec in records(store):
        del rec["crc"]  # written before checksums existed
        legacy.append(json.dumps(rec))
    store.path.write_text("\n".join(legacy) + "\n")
    again = KnowledgeStore(tmp_path)
    assert again.live_facts() == facts and again.stats()["checksum_mismatches"] == 0
    again.compact()  # a compaction seals them
    assert all("crc" in rec for rec in records(again))
    assert KnowledgeStore(tmp_path).live_facts() == facts


# --- distinct facts never supersede each other --------------------------------------------

_COMPONENTS = (
    "auth billing search payments inventory notifications reporting gateway scheduler "
    "ledger checkout catalog shipping pricing analytics profile session upload export import "
    "audit webhook mailer thumbnail geocoder recommender fraud loyalty invoice refund"
).split()
_KINDS = (
    "service worker cache queue database api job cron proxy bucket index cluster pipeline "
    "consumer producer replica gateway daemon sidecar endpoint"
).split()
_TECH = ("Redis", "PostgreSQL", "Kafka", "RabbitMQ", "MySQL", "SQLite", "Memcached", "NATS")
_SHAPES: tuple[Callable[[random.Random, str, str], str], ...] = (
    lambda r, c, k: f"{c} {k} listens on port {r.randint(1024, 65000)}",
    lambda r, c, k: f"The {c} {k} uses {r.choice(_TECH)} {r.randint(2, 16)}",
    lambda r, c, k: f"{c.title()}{k.title()} runs on host node-{r.randint(1, 99)}",
    lambda r, c, k: f"Set the {c} {k} timeout to {r.randint(1, 600)} seconds",
    lambda r, c, k: f"{c} {k}: config lives in config/{c}_{k}.yaml",
    lambda r, c, k: f"For the {c} {k}, retries = {r.randint(1, 9)}",
    lambda r, c, k: f"The {c} {k} is not deployed to staging yet",
    lambda r, c, k: f"Use {r.choice(_TECH)} for the {c} {k}",
    lambda r, c, k: f"{c} {k} memory limit is {r.randint(1, 64)} GB",
    lambda r, c, k: f"The {c} {k} logs go to /var/log/{c}/{k}.log",
)


def distinct_facts(n: int = 600, seed: int = 11) -> list[str]:
    """``n`` facts about ``n`` different things (each component + kind once), in varied
    shapes; many share a shape and differ only in what they are about and in their value."""
    rng = random.Random(seed)
    subjects = [(c, k) for c in _COMPONENTS for k in _KINDS]
    rng.shuffle(subjects)
    return [rng.choice(_SHAPES)(rng, c, k) for c, k in subjects[:n]]


def test_600_distinct_facts_stay_600_live(tmp_path: Path) -> None:
    store = KnowledgeStore(tmp_path, clock=ticking_clock())
    facts = distinct_facts()
    assert len(set(facts)) == 600
    ops = [store.ingest(NewFact(FactType.CONFIG, text))[0].op for text in facts]
    assert ops == ["ADD"] * 600
    assert len(store.live_facts()) == 600 and store.stats()["superseded"] == 0


def test_facts_sharing_a_shape_are_not_about_the_same_thing(store: KnowledgeStore) -> None:
    for text in (
        "auth service listens on port 8001",
        "billing service listens on port 8002",
        "search service listens on port 8003",
        "AuthService runs on host node-1",
        "BillingService runs on host node-2",
    ):
        assert store.ingest(NewFact(FactType.CONFIG, text))[0].op == "ADD", text
    assert len(store.live_facts()) == 5


@pytest.mark.parametrize(
    ("kind", "old", "new"),
    [
        ("config", "auth service listens on port 8001", "auth service listens on port 9001"),
        ("decision", "use PostgreSQL for the db", "use SQLite for the db"),
        ("config", "The API server runs on port 8080", "The API server now runs on port 9090"),
        ("config", "Let's set the API port to 8080.", "Actually, switch the API port to 9090."),
        ("config", "AuthService runs on host node-1", "AuthService runs on host node-7"),
        ("config", "For the auth cache, retries = 3", "For the auth cache, retries = 5"),
        ("issue", "auth service is not deployed", "auth service is deployed"),
        ("decision", "Python 3.11 is required for CI", "Python 3.12 is required for CI"),
    ],
)
def test_same_subject_with_a_changed_value_still_supersedes(
    store: KnowledgeStore, kind: str, old: str, new: str
) -> None:
    first = add(store, old, kind)
    decision, fact = store.ingest(NewFact(FactType(kind), new))
    assert (decision.op, decision.target_id) == ("SUPERSEDE", first.id)
    assert fact is not None and store.live_facts() == [fact]


# --- something else in place of knowledge.jsonl ----------------------------------------------


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_something_else_in_place_of_the_log_is_a_store_error(tmp_path: Path, kind: str) -> None:
    store = KnowledgeStore(tmp_path, clock=ticking_clock())
    fact = add(store, "Use PostgreSQL")
    log = store.path
    log.rename(tmp_path / "moved.jsonl")
    if kind == "directory":
        log.mkdir()
    else:
        os.mkfifo(log)
    errors: list[str] = []

    def attempt(action: Callable[[], object]) -> None:
        done = threading.Event()
        result: list[BaseException] = []

        def run() -> None:
            try:
                action()
            except BaseException as exc:
                result.append(exc)
            done.set()

        threading.Thread(target=run, daemon=True).start()
        assert done.wait(10), "blocked"  # a FIFO must never be waited on
        assert result and isinstance(result[0], StoreError), result
        errors.append(str(result[0]))

    attempt(lambda: KnowledgeStore(tmp_path))
    attempt(lambda: store.live_facts() if store.reload() is None else None)
    attempt(lambda: add(store, "Use SQLite"))
    for message in errors:
        assert str(log) in message and "move it away" in message, message
    assert (log.is_dir() and not any(log.iterdir())) if kind == "directory" else log.exists()
    log.rmdir() if kind == "directory" else log.unlink()
    (tmp_path / "moved.jsonl").rename(log)
    assert KnowledgeStore(tmp_path).live_facts() == [fact]  # nothing lost

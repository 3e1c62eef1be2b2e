"""The seeded scenario generator: determinism, sizes, and the invariants probes rely on.

Most tests use the quick scale (0.15); the checks here are written independently of the
generator's own checker (memctx.harness.gen.check), which is tested separately by corrupting a
scenario.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from memctx import estimate_tokens, pairing_violations, redact
from memctx.harness.gen.check import scenario_problems
from memctx.harness.gen.facts import REVISIONS_EN, REVISIONS_ZH, STATEMENTS_EN, STATEMENTS_ZH
from memctx.harness.gen.generate import (
    DEFAULT_SUITES,
    GENERATOR_VERSION,
    SUITES,
    gen_main,
    generate_suite,
    suite_stats,
    verify_datasets,
    write_datasets,
)
from memctx.harness.gen.suites import FACT_SUITES
from memctx.harness.gen.topics import TOPICS
from memctx.harness.gen.turns import ONE_WORD_EN, ONE_WORD_ZH
from memctx.harness.scenario import (
    FACT_KINDS,
    PROBE_KINDS,
    Scenario,
    content_sha256,
    dump_scenarios,
    load_scenarios,
)
from memctx.messages.anatomy import token_text

QUICK = 0.15
_CJK = re.compile(r"[\u4e00-\u9fff]")
_STOP = set(
    "the a an of to in on for and or is are be we our us it its this that what which who whose "
    "how when where do does did i you me my with from by at as if so can should would again "
    "get up into than then there their they them one any all".split()
)


def norm(text: str) -> str:
    return " ".join(text.split()).casefold()


@pytest.fixture(scope="module")
def quick() -> dict[str, list[Scenario]]:
    return {suite: generate_suite(suite, seed=0, scale=QUICK) for suite in SUITES}


@pytest.fixture(scope="module")
def full() -> dict[str, list[Scenario]]:
    return {suite: generate_suite(suite, seed=0, scale=1.0) for suite in SUITES}


def _all(suites: dict[str, list[Scenario]]) -> list[Scenario]:
    return [s for scenarios in suites.values() for s in scenarios]


def _texts(scenario: Scenario) -> dict[str, str]:
    return {
        f"{s.id}:{i}": norm(token_text(m))
        for s in scenario.sessions
        for i, m in enumerate(s.messages)
    }


def _message(scenario: Scenario, ref: str) -> dict[str, Any]:
    sid, _, index = ref.rpartition(":")
    return scenario.session(sid).messages[int(index)]


def _is_final_assistant(m: dict[str, Any]) -> bool:
    content = m.get("content")
    blocks = content if isinstance(content, list) else []
    return (
        m.get("role") == "assistant"
        and not m.get("tool_calls")
        and not any(b.get("type") == "tool_use" for b in blocks)
    )


def _tool_outputs(m: dict[str, Any]) -> list[str]:
    if m.get("role") == "tool":
        return [m["content"]]
    content = m.get("content")
    if isinstance(content, list):
        return [b["content"] for b in content if b.get("type") == "tool_result"]
    return []


def test_suite_names_and_unknown_suite() -> None:
    assert (
        (
            *FACT_SUITES,
            "rules",
            "task-state",
            "artifacts",
            "multi-cycle",
            "decisions",
            "continuation",
        )
        == SUITES
        == DEFAULT_SUITES
    )
    assert FACT_SUITES == (
        "needle",
        "supersede",
        "paraphrase",
        "tool-heavy",
        "cjk",
        "short-queries",
        "secrets",
        "long-haul",
        "cross-session",
    )
    with pytest.raises(
        ValueError, match=r"needle.*cross-session.*task-state.*decisions.*continuation"
    ):
        generate_suite("haystack")
    with pytest.raises(ValueError, match="scale"):
        generate_suite("needle", scale=0)


def test_quick_scale_every_suite_has_a_probed_scenario(quick: dict[str, list[Scenario]]) -> None:
    for suite, scenarios in quick.items():
        assert scenarios, suite
        assert any(len(s.probes) >= 3 for s in scenarios), suite
        for s in scenarios:
            assert s.suite == suite and s.id.startswith(suite) and s.seed == 0
            tokens = sum(estimate_tokens(token_text(m)) for x in s.sessions for m in x.messages)
            assert tokens > 2.5 * s.window, (s.id, tokens, s.window)  # trimming must happen


def test_deterministic_bytes_and_seed_sensitivity(tmp_path: Path) -> None:
    a = dump_scenarios(generate_suite("needle", seed=3, scale=QUICK), tmp_path / "a.jsonl.gz")
    b = dump_scenarios(generate_suite("needle", seed=3, scale=QUICK), tmp_path / "b.jsonl.gz")
    c = dump_scenarios(generate_suite("needle", seed=4, scale=QUICK), tmp_path / "c.jsonl.gz")
    assert a == b
    assert (tmp_path / "a.jsonl.gz").read_bytes() == (tmp_path / "b.jsonl.gz").read_bytes()
    assert a != c
    other = generate_suite("supersede", seed=3, scale=QUICK)[0]
    assert other.to_json() != generate_suite("needle", seed=3, scale=QUICK)[0].to_json()


def test_round_trip_through_dump_and_load(quick: dict[str, list[Scenario]], tmp_path: Path) -> None:
    for suite in ("cjk", "secrets", "cross-session"):
        path = tmp_path / f"{suite}.jsonl.gz"
        digest = dump_scenarios(quick[suite], path)
        loaded = load_scenarios(path)
        assert [s.to_json() for s in loaded] == [s.to_json() for s in quick[suite]]
        assert content_sha256(path) == digest


def test_sessions_are_pairing_clean_in_both_formats(quick: dict[str, list[Scenario]]) -> None:
    formats = set()
    for scenario in _all(quick):
        formats.add(scenario.format)
        for session in scenario.sessions:
            messages = list(session.messages)
            assert pairing_violations(messages) == [], (scenario.id, session.id)
            assert messages[0]["role"] == "system"
            roles = {m["role"] for m in messages}
            if scenario.format == "openai":
                assert "tool" in roles
                assert any(m.get("tool_calls") for m in messages)
            else:
                assert roles == {"system", "user", "assistant"}
                assert any(
                    isinstance(m["content"], list)
                    and any(b.get("type") == "tool_use" for b in m["content"])
                    for m in messages
                )
    assert formats == {"openai", "anthropic"}


def test_realistic_work_parallel_calls_failures_and_one_word_turns(
    quick: dict[str, list[Scenario]],
) -> None:
    parallel = errors = short_turns = 0
    for scenario in _all(quick):
        for session in scenario.sessions:
            for m in session.messages:
                content = m.get("content")
                calls = m.get("tool_calls") or [
                    b
                    for b in (content if isinstance(content, list) else [])
                    if b.get("type") == "tool_use"
                ]
                parallel += len(calls) >= 2
                errors += any(
                    "Exit code 1" in out or "exit code 1]" in out for out in _tool_outputs(m)
                )
                text = content if isinstance(content, str) else ""
                short_turns += m["role"] == "user" and text in (*ONE_WORD_EN, *ONE_WORD_ZH)
    assert parallel >= 10 and errors >= 10 and short_turns >= 10


def test_probes_are_at_boundaries_with_unique_planted_answers(
    quick: dict[str, list[Scenario]],
) -> None:
    checked = 0
    for scenario in _all(quick):
        texts = _texts(scenario)
        refs = list(texts)
        for p in scenario.probes:
            messages = scenario.session(p.session_id).messages
            assert _is_final_assistant(messages[p.at - 1]), p.id
            assert p.at == len(messages) or messages[p.at]["role"] == "user", p.id
            assert p.kind in PROBE_KINDS and p.evidence and p.answers
            assert all(len(a) >= 3 for a in p.answers)
            holders = {
                ref for ref, text in texts.items() if any(norm(a) in text for a in p.answers)
            }
            assert holders == set(p.evidence), (p.id, holders, p.evidence)
            for ref, span in zip(p.evidence, p.evidence_text, strict=True):
                assert norm(span) in texts[ref] and "\n" not in span
                assert any(norm(a) in norm(span) for a in p.answers)
                ev_session = int(ref.split(":")[0][1:])
                if ref.split(":")[0] == p.session_id:
                    assert int(ref.rpartition(":")[2]) < p.at
                else:
                    assert ev_session < int(p.session_id[1:])
            first = min(refs.index(ref) for ref in p.evidence)
            assert not any(norm(a) in texts[r] for a in p.answers for r in refs[:first])
            assert not any(norm(a) in norm(p.question) for a in (*p.answers, *p.stale))
            checked += 1
    assert checked >= 50


def test_answers_survive_redaction(quick: dict[str, list[Scenario]]) -> None:
    for scenario in _all(quick):
        for p in scenario.probes:
            masked = norm(redact(token_text(_message(scenario, p.evidence[0]))))
            assert any(norm(a) in masked for a in p.answers), p.id


def test_supersede_stale_values_only_in_earlier_plants(full: dict[str, list[Scenario]]) -> None:
    revised = 0
    for scenario in full["supersede"]:
        texts = _texts(scenario)
        refs = list(texts)
        for p in scenario.probes:
            if not p.stale:
                continue
            revised += 1
            assert "supersede" in p.tags
            evidence = refs.index(p.evidence[0])
            holders = [i for i, r in enumerate(refs) if any(norm(s) in texts[r] for s in p.stale)]
            assert holders and all(i < evidence for i in holders), p.id
            assert len(holders) <= 2  # the original plant and at most one earlier revision
            assert not set(map(norm, p.stale)) & set(map(norm, p.answers))
    assert revised >= 20
    before = [p for s in full["supersede"] for p in s.probes if "before-revision" in p.tags]
    assert before and all(not p.stale for p in before)
    later_stale = {norm(v) for s in full["supersede"] for p in s.probes for v in p.stale}
    assert any(norm(a) in later_stale for p in before for a in p.answers)


def test_secrets_in_tool_output_are_masked_and_never_answers(
    quick: dict[str, list[Scenario]],
) -> None:
    for scenario in quick["secrets"]:
        assert len(scenario.secrets) >= 4
        answers = {norm(a) for p in scenario.probes for a in p.answers}
        for secret in scenario.secrets:
            outputs = [
                o
                for x in scenario.sessions
                for m in x.messages
                for o in _tool_outputs(m)
                if secret in o
            ]
            assert outputs, secret[:6]
            for o in outputs:
                assert secret not in redact(o)
            assert not any(a in norm(secret) or norm(secret) in a for a in answers)
        assert any("secret-adjacent" in p.tags for p in scenario.probes)


def test_tool_heavy_facts_only_in_large_tool_outputs(quick: dict[str, list[Scenario]]) -> None:
    for scenario in quick["tool-heavy"]:
        for p in scenario.probes:
            m = _message(scenario, p.evidence[0])
            outputs = [o for o in _tool_outputs(m) if any(a in o for a in p.answers)]
            assert outputs and max(len(o) for o in outputs) > 3000, p.id
            assert "tool-output" in p.tags


def test_paraphrase_questions_share_few_words_with_the_evidence(
    quick: dict[str, list[Scenario]],
) -> None:
    def words(text: str) -> set[str]:
        return {w for w in re.findall(r"[a-z][a-z0-9'-]+", text.lower()) if len(w) >= 3} - _STOP

    def overlap(scenarios: list[Scenario]) -> float:
        shares = []
        for s in scenarios:
            for p in s.probes:
                q = words(p.question)
                shares.append(len(q & words(p.evidence_text[0])) / len(q) if q else 0.0)
        return statistics.mean(shares)

    para = overlap(quick["paraphrase"])
    assert para <= 0.3
    assert overlap(quick["needle"]) > para + 0.15  # the measure does see shared wording


def test_cjk_suite_speaks_chinese(quick: dict[str, list[Scenario]]) -> None:
    for scenario in quick["cjk"]:
        users = [m for m in scenario.sessions[0].messages if m["role"] == "user"]
        texts = [m["content"] for m in users if isinstance(m["content"], str)]
        texts += [
            b["text"]
            for m in users
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "text"
        ]
        assert sum(bool(_CJK.search(t)) for t in texts) >= 0.6 * len(texts)
        assert all(_CJK.search(p.question) for p in scenario.probes)
        assert (
            sum(bool(_CJK.search(p.evidence_text[0])) for p in scenario.probes)
            >= len(scenario.probes) // 2
        )
        assert all("cjk" in p.tags for p in scenario.probes)


def test_short_queries_are_short_and_follow_a_topic_turn(quick: dict[str, list[Scenario]]) -> None:
    for scenario in quick["short-queries"]:
        for p in scenario.probes:
            assert len(p.question) <= 20, p.question
            previous_user = scenario.session(p.session_id).messages[p.at - 2]
            assert previous_user["role"] == "user" and len(token_text(previous_user)) > 30


def test_cross_session_probes_refer_to_earlier_sessions(full: dict[str, list[Scenario]]) -> None:
    for scenario in full["cross-session"]:
        ids = [s.id for s in scenario.sessions]
        assert 2 <= len(ids) <= 4 and ids == [f"s{i + 1}" for i in range(len(ids))]
        assert scenario.probes
        for p in scenario.probes:
            assert ids.index(p.evidence[0].split(":")[0]) < ids.index(p.session_id), p.id
            assert "cross-session" in p.tags
        ids_all = [
            b.get("id")
            for s in scenario.sessions
            for m in s.messages
            for b in (m.get("tool_calls") or [])
        ]
        assert len(ids_all) == len(set(ids_all))


def test_long_haul_exceeds_a_million_tokens_with_probes_throughout(
    full: dict[str, list[Scenario]],
) -> None:
    (scenario,) = full["long-haul"]
    tokens = sum(estimate_tokens(token_text(m)) for m in scenario.sessions[0].messages)
    assert tokens >= 1_000_000 and scenario.window == 200_000
    size = len(scenario.sessions[0].messages)
    ats = sorted(p.at for p in scenario.probes)
    assert 30 <= len(ats) <= 60
    assert ats[0] < 0.3 * size and ats[-1] > 0.8 * size
    assert sum("late" in p.tags for p in scenario.probes) >= 10


def test_full_scale_sizes() -> None:
    # How fast the full set is generated is a goal of `make bench`, not a test.
    stats = {suite: suite_stats(generate_suite(suite, scale=1.0)) for suite in SUITES}
    probes = sum(s["probes"] for s in stats.values())
    tokens = sum(s["tokens"] for s in stats.values())
    assert 650 <= probes <= 850 and tokens <= 4_900_000
    for suite, s in stats.items():
        assert 30 <= s["probes"] <= 60, (suite, s)


def test_every_fact_kind_is_probed(full: dict[str, list[Scenario]]) -> None:
    kinds = {p.kind for suite in FACT_SUITES for s in full[suite] for p in s.probes}
    assert kinds == set(FACT_KINDS)
    assert {p.kind for s in _all(full) for p in s.probes} - kinds == {
        "rule",
        "task",
        "artifact",
        "rationale",
        "continuation",
    }
    late = [("late" in p.tags) for s in _all(full) for p in s.probes]
    assert sum(late) > 0.6 * len(late)


def test_wording_banks_are_varied() -> None:
    for kind in FACT_KINDS:
        assert len(set(STATEMENTS_EN[kind])) >= 8 and len(set(STATEMENTS_ZH[kind])) >= 8
    assert len(set(REVISIONS_EN)) >= 8 and len(set(REVISIONS_ZH)) >= 8
    assert {t.kind for t in TOPICS} == set(FACT_KINDS)
    for topic in TOPICS:
        assert len(topic.q) >= 2 and len(topic.para) >= 3 and topic.short and topic.q_zh
        assert topic.lines, topic.key


def test_checker_catches_a_leaked_answer_and_a_bad_boundary(
    quick: dict[str, list[Scenario]],
) -> None:
    scenario = quick["needle"][0]
    assert scenario_problems(scenario) == []
    probe = scenario.probes[0]
    session = scenario.sessions[0]
    messages = list(session.messages)
    messages[1] = {**messages[1], "content": f"{token_text(messages[1])} {probe.answers[0]}"}
    leaked = dataclasses.replace(
        scenario, sessions=(dataclasses.replace(session, messages=tuple(messages)),)
    )
    assert any("answers occur" in p for p in scenario_problems(leaked))
    moved = dataclasses.replace(scenario, probes=(dataclasses.replace(probe, at=probe.at - 1),))
    assert any("not after a final assistant" in p for p in scenario_problems(moved))


def test_write_and_verify_datasets(tmp_path: Path) -> None:
    manifest = write_datasets(tmp_path, seed=1, scale=QUICK, suites=("needle", "secrets"))
    assert manifest["version"] == GENERATOR_VERSION and manifest["seed"] == 1
    on_disk = json.loads((tmp_path / "MANIFEST.json").read_text())
    assert on_disk == manifest
    entry = manifest["suites"]["needle"]
    assert entry["file"] == "needle.jsonl.gz"
    assert entry["sha256"] == content_sha256(tmp_path / "needle.jsonl.gz")
    assert entry["scenarios"] >= 1 and entry["probes"] >= 3 and entry["messages"] > 50
    assert entry["tokens"] > 10_000
    assert verify_datasets(tmp_path) == []

    path = tmp_path / "needle.jsonl.gz"
    text = gzip.decompress(path.read_bytes()).decode()
    path.write_bytes(gzip.compress(text.replace('"needle"', '"needle2"', 1).encode()))
    problems = verify_datasets(tmp_path)
    assert len(problems) == 1 and "needle" in problems[0] and "checksum" in problems[0]

    (tmp_path / "secrets.jsonl.gz").unlink()
    assert any("secrets" in p and "missing" in p for p in verify_datasets(tmp_path))

    on_disk["version"] = "0.0.1"
    (tmp_path / "MANIFEST.json").write_text(json.dumps(on_disk))
    assert any("version" in p for p in verify_datasets(tmp_path))
    assert verify_datasets(tmp_path / "nowhere") == [
        f"{tmp_path / 'nowhere' / 'MANIFEST.json'} is missing"
    ]


def test_gen_main_writes_and_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "v1"
    assert gen_main(["--out", str(out), "--scale", "0.15", "--suite", "needle", "--seed", "2"]) == 0
    assert "needle" in capsys.readouterr().out
    assert gen_main(["--out", str(out), "--check"]) == 0
    path = out / "needle.jsonl.gz"
    path.write_bytes(gzip.compress(b"{}\n"))
    assert gen_main(["--out", str(out), "--check"]) == 1
    err = capsys.readouterr().err
    assert "checksum" in err and "memctx gen" in err
    assert gen_main(["--out", str(out), "--suite", "nope"]) == 2
    assert gen_main(["--out", str(out), "--scale", "-1"]) == 2


def test_committed_datasets_match_their_manifest_and_the_generator(tmp_path: Path) -> None:
    # The frozen set is what `make eval` and the committed baseline ran on: a generator change
    # that alters it must come with regenerated datasets (`memctx gen`) and a new baseline.
    root = Path(__file__).resolve().parents[2] / "datasets" / "v1"
    assert verify_datasets(root) == []
    manifest = json.loads((root / "MANIFEST.json").read_text())
    assert manifest["seed"] == 0 and manifest["scale"] == 1.0
    assert set(manifest["suites"]) == set(SUITES)
    for suite in ("needle", "cross-session"):
        digest = dump_scenarios(generate_suite(suite, seed=0, scale=1.0), tmp_path / "x.jsonl")
        assert digest == manifest["suites"][suite]["sha256"], f"{suite}: regenerate datasets/v1"


def test_session_pieces_are_seeded_by_their_own_rng_and_leave_scenarios_alone(
    tmp_path: Path,
) -> None:
    import random

    from memctx.harness.gen import ROLES, make_project, session_piece, task_words

    def pieces(seed: int) -> list[str]:
        rng = random.Random(seed)
        project = make_project(rng, stack_index=seed)
        words = task_words(rng, project)
        return [
            session_piece(rng, project, ROLES[i % 3], words=words, stamp=1.7e9) for i in range(60)
        ]

    before = dump_scenarios(generate_suite("needle", seed=0, scale=QUICK), tmp_path / "a.jsonl")
    first = pieces(0)
    random.seed(123)  # the module-level generator is not theirs
    assert pieces(0) == first and pieces(1) != first
    assert all(p.startswith("$ ") for p in first[2::3])  # a tool's command and its output
    assert len(set(first)) >= 40  # short notes repeat, as they do
    assert any("request_id=" in p for p in first)
    after = dump_scenarios(generate_suite("needle", seed=0, scale=QUICK), tmp_path / "b.jsonl")
    assert after == before
    with pytest.raises(ValueError, match="role"):
        session_piece(random.Random(0), make_project(random.Random(0)), "system", words={}, stamp=0)

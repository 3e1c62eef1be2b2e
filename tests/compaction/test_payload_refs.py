"""Oversized tool results kept as file refs (seed 004's tool-result guard, UAT 2)."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
import stat
import string
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctx.compaction import (
    DETAILS_HEADER,
    PAYLOAD_NOTICE_RE,
    PayloadRefs,
    output_refs_in,
    payload_notice,
    persist_oversized_tool_results,
)
from memctx.config import PlannerConfig
from memctx.errors import StoreError
from memctx.messages import BlockKind, InfoCache, pairing_violations, tool_result_text
from memctx.store import OUTPUT_DIR, read_output_ref, write_output_ref
from memctx.text import Redactor, redact
from tests.strategies import (
    FORMATS,
    SecretCase,
    examples,
    fuzzed_conversations,
    payload_conversations,
    secret_fragments,
    secret_payloads,
)

# Small sizes, so that drawn outputs of a few hundred characters are oversized; the preview
# and the notice (about 280 characters) always fit under the limit.
SMALL = PlannerConfig(tool_payload_max_chars=400, tool_payload_preview_chars=50)
# A preview just under the limit: a kept result (preview + notice) is itself over the limit,
# and only its notice says it was kept already.
NEAR = PlannerConfig(tool_payload_max_chars=400, tool_payload_preview_chars=399)
DEFAULT = PlannerConfig()
PROPERTY = settings(
    max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def results_of(messages: list[Any]) -> list[tuple[int, str]]:
    """``(message index, text)`` of every tool result, in order."""
    infos = InfoCache()
    return [
        (i, tool_result_text(m, ref))
        for i, m in enumerate(messages)
        for ref in infos.info(m).blocks
        if ref.kind is BlockKind.TOOL_RESULT
    ]


def result_ids(messages: list[Any]) -> list[tuple[Any, ...]]:
    infos = InfoCache()
    return [
        (b.tool_id, b.tool_name, b.is_error, b.raw_type)
        for m in messages
        for b in infos.info(m).blocks
        if b.kind is BlockKind.TOOL_RESULT
    ]


def stored_files(store: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file()
    }


def runtime_token(prefix: str, n: int, seed: int) -> str:
    """A random secret built at run time (this file holds no literal a scanner would flag)."""
    rng = random.Random(seed)
    return prefix + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


def pi_call(call_id: str, command: str) -> dict[str, Any]:
    block = {"type": "toolCall", "id": call_id, "name": "exec", "arguments": {"cmd": command}}
    return {"role": "assistant", "content": [block]}


# --- properties ---------------------------------------------------------------------------------


@PROPERTY
@given(fmt=st.sampled_from(FORMATS), data=st.data())
def test_a_kept_payload_reads_back_redacted_byte_for_byte(fmt: str, data: st.DataObject) -> None:
    messages = data.draw(payload_conversations(fmt))
    with tempfile.TemporaryDirectory() as tmp:
        out = persist_oversized_tool_results(messages, tmp, SMALL)
        pairs = list(zip(results_of(messages), results_of(out.messages), strict=True))
        oversized = [(old, new) for (_, old), (_, new) in pairs if len(old) > 400]
        assert len(out.refs) == len(oversized) and not out.failed
        for (text, now), ref in zip(oversized, out.refs, strict=True):
            content = read_output_ref(tmp, ref.ref)
            assert content == redact(text)
            data_bytes = content.encode("utf-8", "surrogatepass")
            assert hashlib.sha256(data_bytes).hexdigest() == ref.sha256
            assert len(data_bytes) == ref.bytes
            assert now == f"{content[:50]}\n\n{payload_notice(ref, len(content))}"
        assert [old for (_, old), (_, new) in pairs if old == new and len(old) > 400] == []
        assert out.chars_saved == sum(len(old) - len(new) for old, new in oversized)
        assert output_refs_in(out.messages) == list(dict.fromkeys(r.ref for r in out.refs))


@PROPERTY
@given(fmt=st.sampled_from(FORMATS), data=st.data())
def test_the_callers_messages_and_the_pairing_never_change(fmt: str, data: st.DataObject) -> None:
    damaged = data.draw(st.booleans())
    messages = data.draw(payload_conversations(fmt, damaged=damaged, details=True))
    before = copy.deepcopy(messages)
    with tempfile.TemporaryDirectory() as tmp:
        out = persist_oversized_tool_results(messages, tmp, SMALL)
    assert messages == before
    for old, new in zip(messages, out.messages, strict=True):
        if isinstance(old.get("details"), dict):  # Pi: the scalars stay
            assert {k: new["details"][k] for k in ("status", "exitCode")} == {
                "status": "completed",
                "exitCode": 0,
            }
    assert pairing_violations(out.messages) == pairing_violations(before)
    assert result_ids(out.messages) == result_ids(before)
    infos = InfoCache()
    for old, new in zip(messages, out.messages, strict=True):
        if not infos.info(old).has_tool_results:
            assert new is old  # user and assistant messages are the caller's own


@PROPERTY
@given(fmt=st.sampled_from(FORMATS), data=st.data())
def test_a_second_run_changes_nothing_and_writes_nothing(fmt: str, data: st.DataObject) -> None:
    messages = data.draw(payload_conversations(fmt))
    config = data.draw(st.sampled_from([SMALL, NEAR]))
    with tempfile.TemporaryDirectory() as tmp:
        first = persist_oversized_tool_results(messages, tmp, config)
        files = {p: os.stat(p).st_ino for p in Path(tmp).rglob("*.json")}
        assert len(files) == len({r.ref for r in first.refs})
        second = persist_oversized_tool_results(first.messages, tmp, config)
        assert second.messages == first.messages and second.refs == ()
        assert second.chars_saved == 0
        # The caller's original messages again: the same files, not written a second time.
        again = persist_oversized_tool_results(messages, tmp, config)
        assert again.messages == first.messages and again.refs == first.refs
        assert {p: os.stat(p).st_ino for p in Path(tmp).rglob("*.json")} == files


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=secret_payloads(), fmt=st.sampled_from(FORMATS))
def test_a_planted_secret_never_reaches_a_file(payload: tuple[str, SecretCase], fmt: str) -> None:
    text, case = payload
    messages = _one_result(fmt, text)
    with tempfile.TemporaryDirectory() as tmp:
        out = persist_oversized_tool_results(messages, tmp, SMALL)
        assert len(out.refs) == 1
        files = stored_files(Path(tmp))
    assert files and all(name.startswith(f"{OUTPUT_DIR}/") for name in files)
    dumped = json.dumps(out.messages, ensure_ascii=False)
    for fragment in secret_fragments(case.secret):
        assert not [n for n, raw in files.items() if fragment in raw.decode()], case.kind
        assert fragment not in dumped  # the preview is the redacted text's


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=fuzzed_conversations(hostile=True))
def test_malformed_and_hostile_messages_never_raise(messages: list[Any]) -> None:
    before = copy.deepcopy(messages)
    with tempfile.TemporaryDirectory() as tmp:
        out = persist_oversized_tool_results(messages, tmp, SMALL)
    assert len(out.messages) == len(messages)
    assert messages == before


def _one_result(fmt: str, text: str, call_id: str = "call_1") -> list[Any]:
    """A request, one call and its result ``text`` in ``fmt``."""
    if fmt == "openai":
        fn = {"name": "bash", "arguments": "{}"}
        call = {"id": call_id, "type": "function", "function": fn}
        return [
            {"role": "user", "content": "run it"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": text},
        ]
    if fmt == "anthropic":
        use = {"type": "tool_use", "id": call_id, "name": "bash", "input": {}}
        result = {"type": "tool_result", "tool_use_id": call_id, "content": text}
        return [
            {"role": "user", "content": "run it"},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
        ]
    if fmt == "pi":
        content = [{"type": "text", "text": text}]
        return [
            {"role": "user", "content": "run it"},
            pi_call(call_id, "run"),
            {"role": "toolResult", "toolCallId": call_id, "toolName": "exec", "content": content},
        ]
    response = {"name": "bash", "id": call_id, "response": {"output": text}}
    return [
        {"role": "user", "parts": [{"text": "run it"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "bash", "id": call_id, "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": response}]},
    ]


# --- one test per format ------------------------------------------------------------------------


def test_openai_tool_message(tmp_path: Path) -> None:
    text = "".join(f"line {k}: ok\n" for k in range(3_000))
    messages = _one_result("openai", text)
    out = persist_oversized_tool_results(messages, tmp_path, DEFAULT)
    (ref,) = out.refs
    new = out.messages[2]
    assert new == {"role": "tool", "tool_call_id": "call_1", "content": new["content"]}
    assert new["content"].startswith(text[:2_000] + "\n\n[memctx] Full tool output (")
    assert new["content"].endswith(f'call read_output_ref("{ref.ref}") for the rest.')
    assert f"{len(text):,} chars, {len(text):,} bytes, sha256 {ref.sha256}" in new["content"]
    assert read_output_ref(tmp_path, ref.ref) == text
    record = json.loads((tmp_path / ref.ref).read_text())
    assert record["what"].startswith("tool result of bash (call call_1)")  # named by the call
    assert f"{len(text):,} chars" in record["what"]
    assert out.messages[:2] == messages[:2] and out.messages[0] is messages[0]


def test_anthropic_results_are_kept_block_by_block(tmp_path: Path) -> None:
    big, small = "A" * 30_000, "fine"
    uses = [{"type": "tool_use", "id": f"t{k}", "name": "grep", "input": {}} for k in (1, 2)]
    results = [
        {"type": "tool_result", "tool_use_id": "t1", "content": big, "is_error": True},
        {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": small}]},
        {"type": "text", "text": "A" * 30_000},  # the user's own text: never touched
    ]
    messages = [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": uses},
        {"role": "user", "content": results},
    ]
    out = persist_oversized_tool_results(messages, tmp_path, DEFAULT)
    (ref,) = out.refs
    first, second, text = out.messages[2]["content"]
    assert first["tool_use_id"] == "t1" and first["is_error"] is True
    assert first["content"] == f"{big[:2_000]}\n\n{payload_notice(ref, len(big))}"
    assert second is results[1] and text is results[2]
    assert "grep" in json.loads((tmp_path / ref.ref).read_text())["what"]
    assert pairing_violations(out.messages) == []


def test_pi_exec_keeps_its_scalar_details_and_gains_an_output_ref(tmp_path: Path) -> None:
    # UAT 2: python -c 'print("x"*150000)' through Pi's exec tool.
    text = "x" * 150_000 + "\n"
    details = {
        "status": "completed",
        "exitCode": 0,
        "durationMs": 812,
        "cwd": "/work",
        "aggregated": text,
        "chunks": [{"stream": "stdout", "text": text[:80_000]}],
    }
    result = {
        "role": "toolResult",
        "toolCallId": "exec_1",
        "toolName": "exec",
        "content": [{"type": "text", "text": text}],
        "details": details,
        "isError": False,
        "timestamp": 1_771_000_000,
    }
    messages = [{"role": "user", "content": "print it"}, pi_call("exec_1", "python"), result]
    out = persist_oversized_tool_results(messages, tmp_path, DEFAULT)
    (ref,) = out.refs
    new = out.messages[2]
    assert {k: new[k] for k in ("toolCallId", "toolName", "isError", "timestamp")} == {
        "toolCallId": "exec_1",
        "toolName": "exec",
        "isError": False,
        "timestamp": 1_771_000_000,
    }
    assert new["details"] == {
        "status": "completed",
        "exitCode": 0,
        "durationMs": 812,
        "cwd": "/work",
        "outputRef": {
            "kind": "tool_result_payload",
            "path": ref.ref,
            "bytes": ref.bytes,
            "sha256": ref.sha256,
            "contains": {"text": True, "details": True},
        },
    }
    (block,) = new["content"]
    assert block["type"] == "text" and len(block["text"]) < 2_400
    assert PAYLOAD_NOTICE_RE.search(block["text"])
    moved = {"aggregated": text, "chunks": details["chunks"]}
    kept = read_output_ref(tmp_path, ref.ref)
    assert kept == text + DETAILS_HEADER + json.dumps(moved, ensure_ascii=False, sort_keys=True)
    assert out.chars_saved == len(text) - len(block["text"])
    assert result["details"] is details and "outputRef" not in details  # the caller's dict


def test_pi_without_details_gets_one_holding_the_ref(tmp_path: Path) -> None:
    messages = _one_result("pi", "y" * 25_000)
    out = persist_oversized_tool_results(messages, tmp_path, DEFAULT)
    (ref,) = out.refs
    assert out.messages[2]["details"] == {
        "outputRef": {
            "kind": "tool_result_payload",
            "path": ref.ref,
            "bytes": 25_000,
            "sha256": hashlib.sha256(b"y" * 25_000).hexdigest(),
            "contains": {"text": True, "details": False},
        }
    }
    assert "details" not in messages[2]


def test_gemini_function_response(tmp_path: Path) -> None:
    text = 'quoted "output" 数据库\n' * 2_000
    messages = _one_result("gemini", text, call_id="fc_9")
    out = persist_oversized_tool_results(messages, tmp_path, DEFAULT)
    (ref,) = out.refs
    (part,) = out.messages[2]["parts"]
    response = part["functionResponse"]
    assert response["name"] == "bash" and response["id"] == "fc_9"
    assert response["response"] == {"output": f"{text[:2_000]}\n\n{payload_notice(ref, len(text))}"}
    assert read_output_ref(tmp_path, ref.ref) == text
    assert output_refs_in(out.messages) == [ref.ref]  # read unescaped, not from the JSON


# --- what is left alone -------------------------------------------------------------------------


def test_results_holding_an_image_are_left_alone(tmp_path: Path) -> None:
    image = {"type": "image", "data": "iVBORw0KGgo", "mimeType": "image/png"}
    pi = _one_result("pi", "z" * 30_000)
    pi[2] = {**pi[2], "content": [*pi[2]["content"], image]}
    anthropic = _one_result("anthropic", "z" * 30_000)
    block = anthropic[2]["content"][0]
    anthropic[2] = {"role": "user", "content": [{**block, "content": [
        {"type": "text", "text": block["content"]}, {"type": "image", "source": {}}
    ]}]}  # fmt: skip
    for messages in (pi, anthropic):
        out = persist_oversized_tool_results(messages, tmp_path, DEFAULT)
        assert out.messages == messages and out.refs == ()
    assert not (tmp_path / OUTPUT_DIR).exists()


def test_a_result_at_or_under_the_limit_is_left_alone(tmp_path: Path) -> None:
    messages = _one_result("openai", "q" * 20_000)
    out = persist_oversized_tool_results(messages, tmp_path, DEFAULT)
    assert out == PayloadRefs(messages)
    over = persist_oversized_tool_results(_one_result("openai", "q" * 20_001), tmp_path, DEFAULT)
    assert len(over.refs) == 1


def test_a_preview_and_notice_no_shorter_than_the_text_are_not_worth_a_file(
    tmp_path: Path,
) -> None:
    tiny = PlannerConfig(tool_payload_max_chars=100, tool_payload_preview_chars=50)
    messages = _one_result("openai", "w" * 200)  # 50 + the notice's ~280 > 200
    assert persist_oversized_tool_results(messages, tmp_path, tiny).messages == messages
    assert not (tmp_path / OUTPUT_DIR).exists()
    assert (
        len(persist_oversized_tool_results(_one_result("openai", "w" * 400), tmp_path, tiny).refs)
        == 1
    )


def test_a_notice_in_the_middle_does_not_make_a_result_kept(tmp_path: Path) -> None:
    # An agent reading an old transcript: the notice is output, not the end of a kept result.
    kept = persist_oversized_tool_results(_one_result("openai", "k" * 30_000), tmp_path, DEFAULT)
    notice_text = kept.messages[2]["content"]
    text = notice_text + "\n" + "m" * 30_000
    out = persist_oversized_tool_results(_one_result("openai", text), tmp_path, DEFAULT)
    assert len(out.refs) == 1 and read_output_ref(tmp_path, out.refs[0].ref) == text
    refs = output_refs_in(out.messages)
    assert refs == [out.refs[0].ref]  # the old notice is in the file, not in the preview
    assert output_refs_in(kept.messages + out.messages) == [kept.refs[0].ref, out.refs[0].ref]


def test_the_same_payload_is_written_once(tmp_path: Path) -> None:
    text = "same output\n" * 3_000
    messages = _one_result("openai", text, "c1") + _one_result("openai", text, "c2")[1:]
    out = persist_oversized_tool_results(messages, tmp_path, DEFAULT)
    assert len(out.refs) == 2 and out.refs[0] == out.refs[1]
    assert list((tmp_path / OUTPUT_DIR).iterdir()) == [tmp_path / out.refs[0].ref]
    assert output_refs_in(out.messages) == [out.refs[0].ref]
    assert [m.get("tool_call_id") for m in out.messages] == [None, None, "c1", None, "c2"]


def test_a_damaged_file_is_written_again(tmp_path: Path) -> None:
    messages = _one_result("openai", "d" * 30_000)
    (ref,) = persist_oversized_tool_results(messages, tmp_path, DEFAULT).refs
    (tmp_path / ref.ref).write_text('{"content": "changed", "sha256": "0"}')
    with pytest.raises(StoreError, match="damaged"):
        read_output_ref(tmp_path, ref.ref)
    persist_oversized_tool_results(messages, tmp_path, DEFAULT)
    assert read_output_ref(tmp_path, ref.ref) == "d" * 30_000


# --- redaction ----------------------------------------------------------------------------------


def test_header_and_api_key_secrets_are_masked_before_writing(tmp_path: Path) -> None:
    bearer = runtime_token("sk-proj-", 40, 1)
    api_key = runtime_token("", 32, 2)
    text = (
        "> GET /v1/models\n"
        f"> Authorization: Bearer {bearer}\n"
        f"config: api_key={api_key}\n" + "200 OK\n" * 5_000
    )
    out = persist_oversized_tool_results(_one_result("anthropic", text), tmp_path, DEFAULT)
    (ref,) = out.refs
    raw = b"".join(stored_files(tmp_path).values()).decode()
    assert bearer not in raw and api_key not in raw and "[REDACTED:" in raw
    assert read_output_ref(tmp_path, ref.ref) == redact(text)
    assert bearer not in json.dumps(out.messages) and api_key not in json.dumps(out.messages)


def test_a_stores_keyed_redactor_is_used(tmp_path: Path) -> None:
    keyed = Redactor(fingerprint_key=b"store key")
    text = f"export OPENAI_API_KEY={runtime_token('sk-', 48, 3)}\n" + "ok\n" * 10_000
    out = persist_oversized_tool_results(
        _one_result("openai", text), tmp_path, DEFAULT, redactor=keyed
    )
    content = read_output_ref(tmp_path, out.refs[0].ref)
    assert content == keyed.redact(text) and content != redact(text)


# --- write failures and the ref format ----------------------------------------------------------


def test_a_write_failure_keeps_the_message_whole_and_says_so(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.write_text("not a directory")
    messages = _one_result("pi", "f" * 30_000, call_id="exec_7")
    out = persist_oversized_tool_results(messages, store, DEFAULT)
    assert out.messages == messages and out.messages[2] is messages[2]
    assert out.refs == () and out.chars_saved == 0
    (failure,) = out.failed
    assert failure.startswith("exec_7: ") and "cannot write" in failure
    assert "Not a directory" in failure and "make the store directory writable" in failure


def test_one_failed_write_does_not_stop_the_others(tmp_path: Path) -> None:
    good, bad = "g" * 30_000, "b" * 30_000
    messages = _one_result("openai", good, "c1") + _one_result("openai", bad, "c2")[1:]
    (tmp_path / OUTPUT_DIR).mkdir()
    name = hashlib.sha256(bad.encode()).hexdigest()[:32]
    (tmp_path / OUTPUT_DIR / f"{name}.json").mkdir()  # a directory where the file would go
    out = persist_oversized_tool_results(messages, tmp_path, DEFAULT)
    assert [r.ref for r in out.refs] == [
        f"{OUTPUT_DIR}/{hashlib.sha256(good.encode()).hexdigest()[:32]}.json"
    ]
    assert out.messages[4] is messages[4] and out.failed[0].startswith("c2: ")
    assert PAYLOAD_NOTICE_RE.search(out.messages[2]["content"])


@pytest.mark.parametrize(
    "ref",
    [
        "../x.json",
        "/etc/passwd",
        "tool-output/../../etc/passwd",
        "tool-output/../" + "a" * 32 + ".json",
        "tool-output/" + "a" * 32 + ".json/../" + "b" * 32 + ".json",
        "tool-output\\..\\" + "a" * 32 + ".json",
        "tool-output/" + "A" * 32 + ".json",
        "tool-output/" + "a" * 8 + ".json",
        "./tool-output/" + "a" * 32 + ".json",
        "",
    ],
)
def test_a_ref_not_of_the_kept_form_is_refused(tmp_path: Path, ref: str) -> None:
    with pytest.raises(StoreError, match=r"expected 'tool-output/<hex name>\.json'"):
        read_output_ref(tmp_path, ref)


def test_an_absolute_path_to_a_kept_file_is_refused(tmp_path: Path) -> None:
    (ref,) = persist_oversized_tool_results(
        _one_result("openai", "p" * 30_000), tmp_path, DEFAULT
    ).refs
    with pytest.raises(StoreError, match="expected 'tool-output/"):
        read_output_ref(tmp_path, str(tmp_path / ref.ref))


def test_a_symlink_planted_under_a_valid_name_is_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("root:x:0:0:root:/root:/bin/bash\n")
    (tmp_path / "store" / OUTPUT_DIR).mkdir(parents=True)
    name = f"{OUTPUT_DIR}/{'c' * 32}.json"
    (tmp_path / "store" / name).symlink_to(outside)
    with pytest.raises(StoreError, match="cannot open"):
        read_output_ref(tmp_path / "store", name)
    # Not even to a real memctx output elsewhere: the link itself is refused.
    real = write_output_ref(tmp_path / "other", "d" * 32, "kept text", what="x")
    (tmp_path / "store" / name).unlink()
    (tmp_path / "store" / name).symlink_to(tmp_path / "other" / real.ref)
    with pytest.raises(StoreError, match="cannot open"):
        read_output_ref(tmp_path / "store", name)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "store" / name).unlink()
    (tmp_path / "store" / name).symlink_to(fifo)
    with pytest.raises(StoreError, match="cannot open"):
        read_output_ref(tmp_path / "store", name)


def test_a_kept_payload_is_private_and_a_failed_write_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = write_output_ref(tmp_path, "e" * 32, "tool output", what="x")
    path = tmp_path / ref.ref
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # conversation text, as segments.jsonl

    def disk_full(src: Any, dst: Any, **dir_fds: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    with pytest.raises(StoreError, match="No space left on device; free disk space"):
        write_output_ref(tmp_path, "f" * 32, "other output", what="x")
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]

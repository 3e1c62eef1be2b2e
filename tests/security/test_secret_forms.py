"""Secrets in forms the rules missed (issue 26, "Secrets in forms the rules miss"): each attack
as written, then its class by hypothesis. A secret is judged by rules, not by examples: the key
that names it, the prose that introduces it, its decoded form, or its two halves joined."""

from __future__ import annotations

import base64
import json
import string
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import examples

from memctx import MemoryContextConfig
from memctx.compaction import persist_oversized_tool_results
from memctx.config import PlannerConfig
from memctx.retrieval import HashEmbedder
from memctx.runtime import MemoryContext
from memctx.text import Redactor, redact

_B62 = string.ascii_letters + string.digits
AWS_ID, AWS_SECRET = "AKIAQ3EGRJ6VX4Z2TN7B", "p9Xc2LrV7mQk4Ws8Zt1Yb6Nf3Hd0Ja5Ue2Ri9Og7"
GITHUB = "ghp_" + "R7xk2Vq9LmTz4Wc8Nb3Hs6Jd1Fg5Ya0Pe2Ku9"


def _disk(store: Path) -> bytes:
    return b"\n".join(p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file())


def _run(store: Path, messages: list[dict[str, Any]]) -> None:
    with MemoryContext(
        MemoryContextConfig(hardCapTokens=500),
        store_dir=store,
        session_id="s1",
        context_window_tokens=4_000,
        embedder=HashEmbedder(),
    ) as mem:
        mem.on_context(messages)
        mem.on_before_compact(messages)
        mem.wait_idle(120)


# --- the attacks, as the issue lists them ---------------------------------------------------


def test_env_dump_signing_salt_and_sentry_dsn_are_masked() -> None:
    salt, dsn = "q8Lw2mZr5TnX", "https://3f9a1c7e5b2d4f60@o412.ingest.sentry.io/1"
    out = redact(f"$ cat .env\nSIGNING_SALT={salt}\nSENTRY_DSN={dsn}\nPORT=4000\n")
    assert salt not in out and "3f9a1c7e5b2d4f60" not in out
    assert "PORT=4000" in out


def test_gcp_private_key_id_is_masked() -> None:
    key_id = "7f3a9c1b2e4d5f60718293a4b5c6d7e8f9012345"
    text = json.dumps({"type": "service_account", "project_id": "zf", "private_key_id": key_id})
    out = redact(text)
    assert key_id not in out and '"project_id": "zf"' in out


def test_key_introduced_in_prose_is_masked() -> None:
    key = "Xy7pQ2rT9vK4mN8bL3cF6hJ1sD5g"  # 28 characters
    out = redact(f"fyi the staging signing key is {key}, rotate it monthly")
    assert key not in out and "rotate it monthly" in out


def test_base64_of_an_aws_key_pair_and_of_user_pass_are_masked() -> None:
    pair = base64.b64encode(f"{AWS_ID}:{AWS_SECRET}".encode()).decode()
    basic = base64.b64encode(b"deploy:Tr0ub4dor-zebrafish").decode()
    out = redact(f"creds blob {pair}\ncurl -H 'X-Creds: ok' and {basic} in the log")
    assert pair not in out and basic not in out


def test_hex_of_a_token_is_masked() -> None:
    encoded = GITHUB.encode().hex()
    assert encoded not in redact(f"payload={encoded} sent")


def test_name_field_is_not_stored_raw(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "name": GITHUB, "content": "zebrafish deploy runs on port 7443"},
        {"role": "assistant", "content": "noted, zebrafish on 7443"},
        {"role": "user", "content": "and what else?"},
    ]
    _run(tmp_path, messages)
    disk = _disk(tmp_path)
    assert b"7443" in disk  # archived
    assert GITHUB.encode() not in disk


def test_token_split_over_two_messages_is_masked_in_both(tmp_path: Path) -> None:
    head, tail = GITHUB[:14], GITHUB[14:]
    messages = [
        {"role": "user", "content": f"the zebrafish deploy token starts {head}"},
        {"role": "user", "content": f"{tail} is the rest of it"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "next?"},
    ]
    _run(tmp_path, messages)
    disk = _disk(tmp_path)
    assert b"zebrafish" in disk
    assert head.encode() not in disk and tail.encode() not in disk


def test_token_split_over_two_tool_argument_fields_is_masked(tmp_path: Path) -> None:
    head, tail = GITHUB[:12], GITHUB[12:]
    args = json.dumps({"prefix": head, "suffix": tail, "repo": "zebrafish"})
    call = {"id": "c1", "type": "function", "function": {"name": "login", "arguments": args}}
    messages = [
        {"role": "user", "content": "log in to zebrafish"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "logged in"},
        {"role": "user", "content": "next?"},
    ]
    _run(tmp_path, messages)
    disk = _disk(tmp_path)
    assert b"zebrafish" in disk
    assert head.encode() not in disk and tail.encode() not in disk


def test_prose_key_does_not_reach_segment_metadata(tmp_path: Path) -> None:
    key = "Xy7pQ2rT9vK4mN8bL3cF6hJ1sD5g"
    messages = [
        {"role": "user", "content": f"the staging signing key is {key} for ZebrafishService"},
        {"role": "assistant", "content": "stored"},
        {"role": "user", "content": "next?"},
    ]
    _run(tmp_path, messages)
    records = [json.loads(x) for x in (tmp_path / "segments.jsonl").read_text().splitlines()]
    assert records and all(key not in json.dumps(r) for r in records)


# --- the classes, by hypothesis --------------------------------------------------------------

_SECRET_KEYS = (
    "SIGNING_SALT SECRET_KEY_BASE SENTRY_DSN DATABASE_DSN private_key_id PRIVATE_KEY_ID"
    " SESSION_COOKIE api_key API_TOKEN auth_token DB_PASSWORD db_passwd GPG_PASSPHRASE"
    " client_secret webhook_signing_secret COOKIE_SECRET NPM_AUTH basic_auth credentials"
    " aws_secret_access_key signing_key encryption_key MASTER_KEY"
).split()
_FORMS = ("{k}={v}", "export {k}={v}", '{k}="{v}"', "  {k}: {v}", '  "{k}": "{v}",', "- {k}: {v}")


_NOT_VALUES = frozenset({"undefined", "optional", "required", "unknown", "redacted"})


@st.composite
def _values(draw: st.DrawFn) -> str:
    """Values of every shape: letters only, random mixes, URLs with a key in the userinfo."""
    kind = draw(st.sampled_from(["letters", "mixed", "url", "hexish"]))
    if kind == "letters":  # not a keyword or type word (``undefined``, ``optional``): names
        words = st.text(string.ascii_lowercase, min_size=8, max_size=24)
        return draw(words.filter(lambda w: w not in _NOT_VALUES))
    if kind == "hexish":
        return draw(st.text("0123456789abcdef", min_size=16, max_size=40))
    body = draw(st.text(_B62, min_size=12, max_size=32))
    if kind == "url":
        return f"https://{body}@o{len(body)}.ingest.example.io/1"
    return body


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(key=st.sampled_from(_SECRET_KEYS), form=st.sampled_from(_FORMS), value=_values())
def test_property_a_key_naming_a_secret_masks_any_literal(key: str, form: str, value: str) -> None:
    line = form.format(k=key, v=value)
    out = redact(f"$ cat config\nPORT=4000\n{line}\nDEBUG=false\n")
    distinctive = value.split("@")[0].removeprefix("https://")
    assert distinctive not in out, (line, out)
    assert "PORT=4000" in out and "DEBUG=false" in out


@settings(max_examples=examples(200), suppress_health_check=[HealthCheck.too_slow])
@given(
    user=st.text(string.ascii_lowercase, min_size=3, max_size=12),
    password=st.text(_B62 + "-_.!", min_size=6, max_size=24).filter(lambda p: not p.isdigit()),
    seed=st.integers(0, 2**16),
)
def test_property_encoded_credentials_are_masked(user: str, password: str, seed: int) -> None:
    pair = f"{user}:{password}"
    forms = [
        base64.b64encode(pair.encode()).decode(),
        base64.urlsafe_b64encode(f"{AWS_ID}:{AWS_SECRET}{seed}".encode()).decode(),
        (GITHUB[:-6] + f"{seed:06d}").encode().hex(),
    ]
    for encoded in forms:
        assert encoded.rstrip("=") not in redact(f"see {encoded} here"), encoded


@settings(max_examples=examples(200), suppress_health_check=[HealthCheck.too_slow])
@given(
    cut=st.integers(1, len(GITHUB) - 1),
    before=st.text(string.ascii_letters + " .,", max_size=300),
    after=st.text(string.ascii_letters + " .,", max_size=300),
)
def test_property_a_token_cut_anywhere_between_two_texts_is_masked(
    cut: int, before: str, after: str
) -> None:
    left, right = before + " " + GITHUB[:cut], GITHUB[cut:] + " " + after
    masked = [redact(t) for t in Redactor().redact_across([left, right])]
    joined = masked[0] + masked[1]
    assert GITHUB[:cut] not in masked[0] or cut < 4  # ``ghp`` alone is no secret
    assert GITHUB[cut:] not in masked[1] or len(GITHUB) - cut < 4
    assert GITHUB not in joined
    # the same cut between two JSON fields of one text
    fields = redact(json.dumps({"a": GITHUB[:cut], "b": GITHUB[cut:], "c": after}))
    assert GITHUB[:cut] not in fields or cut < 4
    assert GITHUB[cut:] not in fields or len(GITHUB) - cut < 4


# --- what must stay readable -------------------------------------------------------------------

_ORDINARY = (
    "commit 3f2a9c1b2e4d5f60718293a4b5c6d7e8f9012345\nAuthor: Dev <dev@example.com>",
    "id 123e4567-e89b-12d3-a456-426614174000 at /usr/lib/python3.11/site-packages/x.py",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "max_tokens: 100\nsession_id: s-42\npad_token: <pad>\ntoken_count=12",
    "  password: str\n  token: Optional[str] = None\n",
    "data: SGVsbG8gd29ybGQsIHRoaXMgaXMgYSB0ZXN0IG9mIGJhc2U2NA==",  # base64 of prose
    '{"toolUseID": "agent_msg_01QVA9ZtQhiqWU7kKBrXThFY", "parent": "toolu_01Cz2Pnv7qNcnK1Z"}',
    "cache key 0123456789abcdef0123456789abcdef is stale; hex 48656c6c6f20776f726c64",
    "localhost:8080 is " + base64.b64encode(b"localhost:8080").decode(),
    "the zebrafish port is 7443 and the primary key is user_id",
)


def test_ordinary_text_is_not_masked() -> None:
    for text in _ORDINARY:
        assert redact(text) == text, text


def test_tool_name_and_call_id_of_a_kept_payload_are_masked(tmp_path: Path) -> None:
    call = {"id": GITHUB, "type": "function", "function": {"name": GITHUB, "arguments": "{}"}}
    messages = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": GITHUB, "content": "zebrafish log\n" * 400},
    ]
    config = PlannerConfig(toolPayloadMaxChars=2_000, toolPayloadPreviewChars=200)
    refs = persist_oversized_tool_results(messages, tmp_path, config)
    assert refs.refs and b"zebrafish" in _disk(tmp_path)
    assert GITHUB.encode() not in _disk(tmp_path)


_PLAIN_WORDS = st.sampled_from(
    "the build failed on main retry cache worker ok parser.py src/app/main.py pad_token"
    " max_tokens session_id toolu_01Cz2Pnv7qNcnK1Z agent_msg_01QVA9ZtQh v1.2.3 8080".split()
)
_IDS = st.one_of(
    st.uuids().map(str),
    st.text("0123456789abcdef", min_size=7, max_size=40),  # git SHAs, digests
    _PLAIN_WORDS,
)


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(st.lists(_IDS, min_size=1, max_size=12).map(" ".join), min_size=2))
def test_property_joining_ordinary_neighbours_masks_nothing(texts: list[str]) -> None:
    assert Redactor().redact_across(texts) == texts
    fields = json.dumps({f"k{i}": t for i, t in enumerate(texts)})
    assert redact(fields) == fields

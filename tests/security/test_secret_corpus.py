"""A seeded corpus of secret classes in every position a string can take, through the real
hooks (``on_context``, ``on_before_compact``, ``wait_idle``, extraction on the offline model)
and the direct writers (knowledge store, LLM response cache, payload refs); then every byte
under the store is read: no secret, no distinctive 8-character piece of one, and neither its
base64 nor its hex form, is on disk (issue 26, item 6)."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from strategies import SECRET_CLASSES, secret_example

from memctx import MemoryContextConfig
from memctx.compaction import persist_oversized_tool_results
from memctx.config import PlannerConfig
from memctx.llm.cache import CachedResponse, ResponseCache
from memctx.retrieval import HashEmbedder
from memctx.runtime import MemoryContext
from memctx.store.knowledge import KnowledgeStore
from memctx.store.knowledge_rules import FactType, NewFact, UpdateDecision
from memctx.text import Redactor

_SPLIT = "\x00"  # where a split class is cut: two messages, two fields, two names
_B62 = string.ascii_letters + string.digits
_GRAM = 8


class Case(NamedTuple):
    kind: str
    text: str  # the line holding it; ``_SPLIT`` marks a cut into two neighbouring pieces
    secret: str


def _mix(rng: random.Random, n: int) -> str:
    chars = [rng.choice(_B62) for _ in range(n - 3)]
    chars += [rng.choice(string.ascii_uppercase), rng.choice(string.ascii_lowercase)]
    chars.append(rng.choice(string.digits))
    rng.shuffle(chars)
    return "".join(chars)


def _letters(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(n))


_KEYED = (  # a key that names a secret, in the forms of a .env, shell, YAML and JSON
    "SIGNING_SALT SENTRY_DSN private_key_id SESSION_COOKIE COOKIE_SECRET NPM_AUTH GPG_PASSPHRASE"
    " webhook_signing_secret ENCRYPTION_KEY auth_token DATABASE_DSN client_secret"
).split()
_KEYED_FORMS = ("{k}={v}", "export {k}='{v}'", "  {k}: {v}", '{{"{k}": "{v}", "port": 4000}}')
_PROSE = (
    "fyi the staging signing key is {v}, rotate it monthly",
    "the prod deploy token was {v} until friday",
    "Our webhook secret is {v} (do not share)",
    "heads up: the admin password is now {v}",
    "the cookie salt is {v} for the zebrafish app",
    "new encryption key -> {v}",
)


def _vendor_token(rng: random.Random) -> str:
    return "ghp_" + _mix(rng, 36)


def _builders() -> dict[str, Callable[[random.Random], tuple[str, str]]]:
    out: dict[str, Callable[[random.Random], tuple[str, str]]] = {}
    for key in _KEYED:
        for i, form in enumerate(_KEYED_FORMS):

            def keyed(rng: random.Random, key: str = key, form: str = form) -> tuple[str, str]:
                value = _letters(rng, 14) if rng.random() < 0.4 else _mix(rng, 20)
                if key.endswith("DSN"):
                    value = f"https://{_mix(rng, 24)}@o{rng.randint(10, 999)}.ingest.sentry.io/7"
                    return form.format(k=key, v=value), value.split("@")[0][8:]
                return form.format(k=key, v=value), value

            out[f"keyed_{key.lower()}_{i}"] = keyed
    for i, sentence in enumerate(_PROSE):

        def prose(rng: random.Random, sentence: str = sentence) -> tuple[str, str]:
            value = _mix(rng, 28)
            return sentence.format(v=value), value

        out[f"prose_{i}"] = prose

    def aws_pair(rng: random.Random) -> str:
        return "AKIA" + "".join(
            rng.choice(string.ascii_uppercase + string.digits) for _ in range(16)
        )

    encoded: dict[str, Callable[[random.Random], str]] = {
        "aws_pair": lambda rng: f"{aws_pair(rng)}:{_mix(rng, 40)}",
        "basic_auth": lambda rng: f"deploy:{_mix(rng, 14)}",
        "github_token": _vendor_token,
        "env_line": lambda rng: f"DB_PASSWORD={_mix(rng, 16)}",
        "stripe_key": lambda rng: "sk_live_" + _mix(rng, 24),
    }
    for name, make in encoded.items():
        for how in ("base64", "urlsafe_base64", "hex"):

            def enc(rng: random.Random, make: Any = make, how: str = how) -> tuple[str, str]:
                raw = make(rng).encode()
                if how == "hex":
                    coded = raw.hex()
                elif how == "base64":
                    coded = base64.b64encode(raw).decode()
                else:
                    coded = base64.urlsafe_b64encode(raw).decode()
                return f"echo {coded} | decode", coded.rstrip("=")

            out[f"encoded_{how}_{name}"] = enc

    def split_token(rng: random.Random) -> tuple[str, str]:
        token = _vendor_token(rng)
        cut = rng.randint(6, len(token) - 6)
        return f"the token is {token[:cut]}{_SPLIT}{token[cut:]} ok", token

    def split_keyed(rng: random.Random) -> tuple[str, str]:
        value = _mix(rng, 18)
        return f"cat .env\nSIGNING_SALT={_SPLIT}{value}\n", value

    out["split_token"] = split_token
    out["split_keyed"] = split_keyed
    return out


_BUILDERS = _builders()


def corpus(seed: int) -> list[Case]:
    """One case of every class: the 114 of tests/strategies.py and the forms above."""
    cases = [Case(*secret_example(kind, seed)) for kind in SECRET_CLASSES]
    for kind, build in sorted(_BUILDERS.items()):
        text, secret = build(random.Random(f"{kind}:{seed}"))
        cases.append(Case(kind, text, secret))
    return cases


# --- positions -------------------------------------------------------------------------------


def _halves(text: str) -> tuple[str, str | None]:
    head, sep, tail = text.partition(_SPLIT)
    return (head, tail) if sep else (text, None)


def _content(case: Case, i: int) -> list[dict[str, Any]]:
    head, tail = _halves(case.text)
    out = [{"role": "user", "content": f"step {i}:\n{head}"}]
    if tail is not None:
        out.append({"role": "user", "content": tail})
    return [*out, {"role": "assistant", "content": f"done {i}"}]


def _name(case: Case, i: int) -> list[dict[str, Any]]:
    head, tail = _halves(case.text)
    names = [head.replace("\n", " ")]  # a name over the store's limit is dropped, not cut
    if tail is not None:
        names.append(tail.replace("\n", " "))
    return [
        {"role": "user", "name": name, "content": f"step {i} part {j}: zebrafish build"}
        for j, name in enumerate(names)
    ] + [{"role": "assistant", "content": f"done {i}"}]


def _tool_arguments(case: Case, i: int) -> list[dict[str, Any]]:
    head, tail = _halves(case.text)
    args = {"command": head} if tail is None else {"part1": head, "part2": tail}
    call = {"id": f"c{i}", "type": "function", "function": {"name": "bash"}}
    call["function"]["arguments"] = json.dumps(args)
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": "done"},
    ]


def _tool_results(case: Case, i: int) -> list[dict[str, Any]]:
    head, tail = _halves(case.text)
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]
    results = [{"role": "tool", "tool_call_id": f"c{i}", "content": f"output:\n{head}"}]
    if tail is not None:
        calls.append({"id": f"d{i}", "type": "function", "function": {"name": "cat"}})
        calls[-1]["function"]["arguments"] = "{}"
        results.append({"role": "tool", "tool_call_id": f"d{i}", "content": tail})
    return [{"role": "assistant", "content": None, "tool_calls": calls}, *results]


def _anthropic_blocks(case: Case, i: int) -> list[dict[str, Any]]:
    head, tail = _halves(case.text)
    second = tail if tail is not None else "ok"
    use = {"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"cmd": head, "x": second}}
    result = {
        "type": "tool_result",
        "tool_use_id": f"t{i}",
        "content": [{"type": "text", "text": head}],
    }
    text = {"type": "text", "text": head}
    blocks = [text, {"type": "text", "text": second}]
    return [
        {"role": "assistant", "content": [text, use]},
        {"role": "user", "content": [result, *blocks[1:]]},
        {"role": "assistant", "content": blocks},
    ]


def _metadata(case: Case, i: int) -> list[dict[str, Any]]:
    head, tail = _halves(case.text)
    meta = {"entities": [head, tail or ""], "note": case.text, "tags": {"source": head}}
    return [
        {"role": "user", "content": f"step {i}:\n{head}", "metadata": meta},
        {"role": "assistant", "content": f"{tail or 'ok'} (done {i})", "metadata": meta},
    ]


_MESSAGE_POSITIONS: dict[str, Callable[[Case, int], list[dict[str, Any]]]] = {
    "content": _content,
    "name": _name,
    "tool_arguments": _tool_arguments,
    "tool_results": _tool_results,
    "anthropic_blocks": _anthropic_blocks,
    "metadata": _metadata,
}


def _conversation(
    cases: list[Case], place: Callable[[Case, int], list[dict[str, Any]]]
) -> list[Any]:
    rng = random.Random(7)
    words = "parser cache worker queue schema router build deploy zebrafish log".split()
    out: list[Any] = [{"role": "system", "content": "You are a coding agent."}]
    for i, case in enumerate(cases):
        out.append({"role": "user", "content": " ".join(rng.choices(words, k=12))})
        out += place(case, i)
    out.append({"role": "user", "content": "what is left to deploy?"})
    return out


def _through_hooks(store: Path, messages: list[Any]) -> None:
    with MemoryContext(
        MemoryContextConfig(hardCapTokens=500),
        store_dir=store,
        session_id="s1",
        context_window_tokens=8_000,
        embedder=HashEmbedder(),
    ) as mem:
        mem.on_context(messages)
        mem.on_before_compact(messages)
        mem.wait_idle(300)
        counts = mem.stats()["counts"]
    assert not any(k.endswith("failures") and v for k, v in counts.items()), counts


def _knowledge(store: Path, cases: list[Case]) -> None:
    knowledge = KnowledgeStore(store, redactor=Redactor())
    types = list(FactType)
    for i, case in enumerate(cases):
        text = case.text.replace(_SPLIT, "")
        fact = NewFact(types[i % len(types)], f"config {i}:\n{text}", f"said while\n{text}", "s1")
        knowledge.apply(UpdateDecision("ADD", fact))


def _llm_cache(store: Path, cases: list[Case]) -> None:
    cache = ResponseCache(store / "llm-cache")
    for case in cases:
        text = json.dumps({"facts": [{"type": "config", "content": case.text.replace(_SPLIT, "")}]})
        key = hashlib.sha256(case.kind.encode()).hexdigest()
        cache.put(key, CachedResponse(text, "offline", 10, 10, 0.0, True, "extraction"))


def _payloads(store: Path, cases: list[Case]) -> None:
    config = PlannerConfig(toolPayloadMaxChars=2_000, toolPayloadPreviewChars=200)
    messages: list[Any] = []
    for i, case in enumerate(cases):
        call = {"id": f"p{i}", "type": "function", "function": {"name": "cat", "arguments": "{}"}}
        body = ("log line\n" * 300) + case.text.replace(_SPLIT, "")
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"p{i}", "content": body},
        ]
    refs = persist_oversized_tool_results(messages, store, config)
    assert len(refs.refs) == len(cases) and not refs.failed


_DIRECT_POSITIONS: dict[str, Callable[[Path, list[Case]], None]] = {
    "knowledge": _knowledge,
    "llm_cache": _llm_cache,
    "payloads": _payloads,
}


# --- what must not be on disk ----------------------------------------------------------------


def _grams(text: str) -> set[str]:
    return {text[i : i + _GRAM] for i in range(len(text) - _GRAM + 1)}


def _needles(cases: list[Case]) -> dict[bytes, str]:
    """Each secret, its base64 and hex forms, and its distinctive 8-character pieces: those
    in no other text of the corpus (the secret-free rest of each line, the fillers)."""
    public = set()
    for case in cases:
        public |= _grams(case.text.replace(_SPLIT, "").replace(case.secret, "\n"))
    public |= _grams("parser cache worker queue schema router build deploy zebrafish log")
    out: dict[bytes, str] = {}
    for case in cases:
        secret = case.secret
        for line in [s for s in secret.splitlines() if len(s) >= _GRAM] or [secret]:
            raw = line.encode()
            forms = [raw, base64.b64encode(raw).rstrip(b"="), raw.hex().encode()]
            forms.append(json.dumps(line)[1:-1].encode())
            for form in forms:
                out.setdefault(form, case.kind)
            for gram in _grams(line) - public:
                out.setdefault(gram.encode(), case.kind)
                out.setdefault(json.dumps(gram)[1:-1].encode(), case.kind)
    return out


def _on_disk(store: Path, needles: dict[bytes, str]) -> dict[str, bytes]:
    disk = b"\n".join(p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file())
    found: dict[str, bytes] = {}
    grams = {n for n in needles if len(n) == _GRAM}
    for i in range(len(disk) - _GRAM + 1):  # every 8-byte window, one set lookup each
        window = disk[i : i + _GRAM]
        if window in grams:
            found.setdefault(needles[window], window)
    for needle, kind in needles.items():
        if len(needle) != _GRAM and needle in disk:
            found.setdefault(kind, needle)
    return found


def test_secret_corpus_leaves_nothing_on_disk(tmp_path: Path) -> None:
    cases = corpus(seed=1)
    kinds = {case.kind for case in cases}
    positions = [*_MESSAGE_POSITIONS, *_DIRECT_POSITIONS]
    assert len(kinds) >= 150 and len(positions) >= 8
    needles = _needles(cases)
    leaks: dict[str, dict[str, bytes]] = {}
    for position in positions:
        store = tmp_path / position
        if position in _MESSAGE_POSITIONS:
            _through_hooks(store, _conversation(cases, _MESSAGE_POSITIONS[position]))
            assert (store / "segments.jsonl").stat().st_size > 0
        else:
            store.mkdir()
            _DIRECT_POSITIONS[position](store, cases)
        found = _on_disk(store, needles)
        if found:
            leaks[position] = found
    assert not leaks, {p: sorted(found.items())[:20] for p, found in leaks.items()}

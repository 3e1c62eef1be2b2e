"""The scenario format shared by the generator, the dataset adapters and the replay engine.

A scenario is one or more agent sessions (provider-format message lists, played in order
against the same store) plus probes: questions asked at a point of a session whose expected
answer was planted earlier. Scenarios of one suite are stored one per line in a JSONL file
(``datasets/v1/<suite>.jsonl.gz``); :func:`load_scenarios` / :func:`dump_scenarios` read and
write them, and every loaded scenario is validated so a hand-edited file fails with the
field that is wrong.

Positions: ``Probe.at`` counts messages of its session, so the probe is asked when the
agent's transcript holds ``messages[:at]``; the question is appended as a user message for
that one model call and is never added to the transcript. Evidence names messages as
``"<session_id>:<index>"``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from memctx.errors import MemctxError, StoreError
from memctx.store import validate_session_id
from memctx.transcripts import (
    MAX_INPUT_BYTES_ENV,
    InputFileError,
    InputLine,
    iter_lines,
    open_input_file,
)

__all__ = [
    "FACT_KINDS",
    "FORMATS",
    "PROBE_KINDS",
    "SCENARIO_SCHEMA",
    "Probe",
    "Scenario",
    "ScenarioError",
    "Session",
    "content_sha256",
    "dump_scenarios",
    "load_scenarios",
]

SCENARIO_SCHEMA = 1
FORMATS = ("openai", "anthropic")
FACT_KINDS = ("decision", "implementation", "config", "issue", "task_state", "architecture")
# What a probe asks about: a planted fact of one of FACT_KINDS, or the agent's own working
# state (a rule in force, a todo item's status, a file's history, why a choice was made, what
# was in progress), the dimensions compaction is known to lose.
PROBE_KINDS = (*FACT_KINDS, "rule", "task", "artifact", "rationale", "continuation")


class ScenarioError(MemctxError, ValueError):
    """A scenario file or record is malformed or unreadable (the message names the file, the
    record and field, and the fix)."""


@dataclass(frozen=True)
class Probe:
    """A question at one point of a session, with what a correct context must contain.

    Attributes:
        id: Unique within the scenario.
        session_id: The session in which it is asked.
        at: Asked when the transcript holds ``messages[:at]`` of that session.
        question: The user's question (appended for this one call only).
        answers: Aliases of the current value; any one present in the context is a hit.
        evidence: Message ids ``"<session_id>:<index>"`` where the current value was stated.
        evidence_text: Spans of those messages that show the evidence was recalled.
        stale: Superseded values (present without any answer = a stale context).
        kind: One of :data:`PROBE_KINDS`.
        tags: Free labels (``"paraphrase"``, ``"cjk"``, ...) for slicing reports.
    """

    id: str
    session_id: str
    at: int
    question: str
    answers: tuple[str, ...]
    evidence: tuple[str, ...] = ()
    evidence_text: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    kind: str = "decision"
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Session:
    """One agent session: its id and its messages in the scenario's provider format."""

    id: str
    messages: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Scenario:
    """Sessions played in order against one store, and the probes asked along the way.

    Attributes:
        id: Unique across suites, e.g. ``"needle-003"``.
        suite: The suite it belongs to.
        format: Provider format of every message (:data:`FORMATS`).
        seed: The generator seed that produced it.
        window: The context window (tokens) the scenario is meant to be played at.
        sessions: Played in this order; later sessions may probe earlier ones.
        probes: Ordered by session, then position.
        secrets: Planted secret values that must never be persisted or recalled.
        meta: Free facts about the scenario (project, stack, sizes).
    """

    id: str
    suite: str
    format: str
    seed: int
    window: int
    sessions: tuple[Session, ...]
    probes: tuple[Probe, ...]
    secrets: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)

    def session(self, session_id: str) -> Session:
        """The session named ``session_id`` (KeyError when absent)."""
        for session in self.sessions:
            if session.id == session_id:
                return session
        raise KeyError(session_id)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCENARIO_SCHEMA,
            "id": self.id,
            "suite": self.suite,
            "format": self.format,
            "seed": self.seed,
            "window": self.window,
            "sessions": [{"id": s.id, "messages": list(s.messages)} for s in self.sessions],
            "probes": [_probe_json(p) for p in self.probes],
            "secrets": list(self.secrets),
            "meta": dict(self.meta),
        }

    @classmethod
    def from_json(cls, data: Any, where: str = "scenario") -> Scenario:
        """Build and validate a scenario from its JSON object.

        Raises:
            ScenarioError: A field is missing or wrong; the message names it.
        """
        obj = _mapping(data, where)
        if obj.get("schema", SCENARIO_SCHEMA) != SCENARIO_SCHEMA:
            raise ScenarioError(
                f"{where}: schema {_shown(obj.get('schema'))} is not {SCENARIO_SCHEMA}; regenerate "
                "the file with `memctx gen`"
            )
        sid = _str(obj, "id", where)
        where = f"{where} {_shown(sid)}"
        fmt = _str(obj, "format", where)
        if fmt not in FORMATS:
            raise ScenarioError(f"{where}: format {_shown(fmt)} is not one of {FORMATS}")
        sessions = tuple(
            _session(s, f"{where} sessions[{i}]")
            for i, s in enumerate(_list(obj, "sessions", where))
        )
        if not sessions:
            raise ScenarioError(f"{where}: sessions is empty; a scenario needs one session")
        by_id = {s.id: s for s in sessions}
        if len(by_id) != len(sessions):
            raise ScenarioError(f"{where}: session ids repeat")
        probes = tuple(
            _probe(p, by_id, f"{where} probes[{i}]")
            for i, p in enumerate(_list(obj, "probes", where))
        )
        window = obj.get("window")
        if not isinstance(window, int) or isinstance(window, bool) or window <= 0:
            raise ScenarioError(f"{where}: window must be a positive int, got {_shown(window)}")
        seed = obj.get("seed", 0)
        if not isinstance(seed, int):
            raise ScenarioError(f"{where}: seed must be an int, got {_shown(seed)}")
        return cls(
            id=sid,
            suite=_str(obj, "suite", where),
            format=fmt,
            seed=seed,
            window=window,
            sessions=sessions,
            probes=probes,
            secrets=tuple(_strs(obj.get("secrets", []), f"{where} secrets")),
            meta=dict(_mapping(obj.get("meta", {}), f"{where} meta")),
        )


def dump_scenarios(scenarios: Iterable[Scenario], path: Path) -> str:
    """Write scenarios one per line (gzip when the name ends in ``.gz``, reproducibly).

    Returns:
        The sha256 of the uncompressed JSONL text (what a manifest records).
    """
    text = "".join(
        json.dumps(s.to_json(), ensure_ascii=False, sort_keys=True) + "\n" for s in scenarios
    )
    data = text.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".gz"):
        buffer = io.BytesIO()
        # mtime=0 and no file name in the header: the same scenarios give the same bytes.
        with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as gz:
            gz.write(data)
        path.write_bytes(buffer.getvalue())
    else:
        path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def content_sha256(path: Path) -> str:
    """The sha256 of a scenario file's uncompressed content.

    Raises:
        ScenarioError: The file cannot be read (see :func:`load_scenarios`).
    """
    digest = hashlib.sha256()
    with _scenario_stream(Path(path), None) as (stream, limit):
        total = 0
        while chunk := _guarded(path, stream.read, 1 << 20):
            total += len(chunk)
            if total > limit:
                raise ScenarioError(
                    f"{path}: the scenario file is larger than the input limit ({limit:,} "
                    f"bytes uncompressed); raise it with {MAX_INPUT_BYTES_ENV}=BYTES (K, M, G "
                    "suffixes allowed) if the file is really that large"
                )
            digest.update(chunk)
    return digest.hexdigest()


def load_scenarios(path: Path, *, max_bytes: int | None = None) -> list[Scenario]:
    """Read and validate every scenario of a JSONL(.gz) file.

    The file must be a regular file; it is read line by line, at most ``max_bytes``
    (``$MEMCTX_MAX_INPUT_BYTES``, 512 MiB by default) of it once decompressed.

    Raises:
        ScenarioError: The file is missing, not a regular file, too large, not JSONL, or a
            record is invalid; the message names the file, the line and the field.
    """
    path = Path(path)
    with _scenario_stream(path, max_bytes) as (stream, limit):
        return list(_iter_scenarios(_lines(path, stream, limit), path))


def _iter_scenarios(lines: Iterable[InputLine], path: Path) -> Iterator[Scenario]:
    for line in lines:
        if not line.text.strip():
            continue
        where = f"{path}:{line.number}"
        try:
            data = json.loads(line.text)
        except json.JSONDecodeError as exc:
            raise ScenarioError(
                f"{where}: not JSON ({exc.msg} at column {exc.colno}); regenerate with `memctx gen`"
            ) from None
        except (ValueError, RecursionError) as exc:
            raise ScenarioError(
                f"{where}: not a scenario ({type(exc).__name__}); regenerate with `memctx gen`"
            ) from None
        yield Scenario.from_json(data, where)


@contextmanager
def _scenario_stream(path: Path, max_bytes: int | None) -> Iterator[tuple[IO[bytes], int]]:
    """The file's uncompressed bytes (gzip or not) and the size cap."""
    try:
        handle = open_input_file(path, what="scenario file", max_bytes=max_bytes)
    except InputFileError as exc:
        raise ScenarioError(str(exc)) from None
    with handle:
        stream: IO[bytes] = handle.stream
        gzipped = stream.read(2) == b"\x1f\x8b"
        stream.seek(0)
        if gzipped:
            with gzip.GzipFile(fileobj=stream, mode="rb") as unzipped:
                yield cast(IO[bytes], unzipped), handle.limit
        else:
            yield stream, handle.limit


def _guarded(path: Path, read: Callable[[int], bytes], size: int) -> bytes:
    try:
        return read(size)
    except (OSError, EOFError, zlib.error) as exc:
        raise _damaged(path, exc) from None


def _damaged(path: Path, exc: BaseException) -> ScenarioError:
    return ScenarioError(
        f"cannot read scenarios from {path}: a damaged gzip file ({type(exc).__name__}); "
        "regenerate it with `memctx gen`"
    )


def _lines(path: Path, stream: IO[bytes], limit: int) -> Iterator[InputLine]:
    try:
        yield from iter_lines(stream, source=str(path), limit=limit, what="scenario file")
    except InputFileError as exc:
        raise ScenarioError(str(exc)) from None
    except (OSError, EOFError, zlib.error) as exc:
        raise _damaged(path, exc) from None


def _probe_json(p: Probe) -> dict[str, Any]:
    return {
        "id": p.id,
        "session_id": p.session_id,
        "at": p.at,
        "question": p.question,
        "answers": list(p.answers),
        "evidence": list(p.evidence),
        "evidence_text": list(p.evidence_text),
        "stale": list(p.stale),
        "kind": p.kind,
        "tags": list(p.tags),
    }


def _session(data: Any, where: str) -> Session:
    obj = _mapping(data, where)
    messages = _list(obj, "messages", where)
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise ScenarioError(f"{where} messages[{i}]: a message must be an object")
    session_id = _str(obj, "id", where)
    try:
        validate_session_id(session_id)  # it names the session in memctx's stores
    except StoreError:
        raise ScenarioError(
            f"{where}: session id {_shown(session_id)} cannot name a memctx session: use "
            "1-128 characters from A-Z a-z 0-9 . _ : - (not '.' or '..', no slashes or "
            "spaces); rename it in the scenario file, in the probes' session_id and in the "
            "evidence that names it"
        ) from None
    return Session(id=session_id, messages=tuple(dict(m) for m in messages))


def _probe(data: Any, sessions: Mapping[str, Session], where: str) -> Probe:
    obj = _mapping(data, where)
    session_id = _str(obj, "session_id", where)
    if session_id not in sessions:
        raise ScenarioError(f"{where}: session_id {_shown(session_id)} names no session")
    at = obj.get("at")
    size = len(sessions[session_id].messages)
    if not isinstance(at, int) or isinstance(at, bool) or not 0 < at <= size:
        raise ScenarioError(f"{where}: at must be an int in 1..{size}, got {_shown(at)}")
    answers = tuple(_strs(obj.get("answers"), f"{where} answers"))
    if not answers:
        raise ScenarioError(f"{where}: answers is empty; a probe needs one expected answer")
    kind = obj.get("kind", "decision")
    if kind not in PROBE_KINDS:
        raise ScenarioError(f"{where}: kind {_shown(kind)} is not one of {PROBE_KINDS}")
    evidence = tuple(_strs(obj.get("evidence", []), f"{where} evidence"))
    for ref in evidence:
        sid, _, index = ref.rpartition(":")
        if sid not in sessions or not index.isdigit() or int(index) >= len(sessions[sid].messages):
            raise ScenarioError(
                f"{where}: evidence {_shown(ref)} names no message (want 'session:index')"
            )
    return Probe(
        id=_str(obj, "id", where),
        session_id=session_id,
        at=at,
        question=_str(obj, "question", where),
        answers=answers,
        evidence=evidence,
        evidence_text=tuple(_strs(obj.get("evidence_text", []), f"{where} evidence_text")),
        stale=tuple(_strs(obj.get("stale", []), f"{where} stale")),
        kind=kind,
        tags=tuple(_strs(obj.get("tags", []), f"{where} tags")),
    )


def _shown(value: Any) -> str:
    """A value for an error message: a short scalar as written, else its type and size."""
    if isinstance(value, list | tuple):
        return f"a list of {len(value)} items"
    if isinstance(value, Mapping):
        return f"an object of {len(value)} keys"
    text = repr(value)
    return text if len(text) <= 48 else f"{text[:40]}... ({len(text)} characters)"


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _list(obj: Mapping[str, Any], key: str, where: str) -> Sequence[Any]:
    value = obj.get(key)
    if not isinstance(value, list):
        raise ScenarioError(f"{where}: {key} must be a list, got {type(value).__name__}")
    return value


def _str(obj: Mapping[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise ScenarioError(f"{where}: {key} must be a non-empty string, got {_shown(value)}")
    return value


def _strs(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ScenarioError(f"{where}: expected a list of non-empty strings, got {_shown(value)}")
    return list(value)

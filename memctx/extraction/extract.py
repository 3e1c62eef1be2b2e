"""Knowledge extraction and update: conversation -> facts -> ADD / UPDATE / SUPERSEDE / NONE.

Seed 000's pipeline, run after compaction on the messages that left the context:

1. Render the messages as ``[role] text`` lines (tool bulk cut to excerpts, system prompts and
   recalled blocks left out), mask secrets, split into chunks under ``max_input_tokens``.
2. Per chunk, one ``extract-knowledge`` call; the answer is parsed strictly
   (:mod:`memctx.extraction.prompt`). A malformed answer gets ONE repair request (the bad
   answer plus the parse error); if that fails too the chunk is skipped and counted.
3. Secret guard: every fact's content and context is redacted again (the model may write a
   secret it saw, or invent one); a fact that is mostly a redaction marker is dropped.
4. Update decision per fact. With a real LLM: the nearest live facts (the store's keyword
   search plus same-type facts sharing words) are numbered and the model picks the operation,
   Mem0-style; a malformed answer gets one repair, then the rule-based decision is used.
   DELETE is refused (treated as NONE): the seed disables it because an LLM may hallucinate
   deleting a valid fact. With memctx's offline model the rule-based
   :func:`memctx.store.knowledge_rules.decide_update` decides, with no model call.
5. :meth:`memctx.store.knowledge.KnowledgeStore.apply`, with the fact's ``origin``: the kind
   of message it came from, decided here in code (:func:`fact_origin`), never taken from
   the model's answer, whose ``context`` is only its own words.

Model failures never raise: every outcome is a counter in :class:`ExtractionReport`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from memctx.errors import MemctxError
from memctx.store import (
    Fact,
    KnowledgeStore,
    NewFact,
    UpdateDecision,
    least_trusted,
    origin_trust,
)
from memctx.text import Redactor, tokenize_unique

from .prompt import (
    TASK_DECIDE,
    TASK_EXTRACT,
    ParseError,
    ProposedFact,
    chunk_conversation,
    decision_messages,
    extraction_messages,
    parse_decision,
    parse_facts,
    prompt_overhead_tokens,
    render_entries,
    repair_messages,
)

__all__ = [
    "DEFAULT_MAX_INPUT_TOKENS",
    "CompletionClient",
    "CompletionResponse",
    "ExtractionReport",
    "extract_and_update",
    "fact_origin",
]

logger = logging.getLogger("memctx")

DEFAULT_MAX_INPUT_TOKENS = 6000
_MIN_CONVERSATION_TOKENS = (
    200  # below this a chunk holds too little conversation to be worth a call
)
_EXTRACT_MAX_TOKENS = 2000  # 20-odd facts of <= 200 characters fit with room to spare
_DECIDE_MAX_TOKENS = 60
_CANDIDATES = 8  # numbered facts shown to the decision prompt
_MARKER_RE = re.compile(r"\[REDACTED:[^\]\s]*\]")


class CompletionResponse(Protocol):
    """What extraction reads from a model answer (an ``LLMResponse`` of :mod:`memctx.llm`)."""

    @property
    def text(self) -> str: ...

    @property
    def prompt_tokens(self) -> int | None: ...

    @property
    def completion_tokens(self) -> int | None: ...

    @property
    def cost_usd(self) -> float | None: ...

    @property
    def cached(self) -> bool: ...


class CompletionClient(Protocol):
    """The model interface the pipeline needs (``memctx.llm.client.LLMClient`` has it).

    ``complete`` raises a :class:`memctx.errors.MemctxError` subclass on failure;
    ``is_offline`` is True for memctx's rule-based offline model.
    """

    @property
    def is_offline(self) -> bool: ...

    def complete(
        self, messages: list[dict[str, Any]], *, task: str, max_tokens: int | None = None
    ) -> CompletionResponse: ...


@dataclass
class ExtractionReport:
    """Counts for one :func:`extract_and_update` run.

    ``llm_calls`` counts every request, failed ones and repairs included; ``llm_failures``
    the requests that raised. ``facts_proposed`` counts answer items, so it equals
    ``items_dropped + secrets_dropped + added + updated + superseded + unchanged``.
    ``repairs`` counts repair requests sent; ``parse_failures`` chunks skipped because the
    repaired answer was still unusable; ``decision_fallbacks`` update decisions taken by the
    rules because the model's answer was unusable or its call failed; ``deletes_refused``
    DELETE answers treated as NONE. ``secrets_redacted`` counts facts kept with a secret
    masked. An UPDATE/SUPERSEDE whose target the store no longer has is counted as added.
    """

    chunks: int = 0
    llm_calls: int = 0
    llm_failures: int = 0
    cached_calls: int = 0
    facts_proposed: int = 0
    added: int = 0
    updated: int = 0
    superseded: int = 0
    unchanged: int = 0
    parse_failures: int = 0
    repairs: int = 0
    items_dropped: int = 0
    secrets_dropped: int = 0
    secrets_redacted: int = 0
    decision_fallbacks: int = 0
    deletes_refused: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def as_dict(self) -> dict[str, int | float]:
        """The counters as a flat dict (for ``summary.json`` rows and logs)."""
        return asdict(self)


def _mostly_marker(text: str) -> bool:
    """True when redaction markers are at least half of the text's non-space characters."""
    marked = sum(len(m) for m in _MARKER_RE.findall(text))
    return marked > 0 and 2 * marked >= len("".join(text.split()))


def fact_origin(content: str, sources: Sequence[tuple[str, frozenset[str]]]) -> str:
    """The kind of message a fact was extracted from, decided from the text, not the model.

    ``sources`` are the rendered pieces of the conversation as ``(origin, words)``. The
    pieces whose words support the fact (at least half as many of its words as the best
    piece has) are its possible sources. When one of them is a tool's output (or of unknown
    origin), the least trusted of those names the fact: a fact whose words a tool's output
    holds is the tool's, even when a user message holds them too. Otherwise the user or the
    assistant, whichever worded it more closely (a tie: the assistant). A fact whose words
    no piece holds (a paraphrase) takes the least-trusted origin of the whole conversation.
    So text inside a tool output never yields a fact attributed to the user: to be the
    user's, a fact must be worded from a user message, and from no tool output half as
    closely.
    """
    words = frozenset(tokenize_unique(content))
    support = [(len(words & theirs), origin) for origin, theirs in sources]
    best = max((n for n, _ in support), default=0)
    if not words or best == 0:
        return least_trusted(origin for _, origin in support) or "unknown"
    near = [(n, origin) for n, origin in support if 2 * n >= best]
    origin = least_trusted(origin for _, origin in near)
    if origin_trust(origin) == 0:
        return origin
    return max(near, key=lambda s: (s[0], -origin_trust(s[1])))[1]


class _Run:
    """One extraction run: the store, the model, the report being filled."""

    def __init__(
        self,
        store: KnowledgeStore,
        client: CompletionClient,
        redactor: Redactor,
        session_id: str | None,
        source_ids: tuple[str, ...],
        sources: Sequence[tuple[str, frozenset[str]]],
    ) -> None:
        self.store, self.client, self.redactor = store, client, redactor
        self.session_id, self.source_ids = session_id, source_ids
        self.sources = sources
        self.report = ExtractionReport()

    # -- model access

    def ask(self, messages: list[dict[str, Any]], task: str, max_tokens: int) -> str | None:
        """The model's answer text, or None when the call failed (counted)."""
        self.report.llm_calls += 1
        try:
            response = self.client.complete(messages, task=task, max_tokens=max_tokens)
        except MemctxError as exc:
            self.report.llm_failures += 1
            logger.warning("knowledge extraction: %s call failed: %s", task, exc)
            return None
        self.report.prompt_tokens += response.prompt_tokens or 0
        self.report.completion_tokens += response.completion_tokens or 0
        self.report.cost_usd += response.cost_usd or 0.0
        self.report.cached_calls += bool(response.cached)
        return response.text or ""

    def ask_facts(self, chunk: str, part: int, parts: int) -> list[ProposedFact] | None:
        """The valid facts of one chunk, or None when the chunk is skipped."""
        messages = extraction_messages(chunk, part, parts)
        answer = self.ask(messages, TASK_EXTRACT, _EXTRACT_MAX_TOKENS)
        if answer is None:
            return None
        try:
            facts, dropped = parse_facts(answer)
        except ParseError as exc:
            self.report.repairs += 1
            expected = 'the corrected JSON array of {"type", "content", "context"} objects'
            retry = repair_messages(messages, answer, str(exc), expected)
            again = self.ask(retry, TASK_EXTRACT, _EXTRACT_MAX_TOKENS)
            try:
                if again is None:
                    raise ParseError("the repair call failed") from exc
                facts, dropped = parse_facts(again)
            except ParseError as final:
                self.report.parse_failures += 1
                logger.warning("knowledge extraction: chunk %d/%d skipped: %s", part, parts, final)
                return None
        self.report.facts_proposed += len(facts) + dropped
        self.report.items_dropped += dropped
        return facts

    # -- facts

    def guard(self, fact: ProposedFact) -> NewFact | None:
        """The fact with secrets masked, or None when little but a secret would be left."""
        content = self.redactor.redact_with_report(fact.content)
        context = self.redactor.redact_with_report(fact.context)
        if content.hits and _mostly_marker(content.text):
            self.report.secrets_dropped += 1
            return None
        self.report.secrets_redacted += bool(content.hits or context.hits)
        origin = fact_origin(fact.content, self.sources)
        return NewFact(
            fact.type, content.text, context.text, self.session_id, self.source_ids, origin
        )

    def candidates(self, new: NewFact) -> list[Fact]:
        """Nearest live facts: keyword-search hits, then same-type facts sharing words."""
        chosen = {f.id: f for f, _ in self.store.search(new.content, limit=_CANDIDATES)}
        words = set(tokenize_unique(new.content))
        scored = []
        for fact in self.store.live_facts():
            if fact.type == new.type and fact.id not in chosen:
                theirs = set(tokenize_unique(fact.content))
                if shared := len(words & theirs):
                    scored.append((shared / len(words | theirs), fact.timestamp, fact))
        scored.sort(key=lambda s: (-s[0], -s[1], s[2].content, s[2].id))  # ids are random
        for _, _, fact in scored[: max(0, _CANDIDATES - len(chosen))]:
            chosen[fact.id] = fact
        return list(chosen.values())[:_CANDIDATES]

    def decide(self, new: NewFact) -> UpdateDecision:
        """The model's Mem0-style decision, or the rules' when the answer is unusable."""
        pool = self.candidates(new)
        if not pool:
            return UpdateDecision("ADD", new)  # nothing to compare with: no call needed
        messages = decision_messages(new.type.value, new.content, pool)
        answer = self.ask(messages, TASK_DECIDE, _DECIDE_MAX_TOKENS)
        parsed = None
        if answer is not None:
            try:
                parsed = parse_decision(answer, len(pool))
            except ParseError as exc:
                self.report.repairs += 1
                expected = 'the corrected JSON object {"op": ..., "target": ...}'
                retry = repair_messages(messages, answer, str(exc), expected)
                again = self.ask(retry, TASK_DECIDE, _DECIDE_MAX_TOKENS)
                try:
                    parsed = parse_decision(again, len(pool)) if again is not None else None
                except ParseError as final:
                    logger.info("knowledge update: unusable decision, rules decide: %s", final)
        if parsed is None:
            self.report.decision_fallbacks += 1
            return self.store.decide(new)
        op, index = parsed
        if op is None:
            self.report.deletes_refused += 1
            logger.info("knowledge update: DELETE refused for %r (kept as NONE)", new.content)
            return UpdateDecision("NONE", new)
        return UpdateDecision(op, new, pool[index].id if index is not None else None)

    def store_fact(self, new: NewFact) -> None:
        if self.client.is_offline:
            decision, written = self.store.ingest(new)  # rules: decide + apply under one lock
        else:
            decision = self.decide(new)
            written = self.store.apply(decision)
        self.count(decision, written)

    def count(self, decision: UpdateDecision, written: Fact | None) -> None:
        if written is None:
            self.report.unchanged += 1
            return
        target = self.store.get(decision.target_id) if decision.target_id else None
        if decision.op == "UPDATE" and written.id == decision.target_id:
            self.report.updated += 1
        elif decision.op == "SUPERSEDE" and target is not None:
            # The store turns an UPDATE/SUPERSEDE whose target vanished into an ADD.
            if target.superseded_by == written.id:
                self.report.superseded += 1
            else:
                self.report.added += 1
        else:
            self.report.added += 1


def extract_and_update(
    messages: Sequence[Mapping[str, Any]],
    *,
    store: KnowledgeStore,
    client: CompletionClient,
    session_id: str | None = None,
    source_ids: Sequence[str] = (),
    max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS,
    redactor: Redactor | None = None,
) -> ExtractionReport:
    """Extract knowledge from ``messages`` and apply it to ``store`` (see the module docstring).

    Args:
        messages: Provider-format message dicts (any shape :mod:`memctx.messages.anatomy` reads),
            typically the ones a compaction removed. Never mutated.
        store: The knowledge store to update.
        client: The model (``memctx.llm.client.LLMClient`` or anything with the same
            ``complete`` / ``is_offline``); offline means rule-based update decisions.
        session_id: Recorded on every fact written.
        source_ids: Provenance (e.g. raw-store segment ids) recorded on every fact written.
        max_input_tokens: Estimated-token budget of one extraction request, prompt included;
            longer conversations are split into several requests.
        redactor: Masks secrets in the conversation sent and in the facts kept; defaults to
            the built-in rules.

    Returns:
        The counts of what happened; model failures are counted, never raised.

    Raises:
        ValueError: ``max_input_tokens`` leaves too little room for conversation text.
        StoreError: The knowledge store cannot be written.
    """
    overhead = prompt_overhead_tokens()
    budget = max_input_tokens - overhead
    if budget < _MIN_CONVERSATION_TOKENS:
        raise ValueError(
            f"max_input_tokens={max_input_tokens} leaves {budget} tokens for conversation after "
            f"the ~{overhead}-token extraction prompt; use at least "
            f"{overhead + _MIN_CONVERSATION_TOKENS}"
        )
    redactor = redactor if redactor is not None else Redactor()
    rendered = render_entries(messages)
    # The model never sees a secret, so it cannot copy one into a fact.
    # A secret cut over two messages is masked in both (``redact_across``, on the texts
    # without their ``[role]`` labels, which would split the join) before each is redacted.
    texts = [entry.text for entry in rendered]
    labels = [t[: t.index("] ") + 2] if t.startswith("[") and "] " in t else "" for t in texts]
    bodies = redactor.redact_across(
        [t[len(label) :] for t, label in zip(texts, labels, strict=True)]
    )
    entries = [redactor.redact(label + body) for label, body in zip(labels, bodies, strict=True)]
    sources = [
        (entry.origin, frozenset(tokenize_unique(text)))
        for entry, text in zip(rendered, entries, strict=True)
    ]
    run = _Run(store, client, redactor, session_id, tuple(source_ids), sources)
    chunks = chunk_conversation(entries, budget) if entries else []
    run.report.chunks = len(chunks)
    for part, chunk in enumerate(chunks, start=1):
        facts = run.ask_facts(chunk, part, len(chunks))
        for fact in facts or ():
            new = run.guard(fact)
            if new is not None:
                run.store_fact(new)
    return run.report

"""The ``planner`` strategy: seed 004 as one pipeline, no LLM and no embedder.

Before every model call, in the seed's order:

1. **Tool payloads as file refs.** A tool result over ``planner.toolPayloadMaxChars``
   (20,000 characters) is persisted as the agent's transcript keeps it: redacted and written
   whole to ``tool-output/<sha256>.json``, a preview and a notice naming the ref left in the
   message (:func:`memctx.compaction.persist_oversized_tool_results`). Each result is written
   once; the same compact copy is sent on every later call.
2. **Pruning** (seed 003; this strategy's own default mode is ``cache-ttl`` where the config
   does not set one): old tool results soft-trimmed or cleared once the prompt cache is
   cold, the same copies re-sent while it is warm (:class:`memctx.trim.PruningSession`;
   ``planner:pruning=off`` or ``contextPruning.mode=off`` turns it off).
3. **Planner.** The history is cut to the token budget, oldest first, the latest request and
   what follows always kept, no tool pair split, the cut kept where it is while the history
   fits (:func:`memctx.compaction.plan_context`, ``cutToRatio``).
4. **Session summary sidecar.** The messages the cut leaves out become rolling items in
   ``<session>.summary.json`` (:class:`memctx.compaction.SessionSummary`), never the
   summary's own injected text. Only when history was cut or fills
   ``planner.summaryPressureRatio`` (0.72) of the budget does the summary go into the system
   prompt, with its tokens reserved; it is written again only when the cut moves, so the
   prompt, and the cached prefix, change no more often than the history's start does.

The agent's tools are modelled like ``memory_search`` for the other strategies:
:meth:`PlannerStrategy.search` is the agent calling ``read_output_ref`` on the refs its last
context named, the payloads most about the question first.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from memctx.compaction import (
    ContextPlan,
    SessionSummary,
    inject_summary,
    max_tool_result_chars,
    output_refs_in,
    persist_oversized_tool_results,
    plan_context,
    sidecar_path,
    summary_injection_due,
    truncate_oversized_tool_results,
)
from memctx.errors import StoreError
from memctx.messages import leading_system_count
from memctx.store import read_output_ref
from memctx.text import tokenize
from memctx.trim import PruningSession

from .base import BaseStrategy, Messages, Prepared, StrategySetup
from .truncate import TruncateStrategy, send_whole

__all__ = ["READ_LIMIT", "PlannerStrategy"]

READ_LIMIT = 3  # payloads one read_output_ref round returns, most relevant first


class PlannerStrategy(BaseStrategy):
    """Payload refs + summary sidecar + pruning + token-budget planner (module docstring).

    Args:
        setup: Window, config, store directory, clock and shared caches.
    """

    name = "planner"
    searches = False  # nothing is ranked by the embedder
    # Seed 003's example.
    config_defaults: ClassVar[Mapping[str, object]] = {"contextPruning.mode": "cache-ttl"}

    def __init__(self, setup: StrategySetup) -> None:
        super().__init__(setup)
        self.pruning = PruningSession(self.config.context_pruning, setup.window, infos=setup.infos)
        # Like OpenClaw's agent directory: session files, their sidecars, tool-output/.
        self.sessions_dir = setup.store_dir / "sessions"
        self._summary: SessionSummary | None = None
        # id(message) -> (message, what is sent for it): a result is persisted once, and the
        # same compact dict goes out on every call (a stable prefix for the prompt cache).
        self._persisted: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
        self._seen: tuple[int, object] = (0, None)  # the last transcript's length, last message
        self._sent: Messages = []  # and what was kept of each of its messages
        self._last_context: Messages = []  # what the agent saw last (its refs can be read)
        self._extra = 0  # tokens of the summary the last call injected
        self._anchor: tuple[int, object | None] = (0, None)  # the last history start
        self._summary_at: tuple[int, str] | None = None  # the summary made at that start
        self._fitter = TruncateStrategy(setup)  # the last resort when nothing else fits
        self.counts = {
            "payload_refs": 0,
            "payload_write_failures": 0,
            "summary_injections": 0,
            "mandatory_only": 0,
            "prunings": 0,
        }

    def start_session(self, session_id: str) -> None:
        self._summary = SessionSummary.open(
            sidecar_path(self.sessions_dir / f"{session_id}.jsonl"),
            self.config.planner,
            infos=self.setup.infos,
            store_dir=self.setup.store_dir,
        )
        self.pruning.reset()
        self._persisted.clear()
        self._seen, self._sent = (0, None), []
        self._last_context, self._extra = [], 0
        self._anchor, self._summary_at = (0, None), None

    def prepare(self, transcript: Messages) -> Prepared:
        if self._summary is None:
            raise RuntimeError(f"{self.name}: start_session() was not called")
        started = time.perf_counter()
        setup, planner = self.setup, self.config.planner
        kept = self._persist(transcript)
        pruned = self.pruning.apply(kept, setup.clock())
        if pruned.pruned_now:
            self.counts["prunings"] += 1
        count = setup.counter.count_message
        messages = pruned.messages
        anchor = self._anchor_in(messages)

        def planned(extra: int) -> ContextPlan:
            return plan_context(
                messages,
                setup.window,
                planner,
                count=count,
                infos=setup.infos,
                extra_tokens=extra,
                anchor=anchor,
            )

        # Planned with the room the last call's summary took: while the summary stays the
        # same, one plan a call.
        extra = self._extra
        plan = planned(extra)
        # The summary is of what the plan leaves out: messages enter the sidecar as the cut
        # passes them (the sidecar reads only those it has not seen).
        head = leading_system_count(messages, setup.infos)
        self._summary.update(messages[head : max(head, plan.start)])
        text = ""
        if summary_injection_due(
            trimmed=plan.trimmed,
            used_tokens=plan.history_tokens,
            budget_tokens=plan.budget.tokens + extra,
            ratio=planner.summary_pressure_ratio,
        ):
            text = self._summary_text(plan.start)
        needed = count({"role": "system", "content": text}) if text else 0
        if needed != extra:
            plan = planned(needed)
        self._extra = needed
        self.counts["summary_injections"] += bool(text)
        self._anchor = (plan.start, messages[plan.start] if plan.start < len(messages) else None)
        context = inject_summary(plan.messages, text, infos=setup.infos)
        self._last_context = context
        self.counts["mandatory_only"] += plan.mandatory_only
        recovery = ""
        if plan.mandatory_only:
            recovery = "planner: only the latest request and what follows it"
            if setup.counter.count_messages(context) > setup.window:
                # Even the latest request and its last exchange exceed the window (a request
                # or a turn of outputs larger than it): the oversized results are cut to
                # their head and tail (overflow recovery's second rung), and if that is not
                # enough the oldest messages go as truncate drops them, so no call the
                # provider would refuse is sent.
                context = truncate_oversized_tool_results(
                    context, max_chars=max_tool_result_chars(setup.window), infos=setup.infos
                ).messages
                recovery += ", oversized tool results cut"
                fitted, whole = send_whole(setup, context, self._fitter)
                context = fitted.context
                if whole is None:
                    recovery += ", then the oldest dropped"
                self._last_context = context
        elif plan.trimmed:
            recovery = f"planner: dropped the oldest {plan.dropped} messages"
        latency = (time.perf_counter() - started) * 1000.0
        return Prepared(context, latency, plan.trimmed, recovery=recovery)

    def _anchor_in(self, messages: Messages) -> int | None:
        """Where the last call's history started, if ``messages`` still has it there."""
        at, first = self._anchor
        return at if first is not None and at < len(messages) and messages[at] is first else None

    def _summary_text(self, start: int) -> str:
        """The summary to inject, the same text while the cut stays where it is: a summary
        rewritten every call would change the system prompt, and with it the whole cached
        prefix, on every call."""
        if self._summary is None:
            return ""
        if self._summary_at is None or self._summary_at[0] != start:
            text = self._summary.materialize(self.config.planner.summary_max_chars)
            self._summary_at = (start, text)
        return self._summary_at[1]

    def search(self, query: str) -> list[str] | None:
        """The agent reads back the payloads its last context named (``read_output_ref``),
        those sharing most words with ``query`` first; ``[]`` when none was named."""
        words = set(tokenize(query))
        found: list[tuple[int, int, str]] = []
        refs = output_refs_in(self._last_context, infos=self.setup.infos)
        for k, ref in enumerate(refs):
            try:
                text = read_output_ref(self.sessions_dir, ref, root=self.setup.store_dir)
            except StoreError:
                continue  # a damaged file reads as nothing, never as another text
            found.append((-len(words & set(tokenize(text))), k, text))
        return [text for *_, text in sorted(found)[:READ_LIMIT]]

    def _persist(self, transcript: Messages) -> Messages:
        """``transcript`` as the agent persisted it: oversized tool results as file refs."""
        out = list(transcript)
        persisted = self._persisted
        # An agent appends: only messages after the last call's are new (a probe's question
        # or a rewritten transcript is looked up message by message).
        seen, last = self._seen
        extends = 0 < seen <= len(out) and out[seen - 1] is last
        begin = seen if extends else 0
        new = [
            i for i in range(begin, len(out)) if persisted.get(id(out[i]), (None,))[0] is not out[i]
        ]
        if new:
            done = persist_oversized_tool_results(
                [out[i] for i in new],
                Path(self.sessions_dir),
                self.config.planner,
                infos=self.setup.infos,
                root=self.setup.store_dir,
            )
            self.counts["payload_refs"] += len(done.refs)
            self.counts["payload_write_failures"] += len(done.failed)
            for i, sent in zip(new, done.messages, strict=True):
                persisted[id(out[i])] = (out[i], sent)
        sent_list = self._sent[:begin] if extends else []
        sent_list += [persisted[id(m)][1] for m in out[begin:]]
        self._seen = (len(out), out[-1] if out else None)
        self._sent = sent_list
        return list(sent_list)

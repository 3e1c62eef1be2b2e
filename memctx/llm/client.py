"""LLM access: one client for every model call memctx makes, through ``litellm.completion``.

:class:`LLMClient` adds what memctx needs around litellm: a disk cache of responses
(:mod:`memctx.llm.cache`), token and cost accounting per task (:class:`LLMUsage`), retries
of transient failures, and one exception type, :class:`LLMError`, that callers catch and
count. The model string comes from ``MemoryContextConfig.extraction_model``; the default,
``memctx/offline``, is memctx's own deterministic model (:mod:`memctx.offline.model`),
registered with litellm on first use so that everything works without network or keys.

Prompt writers put :func:`task_marker` in their system message. The offline model dispatches
on it (:func:`task_of`); a real model just sees one short line of text.

litellm is imported lazily: it takes seconds, and modules that only need the task markers
should not pay for it.
"""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memctx.errors import MemctxError
from memctx.messages import message_text

from .cache import CachedResponse, ResponseCache, cache_key
from .limits import CallLimits, backoff_delay, estimate_call_cost, provider_of, retry_after_s
from .prices import price_completion
from .usage import LLMUsage, TaskUsage, UsageRecorder, read_response

__all__ = [
    "OFFLINE_MODEL",
    "LLMClient",
    "LLMError",
    "LLMResponse",
    "LLMUsage",
    "TaskUsage",
    "is_offline_model",
    "price_completion",
    "register_local_provider",
    "task_marker",
    "task_of",
]

OFFLINE_MODEL = "memctx/offline"
_OFFLINE_PROVIDER = "memctx"
_TASK_NAME = r"[a-z0-9][a-z0-9_.-]{0,63}"
_TASK_NAME_RE = re.compile(_TASK_NAME)
_MARKER_RE = re.compile(r"\[memctx-task:\s*(" + _TASK_NAME + r")\s*\]")
# Exception class names (anywhere in the MRO) worth another attempt: rate limits, timeouts,
# dropped connections, provider 5xx. Names rather than classes so that scripted completion
# callables can raise them without importing litellm.
_TRANSIENT = frozenset(
    {
        "RateLimitError",
        "Timeout",
        "APITimeoutError",
        "APIConnectionError",
        "InternalServerError",
        "ServiceUnavailableError",
        "TimeoutError",
        "ConnectionError",
    }
)


def task_marker(name: str) -> str:
    """The line that tells the offline model (and a log reader) which task a prompt is.

    Args:
        name: Lowercase task name, e.g. ``"extract-knowledge"`` or ``"summarize"``.

    Returns:
        ``"[memctx-task: <name>]"``, to put in the system message.
    """
    if not _TASK_NAME_RE.fullmatch(name):
        raise ValueError(
            f"task name {name!r} is not valid: use 1-64 characters of a-z, 0-9, '-', '_', '.'"
            " starting with a letter or digit (e.g. 'extract-knowledge')"
        )
    return f"[memctx-task: {name}]"


def task_of(messages: Sequence[Any]) -> str | None:
    """The task named by the first :func:`task_marker` in ``messages``, or ``None``.

    System (and developer) messages are searched first, in order, then every other message:
    prompt writers put the marker in the system message, but a provider without system
    messages may carry it in the first user turn.
    """
    ordered = sorted(
        (m for m in messages if isinstance(m, Mapping)),
        key=lambda m: 0 if m.get("role") in ("system", "developer") else 1,
    )  # sorted() is stable: order within each group is kept
    for message in ordered:
        content = message.get("content")
        text = content if isinstance(content, str) else message_text(message)
        found = _MARKER_RE.search(text)
        if found:
            return found.group(1)
    return None


def is_offline_model(model: str) -> bool:
    """True for memctx's own offline models (provider prefix ``memctx/``)."""
    return model.split("/", 1)[0] == _OFFLINE_PROVIDER


# How memctx's own models reach litellm. The offline model lives in a higher layer
# (:mod:`memctx.offline`, which needs the extraction prompts); it registers its installer
# here when imported, so this client never imports upwards. ``import memctx`` imports it.
_LOCAL_INSTALLERS: dict[str, Callable[[], object]] = {}


def register_local_provider(provider: str, install: Callable[[], object]) -> None:
    """Register ``install``, called before every request to a ``provider/…`` model.

    ``install`` must be idempotent and cheap: it makes the model callable through
    ``litellm.completion`` (e.g. by adding a custom provider), and is called again before
    each request so that a caller who reset litellm's provider list is not left broken.
    """
    _LOCAL_INSTALLERS[provider] = install


class LLMError(MemctxError):
    """An LLM call failed; the message names the model, the task and the cause.

    Attributes:
        model: The model string of the failed call.
        task: The memctx task of the failed call.
    """

    def __init__(self, message: str, *, model: str, task: str) -> None:
        super().__init__(message)
        self.model = model
        self.task = task


@dataclass(frozen=True, slots=True)
class LLMResponse:
    """The result of one :meth:`LLMClient.complete` call.

    Attributes:
        text: The model's reply.
        model: The model string the client was configured with.
        prompt_tokens: Input tokens of the call that produced ``text`` (on a cache hit,
            those of the original call: nothing was spent now).
        completion_tokens: Output tokens, likewise.
        cost_usd: What this call cost: 0.0 on a cache hit or for an unpriced model.
        cached: True when served from the disk cache.
        task: The memctx task name given by the caller.
        priced: False when the model is not in litellm's price table (cost recorded as 0).
        original_cost_usd: What the call that produced ``text`` cost; on a cache hit this
            is what the call would have cost without the cache.
    """

    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    cached: bool
    task: str
    priced: bool = True
    original_cost_usd: float = 0.0


class LLMClient:
    """Makes memctx's LLM calls: cached, counted, retried, with one error type.

    Args:
        model: A litellm model string, e.g. ``"anthropic/claude-sonnet-4-5"``; the default
            ``"memctx/offline"`` needs no network.
        cache_dir: Directory of the response cache (memctx passes
            ``<store_dir>/llm-cache``); ``None`` disables caching.
        temperature: Default sampling temperature.
        cache_sampled: Also cache calls with temperature > 0. Off by default: a sampled
            call is asked for on purpose to get a fresh answer.
        timeout_s: Per-attempt timeout passed to litellm.
        max_retries: Extra attempts after a transient failure (rate limit, timeout,
            connection, 5xx), with exponential backoff. The offline model is never retried.
        retry_backoff_s: First backoff delay; doubles each retry, times a jitter in
            [0.5, 1.5) (:func:`memctx.llm.limits.backoff_delay`), or longer when the
            provider's reply says how long to wait (``Retry-After``).
        completion: The completion function; ``None`` means ``litellm.completion``. Tests
            pass a scripted callable taking litellm's keyword arguments.
        limits: What this client shares with the other workers of a run
            (:class:`~memctx.llm.limits.CallLimits`): each real attempt holds one of the
            provider's concurrency slots while in flight (never while backing off), and
            reserves an estimate of its cost in the run's spend ledger first, raising
            :class:`~memctx.llm.limits.BudgetExceeded` instead of sending a call that could
            exceed the budget. Retries and cache hits are counted in the ledger too. The
            offline model is not limited.
        retry_seed: Seed of the backoff jitter (``limits.seed`` when limits are given).

    The client is thread-safe: background extraction and compaction may share one.
    """

    def __init__(
        self,
        model: str = OFFLINE_MODEL,
        *,
        cache_dir: Path | None = None,
        temperature: float = 0.0,
        cache_sampled: bool = False,
        timeout_s: float = 60,
        max_retries: int = 2,
        retry_backoff_s: float = 1.0,
        completion: Callable[..., Any] | None = None,
        limits: CallLimits | None = None,
        retry_seed: int = 0,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError("LLMClient needs a litellm model string, e.g. 'memctx/offline'")
        if max_retries < 0 or timeout_s <= 0 or retry_backoff_s < 0:
            raise ValueError("max_retries and retry_backoff_s must be >= 0 and timeout_s > 0")
        self.model = model
        self.temperature = temperature
        self.cache_sampled = cache_sampled
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.retry_backoff_s = retry_backoff_s
        self._cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self._completion = completion
        self._usage = UsageRecorder()
        self._limits = None if limits is None or is_offline_model(model) else limits
        self._slots = self._limits.slots() if self._limits is not None else None
        self._ledger = self._limits.ledger() if self._limits is not None else None
        self._rng = random.Random(limits.seed if limits is not None else retry_seed)
        self._provider: str | None = None

    @property
    def is_offline(self) -> bool:
        """True for memctx's offline model, so callers can prefer their rule-based paths."""
        return is_offline_model(self.model)

    @property
    def cache(self) -> ResponseCache | None:
        """The response cache, if enabled."""
        return self._cache

    def usage(self) -> LLMUsage:
        """A consistent snapshot of the counters (later calls do not change it)."""
        return self._usage.snapshot()

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        task: str,
        max_tokens: int | None = None,
        temperature: float | None = None,
        response_format: Any = None,
        mock_response: str | None = None,
    ) -> LLMResponse:
        """Send ``messages`` to the model (or answer from the cache).

        Args:
            messages: Chat messages in OpenAI/litellm format; not mutated.
            task: memctx task name for accounting, e.g. ``"extract-knowledge"``. For the
                offline model a :func:`task_marker` is added when the messages carry none.
            max_tokens: Output limit; ``None`` for the provider default.
            temperature: Overrides the client default for this call.
            response_format: Passed to litellm (e.g. ``{"type": "json_object"}``).
            mock_response: litellm's canned reply: no request is made, but usage and cost
                are computed as for a real call (for tests and dry runs).

        Returns:
            The reply with its token counts and cost.

        Raises:
            LLMError: The messages are unusable, or the call failed after retries; the
                message names the model, the task and the cause.
        """
        temp = self.temperature if temperature is None else float(temperature)
        try:
            sent = self._prepare(messages, task)
        except (TypeError, ValueError) as exc:
            raise self._failure(task, f"not sent: {exc}") from exc
        key: str | None = None
        if self._cache is not None and (temp <= 0 or self.cache_sampled):
            params = {"mock_response": mock_response} if mock_response is not None else None
            key = cache_key(
                model=self.model,
                messages=sent,
                temperature=temp,
                max_tokens=max_tokens,
                response_format=response_format,
                params=params,
            )
            hit = self._cache.get(key)
            if hit is not None:
                if self._ledger is not None:
                    self._ledger.count(cache_hits=1)
                return self._from_cache(hit, task)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": sent,
            "temperature": temp,
            "timeout": self.timeout_s,
            # Models that reject a parameter (e.g. temperature on reasoning models) should
            # still answer: memctx's calls are background work, not a user's exact request.
            "drop_params": True,
        }
        optional = {
            "max_tokens": max_tokens,
            "response_format": response_format,
            "mock_response": mock_response,
        }
        kwargs.update({k: v for k, v in optional.items() if v is not None})
        estimate = 0.0
        if self._ledger is not None:
            estimate = estimate_call_cost(self.model, sent, max_tokens)
        raw = self._call(kwargs, task, estimate)
        billed: float | None = None
        try:
            text, prompt_tokens, completion_tokens = read_response(raw, sent)
            cost, priced = price_completion(self.model, raw, prompt_tokens, completion_tokens)
            billed = cost
        except ValueError as exc:
            raise self._failure(task, f"returned {exc}") from exc
        finally:
            if self._ledger is not None:
                # An unreadable reply was still sent and probably billed: count the estimate.
                self._ledger.settle(estimate, estimate if billed is None else billed)
        result = LLMResponse(
            text=text,
            model=self.model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost,
            cached=False,
            task=task,
            priced=priced,
            original_cost_usd=cost,
        )
        self._count(
            task,
            prompt_tokens=prompt_tokens,
            largest_prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost,
            unpriced_calls=0 if priced else 1,
        )
        if key is not None and self._cache is not None:
            entry = CachedResponse(
                text, self.model, prompt_tokens, completion_tokens, cost, priced, task
            )
            self._cache.put(key, entry)
        return result

    def _prepare(self, messages: Sequence[Mapping[str, Any]], task: str) -> list[dict[str, Any]]:
        if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
            raise TypeError("messages must be a list of message dicts")
        if not messages:
            raise ValueError("messages is empty: send at least one message")
        sent: list[dict[str, Any]] = []
        for i, message in enumerate(messages):
            if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
                raise TypeError(f"messages[{i}] is not a message dict with a 'role'")
            sent.append(dict(message))
        if self.is_offline and task_of(sent) is None:
            # The offline model can only follow the task it can see in the prompt.
            sent.insert(0, {"role": "system", "content": task_marker(task)})
        return sent

    def _call(self, kwargs: dict[str, Any], task: str, estimate: float = 0.0) -> Any:
        """The raw reply, retried on transient errors. Under limits, each attempt reserves
        ``estimate`` first (left reserved on success: :meth:`complete` settles it) and holds a
        provider slot while in flight."""
        completion = self._completion
        if self.is_offline:
            install = _LOCAL_INSTALLERS.get(_OFFLINE_PROVIDER)
            if install is None:
                raise LLMError(
                    f"{self.model!r} is served by memctx.offline, which is not imported: "
                    "import memctx (or memctx.offline) before calling it",
                    model=self.model,
                    task=task,
                )
            try:  # the first install imports litellm: a broken install fails this call only
                install()
            except Exception as exc:
                raise self._failure(
                    task,
                    f"could not be set up: {type(exc).__name__}: {_first_line(exc)}. "
                    "Check that litellm imports (pip install litellm), or reinstall memctx",
                ) from exc
        if completion is None:
            completion = _litellm_completion()
        # A deterministic model gives the same failure again: no point retrying it.
        attempts = 1 if self.is_offline else self.max_retries + 1
        for attempt in range(attempts):
            if self._ledger is not None:
                self._ledger.reserve(estimate)  # BudgetExceeded: the call is not sent
            try:
                if self._slots is None:
                    return completion(**kwargs)
                if self._provider is None:
                    self._provider = provider_of(self.model)
                with self._slots.slot(self._provider):
                    return completion(**kwargs)
            except Exception as exc:
                retry = attempt + 1 < attempts and _is_transient(exc)
                if self._ledger is not None:
                    self._ledger.settle(estimate, None)  # a refused call is not billed
                    self._ledger.count(**({"retries": 1} if retry else {"failures": 1}))
                if retry:
                    self._count(task, retries=1, calls=0)
                    delay = backoff_delay(attempt, self.retry_backoff_s, self._rng)
                    # A provider that says how long to wait (Retry-After) is waited for.
                    time.sleep(max(delay, retry_after_s(exc) or 0.0))
                    continue
                tries = f" after {attempt + 1} attempts" if attempt else ""
                raise self._failure(
                    task,
                    f"failed{tries}: {type(exc).__name__}: {_first_line(exc)}. Check the model "
                    f"name and its API key, or set extraction_model to {OFFLINE_MODEL!r} to "
                    "work offline",
                ) from exc
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    def _from_cache(self, hit: CachedResponse, task: str) -> LLMResponse:
        self._count(
            task,
            cache_hits=1,
            cached_prompt_tokens=hit.prompt_tokens,
            cached_completion_tokens=hit.completion_tokens,
            saved_cost_usd=hit.cost_usd,
        )
        return LLMResponse(
            text=hit.text,
            model=self.model,
            prompt_tokens=hit.prompt_tokens,
            completion_tokens=hit.completion_tokens,
            cost_usd=0.0,
            cached=True,
            task=task,
            priced=hit.priced,
            original_cost_usd=hit.cost_usd,
        )

    def _failure(self, task: str, detail: str) -> LLMError:
        """Count a failed call and build its error (the caller raises it ``from`` the cause)."""
        self._count(task, failures=1)
        message = f"LLM call for task {task!r} to model {self.model!r} {detail}"
        return LLMError(message, model=self.model, task=task)

    def _count(self, task: str, *, calls: int = 1, **amounts: float) -> None:
        self._usage.add(task, calls=calls, **amounts)


def _litellm_completion() -> Callable[..., Any]:
    # litellm fetches its price table from the network unless told to use the bundled one.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    completion: Callable[..., Any] = litellm.completion
    return completion


def _is_transient(exc: BaseException) -> bool:
    return any(cls.__name__ in _TRANSIENT for cls in type(exc).__mro__)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else "(no message)"

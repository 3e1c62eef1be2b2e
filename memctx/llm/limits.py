"""Bounds on the real LLM calls of one run, shared by every worker process.

A real-model evaluation (``memctx eval --llm MODEL``) calls the model from several worker
processes at once. :class:`CallLimits` describes what they share, a run-scoped folder
holding:

- ``slots/<provider>-<i>.lock``: ``concurrency`` lock files per provider
  (:class:`ProviderSlots`); a call holds one of them (an OS file lock, so threads and
  processes alike) for as long as the request is in flight, never while it backs off;
- ``ledger.json`` (:class:`SpendLedger`): what the run has spent and reserved, its calls,
  retries and cache hits, updated under a file lock. Before each call a reserve estimate of
  its cost (:func:`estimate_call_cost`) is checked against ``max_cost_usd``; a call that
  could go over the budget is not sent, the ledger is marked stopped and
  :class:`BudgetExceeded` is raised, here and at the next call or job of every worker.

The workers find the limits through the environment (:data:`LIMITS_ENV`, set by
:func:`limits_environment`): spawned processes inherit it, and a client built anywhere in the
run (``ProbeJudge``) reads it with :meth:`CallLimits.from_env`.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from memctx.errors import MemctxError
from memctx.fs import atomic_write
from memctx.messages import estimate_messages_tokens

from .prices import price_name, prices_for

__all__ = [
    "LIMITS_ENV",
    "BudgetExceeded",
    "CallLimits",
    "ProviderSlots",
    "SpendLedger",
    "backoff_delay",
    "estimate_call_cost",
    "limits_environment",
    "provider_of",
    "retry_after_s",
]

LIMITS_ENV = "MEMCTX_LLM_LIMITS"
LEDGER_FILE = "ledger.json"
SLOTS_DIR = "slots"
# Output tokens assumed for a call that sets no max_tokens, in the reserve estimate.
DEFAULT_OUTPUT_ESTIMATE = 1024
_POLL_S = (0.002, 0.02)  # how long a caller waits between looks at busy slots
_MAX_BACKOFF_S = 60.0
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class BudgetExceeded(MemctxError):
    """The run's cost budget would be exceeded by the next call: the call was not sent.

    Only a message (picklable: it crosses process boundaries from the worker that hit it).
    """


@dataclass(frozen=True)
class CallLimits:
    """What the real LLM calls of one run share.

    Attributes:
        folder: The run-scoped folder of the slot files and the ledger.
        concurrency: Calls in flight at once per provider, across every worker (>= 1).
        max_cost_usd: The budget in USD; ``None`` for none.
        max_retries: Extra attempts after a rate limit or a transient error.
        retry_backoff_s: First backoff delay; doubles each retry, times a jitter in
            [0.5, 1.5) drawn from a generator seeded with ``seed``.
        seed: Seed of the jitter (deterministic delays in tests).
        cache_dir: The response cache shared by every worker, or ``None``.
    """

    folder: Path
    concurrency: int = 4
    max_cost_usd: float | None = None
    max_retries: int = 5
    retry_backoff_s: float = 1.0
    seed: int = 0
    cache_dir: Path | None = None

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be 1 or more, got {self.concurrency}")
        if self.max_cost_usd is not None and not self.max_cost_usd > 0:
            raise ValueError(f"max_cost_usd must be above 0, got {self.max_cost_usd}")
        if self.max_retries < 0 or self.retry_backoff_s < 0:
            raise ValueError("max_retries and retry_backoff_s must be 0 or more")

    def to_json(self) -> str:
        """The limits as one JSON line (what :data:`LIMITS_ENV` holds)."""
        data = asdict(self)
        data["folder"] = str(self.folder)
        data["cache_dir"] = None if self.cache_dir is None else str(self.cache_dir)
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CallLimits:
        """The limits :meth:`to_json` wrote."""
        data = json.loads(text)
        data["folder"] = Path(data["folder"])
        if data.get("cache_dir") is not None:
            data["cache_dir"] = Path(data["cache_dir"])
        return cls(**data)

    @classmethod
    def from_env(cls) -> CallLimits | None:
        """The limits of the run this process works for, or ``None`` outside such a run."""
        text = os.environ.get(LIMITS_ENV)
        return cls.from_json(text) if text else None

    def slots(self) -> ProviderSlots:
        """The run's concurrency slots."""
        return ProviderSlots(self.folder / SLOTS_DIR, self.concurrency)

    def ledger(self) -> SpendLedger:
        """The run's spend ledger."""
        return SpendLedger(self.folder / LEDGER_FILE, self.max_cost_usd)


@contextlib.contextmanager
def limits_environment(limits: CallLimits | None) -> Iterator[None]:
    """Set :data:`LIMITS_ENV` to ``limits`` while the block runs (workers spawned in it
    inherit it), then restore what was there."""
    before = os.environ.get(LIMITS_ENV)
    if limits is not None:
        os.environ[LIMITS_ENV] = limits.to_json()
    else:
        os.environ.pop(LIMITS_ENV, None)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(LIMITS_ENV, None)
        else:
            os.environ[LIMITS_ENV] = before


def provider_of(model: str) -> str:
    """litellm's provider of ``model`` (``gpt-4o`` -> ``openai``), else its prefix."""
    provider = model.split("/", 1)[0] if "/" in model else model
    try:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        quiet = litellm.suppress_debug_info
        litellm.suppress_debug_info = True
        try:
            provider = str(litellm.get_llm_provider(model)[1]) or provider
        finally:
            litellm.suppress_debug_info = quiet
    except Exception:  # a model litellm cannot place is keyed by its prefix
        pass
    return _SAFE.sub("_", provider) or "default"


def backoff_delay(attempt: int, base_s: float, rng: random.Random) -> float:
    """The wait before retry ``attempt + 1``: ``base_s * 2**attempt`` times a jitter in
    [0.5, 1.5), at most 60 s."""
    return float(min(_MAX_BACKOFF_S, base_s * 2.0**attempt * (0.5 + rng.random())))


def retry_after_s(exc: BaseException) -> float | None:
    """The seconds a provider asked to wait (a ``Retry-After`` header of seconds on the
    exception's response, as litellm's errors carry it), at most 60; ``None`` when absent."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    try:
        value = headers.get("retry-after") if headers is not None else None
        seconds = float(value) if value is not None else None
    except (TypeError, ValueError, AttributeError):
        return None
    if seconds is None or not seconds >= 0:
        return None
    return min(_MAX_BACKOFF_S, seconds)


def estimate_call_cost(model: str, messages: Sequence[Any], max_tokens: int | None) -> float:
    """A reserve estimate of one call's cost in USD: its prompt at ``ceil(len/3)`` tokens
    (more than a provider's tokenizer counts for prose) and ``max_tokens`` of output, at
    the model's prices; 0.0 for a model without prices."""
    if price_name(model) is None:
        return 0.0
    try:
        prices = prices_for(model)
    except ValueError:
        return 0.0
    prompt = estimate_messages_tokens(list(messages))
    output = max_tokens if max_tokens is not None else DEFAULT_OUTPUT_ESTIMATE
    return prompt * prices.input + output * prices.output


class ProviderSlots:
    """At most ``limit`` holders per provider across threads and processes: ``limit`` lock
    files per provider, a holder owning one."""

    def __init__(self, folder: Path, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit must be 1 or more, got {limit}")
        self.folder = Path(folder)
        self.limit = limit
        self._rng = random.Random()

    @contextlib.contextmanager
    def slot(self, provider: str) -> Iterator[int]:
        """Hold one of ``provider``'s slots for the block (waits while all are taken)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        name = _SAFE.sub("_", provider) or "default"
        while True:
            start = self._rng.randrange(self.limit)
            for step in range(self.limit):
                index = (start + step) % self.limit
                # A new lock object per try: its own descriptor, so two threads of one process
                # exclude each other as two processes do.
                lock = FileLock(
                    self.folder / f"{name}-{index}.lock", thread_local=False, is_singleton=False
                )
                try:
                    lock.acquire(timeout=0)
                except Timeout:
                    continue
                try:
                    yield index
                finally:
                    lock.release()
                return
            time.sleep(self._rng.uniform(*_POLL_S))


_EMPTY: dict[str, Any] = {
    "spent_usd": 0.0,
    "reserved_usd": 0.0,
    "calls": 0,
    "retries": 0,
    "cache_hits": 0,
    "failures": 0,
    "stopped": False,
    "reason": None,
}


class SpendLedger:
    """The run's spend and call counters in one JSON file, read and written under a lock.

    Args:
        path: The ledger file (created on first use).
        limit_usd: The budget, or ``None`` for none (the counters are kept all the same).
    """

    def __init__(self, path: Path, limit_usd: float | None) -> None:
        self.path = Path(path)
        self.limit_usd = limit_usd
        # Thread-local: each thread locks through its own descriptor, so threads of one
        # process exclude each other as processes do.
        self._lock = FileLock(f"{self.path}.lock", thread_local=True, is_singleton=False)

    def snapshot(self) -> dict[str, Any]:
        """The counters now: ``spent_usd``, ``reserved_usd``, ``calls``, ``retries``,
        ``cache_hits``, ``failures``, ``stopped`` and its ``reason``."""
        with self._lock:
            return self._read()

    def check(self) -> None:
        """Raise :class:`BudgetExceeded` when the run has stopped at its budget."""
        state = self.snapshot()
        if state["stopped"]:
            raise BudgetExceeded(self._message(state, 0.0))

    def reserve(self, estimate: float) -> None:
        """Reserve ``estimate`` USD for a call about to be sent.

        Raises:
            BudgetExceeded: The run has stopped, or spent + reserved + ``estimate`` would
                exceed the budget (the ledger is then marked stopped): do not send the call.
        """
        with self._lock:
            state = self._read()
            total = state["spent_usd"] + state["reserved_usd"] + estimate
            if state["stopped"] or (self.limit_usd is not None and total > self.limit_usd):
                message = self._message(state, estimate)
                if not state["stopped"]:  # the first refusal is the reason the run stopped
                    state["stopped"], state["reason"] = True, message
                    self._write(state)
                raise BudgetExceeded(message)
            state["reserved_usd"] += estimate
            self._write(state)

    def settle(self, estimate: float, cost: float | None) -> None:
        """Replace the reservation of a finished call by its cost (``None``: the call failed
        and was not billed)."""
        with self._lock:
            state = self._read()
            state["reserved_usd"] = max(0.0, state["reserved_usd"] - estimate)
            if cost is not None:
                state["spent_usd"] += cost
                state["calls"] += 1
            self._write(state)

    def count(self, **amounts: int) -> None:
        """Add to the counters (``retries``, ``cache_hits``, ``failures``)."""
        with self._lock:
            state = self._read()
            for key, value in amounts.items():
                state[key] = state.get(key, 0) + value
            self._write(state)

    def _message(self, state: Mapping[str, Any], estimate: float) -> str:
        return (
            f"stopped before exceeding the cost budget of ${self.limit_usd:.4f}: "
            f"${state['spent_usd']:.4f} spent, the next call could cost up to ${estimate:.4f}"
        )

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        state = dict(_EMPTY)
        if isinstance(data, dict):
            state.update({k: v for k, v in data.items() if k in _EMPTY})
        return state

    def _write(self, state: Mapping[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Counters, no conversation text: 0644. No fsync: a machine crash may lose the last
        # counts, and an unreadable file reads as empty (_read).
        data = json.dumps(dict(state), sort_keys=True).encode("utf-8")
        atomic_write(self.path, data, mode=0o644, fsync=False)

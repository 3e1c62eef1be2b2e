"""Context-overflow errors across providers, recognised by class, code or message.

Seed 001's overflow trigger starts when the provider refuses a prompt as too long
(``isLikelyContextOverflowError``). Providers say so in different ways, and an agent loop
may see the error raw, through litellm, or wrapped (memctx's ``LLMError``, the caller's own
exception), so :func:`is_context_overflow_error` looks at the whole chain
(``__cause__`` / ``__context__``) and, on each link, at:

- the class: litellm's ``ContextWindowExceededError`` (by name along the MRO, so litellm
  need not be imported);
- the code: OpenAI's ``context_length_exceeded`` (``exc.code`` or ``exc.body``), HTTP 413;
- the message: the shapes in :data:`OVERFLOW_PATTERNS` (Anthropic, OpenAI, Gemini/Vertex,
  Bedrock, Mistral, xAI, llama.cpp/Ollama, …).

Rate limits are not overflows even when worded like one (OpenAI's ``Request too large for
gpt-4 … on tokens per min``): compacting would not help, waiting would. A
:class:`~memctx.compaction.CompactionError` is never an overflow either, so a recovery never
retries its own failure (the seed's ``isCompactionFailureError``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .budget import CompactionError

__all__ = [
    "OVERFLOW_CLASS_NAMES",
    "OVERFLOW_PATTERNS",
    "ContextOverflowError",
    "is_context_overflow_error",
    "is_context_overflow_message",
]

OVERFLOW_CLASS_NAMES = frozenset({"ContextWindowExceededError", "ContextLengthExceededError"})
_OVERFLOW_CODES = frozenset({"context_length_exceeded", "context_window_exceeded"})
_PAYLOAD_TOO_LARGE = 413

# Each pattern is a message shape one provider family uses (lowercase text is matched).
OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        # Anthropic: "prompt is too long: 207547 tokens > 200000 maximum"
        r"prompt is too long",
        # Anthropic: "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000"
        r"exceeds? (?:the )?context limit",
        # OpenAI, DeepSeek, vLLM: "This model's maximum context length is 8192 tokens"
        r"maximum context length",
        # OpenAI code text, Ollama: "context_length_exceeded", "context length exceeded"
        r"context[ _-]length[ _-]exceeded",
        r"context[ _-]window[ _-]exceeded",
        # OpenAI Responses API, Bedrock, generic: "exceeds the context window of this model"
        r"exceeds? (?:the |this |your )?(?:model'?s? )?(?:maximum )?context[ _-]?(?:window|size)",
        # OpenAI, Groq: "Please reduce the length of the messages or completion"
        r"reduce the length of the (?:messages|prompt|input)",
        # Gemini: "The input token count (1234567) exceeds the maximum number of tokens
        # allowed (1048576)"; Vertex: "the input token count is 40000 but model only
        # supports up to 32768"
        r"input token count.{0,80}(?:exceeds|only supports|maximum)",
        r"exceeds the maximum number of tokens",
        # xAI: "This model's maximum prompt length is 131072 but the request contains ..."
        r"maximum (?:prompt|input) length",
        # Bedrock: "Input is too long for requested model"; Mistral: "Prompt contains 40000
        # tokens ... too large for model with 32768 maximum context length"
        r"(?:input|prompt|request|messages?) (?:is |are )?too (?:long|large) for",
        r"too large for (?:the )?model",
        # Bedrock / Cohere: "too many input tokens", "too many tokens"
        r"too many (?:input )?tokens",
        # llama.cpp server: "the request exceeds the available context size"
        r"exceeds the available context size",
        # Anthropic 413 and Gemini payload size: "request_too_large", "Request payload size
        # exceeds the limit"
        r"request_too_large",
        r"request (?:payload )?size exceeds",
        r"request entity too large",
        # OpenClaw's own wording, and memctx's: "context overflow"
        r"context overflow",
    )
)
# Worded like an overflow but a throughput limit: compaction would not help.
_RATE_LIMIT = re.compile(
    r"rate[ _-]?limit|tokens per min|requests per min|per day|\btpm\b|\brpm\b|quota"
    r"|too many requests|resource[ _]exhausted"
)
_MAX_CHAIN = 16  # a chain longer than this is a loop someone built by hand


class ContextOverflowError(CompactionError):
    """The prompt is still too large for the model after every recovery step.

    Raised by :func:`memctx.compaction.recover_from_overflow` ``from`` the provider's last
    overflow error. The message says which steps ran and what the user can do (start a new
    session, compact with instructions, truncate the transcript, a larger-context model).

    Attributes:
        steps: The recovery steps taken, e.g. ``("compacted", "compacted", "truncated 1 tool
            result of 812,000 chars")``.
        tokens: Estimated tokens of the last prompt sent.
        window: The context window recovery aimed at.
    """

    def __init__(self, message: str, *, steps: tuple[str, ...], tokens: int, window: int) -> None:
        super().__init__(message)
        self.steps = steps
        self.tokens = tokens
        self.window = window


def is_context_overflow_message(text: str) -> bool:
    """Whether an error message says the prompt exceeds the model's context window.

    Rate-limit messages are excluded even when they name a token limit (see the module
    docstring).
    """
    lower = text.lower()
    if _RATE_LIMIT.search(lower):
        return False
    return any(p.search(lower) for p in OVERFLOW_PATTERNS)


def _code_of(exc: BaseException) -> str | None:
    code = getattr(exc, "code", None)
    if isinstance(code, str):
        return code
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        error = body.get("error", body)
        inner = error.get("code") if isinstance(error, Mapping) else None
        if isinstance(inner, str):
            return inner
    return None


def _one_link(exc: BaseException) -> bool:
    if isinstance(exc, CompactionError):
        return False  # the seed's isCompactionFailureError: never retry our own failure
    if any(cls.__name__ in OVERFLOW_CLASS_NAMES for cls in type(exc).__mro__):
        return True
    if any(cls.__name__ == "RateLimitError" for cls in type(exc).__mro__):
        return False
    if _code_of(exc) in _OVERFLOW_CODES:
        return True
    if getattr(exc, "status_code", None) == _PAYLOAD_TOO_LARGE:
        return True
    try:
        text = str(exc)
    except Exception:  # a hostile __str__ must not turn recovery into a crash
        return False
    return is_context_overflow_message(text)


def is_context_overflow_error(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) is a context-window overflow.

    Args:
        exc: What the provider call raised, as the caller caught it.

    Returns:
        True for litellm's ``ContextWindowExceededError``, the ``context_length_exceeded``
        code, HTTP 413, or a message in one of the :data:`OVERFLOW_PATTERNS` shapes, on
        ``exc`` or along its ``__cause__`` / ``__context__`` chain; False for rate limits and
        for :class:`~memctx.compaction.CompactionError`.
    """
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen and len(seen) < _MAX_CHAIN:
        if isinstance(link, CompactionError):
            return False  # a wrapped recovery failure stays a failure, whatever it wraps
        if _one_link(link):
            return True
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return False

"""External data in the harness's shape.

:func:`transcript_scenario` turns a loaded transcript (Claude Code, SWE-agent, OpenHands,
plain OpenAI/Anthropic) into a one-session :class:`~memctx.harness.scenario.Scenario` without
probes, so the replay engine can play it through any registered strategy: that is what
``memctx replay TRANSCRIPT`` does (:func:`memctx.harness.replay.replay_transcript`).
"""

from __future__ import annotations

from pathlib import Path

from memctx.transcripts import Transcript

from .scenario import Scenario, Session

__all__ = ["transcript_scenario"]

# Formats whose tool calls are Anthropic content blocks; the rest use OpenAI's shape.
_ANTHROPIC_SHAPED = frozenset({"claude-code", "anthropic"})


def transcript_scenario(transcript: Transcript, *, window: int) -> Scenario:
    """A probe-less scenario holding ``transcript``'s messages as one session."""
    name = Path(transcript.source).stem or "transcript"
    return Scenario(
        id=f"replay-{name}",
        suite="replay",
        format="anthropic" if transcript.format in _ANTHROPIC_SHAPED else "openai",
        seed=0,
        window=window,
        sessions=(Session(id="replay", messages=tuple(transcript.messages)),),
        probes=(),
        meta={"source": transcript.source, "format": transcript.format},
    )

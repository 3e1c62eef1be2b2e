"""MemctxCompaction in a real inspect_ai eval: react() with a tool, on the mockllm model.

The mock model is scripted: it reads a notes file holding a fact, then many large files
(enough that inspect hands the view to memctx, which trims it), says it is done, gets a
question about the fact from the agent's ``on_continue`` and submits. Its ``custom_outputs``
function records every input it received, so the tests check what the model was sent.
Token counting is inspect's default (tiktoken's o200k_base, downloaded on first use), so the
tests replace the mock model's text counter with a local estimate: nothing touches the
network.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval
from inspect_ai.agent import react
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    GenerateConfig,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.tool import Tool, ToolChoice, ToolInfo, tool

from memctx import pairing_violations
from memctx.config import MemoryContextConfig
from memctx.integrations.inspect_compaction import MemctxCompaction
from memctx.messages import is_compaction_summary
from memctx.strategies import BaseStrategy, Prepared, make_strategy

FACT = "the deployment password rotation job is named zebracorn-rotator"
QUESTION = "What is the deployment password rotation job named?"
# inspect_ai 0.3.285 builds its retry policy with tenacity's deprecated ``initial=``.
pytestmark = pytest.mark.filterwarnings(
    "ignore:The 'initial' parameter is deprecated:DeprecationWarning"
)

READS = 24
WINDOW = 6_000
CONFIG = MemoryContextConfig(reserve_tokens=1_000)


def _file(path: str) -> str:
    if path == "notes.txt":
        return f"Team notes. Remember: {FACT}. " + "background " * 20
    return f"# {path}\n" + "".join(
        f"def helper_{path[:-3]}_{i}(x): return x + {i}\n" for i in range(40)
    )


@tool
def read_file() -> Tool:
    async def execute(path: str) -> str:
        """Read a file of the project.

        Args:
            path: The file's path.
        """
        return _file(path)

    return execute


@dataclass
class Script:
    """The mock model: reads notes.txt, then one file per call; once its input has been
    compacted and has grown back to ``stop_at`` tokens, it says it is done (the agent then
    asks about the fact); asked, it reads on until the fact is in what it receives (at most
    ``patience`` more files) and submits what it found."""

    stop_at: int
    patience: int = 30
    inputs: list[list[ChatMessage]] = field(default_factory=list)
    asked_at: int | None = None
    start: int = 0  # the current sample's first call
    answers: list[str] = field(default_factory=list)

    def __call__(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        self.inputs.append(list(input))
        if len(input) == 2:  # system prompt and task: a new sample starts
            self.start, self.asked_at = len(self.inputs) - 1, None
        call = len(self.inputs) - 1 - self.start
        if call == 0:
            return ModelOutput.for_tool_call("mockllm", "read_file", {"path": "notes.txt"})
        if self.asked_at is None and any(m.text == QUESTION for m in input):
            self.asked_at = call
        if self.asked_at is None:
            mine = self.inputs[self.start :]
            shrank = any(len(b) < len(a) for a, b in pairwise(mine))
            if shrank and _tokens(input) >= self.stop_at:
                return ModelOutput.from_content("mockllm", "I have read every file.")
            return ModelOutput.for_tool_call("mockllm", "read_file", {"path": f"part{call}.py"})
        seen = "zebracorn-rotator" in " ".join(m.text for m in input)
        if seen or call > self.asked_at + self.patience:
            answer = "zebracorn-rotator" if seen else "unknown"
            self.answers.append(answer)
            return ModelOutput.for_tool_call("mockllm", "submit", {"answer": answer})
        return ModelOutput.for_tool_call("mockllm", "read_file", {"path": f"more{call}.py"})


async def _ask_once(state: Any) -> str | bool:
    """Ask about the fact the first time the model stops calling tools."""
    last = state.messages[-1]
    if isinstance(last, ChatMessageAssistant) and not last.tool_calls:
        return QUESTION
    return True


def _estimate(text: str) -> int:
    """memctx's own default estimate, so inspect's count and memctx's agree in the tests."""
    return max(1, math.ceil(len(text) / 3))


def _tokens(messages: list[ChatMessage]) -> int:
    return sum(_estimate(m.text) for m in messages)


async def _count_text(text: str) -> int:
    return _estimate(text)


def _mock_model(script: Script) -> Model:
    model = get_model("mockllm/model", custom_outputs=script)
    model.api.count_text_tokens = _count_text  # type: ignore[method-assign]  # offline counter
    return model


def _run(tmp_path: Path, compaction: MemctxCompaction, script: Script, *, samples: int = 1) -> Any:
    task = Task(
        dataset=[
            Sample(input="Read the project files, then answer.", id=i) for i in range(samples)
        ],
        solver=react(tools=[read_file()], compaction=compaction, on_continue=_ask_once),
    )
    (log,) = eval(
        task,
        model=_mock_model(script),
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_samples=1,
    )
    return log


def _openai(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """What the model received as OpenAI dicts, for memctx's pairing check."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, ChatMessageTool):
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.text})
        elif isinstance(m, ChatMessageAssistant) and m.tool_calls:
            calls = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function, "arguments": "{}"},
                }
                for c in m.tool_calls
            ]
            out.append({"role": "assistant", "content": m.text, "tool_calls": calls})
        else:
            out.append({"role": m.role, "content": m.text})
    return out


def _check_every_call(script: Script, compaction: MemctxCompaction) -> None:
    """Each input fits the threshold, pairs its tool calls, and every message with a given
    id is one object: what memctx kept is the caller's own ChatMessage."""
    objects: dict[str, ChatMessage] = {}
    for received in script.inputs:
        assert _tokens(received) <= compaction.threshold
        last_is_call = isinstance(received[-1], ChatMessageAssistant)
        assert not last_is_call and pairing_violations(_openai(received)) == []
        for message in received:
            assert message.id is not None
            assert objects.setdefault(message.id, message) is message


def test_react_agent_gets_an_archived_fact_back_within_the_window(tmp_path: Path) -> None:
    compaction = MemctxCompaction(
        store_dir=tmp_path / "store", session_id="s1", window=WINDOW, config=CONFIG
    )
    script = Script(stop_at=int(0.8 * compaction.threshold))
    log = _run(tmp_path, compaction, script)
    compaction.close()
    assert log.status == "success"
    assert log.samples[0].output.completion.endswith("zebracorn-rotator")
    _check_every_call(script, compaction)
    first = script.inputs[0]
    notes = script.inputs[2][3]  # the tool result holding the fact, as the agent has it
    assert isinstance(notes, ChatMessageTool) and FACT in notes.text
    assert script.asked_at is not None
    final = script.inputs[-1]
    assert notes not in final and len(final) < max(len(i) for i in script.inputs)
    (block,) = [m for m in final if "<recalled-context" in m.text]
    assert "zebracorn-rotator" in block.text and block.role == "user"
    assert final[0] is first[0] and final[-1].text != block.text  # system prompt kept as is
    assert compaction.runner.stats.calls >= 2 and compaction.runner.stats.failures == 0
    assert compaction.fallbacks == 0
    # memory-context compacted once on the way: its summary went to the model and, as
    # inspect's own summaries do, into the sample's record.
    assert compaction.runner.stats.compactions >= 1
    summaries = {
        m.id: m
        for received in script.inputs
        for m in received
        if is_compaction_summary({"role": m.role, "content": m.text})
    }
    assert summaries and set(summaries) <= {m.id for m in log.samples[0].messages}


def test_observation_masking_masks_old_outputs_and_keeps_pairing(tmp_path: Path) -> None:
    compaction = MemctxCompaction(
        "observation-masking:keepLast=3",
        store_dir=tmp_path / "store",
        session_id="s2",
        window=WINDOW,
        config=CONFIG,
    )
    script = Script(stop_at=int(0.8 * compaction.threshold), patience=3)
    log = _run(tmp_path, compaction, script)
    compaction.close()
    assert log.status == "success"
    _check_every_call(script, compaction)
    masked = [
        m
        for received in script.inputs
        for m in received
        if isinstance(m, ChatMessageTool) and m.text.startswith("[output of read_file omitted")
    ]
    assert masked
    originals = {
        m.tool_call_id: m
        for m in script.inputs[0] + script.inputs[-1]
        if isinstance(m, ChatMessageTool)
    }
    for received in script.inputs:
        for m in received:
            if isinstance(m, ChatMessageTool) and m.tool_call_id in originals:
                original = originals[m.tool_call_id]
                assert m.function == original.function == "read_file"
    assert compaction.runner.stats.calls >= 1 and compaction.fallbacks == 0


class _Broken(BaseStrategy):
    name = "broken"

    def prepare(self, transcript: list[dict[str, Any]]) -> Prepared:
        raise RuntimeError(f"memctx broke while reading {FACT}")


def test_a_failure_inside_memctx_does_not_break_the_agent_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    base = make_strategy("full", store_dir=tmp_path / "store", session_id="s3", window=WINDOW)
    broken = _Broken(base.setup)  # type: ignore[attr-defined]
    compaction = MemctxCompaction(broken, window=WINDOW, config=CONFIG)
    script = Script(stop_at=int(0.8 * compaction.threshold), patience=2)
    with caplog.at_level(logging.WARNING, logger="memctx.integrations"):
        log = _run(tmp_path, compaction, script)
    compaction.close()
    assert log.status == "success"  # inspect's trim compacted instead, and the agent went on
    assert compaction.runner.stats.failures >= 1 and compaction.fallbacks >= 1
    assert compaction.fallbacks >= compaction.runner.stats.failures  # a trim may need 2 passes
    assert "RuntimeError" in caplog.text and "zebracorn" not in caplog.text
    assert max(len(i) for i in script.inputs) > len(script.inputs[-1])  # it did compact
    assert all(_tokens(received) <= compaction.threshold for received in script.inputs)


def test_an_answer_over_inspects_threshold_is_trimmed_by_inspect(tmp_path: Path) -> None:
    # ``full`` never cuts: once its history passes the threshold, inspect asks again about
    # every answer, and its own trim (of the view it gave) keeps the agent going.
    compaction = MemctxCompaction(
        "full", store_dir=tmp_path / "store", session_id="s4", window=WINDOW, threshold=3_000
    )
    script = Script(stop_at=1_500, patience=4)
    log = _run(tmp_path, compaction, script)
    compaction.close()
    assert log.status == "success"
    assert compaction.runner.stats.failures == 0 and compaction.fallbacks >= 2
    assert len(script.answers) == 1 and len(script.inputs) < 40  # the agent finished its script
    assert all(_tokens(received) <= 3_000 for received in script.inputs)
    assert pairing_violations(_openai(script.inputs[-1])) == []


def test_each_sample_gets_its_own_session(tmp_path: Path) -> None:
    compaction = MemctxCompaction(
        store_dir=tmp_path / "store", session_id="run", window=WINDOW, config=CONFIG
    )
    script = Script(stop_at=int(0.8 * compaction.threshold))
    log = _run(tmp_path, compaction, script, samples=2)
    runners = compaction.runners
    compaction.close()
    assert log.status == "success" and len(log.samples) == 2
    assert script.answers == ["zebracorn-rotator", "zebracorn-rotator"]
    assert len(runners) == 2 and runners[0] is compaction.runner
    assert all(r.stats.calls >= 2 and r.stats.failures == 0 for r in runners)
    archived = "".join(p.read_text() for p in (tmp_path / "store").rglob("*.jsonl"))
    assert '"run"' in archived and '"run-2"' in archived


def test_bad_arguments_fail_at_construction(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="store_dir"):
        MemctxCompaction("memory-context", window=WINDOW)
    with pytest.raises(ValueError, match="reserveTokens"):
        MemctxCompaction(store_dir=tmp_path, window=900, config=CONFIG)
    with pytest.raises(ValueError):
        MemctxCompaction("no-such-strategy", store_dir=tmp_path)
    explicit = MemctxCompaction(store_dir=tmp_path, window=WINDOW, config=CONFIG, threshold=0.5)
    assert explicit.threshold == 0.5 and explicit.type == "edit"
    assert MemctxCompaction(store_dir=tmp_path, window=WINDOW, config=CONFIG).threshold == 5_500
    explicit.close()
    explicit.close()  # idempotent
    assert explicit.runner.stats.failures == 0


def test_the_docs_example_runs_offline_with_inspects_own_token_counter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = Path(__file__).parents[2] / "docs" / "integrations.md"
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), flags=re.S)
    blocks = [b for b in blocks if "MemctxCompaction" in b]  # the inspect_ai section's
    assert blocks
    # No offline counter here: tiktoken's o200k_base comes from litellm's bundled copy.
    monkeypatch.setattr("tempfile.mkdtemp", lambda: str(tmp_path))
    for block in blocks:
        exec(compile(block, str(doc), "exec"), {"__name__": "docs_example"})
    out = capsys.readouterr().out
    # inspect's tokenizer and memctx's estimate differ: when inspect still counts memctx's
    # answer over its threshold it trims once more itself (a fallback), and the run goes on.
    assert out.startswith("success") and "failures=0" in out
    assert "compactions=0" not in out and "calls=0" not in out

"""Message construction in both provider formats, tool calls and their outputs included.

:class:`Builder` appends messages to one session and keeps a running token estimate. Tool
steps are written in the scenario's format:

- ``openai``: an assistant message with ``tool_calls`` (``function.arguments`` as a JSON
  string), then one ``role: "tool"`` message per call with its ``tool_call_id``. Tool names
  follow OpenHands (``str_replace_editor``, ``execute_bash``).
- ``anthropic``: an assistant message with ``text`` and ``tool_use {id, name, input}``
  blocks, then one user message holding every ``tool_result {tool_use_id, content}`` (with
  ``is_error`` on failures). Tool names follow Claude Code (``Read``, ``Grep``, ``Edit``,
  ``Bash``, ``Glob``).

A step with several calls is a parallel call: all results come back together.
"""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass
from typing import Any

from memctx.messages import estimate_message_tokens

__all__ = ["Builder", "Call"]

_ID_CHARS = string.ascii_letters + string.digits


@dataclass(frozen=True)
class Call:
    """One logical tool call: ``op`` is read, grep, edit, bash or glob."""

    op: str
    args: dict[str, str]
    output: str
    error: bool = False


def _numbered(text: str, arrow: bool) -> str:
    sep = "→" if arrow else "\t"
    return "\n".join(f"{i:>6}{sep}{line}" for i, line in enumerate(text.split("\n"), start=1))


class Builder:
    """Appends messages of one session in ``fmt`` and tracks their estimated tokens."""

    def __init__(self, fmt: str, session_id: str, rng: random.Random, root: str) -> None:
        self.fmt = fmt
        self.session_id = session_id
        self.rng = rng
        self.root = root
        self.messages: list[dict[str, Any]] = []
        self.tokens = 0
        self.offsets: list[int] = []  # tokens before each message
        self._calls = 0

    def _add(self, message: dict[str, Any]) -> int:
        self.offsets.append(self.tokens)
        self.messages.append(message)
        self.tokens += estimate_message_tokens(message)
        return len(self.messages) - 1

    def system(self, text: str) -> int:
        return self._add({"role": "system", "content": text})

    def user(self, text: str) -> int:
        if self.fmt == "anthropic" and self.rng.random() < 0.5:
            return self._add({"role": "user", "content": [{"type": "text", "text": text}]})
        return self._add({"role": "user", "content": text})

    def assistant(self, text: str) -> int:
        if self.fmt == "anthropic":
            return self._add({"role": "assistant", "content": [{"type": "text", "text": text}]})
        return self._add({"role": "assistant", "content": text})

    @property
    def at_boundary(self) -> bool:
        """True when the last message is a final assistant message (a user turn may follow)."""
        if not self.messages:
            return False
        last = self.messages[-1]
        if last.get("role") != "assistant" or last.get("tool_calls"):
            return False
        content = last.get("content")
        return not (isinstance(content, list) and any(b.get("type") == "tool_use" for b in content))

    def _id(self) -> str:
        self._calls += 1
        tail = "".join(self.rng.choice(_ID_CHARS) for _ in range(18))
        if self.fmt == "anthropic":
            return f"toolu_01{self.session_id}{self._calls:04d}{tail}"
        return f"call_{self.session_id}{self._calls:04d}{tail}"

    def _render(self, call: Call) -> tuple[str, dict[str, Any], str]:
        """Tool name, input and output text of ``call`` in this builder's format."""
        a, out = call.args, call.output
        path = a.get("path", "")
        full = f"{self.root}/{path}" if path and not path.startswith("/") else path
        if self.fmt == "anthropic":
            if call.op == "read":
                return "Read", {"file_path": full}, _numbered(out, arrow=True)
            if call.op == "grep":
                return (
                    "Grep",
                    {"pattern": a["pattern"], "path": self.root, "output_mode": "content"},
                    out,
                )
            if call.op == "glob":
                return "Glob", {"pattern": a["pattern"]}, out
            if call.op == "edit":
                inp = {"file_path": full, "old_string": a["old"], "new_string": a["new"]}
                return "Edit", inp, out or f"The file {full} has been updated successfully."
            inp = {"command": a["command"], "description": a.get("description", "Run command")}
            return "Bash", inp, (f"Exit code 1\n{out}" if call.error else out)
        if call.op == "read":
            head = f"Here's the result of running `cat -n` on {full}:\n"
            return (
                "str_replace_editor",
                {"command": "view", "path": full},
                head + _numbered(out, False),
            )
        if call.op == "edit":
            inp = {"command": "str_replace", "path": full, "old_str": a["old"], "new_str": a["new"]}
            return (
                "str_replace_editor",
                inp,
                out or f"The file {full} has been edited successfully.",
            )
        if call.op == "grep":
            command = f"grep -rn '{a['pattern']}' {self.root}"
        elif call.op == "glob":
            command = f"find {self.root} -path '{a['pattern']}'"
        else:
            command = a["command"]
        code = 1 if call.error else 0
        return (
            "execute_bash",
            {"command": command},
            f"{out}\n[Command finished with exit code {code}]",
        )

    def tools(self, text: str, calls: list[Call]) -> list[int]:
        """One assistant step with ``calls`` (parallel when several) and their results.

        Returns:
            For each call, the index of the message holding its result.
        """
        rendered = [(self._id(), *self._render(c), c.error) for c in calls]
        if self.fmt == "anthropic":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
            blocks += [
                {"type": "tool_use", "id": i, "name": n, "input": inp}
                for i, n, inp, _, _ in rendered
            ]
            self._add({"role": "assistant", "content": blocks})
            results = []
            for i, _, _, out, err in rendered:
                block: dict[str, Any] = {"type": "tool_result", "tool_use_id": i, "content": out}
                if err:
                    block["is_error"] = True
                results.append(block)
            index = self._add({"role": "user", "content": results})
            return [index] * len(calls)
        self._add(
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {
                        "id": i,
                        "type": "function",
                        "function": {"name": n, "arguments": json.dumps(inp, ensure_ascii=False)},
                    }
                    for i, n, inp, _, _ in rendered
                ],
            }
        )
        return [
            self._add({"role": "tool", "tool_call_id": i, "content": out})
            for i, _, _, out, _ in rendered
        ]

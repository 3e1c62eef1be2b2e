"""docs/configuration.md, generated from the config model: every setting with its dotted key,
type, default and meaning (the field's attribute docstring), grouped by section.

The model is the one source: a setting added, renamed or re-documented changes the page the
next time ``python scripts/config_docs.py`` writes it, and a test fails while the committed
page differs from :func:`config_reference`. Docstrings are reStructuredText-flavoured
(``code``, ``:meth:`name```, simple ``=====`` tables); they are rendered as Markdown: the
first paragraph in the section's table, the rest (and a default too long for a cell) in a
subsection below it.
"""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from .model import DEFAULT_CONFIG, MemoryContextConfig, Shown

__all__ = ["CONFIG_DOCS_PATH", "config_reference"]

CONFIG_DOCS_PATH = "docs/configuration.md"
"""Where :func:`config_reference` is written, relative to the repository root."""

_INTRO = """\
# Configuration

<!-- Generated from memctx/config/model.py by `python scripts/config_docs.py` (or `make docs`).
     Do not edit by hand: a test fails while this page and the model differ. -->

memctx has one settings tree, `MemoryContextConfig`. Every setting has a default, so a
config names only what it changes.

## Setting values

- **A file**, read by `memctx.load_config(path)` and by `--config FILE` of `memctx eval` and
  `memctx replay` (one reader for all three):
  - memctx's own `.toml`, `.json` or `.json5` file (JSON may hold comments, trailing commas,
    unquoted keys and single quotes), with the keys below and sections nested:

    ```toml
    hardCapTokens = 2000

    [compaction]
    maxHistoryShare = 0.4
    ```

  - an agent's `openclaw.json` (a file with a top-level `agents` key): the settings are
    `agents.defaults.memoryContext`, plus the sections `agents.defaults.compaction`,
    `agents.defaults.contextPruning` and `agents.defaults.memorySearch`.
- **The command line**: `--set KEY=VALUE` (repeatable) with the dotted keys of the tables
  below, e.g. `--set compaction.maxHistoryShare=0.4`; `--set` applies on top of `--config`.
  A value is read as JSON when it is JSON (`2000`, `true`), and a string is converted to
  the setting's type.
- **Python**: `MemoryContextConfig(hardCapTokens=2000, compaction={"maxHistoryShare": 0.4})`,
  `MemoryContextConfig.from_dict(data)`, or `config.with_overrides({"compaction.maxHistoryShare":
  0.4})` for dotted keys. A config is frozen: `with_overrides` returns a copy.

Every key is accepted in camelCase (`hardCapTokens`, as the seeds and OpenClaw write it) or
snake_case (`hard_cap_tokens`), at every level. Validation is strict: an unknown key is an
error naming its path and the nearest valid name, a value of the wrong type is refused
(`"2000"` is not a number, except from `--set`), and every problem is reported at once, a
file's with its line and column when it does not parse. A `memctx eval` run records the
settings given explicitly (file and `--set`) in its `summary.json` (`config.overrides`, dotted
camelCase keys), so the summary alone reproduces the run.

Every number has a range, shown in the Type column, and a value outside it is refused with
the setting's path and the range. The ranges are wide enough for any real use and refuse
the values that would break memctx: token budgets go up to 10,000,000 (5x the largest
context window sold today), character sizes up to 100,000,000 (100 MB of text), message,
turn and item counts up to 10,000, shares and weights stay within [0, 1], and a setting with
a tighter range says why. Settings that depend on the model's window (`reserveTokens`,
`hardCapTokens`, `recallWindowRatio`, `protectedRecentMessages`) cannot be checked
against it in a file; whatever they are, what `on_context` sends fits the window. A config
file is at most 4 MiB and nested at most 64 levels deep.
"""

_ROLE = re.compile(r":(\w+):`~?([^`]+)`")
_CODE = re.compile(r"``(.+?)``", re.DOTALL)
_BORDER = re.compile(r"=+(?: +=+)+")
_CELL_DEFAULT_CHARS = 60  # a longer default (a prompt) is shown below the table


def _role(match: re.Match[str]) -> str:
    """``:meth:`seed_preset``` -> ```seed_preset()```; ``:attr:`auto_recall_min_best_score```
    -> ```autoRecallMinBestScore``` (a setting is named as files spell it)."""
    role, target = match[1], match[2].rsplit(".", 1)[-1]
    if role == "attr":
        target = to_camel(target)
    elif role in ("meth", "func"):
        target += "()"
    return f"`{target}`"


def _inline(text: str) -> str:
    return _CODE.sub(lambda m: f"`{m[1]}`", _ROLE.sub(_role, text))


def _rst_table(lines: list[str]) -> str | None:
    """A simple reStructuredText table (``=====`` borders) as a Markdown table; ``None`` when
    the lines are not one."""
    borders = [i for i, line in enumerate(lines) if _BORDER.fullmatch(line.strip())]
    if len(borders) != 3 or borders[0] != 0 or borders[2] != len(lines) - 1:
        return None
    indent = len(lines[0]) - len(lines[0].lstrip())
    starts = [m.start() + indent for m in re.finditer(r"=+", lines[0].strip())]

    def cells(line: str) -> list[str]:
        ends = [*starts[1:], None]
        return [line[a:b].strip() for a, b in zip(starts, ends, strict=True)]

    head = [cells(line) for line in lines[1 : borders[1]]]
    body = [cells(line) for line in lines[borders[1] + 1 : borders[2]] if line.strip()]
    if len(head) != 1:
        return None
    rows = [head[0], ["---"] * len(starts), *body]
    return "\n".join("| " + " | ".join(_inline(c) for c in row) + " |" for row in rows)


def _paragraphs(doc: str) -> list[str]:
    """The docstring's paragraphs as Markdown (tables as tables, the rest on one line)."""
    out = []
    for block in re.split(r"\n\s*\n", doc.strip()):
        lines = block.splitlines()
        table = _rst_table(lines)
        out.append(table if table is not None else _inline(" ".join(s.strip() for s in lines)))
    return out


def _type(annotation: Any, metadata: list[Any]) -> str:
    shown = [m.text for m in metadata if isinstance(m, Shown)]
    if shown:
        return shown[0]
    if typing.get_origin(annotation) is typing.Literal:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in typing.get_args(annotation))
    names = {bool: "boolean", int: "integer", float: "number", str: "string"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _sections(
    model: type[BaseModel], value: BaseModel, prefix: str = ""
) -> Iterator[tuple[str, type[BaseModel], BaseModel]]:
    """``(dotted prefix, section class, its default)``, depth first in field order, the top
    level first."""
    if not prefix:
        yield "", model, value
    for name, info in model.model_fields.items():
        sub = info.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            key = f"{prefix}{info.alias or name}"
            yield key, sub, getattr(value, name)
            yield from _sections(sub, getattr(value, name), f"{key}.")


def _section(prefix: str, model: type[BaseModel], value: BaseModel) -> str:
    title = f"## `{prefix}`" if prefix else "## Top level"
    intro = _paragraphs(model.__doc__ or "")
    rows = ["| Setting | Type | Default | Meaning |", "|---|---|---|---|"]
    details: list[str] = []
    for name, info in model.model_fields.items():
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            continue  # a section of its own
        key = f"{prefix}.{info.alias or name}" if prefix else info.alias or name
        default = getattr(value, name)
        shown = json.dumps(default, ensure_ascii=False)
        long_default = isinstance(default, str) and (
            "\n" in default or len(shown) > _CELL_DEFAULT_CHARS
        )
        first, *rest = _paragraphs(info.description or "") or [""]
        more = bool(rest) or long_default
        meaning = first + (" (more below)" if more else "")
        cell_default = "(below)" if long_default else f"`{shown}`"
        rows.append(
            f"| `{key}` | {_type(info.annotation, info.metadata)} | {cell_default} | "
            f"{_cell(meaning)} |"
        )
        if more:
            details.append(f"### `{key}`")
            details += rest
            if long_default:
                details.append(f"Default:\n\n```text\n{default}\n```")
    table = ["\n".join(rows)] if len(rows) > 2 else []  # a section holding sections only
    return "\n\n".join([title, *intro, *table, *details])


def config_reference() -> str:
    """The text of docs/configuration.md: how settings are given, then one table per section
    (top level, ``compaction``, ``compaction.memoryFlush``, ...) of every setting's dotted
    camelCase key, type or allowed values, default and meaning."""
    parts = [_INTRO.rstrip("\n")]
    parts += [_section(*section) for section in _sections(MemoryContextConfig, DEFAULT_CONFIG)]
    return "\n\n".join(parts) + "\n"

"""docs/configuration.md is generated from the config model and must match it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memctx.config import DEFAULT_CONFIG, MemoryContextConfig
from memctx.config.reference import CONFIG_DOCS_PATH, config_reference

ROOT = Path(__file__).resolve().parents[2]


def _settings(model: type[BaseModel], value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every leaf setting as (dotted camelCase key, default)."""
    for name, info in model.model_fields.items():
        key = f"{prefix}{info.alias or name}"
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            yield from _settings(info.annotation, getattr(value, name), f"{key}.")
        else:
            yield key, getattr(value, name)


def test_the_committed_page_is_the_generated_one() -> None:
    committed = (ROOT / CONFIG_DOCS_PATH).read_text(encoding="utf-8")
    assert committed == config_reference(), (
        f"{CONFIG_DOCS_PATH} differs from the config model: run "
        "`python scripts/config_docs.py` (or `make docs`) and commit the page"
    )


def test_every_setting_has_a_row_with_its_default_and_meaning() -> None:
    page = config_reference()
    rows = {line.split(" | ")[0].strip("| `"): line for line in page.splitlines() if "| `" in line}
    settings = list(_settings(MemoryContextConfig, DEFAULT_CONFIG))
    assert len(settings) > 60
    for key, default in settings:
        row = rows.get(key)
        assert row is not None, f"{key} has no row"
        cells = row.strip("|").split(" | ")
        assert len(cells) >= 4 and all(c.strip() for c in cells), row  # a meaning too
        shown = json.dumps(default, ensure_ascii=False)
        assert f"`{shown}`" in row or "(below)" in row, (key, row)
        if "(below)" in row:  # a long default is given in the setting's subsection
            assert f"### `{key}`" in page and str(default) in page


def test_types_and_allowed_values_are_shown() -> None:
    page = config_reference()
    assert '| `embeddingModel` | `"hash"` \\| `"transformer"` | `"hash"` |' in page
    assert "| `hardCapTokens` | integer in [1, 10,000,000] | `4000` |" in page
    assert "| `maxSegments` | integer in [1, 1,000,000] | `20000` |" in page
    assert "| `recallWindowRatio` | number in (0, 1] | `0.1` |" in page
    assert "| `enabled` | boolean | `true` |" in page
    assert "| `contextPruning.ttl` | duration" in page


def test_long_docstrings_are_readable_markdown() -> None:
    page = config_reference()
    assert not re.search(r"(?<!`)``(?!`)", page)  # reST ``code`` became Markdown `code`
    assert ":meth:" not in page and ":attr:" not in page
    assert "=====" not in page  # the reStructuredText table became a Markdown one
    assert "| X | suites hash / transformer | LoCoMo evidence hash / trf. |" in page
    assert "| 0.2 | 72.1 / 76.8 % | 82.7 / 86.9 % | 0 / 0 |" in page
    # The first paragraph stays in the table, the rest goes to a subsection.
    assert "### `autoRecallMinBestScore`" in page
    row = next(line for line in page.splitlines() if line.startswith("| `autoRecallMinBest"))
    assert row.endswith("(more below) |") and "Why 0.2" not in row
    assert "Why 0.2, for the hash and the transformer embedder alike" in page

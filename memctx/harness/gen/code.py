"""Synthetic source files for the generator's projects.

Code is assembled from small per-language pieces around the project's nouns, so files look
like ordinary service code of the stack (handlers, services, models, tests) without copying
any real repository. Everything draws from the ``random.Random`` it is given.
"""

from __future__ import annotations

import random

__all__ = ["FIELDS", "NOUNS", "STATUSES", "VERBS", "cap", "code_file", "code_line", "lower_camel"]

NOUNS = (
    "order",
    "invoice",
    "user",
    "session",
    "cart",
    "payment",
    "report",
    "account",
    "shipment",
    "inventory",
    "notification",
    "refund",
    "customer",
    "price",
    "catalog",
    "audit",
    "quota",
    "tenant",
    "upload",
    "profile",
    "coupon",
    "subscription",
    "warehouse",
    "review",
)
VERBS = (
    "load",
    "save",
    "compute",
    "validate",
    "render",
    "fetch",
    "sync",
    "merge",
    "parse",
    "build",
    "apply",
    "resolve",
    "normalize",
    "schedule",
    "format",
    "check",
    "archive",
    "export",
)
FIELDS = (
    "name",
    "status",
    "amount",
    "created_at",
    "owner_id",
    "currency",
    "region",
    "note",
    "updated_at",
    "total",
    "email",
    "sku",
    "quantity",
    "due_date",
)
STATUSES = ("pending", "active", "closed", "failed", "draft", "archived")


def cap(word: str) -> str:
    return "".join(p.capitalize() for p in word.split("_"))


def lower_camel(word: str) -> str:
    c = cap(word)
    return c[:1].lower() + c[1:]


def _py_func(rng: random.Random, noun: str) -> list[str]:
    verb, f1, f2 = rng.choice(VERBS), rng.choice(FIELDS), rng.choice(FIELDS)
    cls = cap(noun)
    body = [
        f"    record = db.get({cls}, {noun}_id)",
        "    if record is None:",
        f"        raise {cls}NotFound({noun}_id)",
    ]
    extra = [
        [
            f"    if strict and record.status != {rng.choice(STATUSES)!r}:",
            f'        logger.warning("{noun} %s in state %s", {noun}_id, record.status)',
        ],
        [
            f"    for item in record.{rng.choice(('items', 'lines', 'entries'))}:",
            f"        item.{f1} = normalize_{f1}(item.{f1})",
        ],
        [f"    record.{f2} = {rng.choice(('utcnow()', 'None', 'payload.' + f2))}"],
        [f'    cache.delete(f"{noun}:{{{noun}_id}}")'],
        [
            "    try:",
            "        db.flush()",
            "    except IntegrityError as exc:",
            f"        raise {cls}Conflict(str(exc)) from exc",
        ],
        [f'    events.publish("{noun}.{verb}d", {{"id": {noun}_id}})'],
    ]
    for piece in rng.sample(extra, rng.randint(2, 4)):
        body.extend(piece)
    return [
        f"def {verb}_{noun}(db: Session, {noun}_id: int, *, strict: bool = False) -> {cls}:",
        f'    """{verb.capitalize()} one {noun} ({f1} and {f2} included)."""',
        *body,
        "    return record",
        "",
        "",
    ]


def _ts_func(rng: random.Random, noun: str) -> list[str]:
    verb, f1 = rng.choice(VERBS), rng.choice(FIELDS)
    cls, fn, var = cap(noun), lower_camel(f"{verb}_{noun}"), lower_camel(noun)
    body = [
        f"  const {lower_camel(noun)} = await repo.findById(id);",
        f"  if (!{lower_camel(noun)}) {{",
        f"    throw new NotFoundError(`{noun} ${{id}} not found`);",
        "  }",
    ]
    extra = [
        [
            f"  if ({lower_camel(noun)}.status === '{rng.choice(STATUSES)}') {{",
            f"    logger.warn({{ id }}, '{noun} in unexpected state');",
            "  }",
        ],
        [f"  {var}.{lower_camel(f1)} = normalize({var}.{lower_camel(f1)});"],
        [f"  await cache.del(`{noun}:${{id}}`);"],
        [f"  events.emit('{noun}.{verb}', {{ id }});"],
        [
            "  try {",
            f"    await repo.save({lower_camel(noun)});",
            "  } catch (err) {",
            f"    throw new ConflictError(`could not {verb} {noun}`, {{ cause: err }});",
            "  }",
        ],
    ]
    for piece in rng.sample(extra, rng.randint(2, 4)):
        body.extend(piece)
    return [
        f"export async function {fn}(repo: Repo<{cls}>, id: string): Promise<{cls}> {{",
        *body,
        f"  return {lower_camel(noun)};",
        "}",
        "",
    ]


def _go_func(rng: random.Random, noun: str) -> list[str]:
    verb, f1 = rng.choice(VERBS), rng.choice(FIELDS)
    cls = cap(noun)
    body = [
        f"\t{noun}, err := s.store.Get(ctx, id)",
        "\tif err != nil {",
        f'\t\treturn nil, fmt.Errorf("{verb} {noun} %s: %w", id, err)',
        "\t}",
    ]
    extra = [
        [
            f'\tif {noun}.Status == "{rng.choice(STATUSES)}" {{',
            f'\t\ts.log.Warn("unexpected state", "id", id, "status", {noun}.Status)',
            "\t}",
        ],
        [f"\t{noun}.{cap(f1)} = normalize({noun}.{cap(f1)})"],
        [f"\tif err := s.store.Put(ctx, {noun}); err != nil {{", "\t\treturn nil, err", "\t}"],
        [f'\ts.events.Publish(ctx, "{noun}.{verb}", id)'],
    ]
    for piece in rng.sample(extra, rng.randint(2, 4)):
        body.extend(piece)
    return [
        f"// {cap(verb)}{cls} {verb}s one {noun}.",
        f"func (s *Service) {cap(verb)}{cls}(ctx context.Context, id string) (*{cls}, error) {{",
        *body,
        f"\treturn {noun}, nil",
        "}",
        "",
    ]


def _rs_func(rng: random.Random, noun: str) -> list[str]:
    verb, f1 = rng.choice(VERBS), rng.choice(FIELDS)
    cls = cap(noun)
    body = [
        f'    let mut {noun} = self.store.get(id).with_context(|| format!("{noun} {{id}}"))?;',
    ]
    extra = [
        [
            f"    if {noun}.status == Status::{cap(rng.choice(STATUSES))} {{",
            f'        tracing::warn!(%id, "{noun} in unexpected state");',
            "    }",
        ],
        [f"    {noun}.{f1} = normalize(&{noun}.{f1});"],
        [f"    self.store.put(&{noun})?;"],
        [f"    for line in {noun}.lines.iter_mut() {{", "        line.touch();", "    }"],
    ]
    for piece in rng.sample(extra, rng.randint(2, 3)):
        body.extend(piece)
    return [
        f"    /// {verb.capitalize()} one {noun}.",
        f"    pub fn {verb}_{noun}(&mut self, id: &str) -> anyhow::Result<{cls}> {{",
        *body,
        f"        Ok({noun})",
        "    }",
        "",
    ]


_HEADERS = {
    "python": [
        "from __future__ import annotations",
        "",
        "import logging",
        "from datetime import datetime",
        "",
        "from sqlalchemy.exc import IntegrityError",
        "from sqlalchemy.orm import Session",
        "",
        "logger = logging.getLogger(__name__)",
        "",
        "",
    ],
    "typescript": [
        "import { logger } from '../lib/logger';",
        "import { cache } from '../lib/cache';",
        "import { NotFoundError, ConflictError } from '../errors';",
        "import type { Repo } from '../db';",
        "",
    ],
    "go": ["import (", '\t"context"', '\t"fmt"', '\t"log/slog"', ")", ""],
    "rust": ["use anyhow::Context;", "use serde::{Deserialize, Serialize};", ""],
}
_FUNCS = {"python": _py_func, "typescript": _ts_func, "go": _go_func, "rust": _rs_func}


def _model(rng: random.Random, language: str, noun: str) -> list[str]:
    fields = rng.sample(FIELDS, rng.randint(4, 7))
    cls = cap(noun)
    if language == "python":
        return [
            f"class {cls}(Base):",
            f'    __tablename__ = "{noun}s"',
            "",
            "    id: Mapped[int] = mapped_column(primary_key=True)",
            *(f"    {f}: Mapped[str | None]" for f in fields),
            "",
            "",
        ]
    if language == "typescript":
        return [
            f"export interface {cls} {{",
            "  id: string;",
            *(f"  {lower_camel(f)}: string | null;" for f in fields),
            "}",
            "",
        ]
    if language == "go":
        return [
            f"type {cls} struct {{",
            '\tID string `json:"id"`',
            *(f'\t{cap(f)} string `json:"{f}"`' for f in fields),
            "}",
            "",
        ]
    return [
        "#[derive(Debug, Clone, Serialize, Deserialize)]",
        f"pub struct {cls} {{",
        "    pub id: String,",
        *(f"    pub {f}: Option<String>," for f in fields),
        "}",
        "",
    ]


def code_file(rng: random.Random, language: str, path: str, nouns: tuple[str, ...]) -> str:
    """A plausible source file of ``language`` for ``path``, about 60-220 lines."""
    noun = next((n for n in nouns if n in path.lower()), rng.choice(nouns))
    lines: list[str] = []
    if language == "go":
        lines += [f"package {noun}", ""]
    lines += _HEADERS[language]
    lines += _model(rng, language, noun)
    if language == "go":
        lines += [
            "type Service struct {",
            "\tstore Store",
            "\tlog   *slog.Logger",
            "\tevents Bus",
            "}",
            "",
        ]
    if language == "rust":
        lines += [f"impl {cap(noun)}Service {{"]
    for _ in range(rng.randint(4, 11)):
        lines += _FUNCS[language](rng, rng.choice((noun, noun, *nouns)))
    if language == "rust":
        lines += [
            "}",
            "",
            "#[cfg(test)]",
            "mod tests {",
            "    use super::*;",
            "",
            "    #[test]",
            f"    fn {rng.choice(VERBS)}_{noun}_roundtrip() {{",
            f"        let svc = {cap(noun)}Service::in_memory();",
            "        assert!(svc.is_empty());",
            "    }",
            "}",
        ]
    return "\n".join(lines).rstrip() + "\n"


def code_line(rng: random.Random, language: str, nouns: tuple[str, ...]) -> str:
    """One line of code, for grep output."""
    lines = _FUNCS[language](rng, rng.choice(nouns))
    return rng.choice([ln for ln in lines if ln.strip()]).strip()

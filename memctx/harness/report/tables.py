"""The report's tables, built once as rows of strings and rendered to Markdown, HTML and the
terminal by :mod:`.markdown`, :mod:`.page` and :func:`format_terminal_table`.

Every recall-accuracy figure carries its 95 % interval and the number of probes it is over
(:mod:`.intervals`), so a 100 % from 2 probes reads as what it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..schema import REAL_DATA_SUITES, all_records
from .cells import count, latency, num, pct, usd
from .checks import ALL, pair_label, pairs, suites
from .intervals import share_of

__all__ = [
    "Table",
    "cost_per_call",
    "headline_table",
    "kind_table",
    "md_table",
    "pooled_records",
    "provenance_lines",
    "scenario_table",
    "suite_table",
    "terminal_table",
    "text_table",
]


@dataclass(frozen=True)
class Table:
    """A table as strings.

    Attributes:
        header: The column names.
        rows: The cells, one tuple per row.
        keys: How many leading columns name the row (kept in view when the table scrolls).
    """

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    keys: int = 1


def pooled_records(summary: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The records over every synthetic suite, one per strategy × embedding (none when the
    run played real-data suites only: they are never pooled)."""
    return list(summary.get("pooled", []))


def cost_per_call(record: Mapping[str, Any]) -> float | None:
    """The record's cost over its model calls (USD), None when either is unknown."""
    cost, calls = num(record.get("cost_usd")), num(record.get("calls"))
    return cost / calls if cost is not None and calls else None


def headline_table(summary: Mapping[str, Any]) -> Table:
    """Strategy × embedding over all suites, every headline metric."""
    header = (
        "strategy", "embedding", "recall accuracy (95 % interval)", "probes fitted",
        "tool accuracy", "evidence recall", "stale rate", "tokens / call", "recall tokens",
        "LLM tokens", "cost / call", "cache hits", "hook p50 / p95 (ms)", "compactions",
        "trims", "violations",
    )  # fmt: skip
    rows = tuple(
        (
            str(r["strategy"]),
            str(r["embedding"]),
            share_of(r).text(n=False),
            f"{count(r.get('fit'))} / {count(r.get('probes'))}",
            pct(r.get("tool_accuracy")),
            pct(r.get("evidence_recall")),
            pct(r.get("stale_rate")),
            count(r.get("tokens_per_call")),
            count(r.get("recall_tokens")),
            count(r.get("llm_tokens")),
            usd(cost_per_call(r), 5),
            pct(r.get("cached_share")),
            latency(r.get("hook_p50_ms"), r.get("hook_p95_ms")),
            count(r.get("compactions")),
            count(r.get("trims")),
            count(r.get("violations")),
        )
        for r in pooled_records(summary)
    )
    return Table(header, rows, keys=2)


def suite_table(summary: Mapping[str, Any], metric: str = "recall_accuracy") -> Table:
    """Suites × (strategy, embedding): ``metric`` with its 95 % interval and its n.

    Each cell reads ``"72.7 % (57–85) n=44"``: n is the probes the share is over (for
    ``full``, the ones whose context fitted its window). ``probes`` is the suite's count.
    Suites that ask no probes (``trajectories``) have no row.
    """
    records = all_records(summary)
    index = {(r["suite"], r["strategy"], r["embedding"]): r for r in records}
    run_pairs = pairs(records)
    header = ("suite", "probes", *(pair_label(*p) for p in run_pairs))
    rows = []
    pooled = [ALL] if summary.get("pooled") else []  # none when only real data ran
    for suite in [*suites(records), *pooled]:
        cells = [index.get((suite, *p)) for p in run_pairs]
        probes = max((num(c.get("probes")) or 0 for c in cells if c), default=0)
        if not probes:
            continue  # a suite that asks no probes (trajectories) has no accuracy to show
        texts = [share_of(c, metric).text() if c else "n/a" for c in cells]
        label = suite
        if suite == ALL and any(r["suite"] in REAL_DATA_SUITES for r in records):
            label = "all (synthetic suites)"  # the real-data ones are never pooled
        rows.append((label, count(probes), *texts))
    return Table(header, tuple(rows))


def kind_table(probes: Sequence[Mapping[str, Any]] | None) -> Table:
    """Probe kinds × (strategy, embedding): recall accuracy over the synthetic suites' probes
    of each kind, with its 95 % interval and n (the fitted probes), from ``results.jsonl``
    rows. A kind is what a probe asks about (a config value, a rule in force, a file's new
    name, why a choice was made, ...), across suites. No rows without probe rows."""
    rows_in = [p for p in probes or () if p.get("suite") not in REAL_DATA_SUITES]
    run_pairs = pairs(rows_in)
    hits: dict[tuple[str, str, str], list[bool]] = {}
    asked: dict[str, set[tuple[str, str]]] = {}
    for p in rows_in:
        kind = str(p.get("kind"))
        got = hits.setdefault((kind, str(p["strategy"]), str(p["embedding"])), [])
        if p.get("recall_accuracy") is not None:  # None: the context did not fit
            got.append(bool(p["recall_accuracy"]))
        asked.setdefault(kind, set()).add((str(p.get("scenario")), str(p.get("probe"))))
    rows = []
    for kind in sorted(asked):
        cells = []
        for pair in run_pairs:
            scored = hits.get((kind, *pair))
            if scored is None:
                cells.append("n/a")
                continue
            share = sum(scored) / len(scored) if scored else None
            record = {"recall_accuracy": share, "fit": len(scored)}
            cells.append(share_of(record).text())
        rows.append((kind, count(len(asked[kind])), *cells))
    return Table(("kind", "probes", *(pair_label(*p) for p in run_pairs)), tuple(rows))


def terminal_table(summary: Mapping[str, Any]) -> Table:
    """The table ``memctx eval`` prints: all suites per strategy, the columns that decide."""
    header = (
        "strategy", "embedding", "recall (95% interval)", "fit", "tool", "evidence", "stale",
        "tokens/call", "recall tok", "cost/call", "hook ms p50/p95", "compact", "violations",
    )  # fmt: skip
    rows = tuple(
        (
            str(r["strategy"]),
            str(r["embedding"]),
            share_of(r).text(n=False),
            f"{count(r.get('fit'))}/{count(r.get('probes'))}",
            pct(r.get("tool_accuracy")),
            pct(r.get("evidence_recall")),
            pct(r.get("stale_rate")),
            count(r.get("tokens_per_call")),
            count(r.get("recall_tokens")),
            usd(cost_per_call(r), 5),
            latency(r.get("hook_p50_ms"), r.get("hook_p95_ms")),
            count(r.get("compactions")),
            count(r.get("violations")),
        )
        for r in pooled_records(summary)
    )
    return Table(header, rows, keys=2)


def text_table(table: Table) -> str:
    """``table`` as aligned plain text (a header, a rule, the rows)."""
    widths = [max([len(h), *(len(r[i]) for r in table.rows)]) for i, h in enumerate(table.header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(table.header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in table.rows]
    return "\n".join(line.rstrip() for line in lines)


def provenance_lines(summary: Mapping[str, Any]) -> list[str]:
    """Where the run's numbers come from: commit, versions, datasets, models, config, time."""
    prov = summary.get("provenance") or {}
    config = summary.get("config") or {}
    timing = summary.get("timing") or {}
    git = prov.get("git") or {}
    versions = prov.get("versions") or {}
    commit = git.get("commit") or "unknown"
    lines = [f"run: {summary['run']}"] if summary.get("run") else []
    return [
        *lines,
        f"git commit: {commit}" + (" (uncommitted changes)" if git.get("dirty") else ""),
        "versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v),
        f"datasets: {prov.get('datasets', 'n/a')}; generator version "
        f"{prov.get('generator_version', 'n/a')}; seed {prov.get('seed', 'n/a')}",
        f"answer model (prices): {prov.get('answer_model', 'n/a')}; judge: "
        f"{prov.get('judge_model') or 'none (context-only metrics)'}",
        "config: " + json.dumps(config, sort_keys=True, ensure_ascii=False),
        f"timing: started {timing.get('started_at', 'n/a')}, {timing.get('wall_s', 'n/a')} s "
        f"on {timing.get('jobs', 'n/a')} worker(s)",
    ]


def scenario_table(summary: Mapping[str, Any]) -> Table:
    """Suites of the run: scenarios, probes and the data's sha256."""
    scenarios = (summary.get("provenance") or {}).get("scenarios") or {}
    rows = tuple(
        (str(s), count(d.get("scenarios")), count(d.get("probes")), str(d.get("sha256", ""))[:12])
        for s, d in scenarios.items()
    )
    return Table(("suite", "scenarios", "probes", "sha256"), rows)


def md_table(table: Table) -> str:
    """``table`` as a Markdown pipe table."""

    def row(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    lines = [row(table.header), "|" + "|".join("---" for _ in table.header) + "|"]
    return "\n".join(lines + [row(r) for r in table.rows])

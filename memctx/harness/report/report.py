"""The report of one evaluation run: ``report.md``, a self-contained ``report.html``, charts.

Everything is rendered from the run directory's files (``summary.json``, ``results.jsonl``,
``trace.jsonl``), so ``memctx report RUN_DIR`` re-renders a report without re-running
anything. The tables are built once as rows of strings and rendered to Markdown, HTML and
the terminal.
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .checks import ALL, Check, pair_label, pairs, run_checks, suites

__all__ = [
    "RUN_FILES",
    "RunDirError",
    "format_terminal_table",
    "headline_table",
    "load_probes",
    "load_summary",
    "report_main",
    "suite_table",
    "write_report",
]

RUN_FILES = ("summary.json", "results.jsonl", "trace.jsonl")
CHARTS_DIR = "charts"


class RunDirError(ValueError):
    """The folder is not a run directory (the message names the missing file)."""


@dataclass(frozen=True)
class Table:
    """A table as strings: header and rows."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def _require(run_dir: Path) -> None:
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir} is not a run directory: no such folder")
    for name in RUN_FILES:
        if not (run_dir / name).is_file():
            raise RunDirError(
                f"{run_dir} is not a run directory: {name} is missing "
                f"(a run directory holds {', '.join(RUN_FILES)}; write one with `memctx eval`)"
            )


def load_summary(run_dir: Path) -> dict[str, Any]:
    """``run_dir/summary.json``, checked to hold records.

    Raises:
        RunDirError: The file is missing or is not a summary.
    """
    path = run_dir / "summary.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunDirError(f"{run_dir} is not a run directory: summary.json is missing") from None
    except (OSError, ValueError) as exc:
        raise RunDirError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("records"), list):
        raise RunDirError(f"{path} is not a run summary (no 'records' list)")
    return data


def load_probes(run_dir: Path) -> list[dict[str, Any]]:
    """``run_dir/results.jsonl`` (one row per probe), or ``[]`` when the file is absent.

    Raises:
        RunDirError: A line is not JSON (the message names the line).
    """
    path = run_dir / "results.jsonl"
    return list(_iter_jsonl(path)) if path.exists() else []


def _iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except ValueError as exc:
                    raise RunDirError(f"{path}:{number}: not JSON ({exc})") from exc


# --- formatting ---------------------------------------------------------------------------


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _pct(value: Any) -> str:
    number = _num(value)
    return "n/a" if number is None else f"{100 * number:.1f} %"


def _pct_ci(value: Any, ci: Any) -> str:
    text = _pct(value)
    if text != "n/a" and isinstance(ci, list | tuple) and len(ci) == 2:
        low, high = _num(ci[0]), _num(ci[1])
        if low is not None and high is not None:
            text += f" ({100 * low:.1f}–{100 * high:.1f})"
    return text


def _int(value: Any) -> str:
    number = _num(value)
    return "n/a" if number is None else f"{number:,.0f}"


def _usd(value: Any) -> str:
    number = _num(value)
    return "n/a" if number is None else f"${number:,.4f}"


def _ms(p50: Any, p95: Any) -> str:
    a, b = _num(p50), _num(p95)
    return "n/a" if a is None or b is None else f"{a:.1f} / {b:.1f}"


def _all_records(summary: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    records: list[Mapping[str, Any]] = summary.get("records", [])
    return [r for r in records if r["suite"] == ALL]


def headline_table(summary: Mapping[str, Any]) -> Table:
    """Strategy × embedding over all suites, every headline metric."""
    header = (
        "strategy", "embedding", "recall accuracy (95 % CI)", "fit", "tool accuracy",
        "evidence recall", "stale rate", "tokens/call", "recall tokens", "LLM tokens",
        "cost (USD)", "cached", "hook p50/p95 (ms)", "compactions", "trims", "violations",
    )  # fmt: skip
    rows = tuple(
        (
            str(r["strategy"]),
            str(r["embedding"]),
            _pct_ci(r.get("recall_accuracy"), r.get("recall_accuracy_ci")),
            f"{_int(r.get('fit'))}/{_int(r.get('probes'))}",
            _pct(r.get("tool_accuracy")),
            _pct_ci(r.get("evidence_recall"), r.get("evidence_recall_ci")),
            _pct(r.get("stale_rate")),
            _int(r.get("tokens_per_call")),
            _int(r.get("recall_tokens")),
            _int(r.get("llm_tokens")),
            _usd(r.get("cost_usd")),
            _pct(r.get("cached_share")),
            _ms(r.get("hook_p50_ms"), r.get("hook_p95_ms")),
            _int(r.get("compactions")),
            _int(r.get("trims")),
            _int(r.get("violations")),
        )
        for r in _all_records(summary)
    )
    return Table(header, rows)


def suite_table(summary: Mapping[str, Any], metric: str = "recall_accuracy") -> Table:
    """Suites × (strategy, embedding): ``metric`` as a percentage, plus probes per suite."""
    records = summary.get("records", [])
    index = {(r["suite"], r["strategy"], r["embedding"]): r for r in records}
    run_pairs = pairs(records)
    header = ("suite", "probes", *(pair_label(*p) for p in run_pairs))
    rows = []
    for suite in [*suites(records), ALL]:
        cells = [index.get((suite, *p)) for p in run_pairs]
        probes = max((_num(c.get("probes")) or 0 for c in cells if c), default=0)
        rows.append((suite, _int(probes), *(_pct(c.get(metric)) if c else "n/a" for c in cells)))
    return Table(header, tuple(rows))


def _provenance_lines(summary: Mapping[str, Any]) -> list[str]:
    prov = summary.get("provenance") or {}
    config = summary.get("config") or {}
    timing = summary.get("timing") or {}
    git = prov.get("git") or {}
    versions = prov.get("versions") or {}
    commit = git.get("commit") or "unknown"
    return [
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


def _scenario_table(summary: Mapping[str, Any]) -> Table:
    scenarios = (summary.get("provenance") or {}).get("scenarios") or {}
    rows = tuple(
        (str(s), _int(d.get("scenarios")), _int(d.get("probes")), str(d.get("sha256", ""))[:12])
        for s, d in scenarios.items()
    )
    return Table(("suite", "scenarios", "probes", "sha256"), rows)


# --- rendering ----------------------------------------------------------------------------


def _text_table(table: Table) -> str:
    widths = [max(len(h), *(len(r[i]) for r in table.rows)) for i, h in enumerate(table.header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(table.header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in table.rows]
    return "\n".join(line.rstrip() for line in lines)


def _md_table(table: Table) -> str:
    def row(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    lines = [row(table.header), "|" + "|".join("---" for _ in table.header) + "|"]
    return "\n".join(lines + [row(r) for r in table.rows])


def _html_table(table: Table) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in table.header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in table.rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def format_terminal_table(
    summary: Mapping[str, Any], probes: Sequence[Mapping[str, Any]] | None = None
) -> str:
    """The table printed after ``memctx eval``: all suites per strategy, then the checks
    (``probes``, the results.jsonl rows, make the full-ceiling check compare like with like)."""
    header = (
        "strategy", "embedding", "recall (95% CI)", "tool", "evidence", "stale",
        "tokens/call", "recall tok", "cost USD", "hook ms p50/p95", "compact", "violations",
    )  # fmt: skip
    rows = tuple(
        (
            str(r["strategy"]),
            str(r["embedding"]),
            _pct_ci(r.get("recall_accuracy"), r.get("recall_accuracy_ci")),
            _pct(r.get("tool_accuracy")),
            _pct(r.get("evidence_recall")),
            _pct(r.get("stale_rate")),
            _int(r.get("tokens_per_call")),
            _int(r.get("recall_tokens")),
            _usd(r.get("cost_usd")),
            _ms(r.get("hook_p50_ms"), r.get("hook_p95_ms")),
            _int(r.get("compactions")),
            _int(r.get("violations")),
        )
        for r in _all_records(summary)
    )
    checks = "\n".join(f"{c.verdict:<4}  {c.text}" for c in run_checks(summary, probes))
    return f"{_text_table(Table(header, rows))}\n\n{checks}"


def _md(
    summary: Mapping[str, Any], checks: Sequence[Check], charts: Sequence[Any], note: str
) -> str:
    parts = [
        "# memctx evaluation report",
        "All suites, one row per strategy × embedding. Recall accuracy counts probes whose "
        "context holds an expected answer (full: only probes whose context fits its window).",
        _md_table(headline_table(summary)),
        "## Recall accuracy by suite",
        _md_table(suite_table(summary)),
        "## Checks",
        "\n".join(f"- **{c.verdict}**: {c.text}" for c in checks),
        "## Charts",
        "\n\n".join(
            f"### {c.title}\n\n![{c.title}]({CHARTS_DIR}/{c.path.name})\n\n{c.caption}"
            for c in charts
        )
        or note,
        "## Provenance",
        "\n".join(f"- {line}" for line in _provenance_lines(summary)),
        _md_table(_scenario_table(summary)),
    ]
    return "\n\n".join(parts) + "\n"


_CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:0.85em}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
.pass{color:#17692a;font-weight:bold}.fail{color:#b00020;font-weight:bold}.na{color:#777}
figure{margin:1.5em 0}img{max-width:100%;border:1px solid #eee}code{font-size:0.9em}"""


def _html(
    summary: Mapping[str, Any], checks: Sequence[Check], charts: Sequence[Any], note: str
) -> str:
    esc = html.escape
    figures = []
    for chart in charts:
        data = base64.b64encode(chart.path.read_bytes()).decode("ascii")
        figures.append(
            f'<figure><img src="data:image/png;base64,{data}" alt="{esc(chart.title)}">'
            f"<figcaption>{esc(chart.caption)}</figcaption></figure>"
        )
    check_items = "".join(
        f'<li><span class="{c.verdict.replace("/", "").lower()}">{c.verdict}</span>: '
        f"{esc(c.text)}</li>"
        for c in checks
    )
    provenance = "".join(f"<li>{esc(line)}</li>" for line in _provenance_lines(summary))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>memctx evaluation report</title><style>{_CSS}</style></head><body>"
        "<h1>memctx evaluation report</h1>"
        "<p>All suites, one row per strategy × embedding. Recall accuracy counts probes whose "
        "context holds an expected answer (full: only probes whose context fits its window)."
        f"</p>{_html_table(headline_table(summary))}"
        f"<h2>Recall accuracy by suite</h2>{_html_table(suite_table(summary))}"
        f"<h2>Checks</h2><ul>{check_items}</ul>"
        f"<h2>Charts</h2>{''.join(figures) or f'<p>{esc(note)}</p>'}"
        f"<h2>Provenance</h2><ul>{provenance}</ul>{_html_table(_scenario_table(summary))}"
        "</body></html>\n"
    )


def _charts(run_dir: Path, summary: Mapping[str, Any]) -> tuple[list[Any], str]:
    try:
        from .charts import pick_session, session_calls, write_charts
    except ImportError as exc:  # pragma: no cover - matplotlib is a dependency
        return [], f"Charts skipped: {exc}."
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return [], "Charts skipped: matplotlib is not installed (pip install matplotlib)."
    trace = run_dir / "trace.jsonl"
    key = pick_session(_iter_jsonl(trace))
    session = session_calls(_iter_jsonl(trace), key) if key else []
    return write_charts(summary, session, run_dir / CHARTS_DIR), "No chart: the run has no data."


def write_report(run_dir: Path) -> list[Path]:
    """Render ``report.md``, ``report.html`` and the charts of ``run_dir``.

    Returns:
        The files written: report.md, report.html, then the chart PNGs.

    Raises:
        RunDirError: ``run_dir`` lacks one of :data:`RUN_FILES` (the message names it).
    """
    run_dir = Path(run_dir)
    _require(run_dir)
    summary = load_summary(run_dir)
    probes = load_probes(run_dir)
    checks = run_checks(summary, probes)
    charts, note = _charts(run_dir, summary)
    md = run_dir / "report.md"
    md.write_text(_md(summary, checks, charts, note), encoding="utf-8")
    page = run_dir / "report.html"
    page.write_text(_html(summary, checks, charts, note), encoding="utf-8")
    return [md, page, *(c.path for c in charts)]


def report_main(argv: Sequence[str]) -> int:
    """``memctx report RUN_DIR``: re-render a run's report; exit 0, or 2 on a bad folder."""
    parser = argparse.ArgumentParser(
        prog="memctx report",
        description="Re-render report.md, report.html and the charts of a run directory "
        "from its summary.json, results.jsonl and trace.jsonl.",
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a directory written by memctx eval")
    args = parser.parse_args(list(argv))
    try:
        written = write_report(Path(args.run_dir))
    except RunDirError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    run_dir = Path(args.run_dir)
    print(format_terminal_table(load_summary(run_dir), load_probes(run_dir)))
    print("\nwrote " + ", ".join(str(p) for p in written))
    return 0

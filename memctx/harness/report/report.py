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

from memctx.errors import MemctxError
from memctx.transcripts import InputFileError, InputLine, check_input_file, open_input_file

from ..schema import RECORD_METRICS, all_records, upgrade_summary
from .checks import ALL, Check, pair_label, pairs, run_checks, suites
from .frontier import FRONTIER_CHART, FRONTIER_NOTE, frontier, frontier_reading, frontier_table
from .notes import summary_model_note
from .real_data import real_data_html, real_data_md

__all__ = [
    "RUN_FILES",
    "RunDirError",
    "format_terminal_table",
    "headline_table",
    "load_probes",
    "load_summary",
    "report_main",
    "suite_table",
    "validate_summary",
    "write_report",
]

RUN_FILES = ("summary.json", "results.jsonl", "trace.jsonl")
CHARTS_DIR = "charts"


class RunDirError(MemctxError, ValueError):
    """The folder is not a run directory, or one of its files is not what ``memctx eval``
    writes (the message names the file, the line or record, and the fix)."""


@dataclass(frozen=True)
class Table:
    """A table as strings: header and rows."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


_REWRITE = "re-run `memctx eval --out DIR` to write the run directory again"
# The fields of a results.jsonl / trace.jsonl row the report reads, and their JSON types.
_PROBE_FIELDS: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(("suite", "scenario", "probe", "strategy", "embedding"), (str,)),
    "fits": (bool,),
}
_CALL_FIELDS: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(("suite", "scenario", "session", "strategy", "embedding"), (str,)),
    **dict.fromkeys(("call", "history_tokens", "sent_tokens"), (int, float)),
}
_WANT = {str: "a string", bool: "a boolean", int: "a number"}
_LABELS = ("suite", "strategy", "embedding")
_LISTS = ("recall_accuracy_ci", "evidence_recall_ci")
_SECTIONS = ("provenance", "config", "timing")


def _require(run_dir: Path) -> None:
    if not run_dir.is_dir():
        what = "it is a file" if run_dir.exists() else "no such folder"
        raise RunDirError(
            f"{run_dir} is not a run directory: {what} (pass the folder `memctx eval --out` wrote)"
        )
    for name in RUN_FILES:
        path = run_dir / name
        if not path.exists():
            raise RunDirError(
                f"{run_dir} is not a run directory: {name} is missing "
                f"(a run directory holds {', '.join(RUN_FILES)}; write one with `memctx eval`)"
            )
        try:
            check_input_file(path, what=name)
        except InputFileError as exc:
            raise RunDirError(str(exc)) from None


def _type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, Mapping) else type(value).__name__


def _is_num(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_record(record: object, where: str) -> None:
    if not isinstance(record, Mapping):
        raise RunDirError(f"{where} is {_type(record)}, not an object; {_REWRITE}")
    for key in _LABELS:
        if not isinstance(record.get(key), str) or not record[key]:
            raise RunDirError(
                f"{where} has no {key!r} string (it is {_type(record.get(key))}); every record "
                f"names its suite, strategy and embedding; {_REWRITE}"
            )
    for key in RECORD_METRICS:
        value = record.get(key)
        if value is None:
            continue
        if key in _LISTS:
            ok = isinstance(value, list) and len(value) in (0, 2) and all(map(_is_num, value))
            want = "a list of two numbers (or [])"
        elif key == "violation_kinds":
            ok = isinstance(value, Mapping) and all(map(_is_num, value.values()))
            want = "an object of counts"
        else:
            ok, want = _is_num(value), "a number or null"
        if not ok:
            raise RunDirError(f"{where}: {key!r} is {_type(value)}, want {want}; {_REWRITE}")


def validate_summary(data: object, source: str) -> dict[str, Any]:
    """``data`` if it has the shape of a run's ``summary.json``, else a :class:`RunDirError`.

    A summary is an object whose ``records`` list is not empty (``memctx eval`` never writes
    an empty run: it refuses to start one), each record an object naming its ``suite``,
    ``strategy`` and ``embedding`` with numbers (or null) for its metrics; ``provenance``,
    ``config`` and ``timing``, when present, are objects.

    Raises:
        RunDirError: What is wrong, where (``records[3]``, ``provenance.git``) and the fix.
    """
    if not isinstance(data, dict):
        raise RunDirError(
            f"{source} is not a run summary: it holds {_type(data)}, not an object with a "
            f"'records' list; {_REWRITE}"
        )
    records = data.get("records")
    if not isinstance(records, list):
        raise RunDirError(
            f"{source} is not a run summary: 'records' is {_type(records)}, not a list; {_REWRITE}"
        )
    if not records:
        raise RunDirError(
            f"{source} holds no records (its 'records' list is empty), so there is nothing to "
            f"report; {_REWRITE} (a run with no scenario to play is refused, never written)"
        )
    for index, record in enumerate(records):
        _check_record(record, f"{source}: records[{index}]")
    pooled = data.get("pooled", [])
    if not isinstance(pooled, list):
        raise RunDirError(f"{source}: 'pooled' is {_type(pooled)}, not a list; {_REWRITE}")
    for index, record in enumerate(pooled):
        _check_record(record, f"{source}: pooled[{index}]")
    for key in _SECTIONS:
        if data.get(key) is not None and not isinstance(data[key], Mapping):
            raise RunDirError(f"{source}: {key!r} is {_type(data[key])}, not an object; {_REWRITE}")
    provenance = data.get("provenance") or {}
    for key in ("git", "versions", "scenarios"):
        if provenance.get(key) is not None and not isinstance(provenance[key], Mapping):
            raise RunDirError(
                f"{source}: 'provenance.{key}' is {_type(provenance[key])}, not an object; "
                f"{_REWRITE}"
            )
    for suite, info in (provenance.get("scenarios") or {}).items():
        if not isinstance(info, Mapping):
            raise RunDirError(
                f"{source}: 'provenance.scenarios' entry {str(suite)[:40]!r} is {_type(info)}, "
                f"not an object; {_REWRITE}"
            )
    return data


def load_summary(run_dir: Path) -> dict[str, Any]:
    """``run_dir/summary.json`` (or ``run_dir`` itself when it is a file), validated.

    Raises:
        RunDirError: The file is missing, not a regular file, too large, not JSON, or not a
            summary (see :func:`validate_summary`).
    """
    run_dir = Path(run_dir)
    path = run_dir / "summary.json" if run_dir.is_dir() else run_dir
    if not path.exists():
        raise RunDirError(f"{run_dir} is not a run directory: summary.json is missing")
    try:
        with open_input_file(path, what="summary.json") as handle:
            text = handle.read_text()
    except InputFileError as exc:
        raise RunDirError(str(exc)) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RunDirError(
            f"{path} is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); {_REWRITE}"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise RunDirError(
            f"{path} is not a run summary ({type(exc).__name__}); {_REWRITE}"
        ) from None
    return upgrade_summary(validate_summary(data, str(path)))


def load_probes(run_dir: Path) -> list[dict[str, Any]]:
    """``run_dir/results.jsonl`` (one row per probe), or ``[]`` when the file is absent.

    Raises:
        RunDirError: The file is not a regular file, or a line is not a probe row (the
            message names the line and what is wrong).
    """
    path = run_dir / "results.jsonl"
    return list(_iter_jsonl(path, _PROBE_FIELDS)) if path.exists() else []


def _iter_jsonl(path: Path, fields: Mapping[str, tuple[type, ...]]) -> Iterator[dict[str, Any]]:
    """The rows of a run's JSONL file, each an object with ``fields`` of the right types."""
    try:
        with open_input_file(path, what=path.name) as handle:
            for line in handle.lines():
                if line.text.strip():
                    yield _row(line, path, fields)
    except InputFileError as exc:
        raise RunDirError(str(exc)) from None


def _row(line: InputLine, path: Path, fields: Mapping[str, tuple[type, ...]]) -> dict[str, Any]:
    where = f"{path}:{line.number}"
    try:
        row = json.loads(line.text)
    except json.JSONDecodeError as exc:
        raise RunDirError(
            f"{where}: not JSON ({exc.msg} at column {exc.colno}); {_REWRITE}"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise RunDirError(f"{where}: not a row ({type(exc).__name__}); {_REWRITE}") from None
    if not isinstance(row, dict):
        raise RunDirError(f"{where}: the row is {_type(row)}, not an object; {_REWRITE}")
    for key, types in fields.items():
        value = row.get(key)
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            raise RunDirError(
                f"{where}: {key!r} is {_type(value)}, want {_WANT[types[0]]}; {_REWRITE}"
            )
    events = row.get("events")
    if events is not None and not (
        isinstance(events, list) and all(isinstance(e, str) for e in events)
    ):
        raise RunDirError(
            f"{where}: 'events' is {_type(events)}, want a list of strings; {_REWRITE}"
        )
    return row


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
    return list(summary.get("pooled", []))


def headline_table(summary: Mapping[str, Any]) -> Table:
    """Strategy × embedding over all suites, every headline metric."""
    header = (
        "strategy", "embedding", "recall accuracy (95 % CI)", "fit", "tool accuracy",
        "evidence recall", "stale rate", "tokens/call", "recall tokens", "LLM tokens",
        "cost (USD)", "cache hits", "hook p50/p95 (ms)", "compactions", "trims", "violations",
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
    records = all_records(summary)
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
    widths = [max([len(h), *(len(r[i]) for r in table.rows)]) for i, h in enumerate(table.header)]
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


def _frontier_section(
    summary: Mapping[str, Any], charts: Sequence[Any]
) -> tuple[Table, str, Any, list[Any]]:
    """The frontier's table and reading, its chart (or None) and the other charts."""
    points = frontier(_all_records(summary))
    chart = next((c for c in charts if c.path.name == FRONTIER_CHART), None)
    others = [c for c in charts if c is not chart]
    return Table(*frontier_table(points)), frontier_reading(points), chart, others


def _md(
    summary: Mapping[str, Any], checks: Sequence[Check], charts: Sequence[Any], note: str
) -> str:
    table, reading, chart, charts = _frontier_section(summary, charts)
    figure = f"![{chart.title}]({CHARTS_DIR}/{chart.path.name})\n\n{chart.caption}" if chart else ""
    parts = [
        "# memctx evaluation report",
        "All suites, one row per strategy × embedding. Recall accuracy counts probes whose "
        "context holds an expected answer (full: only probes whose context fits its window).",
        _md_table(headline_table(summary)),
        *[said for said in [summary_model_note(summary)] if said],
        "## Recall accuracy by suite",
        _md_table(suite_table(summary)),
        "## Checks",
        "\n".join(f"- **{c.verdict}**: {c.text}" for c in checks),
        "## Cost vs accuracy frontier",
        FRONTIER_NOTE,
        *([figure] if figure else []),
        _md_table(table),
        reading,
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
    table, reading, frontier_chart, charts = _frontier_section(summary, charts)
    figures = []
    for chart in [frontier_chart, *charts]:
        data = base64.b64encode(chart.path.read_bytes()).decode("ascii") if chart else ""
        figures.append(
            f'<figure><img src="data:image/png;base64,{data}" alt="{esc(chart.title)}">'
            f"<figcaption>{esc(chart.caption)}</figcaption></figure>"
            if chart
            else ""  # no frontier chart: the section keeps its table
        )
    check_items = "".join(
        f'<li><span class="{c.verdict.replace("/", "").lower()}">{c.verdict}</span>: '
        f"{esc(c.text)}</li>"
        for c in checks
    )
    provenance = "".join(f"<li>{esc(line)}</li>" for line in _provenance_lines(summary))
    said = summary_model_note(summary)
    model_note = f"<p>{esc(said)}</p>" if said else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>memctx evaluation report</title><style>{_CSS}</style></head><body>"
        "<h1>memctx evaluation report</h1>"
        "<p>All suites, one row per strategy × embedding. Recall accuracy counts probes whose "
        "context holds an expected answer (full: only probes whose context fits its window)."
        f"</p>{_html_table(headline_table(summary))}{model_note}"
        f"<h2>Recall accuracy by suite</h2>{_html_table(suite_table(summary))}"
        f"<h2>Checks</h2><ul>{check_items}</ul>"
        f"<h2>Cost vs accuracy frontier</h2><p>{esc(FRONTIER_NOTE)}</p>{figures[0]}"
        f"{_html_table(table)}<p>{esc(reading)}</p>"
        f"<h2>Charts</h2>{''.join(figures[1:]) or f'<p>{esc(note)}</p>'}"
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
    key = pick_session(_iter_jsonl(trace, _CALL_FIELDS))
    session = session_calls(_iter_jsonl(trace, _CALL_FIELDS), key) if key else []
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
    md.write_text(_md(summary, checks, charts, note) + real_data_md(run_dir), encoding="utf-8")
    page = run_dir / "report.html"
    page_html = _html(summary, checks, charts, note)
    page_html = page_html.replace("</body></html>", real_data_html(run_dir) + "</body></html>")
    page.write_text(page_html, encoding="utf-8")
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
    run_dir = Path(args.run_dir)
    try:
        written = write_report(run_dir)
        table = format_terminal_table(load_summary(run_dir), load_probes(run_dir))
    except RunDirError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(
            f"cannot write the report into {run_dir}: {exc.strerror or type(exc).__name__} "
            f"({exc.filename}); make the folder writable or copy the run somewhere that is"
        )
    print(table)
    print("\nwrote " + ", ".join(str(p) for p in written))
    return 0


def _fail(message: str) -> int:
    """Print ``message`` as the command line's one-line error; the exit status 2."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    print(f"memctx: error: {'; '.join(lines)}", file=sys.stderr)
    return 2

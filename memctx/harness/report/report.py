"""The report of one evaluation run: ``report.md``, a self-contained ``report.html``, charts,
and ``memctx report``.

Everything is rendered from the run directory's files (``summary.json``, ``results.jsonl``,
``trace.jsonl``), so ``memctx report RUN_DIR`` re-renders a report without re-running
anything; ``--baseline`` adds the deltas against another run. The parts are computed once
(:mod:`.parts`) and rendered by :mod:`.markdown` and :mod:`.page`; the files are read by
:mod:`.loading`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..comparability import run_differences
from ..outcomes import probe_rows_of
from .baseline import BaselineSection, baseline_section, read_baseline
from .checks import run_checks
from .figures import Chart
from .loading import (
    RUN_FILES,
    RunDirError,
    iter_calls,
    load_probes,
    load_summary,
    require_run_dir,
    validate_summary,
)
from .markdown import CHARTS_DIR, report_markdown
from .page import report_html
from .parts import gather
from .real_data import locomo_chart, real_data_html, real_data_md, real_suite_table, real_suites
from .recommend import recommend
from .replicates import replicate_section
from .tables import Table, headline_table, suite_table, terminal_table, text_table

__all__ = [
    "RUN_FILES",
    "RunDirError",
    "Table",
    "format_terminal_table",
    "headline_table",
    "load_probes",
    "load_summary",
    "report_main",
    "suite_table",
    "validate_summary",
    "write_report",
]

Baseline = str | Path | Mapping[str, Any]


def format_terminal_table(
    summary: Mapping[str, Any], probes: Sequence[Mapping[str, Any]] | None = None
) -> str:
    """The table printed after ``memctx eval``: the synthetic suites pooled per strategy
    (left out for a run of real data alone), each real-data suite's own, the checks and the
    recommendation in a sentence (``probes``, the results.jsonl rows, make the full-ceiling
    check compare like with like and the comparisons of configurations paired); a run with
    replicates adds each configuration's accuracy per replicate."""
    checks = "\n".join(f"{c.verdict:<4}  {c.text}" for c in run_checks(summary, probes))
    reco = recommend(summary, probes)
    real = real_suites(summary)
    # A run of real data alone has no pooled record: its suites' tables say it all.
    real_only = bool(real) and len(real) == len({r["suite"] for r in summary["records"]})
    tables = [] if real_only else [text_table(terminal_table(summary))]
    tables += [
        f"{suite} (real data, not pooled):\n{text_table(real_suite_table(summary, suite))}"
        for suite in real
    ]
    replicates = replicate_section(summary)
    if replicates is not None:  # the rest is replicate 0's: say how far the others moved
        tables.append(
            "Across replicates (pooled recall accuracy per replicate; report.md says more):\n"
            + text_table(replicates.pooled)
        )
    return "\n\n".join([*tables, checks, reco.headline])


def _charts(run_dir: Path, summary: Mapping[str, Any]) -> tuple[list[Chart], str]:
    try:
        from .charts import pick_session, session_calls, write_charts
    except ImportError as exc:  # pragma: no cover - matplotlib is a dependency
        return [], f"Charts skipped: {exc}."
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return [], "Charts skipped: matplotlib is not installed (pip install matplotlib)."
    key = pick_session(iter_calls(run_dir))
    session = session_calls(iter_calls(run_dir), key) if key else []
    charts = write_charts(summary, session, run_dir / CHARTS_DIR)
    _locomo_chart(run_dir)  # shown in the Real data section, not among these
    return charts, "No chart: the run has no data."


def _locomo_chart(run_dir: Path) -> Chart | None:
    """Draw LoCoMo's evidence-recall chart from the run's ``locomo.json`` (the LoCoMo
    suite's own table), when it has one."""
    path = run_dir / "locomo.json"
    if not path.is_file():
        return None
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunDirError(
            f"{path} is not the LoCoMo suite's table ({exc}); re-run `memctx eval --suite "
            "locomo --out DIR` to write it again"
        ) from None
    if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
        raise RunDirError(f"{path} holds no list of rows; re-run `memctx eval --suite locomo`")
    return locomo_chart(rows, run_dir / CHARTS_DIR)


def _baseline(
    summary: Mapping[str, Any],
    baseline: Baseline | None,
    probes: Sequence[Mapping[str, Any]] | None = None,
    allow_different_scenarios: bool = False,
) -> BaselineSection | None:
    if baseline is None:
        return None
    if isinstance(baseline, Mapping):
        base, name = dict(baseline), str(baseline.get("run") or "the baseline")
        rows = None
    else:
        base, name = read_baseline(baseline)
        rows = probe_rows_of(baseline)
    pairs = None if rows is None or not probes else (rows, probes)
    return baseline_section(
        summary, base, name, probes=pairs, allow_different_scenarios=allow_different_scenarios
    )


def write_report(
    run_dir: Path, baseline: Baseline | None = None, *, allow_different_scenarios: bool = False
) -> list[Path]:
    """Render ``report.md``, ``report.html`` and the charts of ``run_dir``.

    Args:
        run_dir: A run directory (``memctx eval --out``).
        baseline: Another run to show deltas against: its folder, its summary JSON, its id
            under ``reports/runs``, ``latest``, or its summary as a mapping; None for none.
            A baseline of other scenarios gets a "cannot compare" notice, not deltas.
        allow_different_scenarios: Show the deltas against a baseline of other scenarios
            anyway (the section says what differs).

    Returns:
        The files written: report.md, report.html, then the chart PNGs.

    Raises:
        RunDirError: ``run_dir`` lacks one of :data:`RUN_FILES`, a file is not what
            ``memctx eval`` writes, or the baseline cannot be read (the message says which).
    """
    run_dir = Path(run_dir)
    require_run_dir(run_dir)
    summary = load_summary(run_dir)
    probes = load_probes(run_dir)
    section = _baseline(summary, baseline, probes, allow_different_scenarios)
    charts, note = _charts(run_dir, summary)
    parts = gather(summary, probes, charts, note, section)
    md = run_dir / "report.md"
    md.write_text(report_markdown(parts) + real_data_md(run_dir, summary), encoding="utf-8")
    page = run_dir / "report.html"
    page.write_text(report_html(parts, real_data_html(run_dir, summary)), encoding="utf-8")
    return [md, page, *(c.path for c in charts)]


def report_main(argv: Sequence[str]) -> int:
    """``memctx report RUN_DIR [--baseline RUN_OR_SUMMARY]``: re-render a run's report;
    exit 0, or 2 on a bad folder or baseline, or a baseline of other scenarios (the report
    is written, its baseline section saying why it does not compare)."""
    parser = argparse.ArgumentParser(
        prog="memctx report",
        description="Re-render report.md, report.html and the charts of a run directory "
        "from its summary.json, results.jsonl and trace.jsonl.",
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a directory written by memctx eval")
    parser.add_argument(
        "--baseline",
        metavar="RUN_OR_SUMMARY",
        help="add deltas against another run: its folder, its summary.json, its id under "
        "reports/runs, or latest",
    )
    parser.add_argument(
        "--allow-different-scenarios",
        action="store_true",
        help="with --baseline: show the deltas even when the two runs did not play the same "
        "scenarios (other suites or checksums, --quick against a full run, other --window, "
        "--llm or --answer-model); without it the section says what differs and the exit "
        "status is 2",
    )
    args = parser.parse_args(list(argv))
    run_dir = Path(args.run_dir)
    allow = bool(args.allow_different_scenarios)
    try:
        written = write_report(run_dir, baseline=args.baseline, allow_different_scenarios=allow)
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
    if args.baseline and not allow:
        setup = run_differences(read_baseline(args.baseline)[0], load_summary(run_dir))
        if not setup.comparable:
            print(f"memctx: {setup.refusal()}", file=sys.stderr)
            return 2
    return 0


def _fail(message: str) -> int:
    """Print ``message`` as the command line's one-line error; the exit status 2."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    print(f"memctx: error: {'; '.join(lines)}", file=sys.stderr)
    return 2

"""``memctx compare RUN_A RUN_B``: what changed between two finished runs.

RUN_A is the baseline (before), RUN_B the run to judge (after); each is a run folder, its
``summary.json`` (or any JSON file holding a run summary, such as a committed baseline), a
run id under ``reports/runs`` (or a unique prefix of one) or ``latest``. The terminal shows a
table per metric: per suite × strategy × embedding, A, B and the change, with 95 % intervals
and ``*`` on the shares whose change is beyond the noise
(:func:`memctx.harness.compare_runs`: probe by probe where both runs' ``results.jsonl`` cover
the same scenarios, else the gate's ``ci`` rule over the two intervals). Pooled
rows (``all``) are compared only over the same suites; rows of only one run are listed once.
``--md FILE`` and ``--html FILE`` also write the comparison as Markdown and as a
self-contained HTML page.

The output opens with a one-line verdict (:func:`memctx.harness.deltas.verdict_of`): per
strategy × embedding, whether B is better or worse than A beyond noise. Two runs that did
not play the same scenarios (other suites, other checksums, ``--quick`` against a full run,
other windows, another ``--llm`` or answer model: :mod:`memctx.harness.comparability`) are
not compared: the verdict is "cannot compare: ...", each difference is named with its fix,
and the exit status is 2, unless ``--allow-different-scenarios`` asks to compare anyway.

Exit 0, or 2 on bad input (one line naming the fix) or runs that cannot be compared.
Comparing never fails a run: gating is ``memctx eval --baseline``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .options import OptionError, describe_os_error, fail

if TYPE_CHECKING:
    from memctx.harness import Delta, Verdict

__all__ = ["add_compare_arguments", "compare_command"]

_RUN_FORMS = "a run folder, its summary.json, a run id under reports/runs, or latest"


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``memctx compare`` (every one documented in ``--help``)."""
    from memctx.harness import COMPARE_METRICS, DEFAULT_COMPARE_METRICS

    parser.description = (
        "Per suite x strategy x embedding deltas between two finished runs: A (the baseline, "
        "before) and B (after), with 95 % intervals and * where a share of probes changed "
        "beyond the noise. Pooled rows (all) are compared only over the same suites. The "
        "output opens with a one-line verdict: per strategy x embedding, better, worse or "
        "within noise; or 'cannot compare' (exit 2) when A and B did not play the same "
        "scenarios."
    )
    parser.add_argument("run_a", metavar="RUN_A", help=f"the baseline (before): {_RUN_FORMS}")
    parser.add_argument("run_b", metavar="RUN_B", help="the run to judge (after): same forms")
    parser.add_argument(
        "--metric",
        action="append",
        metavar="NAME",
        help="metric to show (repeatable, or comma-separated; default: "
        f"{','.join(DEFAULT_COMPARE_METRICS)}); one of: {', '.join(COMPARE_METRICS)}",
    )
    parser.add_argument(
        "--md", metavar="FILE", help="also write the comparison to FILE as Markdown"
    )
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="also write FILE: a self-contained HTML page with one table that scrolls "
        "sideways with suite, strategy and embedding kept in view",
    )
    parser.add_argument(
        "--allow-different-scenarios",
        action="store_true",
        help="compare even when A and B did not play the same scenarios (other suites, other "
        "scenario checksums, --quick against a full run, other --window, --llm or "
        "--answer-model): without it such runs are not compared (exit 2, naming each "
        "difference)",
    )
    parser.add_argument(
        "--reports",
        default="reports",
        metavar="DIR",
        help="the reports folder run ids and latest are looked up in (default: reports)",
    )


def _metrics(values: Sequence[str] | None) -> list[str] | None:
    """The ``--metric`` names, checked; ``None`` for the defaults."""
    from memctx.harness import COMPARE_METRICS

    if not values:
        return None
    names = [name.strip() for value in values for name in value.split(",") if name.strip()]
    for name in names:
        if name not in COMPARE_METRICS:
            raise OptionError(
                f"--metric: unknown metric {name!r}; choose from {', '.join(COMPARE_METRICS)}"
            )
    if not names:
        raise OptionError("--metric: no metric named; e.g. --metric recall_accuracy")
    return list(dict.fromkeys(names))


def _label(spec: str, summary: Mapping[str, Any]) -> str:
    """What a run is: the argument as given, its id and configuration when it has them."""
    parts = [f"run {summary['run']}"] if summary.get("run") else []
    if summary.get("config_label"):
        parts.append(f"config {summary['config_label']}")
    return f"{spec} ({', '.join(parts)})" if parts else spec


def compare_command(args: argparse.Namespace) -> int:
    """Run ``memctx compare``; exit 0, or 2 on bad input or runs that cannot be compared."""
    from memctx.harness import (
        DEFAULT_COMPARE_METRICS,
        compare_runs,
        comparison_notes,
        format_deltas_md,
        format_deltas_text,
        paired_note,
        probe_rows_of,
        read_summary,
        run_differences,
        verdict_of,
    )

    metrics = _metrics(args.metric)
    reports = Path(args.reports)
    try:
        before = read_summary(args.run_a, reports=reports, what="RUN_A")
        after = read_summary(args.run_b, reports=reports, what="RUN_B")
    except ValueError as exc:
        return fail(str(exc))
    costs = any(m in ("cost_usd", "cost_per_call") for m in metrics or DEFAULT_COMPARE_METRICS)
    setup = run_differences(before, after, names=("A", "B"), costs=costs)
    allowed = bool(args.allow_different_scenarios)
    heading = f"A = {_label(args.run_a, before)}\nB = {_label(args.run_b, after)}"
    if not setup.comparable and not allowed:
        verdict = verdict_of([], setup=setup)
        refusal = setup.refusal_lines()
        listed = "\n".join(f"- {line}" for line in refusal)
        print(f"{verdict.text}\n{heading}\n\n{listed}")
        return _write_outputs(args, heading, verdict, f"{listed}\n", refusal=refusal) or 2
    rows = (probe_rows_of(args.run_a, reports), probe_rows_of(args.run_b, reports))
    probes = None if rows[0] is None or rows[1] is None else (rows[0], rows[1])
    deltas = compare_runs(before, after, metrics, probes=probes)
    verdict = verdict_of(deltas, before="A", after="B", setup=setup, allowed=allowed)
    notes = [*setup.lines(), *comparison_notes(before, after, before_name="A", after_name="B")]
    notes.append(paired_note(deltas))
    text = format_deltas_text(deltas, notes, before="A", after="B")
    print(f"{verdict.text}\n{heading}\n\n{text}")
    body = format_deltas_md(deltas, notes, before="A", after="B")
    return _write_outputs(args, heading, verdict, body, deltas=deltas, notes=notes)


def _write_outputs(
    args: argparse.Namespace,
    heading: str,
    verdict: Verdict,
    body: str,
    *,
    deltas: Sequence[Delta] = (),
    notes: Sequence[str] = (),
    refusal: Sequence[str] = (),
) -> int:
    """``--md`` (``body`` under the verdict and the heading) and ``--html``, each opening
    with the verdict; 0, or 2 when one cannot be written."""
    from memctx.harness import deltas_html_page, verdict_md

    outputs = []
    if args.md:
        head = "# memctx compare\n\n" + verdict_md(verdict) + "\n\n"
        head += "".join(f"- {line}\n" for line in heading.splitlines())
        outputs.append((Path(args.md), "Markdown", f"{head}\n{body}"))
    if args.html:
        page = deltas_html_page(
            deltas,
            notes,
            before="A",
            after="B",
            title="memctx compare",
            subtitle=heading.replace("\n", "; "),
            verdict=verdict,
            refusal=refusal,
        )
        outputs.append((Path(args.html), "HTML", page))
    for path, kind, text in outputs:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            return fail(describe_os_error(exc))
        print(f"{kind}: {path}")
    return 0

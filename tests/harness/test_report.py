"""The run report: tables, checks, self-contained HTML, terminal table, ``memctx report``."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers.synthetic_run import SUITES, SyntheticRun, build_run, write_run

from memctx.harness.report.intervals import share_of
from memctx.harness.report.notes import summary_model_note
from memctx.harness.report.report import (
    RunDirError,
    format_terminal_table,
    headline_table,
    report_main,
    suite_table,
    validate_summary,
    write_report,
)


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> tuple[SyntheticRun, Path, list[Path]]:
    run = build_run()
    run_dir = write_run(tmp_path_factory.mktemp("report") / "run", run)
    return run, run_dir, write_report(run_dir)


BASELINE = Path(__file__).resolve().parents[2] / "reports" / "baseline" / "summary.json"


def _pct(value: float) -> str:
    return f"{100 * value:.1f} %"


def _keep(run: SyntheticRun, keep: Any) -> SyntheticRun:
    """``run`` with only the records (per suite and pooled) for which ``keep(record)``."""
    for part in ("records", "pooled"):
        run.summary[part] = [r for r in run.summary[part] if keep(r)]
    return run


def test_write_report_writes_markdown_html_and_charts(
    reported: tuple[SyntheticRun, Path, list[Path]],
) -> None:
    _, run_dir, written = reported
    assert written[:2] == [run_dir / "report.md", run_dir / "report.html"]
    assert [p.name for p in written[2:]] == [
        "recall_vs_tokens.png",
        "cost.png",
        "frontier.png",
        "accuracy_by_suite.png",
        "hash_vs_transformer.png",
        "hook_latency.png",
        "tokens_over_calls.png",
    ]
    assert all(p.stat().st_size > 0 for p in written)


def test_markdown_tables_hold_the_numbers(reported: tuple[SyntheticRun, Path, list[Path]]) -> None:
    run, run_dir, _ = reported
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    mc = run.record("all", "memory-context", "hash")
    assert f"| memory-context | hash | {share_of(mc).text(n=False)} |" in md
    assert f"${mc['cost_usd'] / mc['calls']:,.5f}" in md and f"{mc['tokens_per_call']:,.0f}" in md
    assert "3.5 / 11.0" in md  # hook p50 / p95
    full = run.record("all", "full", "none")
    assert f"| {full['fit']} / {full['probes']} |" in md
    for suite in SUITES:
        cell = share_of(run.record(suite, "truncate", "none")).text()
        assert cell.endswith(" n=24")
        assert re.search(rf"\| {suite} \| 24 \| [^\n]*{re.escape(cell)}", md)
    assert "## Provenance" in md and "0123456789abcdef" in md and "litellm 1.106.2" in md
    assert "![Recall accuracy vs tokens per call](charts/recall_vs_tokens.png)" in md


def test_checks_pass_on_a_good_run(reported: tuple[SyntheticRun, Path, list[Path]]) -> None:
    _, run_dir, _ = reported
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    checks = md.split("## Checks", 1)[1].split("##", 1)[0]
    assert "memory-context × hash beats truncate on recall accuracy: " in checks
    assert "ahead beyond noise in 9 of 9 suites." in checks
    assert "full fits 144 of 216 probes; on those it answers 100.0 %" in checks
    assert "full is the ceiling: every other strategy answers fewer." in checks
    assert "0 violations in all 36 records" in checks
    assert "FAIL" not in checks and "N/A" not in checks


def test_checks_fail_only_where_memory_context_loses_beyond_noise(tmp_path: Path) -> None:
    run = build_run()
    cjk = run.record("cjk", "memory-context", "hash")
    cjk.update(recall_accuracy=0.05, recall_accuracy_ci=[0.0, 0.15])  # truncate: ~0.35 of 24
    secrets = run.record("secrets", "memory-context", "hash")
    truncate = run.record("secrets", "truncate", "none")
    secrets.update(
        recall_accuracy=truncate["recall_accuracy"],
        recall_accuracy_ci=truncate["recall_accuracy_ci"],
    )
    run.record("needle", "memory-context", "hash").update(
        violations=3, violation_kinds={"pairing": 2, "hard_cap": 0, "window": 1, "secrets": 0}
    )
    run_dir = write_run(tmp_path / "run", run)
    write_report(run_dir)
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    lost = (
        f"- **FAIL**: memory-context × hash is behind truncate beyond noise in cjk (5.0 % vs "
        f"{_pct(run.record('cjk', 'truncate', 'none')['recall_accuracy'])}, n=24 each); "
        "ahead beyond noise in 7 of 9 suites; not distinguishable in secrets ("
    )
    assert lost in md
    tie = _pct(truncate["recall_accuracy"])
    assert f"secrets ({tie} vs {tie}, n=24 each: a tie)." in md  # a tie is said, not failed
    assert "- **PASS**: memory-context × transformer beats truncate" in md
    assert "- **FAIL**: violations in needle memory-context × hash: 3 (pairing 2, window 1)." in md
    terminal = format_terminal_table(run.summary)
    assert "FAIL  memory-context × hash is behind truncate beyond noise in cjk" in terminal


def test_checks_say_when_something_beats_full_on_its_fitted_probes(tmp_path: Path) -> None:
    run = build_run()
    for row in run.probes:  # full misses a probe it fits that truncate answers
        if row["suite"] == "needle" and row["probe"].endswith("p01"):
            row["recall_accuracy"] = row["strategy"] == "truncate"
    run_dir = write_run(tmp_path / "run", run)
    write_report(run_dir)
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "- **FAIL**: full fits 144 of 216 probes" in md
    assert "full misses 1 probe(s) it fits" in md
    assert "full is not the ceiling: other strategies answer fitted probes full misses in " in md
    assert "misses in needle: truncate 1." in md


def test_html_is_self_contained(reported: tuple[SyntheticRun, Path, list[Path]]) -> None:
    _, run_dir, written = reported
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "<link" not in page and "<script" not in page
    assert page.count('src="data:image/png;base64,iVBORw0KGgo') == len(written) - 2
    assert "<th>recall accuracy (95 % interval)</th>" in page
    assert "memory-context × transformer" in page
    assert '<span class="pass">PASS</span>' in page


def test_report_is_byte_stable(reported: tuple[SyntheticRun, Path, list[Path]]) -> None:
    _, run_dir, written = reported
    before = {p: p.read_bytes() for p in written}
    assert write_report(run_dir) == written
    assert {p: p.read_bytes() for p in written} == before


def test_tables_cope_with_missing_values_and_embeddings(tmp_path: Path) -> None:
    run = _keep(build_run(), lambda r: r["embedding"] != "transformer")
    run.record("all", "full", "none").update(recall_accuracy=None, recall_accuracy_ci=None)
    run.record("all", "truncate", "none")["hook_p95_ms"] = None
    headline = headline_table(run.summary)
    assert headline.rows[0][2] == "n/a" and headline.rows[1][12] == "n/a"
    assert suite_table(run.summary).header == ("suite", "probes", "full", "truncate",
                                                "memory-context × hash")  # fmt: skip
    run.record("cjk", "full", "none").update(fit=0, recall_accuracy=None, recall_accuracy_ci=[])
    cjk = next(row for row in suite_table(run.summary).rows if row[0] == "cjk")
    assert cjk[2] == "none fitted"
    run_dir = write_run(tmp_path / "run", run)
    (run_dir / "charts").mkdir()
    (run_dir / "charts" / "hash_vs_transformer.png").write_bytes(b"stale")
    names = [p.name for p in write_report(run_dir)]
    assert "hash_vs_transformer.png" not in names
    assert not (run_dir / "charts" / "hash_vs_transformer.png").exists()


def test_terminal_table(reported: tuple[SyntheticRun, Path, list[Path]]) -> None:
    run, _, _ = reported
    text = format_terminal_table(run.summary)
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["strategy", "embedding", "recall"]
    assert [line.split()[0] for line in lines[2:6]] == [
        "full",
        "truncate",
        "memory-context",
        "memory-context",
    ]
    assert _pct(run.record("all", "memory-context", "transformer")["recall_accuracy"]) in text
    assert "PASS  memory-context × hash beats truncate" in text
    assert max(len(line) for line in lines[:6]) < 200
    assert lines[-1].startswith("Pick memory-context × ")  # the recommendation, last


def test_report_main_rerenders_and_rejects_non_run_dirs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = write_run(tmp_path / "run")
    assert report_main([str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "memory-context" in out and "report.html" in out
    assert (run_dir / "report.md").exists()

    assert report_main([str(tmp_path / "missing")]) == 2
    assert "no such folder" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert report_main([str(empty)]) == 2
    assert "summary.json is missing" in capsys.readouterr().err
    (run_dir / "trace.jsonl").unlink()
    assert report_main([str(run_dir)]) == 2
    assert "trace.jsonl is missing" in capsys.readouterr().err
    with pytest.raises(RunDirError, match=r"trace\.jsonl"):
        write_report(run_dir)
    with pytest.raises(SystemExit):
        report_main(["--help"])
    out = capsys.readouterr().out
    assert "RUN_DIR" in out and "--baseline RUN_OR_SUMMARY" in out


def test_terminal_checks_compare_full_from_the_records_alone() -> None:
    run = build_run()
    run.record("long-haul", "full", "none").update(recall_accuracy=0.5, recall_accuracy_ci=[])
    text = format_terminal_table(run.summary)
    assert (
        "FAIL  full's accuracy on the probes it fits is beaten beyond noise in long-haul (" in text
    )
    assert "over different probe sets" in text
    # Within noise (a few points on 16 probes) it is said, not failed.
    run.record("long-haul", "full", "none").update(recall_accuracy=0.9375, recall_accuracy_ci=[])
    text = format_terminal_table(run.summary)
    assert (
        "PASS  no strategy is ahead of full beyond noise in any suite; ahead within noise: " in text
    )
    assert "long-haul (memory-context × " in text


@pytest.mark.parametrize(
    ("summary", "said"),
    [
        ('{"records": []}', "holds no records (its 'records' list is empty)"),
        ("[{}]", "holds a list, not an object with a 'records' list"),
        ('{"records": [{}]}', "records[0] has no 'suite' string (it is null)"),
        ('{"records": [{"suite": "all", "strategy": "x"}]}', "no 'embedding' string"),
    ],
)
def test_report_main_rejects_a_summary_of_the_wrong_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], summary: str, said: str
) -> None:
    run_dir = write_run(tmp_path / "run")
    (run_dir / "summary.json").write_text(summary, encoding="utf-8")
    assert report_main([str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memctx: error: ") and err.count("\n") == 1
    assert said in err and "re-run `memctx eval" in err
    with pytest.raises(RunDirError, match=re.escape(said)):
        write_report(run_dir)
    assert not (run_dir / "report.md").exists()


def test_validate_summary_accepts_a_real_run_and_names_bad_fields() -> None:
    run = build_run()
    assert validate_summary(run.summary, "s.json") is run.summary
    record = dict(run.summary["records"][0])
    for key, value, said in [
        ("recall_accuracy", "high", "'recall_accuracy' is a string, want a number or null"),
        ("cost_usd", True, "'cost_usd' is a boolean"),
        ("recall_accuracy_ci", [0.1, "x"], "want a list of two numbers"),
        ("violation_kinds", {"pairing": "many"}, "want an object of counts"),
        ("strategy", "", "no 'strategy' string"),
    ]:
        bad = {**run.summary, "records": [{**record, key: value}]}
        with pytest.raises(RunDirError, match=re.escape("s.json: records[0]")) as info:
            validate_summary(bad, "s.json")
        assert said in str(info.value)
    for key, value in [("timing", 3), ("config", [])]:
        with pytest.raises(RunDirError, match=f"'{key}' is"):
            validate_summary({**run.summary, key: value}, "s.json")


def test_tables_without_pooled_records_are_empty_not_a_crash() -> None:
    run = build_run()
    summary = {**run.summary, "pooled": []}
    text = format_terminal_table(summary)
    assert text.splitlines()[0].startswith("strategy") and headline_table(summary).rows == ()
    assert text.rstrip().endswith("none has a recall accuracy over every probe and a cost.")


_OFFLINE_NOTE = (
    "Summaries in this run were written by memctx/offline, memctx's deterministic rule-based "
    "model (state snapshots read from the transcript): summary-based strategies "
    "(memory-context) are measured with its summaries, not with an LLM's."
)


def _with_masking(run: SyntheticRun) -> SyntheticRun:
    """``run`` plus an ``observation-masking`` pair (truncate's rows under its name)."""
    for part in ("records", "pooled"):
        records = run.summary[part]
        records += [
            dict(r, strategy="observation-masking") for r in records if r["strategy"] == "truncate"
        ]
    run.probes += [
        dict(p, strategy="observation-masking") for p in run.probes if p["strategy"] == "truncate"
    ]
    run.calls += [
        dict(c, strategy="observation-masking") for c in run.calls if c["strategy"] == "truncate"
    ]
    return run


def test_the_report_says_the_offline_model_wrote_the_summaries(
    reported: tuple[SyntheticRun, Path, list[Path]],
) -> None:
    _, run_dir, _ = reported
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    headline, _, rest = md.partition("## Recall accuracy by suite")
    assert headline.rstrip().endswith(_OFFLINE_NOTE) and _OFFLINE_NOTE not in rest
    assert md.count(_OFFLINE_NOTE) == 1
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert html.escape(_OFFLINE_NOTE) in page.split("<h2>Recall accuracy by suite</h2>")[0]


@pytest.mark.parametrize(
    "change",
    ["no summary strategy", "no compaction", "another model", "summaries by the recorded agent"],
)
def test_the_summary_sentence_appears_only_when_it_is_true(change: str) -> None:
    run = build_run()
    records = run.summary["records"] + run.summary["pooled"]
    if change == "no summary strategy":
        _keep(run, lambda r: r["strategy"] != "memory-context")
    elif change == "no compaction":  # summary-based, but no summary was ever written
        for record in records:
            record["compactions"] = 0
    elif change == "another model":
        run.summary["config"]["overrides"] = {"extractionModel": "anthropic/claude-haiku-4-5"}
    else:  # the hook strategy replays the compactions a transcript records, writes none
        for record in records:
            if record["strategy"] == "memory-context":
                record["strategy"] = "memory-context-hook"
    note = summary_model_note(run.summary)
    if change == "another model":
        assert note == (
            "Summaries in this run were written by anthropic/claude-haiku-4-5 (extractionModel): "
            "summary-based strategies (memory-context) are measured with that model's summaries."
        )
    else:
        assert note is None
    assert summary_model_note(build_run().summary) == _OFFLINE_NOTE


def test_a_fourth_strategy_in_the_tables_checks_and_terminal(tmp_path: Path) -> None:
    run = _with_masking(build_run())
    run_dir = write_run(tmp_path / "run", run)
    write_report(run_dir)
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "| observation-masking | none |" in md
    assert suite_table(run.summary).header[2:] == (
        "full", "truncate", "memory-context × hash", "memory-context × transformer",
        "observation-masking",
    )  # fmt: skip
    checks = md.split("## Checks", 1)[1].split("##", 1)[0]
    assert "FAIL" not in checks and "0 violations in all 45 records" in checks
    assert _OFFLINE_NOTE in md  # observation-masking writes no summary: still memory-context
    text = format_terminal_table(run.summary, run.probes)
    assert [line.split()[0] for line in text.splitlines()[2:7]] == [
        "full", "truncate", "memory-context", "memory-context", "observation-masking",
    ]  # fmt: skip
    assert "FAIL" not in text


def test_the_report_of_the_baseline_has_the_frontier_section(tmp_path: Path) -> None:
    run_dir = tmp_path / "baseline"
    run_dir.mkdir()
    shutil.copyfile(BASELINE, run_dir / "summary.json")
    for name in ("results.jsonl", "trace.jsonl"):  # the frontier needs the summary only
        (run_dir / name).write_text("", encoding="utf-8")
    written = write_report(run_dir)
    png = run_dir / "charts" / "frontier.png"
    assert png in written and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    section = md.split("## Cost vs accuracy frontier\n", 1)[1].split("\n## ", 1)[0]
    assert "![Cost vs recall accuracy: the frontier](charts/frontier.png)" in section
    assert "charts/frontier.png" not in md.split("## Charts", 1)[1]  # shown once, here
    for row in (
        "| meerkat × hash | $0.01243 | $100.5964 | 51.8 % (48–56) n=668 | on the frontier |",
        "| openclaw × transformer | $0.01591 | $128.7993 | 50.7 % (47–55) n=668 | dominated by "
        "meerkat × hash |",
        "| masking-recall × hash | $0.01879 | $152.1024 | 91.2 % (89–93) n=668 | on the frontier |",
        "| memory-context × hash | $0.02091 | $169.2460 | 85.5 % (83–88) n=668 | dominated by "
        "masking-recall × hash |",
        "| observation-masking | $0.02355 | $190.6614 | 51.0 % (47–55) n=668 | dominated by "
        "meerkat × hash |",
        "| planner | $0.01714 | $138.7206 | 17.4 % (15–20) n=668 | dominated by meerkat × hash |",
        "| full | $0.05148 | $416.6993 | 81.8 % (52–100) n=11 | not comparable: accuracy over "
        "11 of 668 probes only |",
        "| truncate | $0.05544 | $448.7660 | 15.7 % (13–19) n=668 | dominated by meerkat × hash |",
    ):
        assert row in section, row
    reading = "Not dominated: meerkat × hash, meerkat × transformer, masking-recall × hash."
    assert section.rstrip().endswith(reading)
    order = ["## Recommendation", "## Checks", "## Cost vs accuracy frontier", "## Charts",
             "## Provenance"]  # fmt: skip
    assert [md.index(h) for h in order] == sorted(md.index(h) for h in order)
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    part = page.split("<h2>Cost vs accuracy frontier</h2>", 1)[1].split("<h2>", 1)[0]
    assert 'alt="Cost vs recall accuracy: the frontier"' in part
    assert (
        '<td class="text">dominated by meerkat × hash</td>' in part and f"<p>{reading}</p>" in part
    )


def test_the_frontier_section_without_a_comparable_configuration(tmp_path: Path) -> None:
    run = _keep(build_run(), lambda r: r["strategy"] == "full")
    run_dir = write_run(tmp_path / "run", run)
    written = write_report(run_dir)
    assert "frontier.png" not in [p.name for p in written]
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    section = md.split("## Cost vs accuracy frontier\n", 1)[1].split("\n## ", 1)[0]
    assert "![" not in section
    assert "| full | $0.02700 |" in section and "accuracy over 144 of 216 probes only" in section
    assert section.rstrip().endswith(
        "No configuration can be compared on cost and accuracy in this run."
    )
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert page.count("<figure>") == len(written) - 2

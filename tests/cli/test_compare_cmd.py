"""``memctx compare RUN_A RUN_B``: terminal, Markdown, HTML, run lookup, bad input."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
from helpers.synthetic_run import build_run, write_run

from memctx.cli import main


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    """A baseline and a run where memory-context lost needle (hash and transformer)."""
    before = build_run()
    after = copy.deepcopy(before)
    for record in after.summary["records"]:
        if (record["suite"], record["strategy"]) == ("needle", "memory-context"):
            record.update(recall_accuracy=0.125, recall_accuracy_ci=[0.0, 0.25])
    after.summary["run"] = "20250102-000000-hardCapTokens=60"
    return write_run(tmp_path / "a", before), write_run(tmp_path / "b", after)


def test_terminal_table(runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, b = runs
    assert main(["compare", str(a), str(b / "summary.json")]) == 0
    out = capsys.readouterr().out
    verdict, rest = out.split("\n", 1)
    assert verdict == (
        "B is worse than A beyond noise in 2 configurations (memory-context/hash, "
        "memory-context/transformer), within noise in 2 (per strategy × embedding, on shares "
        "of probes and violations)"
    )
    assert rest.startswith(
        f"A = {a}\nB = {b / 'summary.json'} (run 20250102-000000-hardCapTokens=60"
    )
    for metric in ("recall_accuracy", "tool_accuracy", "cost_per_call (USD per call)"):
        assert f"\n{metric}\nsuite " in out
    marked = [line for line in out.splitlines() if line.endswith(" *")]
    assert [line.split()[:3] for line in marked] == [
        ["needle", "memory-context", "hash"],
        ["needle", "memory-context", "transformer"],
    ]


def test_markdown_and_html_files(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = runs
    md, page = tmp_path / "out" / "compare.md", tmp_path / "out" / "compare.html"
    assert main(["compare", str(a), str(b), "--md", str(md), "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert f"Markdown: {md}" in out and f"HTML: {page}" in out
    text = md.read_text(encoding="utf-8")
    assert text.startswith("# memctx compare\n\n**Verdict: B is worse than A beyond noise in 2 ")
    assert "**\n\n- A = " in text
    assert "### recall_accuracy" in text and "| needle | memory-context | hash |" in text
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "position: sticky" in html
    assert '<th colspan="3" class="group">recall_accuracy</th>' in html
    assert re.search(r'<td class="worse">-\d+\.\d pts \*</td>', html)
    opening = html.index('<p class="verdict worse">Verdict: B is worse than A beyond noise')
    assert opening < html.index("A = ") < html.index("<table>")


def test_chosen_metrics(runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, b = runs
    args = [
        "compare",
        str(a),
        str(b),
        "--metric",
        "recall_accuracy",
        "--metric",
        "cost_usd,llm_tokens",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    titles = [line for line in out.splitlines() if line and line[0].islower() and "  " not in line]
    assert titles[:3] == [
        "recall_accuracy",
        "cost_usd (USD, whole run)",
        "llm_tokens (tokens of summaries and extraction)",
    ]
    assert "tool_accuracy" not in out


def test_a_run_id_under_the_reports_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = tmp_path / "reports"
    write_run(reports / "runs" / "20250101-000000-default")
    write_run(reports / "runs" / "20250102-000000-quick")
    args = ["compare", "20250101", "20250102-000000-quick", "--reports", str(reports)]
    assert main(args) == 0
    assert "B = 20250102-000000-quick" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{tmp}/nope.json", "{b}"], "RUN_A {tmp}/nope.json does not exist; pass a summary.json"),
        (["{a}", "{tmp}/nowhere"], "RUN_B {tmp}/nowhere does not exist"),
        (["{a}", "{tmp}"], "holds no summary.json: it is not a run folder"),
        (["{a}", "{tmp}/list.json"], "is not a summary.json (no 'records' list)"),
        (["{a}", "{b}", "--metric", "accuracy"], "--metric: unknown metric 'accuracy'; choose"),
        (["{a}", "{b}", "--md", "{tmp}"], "check the path and its permissions"),
        (["{a}", "20991231", "--reports", "{tmp}"], "no run '20991231'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str],
    message: str,
    runs: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "list.json").write_text("[]", encoding="utf-8")
    a, b = runs
    fill = {"a": str(a), "b": str(b), "tmp": str(tmp_path)}
    assert main(["compare", *(arg.format(**fill) for arg in args)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memctx: error: ") and err.count("\n") == 1
    assert message.format(**fill) in err


def test_help_documents_the_outputs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "RUN_A" in out and "the baseline (before)" in out
    assert "--md FILE" in out and "--html FILE" in out and "scrolls sideways" in out
    assert "cost_per_call" in out


def test_runs_of_different_scenarios_are_not_compared_unless_asked(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = runs[0]
    quick = build_run()
    quick.summary["provenance"]["scenarios"]["paraphrase"]["sha256"] = "cd" * 32
    quick.summary["config"]["windows"] = [32_000]
    c = write_run(tmp_path / "c", quick)
    md, page = tmp_path / "out" / "compare.md", tmp_path / "out" / "compare.html"
    assert main(["compare", str(a), str(c), "--md", str(md), "--html", str(page)]) == 2
    out = capsys.readouterr().out
    verdict = out.splitlines()[0]
    assert verdict == (
        "cannot compare: different context windows; different scenarios in paraphrase"
    )
    assert "- windows: A played at each scenario's own window, B at 32,000 tokens; fix: " in out
    assert "- scenarios: scenarios/probes of A vs B: paraphrase 1/24 vs 1/24 (sha256 abab" in out
    assert "suites both runs played on the same scenarios: needle, supersede, tool-heavy" in out
    assert "pass --allow-different-scenarios" in out and "recall_accuracy" not in out
    text = md.read_text(encoding="utf-8")
    assert text.startswith(f"# memctx compare\n\n**Verdict: {verdict}**\n\n- A = ")
    assert "- windows: A played at" in text and "### " not in text
    html = page.read_text(encoding="utf-8")
    assert f'<p class="verdict cannot">Verdict: {verdict}</p>' in html
    assert "<table>" not in html and "<li>windows: A played at" in html
    # Asked to: the tables, and the verdict says what differs.
    assert main(["compare", str(a), str(c), "--allow-different-scenarios"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].endswith(
        "; compared as asked although different context windows; different scenarios in paraphrase"
    )
    assert "\nrecall_accuracy\nsuite " in out
    assert "note: windows: A played at each scenario's own window" in out
    # An answer model priced differently matters only when cost is compared.
    priced = build_run()
    priced.summary["config"]["answer_model"] = "gpt-4o"
    d = write_run(tmp_path / "d", priced)
    assert main(["compare", str(a), str(d)]) == 2
    assert capsys.readouterr().out.startswith("cannot compare: costs priced for different models")
    assert main(["compare", str(a), str(d), "--metric", "recall_accuracy"]) == 0

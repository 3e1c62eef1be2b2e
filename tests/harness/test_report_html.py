"""report.html never cuts a column off: every table scrolls sideways in its own box with the
key columns pinned, and every header cell is there."""

from __future__ import annotations

import re

import pytest
from helpers.synthetic_run import SyntheticRun, build_run, write_run

from memctx.harness.report import headline_table, suite_table, write_report
from memctx.harness.report.page import PAGE_CSS, html_table


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> tuple[SyntheticRun, str]:
    run = build_run()
    run_dir = write_run(tmp_path_factory.mktemp("html") / "run", run)
    write_report(run_dir)
    return run, (run_dir / "report.html").read_text(encoding="utf-8")


def _css(rule: str) -> str:
    match = re.search(re.escape(rule) + r"\{([^}]*)\}", PAGE_CSS)
    assert match, rule
    return match.group(1).replace("\n", "")


def test_tables_scroll_sideways_with_their_key_columns_pinned(
    page: tuple[SyntheticRun, str],
) -> None:
    _, text = page
    assert f"<style>{PAGE_CSS}" in text
    assert "overflow-x:auto" in _css(".tbl") and "max-width:100%" in _css(".tbl")
    assert "position:sticky" in _css(".tbl .pin")
    tables = re.findall(r"<table>", text)
    wrapped = re.findall(r'<div class="tbl"><table>', text)
    assert len(tables) == len(wrapped) >= 4  # headline, by suite, frontier, scenarios


def test_every_header_cell_of_the_headline_table_is_in_the_page(
    page: tuple[SyntheticRun, str],
) -> None:
    run, text = page
    table = headline_table(run.summary)
    assert table.header[-1] == "violations" and table.keys == 2
    section = text.split("<h2>All suites</h2>", 1)[1].split("<h2>", 1)[0]
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", section)
    assert heads == list(table.header)
    assert len(re.findall(r"<tr>", section)) == 1 + len(table.rows)


def test_the_key_columns_are_pinned_side_by_side() -> None:
    table = headline_table(build_run().summary)
    rendered = html_table(table)
    styles = re.findall(r'class="pin( last)?" style="left:([\d.]+)ch;width:([\d.]+)ch', rendered)
    assert len(styles) == 2 * (1 + len(table.rows))  # strategy and embedding, every row
    (first_last, left0, width0), (second_last, left1, _) = styles[:2]
    assert (first_last, second_last) == ("", " last")
    assert float(left0) == 0 and float(left1) == float(width0)  # the second starts where
    longest = max(len(row[0]) for row in table.rows)  # the first ends, as wide as its text
    assert float(width0) >= 0.85 * longest + 2


def test_a_share_cell_shows_its_interval_and_n_on_a_second_line() -> None:
    run = build_run()
    rendered = html_table(suite_table(run.summary))
    cells = re.findall(r"<td>([^<]*)<span class=\"ci\">([^<]*)</span></td>", rendered)
    assert cells and all(re.fullmatch(r"\(\d+–\d+\) n=\d+", detail) for _, detail in cells)
    assert all(value.endswith(" %") for value, _ in cells)

"""The report of one evaluation run: ``report.md``, a self-contained ``report.html``, PNG
charts (matplotlib, imported only when charts are drawn), the terminal table and the
plain-language checks, and the cost-versus-accuracy frontier.
"""

from __future__ import annotations

from .checks import Check, run_checks
from .frontier import FrontierPoint, frontier, frontier_reading, frontier_table
from .real_data import LOCOMO_CHART, REAL_DATA_FILES, locomo_chart, real_data_html, real_data_md
from .report import (
    RUN_FILES,
    RunDirError,
    format_terminal_table,
    headline_table,
    load_probes,
    load_summary,
    report_main,
    suite_table,
    validate_summary,
    write_report,
)

__all__ = [
    "LOCOMO_CHART",
    "REAL_DATA_FILES",
    "RUN_FILES",
    "Check",
    "FrontierPoint",
    "RunDirError",
    "format_terminal_table",
    "frontier",
    "frontier_reading",
    "frontier_table",
    "headline_table",
    "load_probes",
    "load_summary",
    "locomo_chart",
    "real_data_html",
    "real_data_md",
    "report_main",
    "run_checks",
    "suite_table",
    "validate_summary",
    "write_report",
]

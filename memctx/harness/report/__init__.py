"""The report of one evaluation run: ``report.md``, a self-contained ``report.html``, PNG
charts (matplotlib, imported only when charts are drawn), the terminal table and the
plain-language checks, and the cost-versus-accuracy frontier.
"""

from __future__ import annotations

from .checks import Check, run_checks
from .frontier import FrontierPoint, frontier, frontier_reading, frontier_table
from .real_data import LOCOMO_CHART, locomo_chart
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
    "report_main",
    "run_checks",
    "suite_table",
    "validate_summary",
    "write_report",
]

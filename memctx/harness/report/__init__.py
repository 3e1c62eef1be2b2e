"""The report of one evaluation run: ``report.md``, a self-contained ``report.html``, PNG
charts (matplotlib, imported only when charts are drawn), the terminal table, the
plain-language checks, the cost-versus-accuracy frontier, a recommendation derived from the
numbers, and the deltas against a baseline (``memctx report RUN --baseline X``).
"""

from __future__ import annotations

from .baseline import BaselineSection, baseline_section
from .chart_sweep import sweep_chart
from .checks import Check, run_checks
from .frontier import FrontierPoint, frontier, frontier_reading, frontier_table
from .intervals import Difference, Outcomes, Share, difference, share_of
from .real_data import (
    LOCOMO_CHART,
    locomo_chart,
    real_data_html,
    real_data_md,
    real_suite_table,
    real_suites,
)
from .recommend import Recommendation, recommend
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
    "write_report",
]

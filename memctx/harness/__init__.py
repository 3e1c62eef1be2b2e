"""The evaluation harness: scenarios, the replay engine with its per-call ledger and checks,
metrics, runs, the baseline gate, adapters for real transcripts, the pytest plugin, and
the strategies, generator and reports in their own subpackages.

Extend it through these names: :class:`Strategy` / :class:`BaseStrategy` and
:func:`register_strategy` for a context strategy of your own, :func:`load_scenarios` and
:func:`transcript_scenario` for your own data, :func:`run_eval` to run a matrix,
:func:`replay_transcript` for a real session through a strategy (``memctx replay``).

May import: every package below it (foundations, mechanisms, policies, runtime).
"""

from __future__ import annotations

from .adapters import transcript_scenario
from .answers import normalise_answer
from .claude_code import (
    CLAUDE_CODE_CONFIGS,
    ComparisonRow,
    HandProbe,
    ProbesError,
    compare_compactions,
    format_comparison,
    load_hand_probes,
    run_claude_code_suite,
)
from .compactions import CompactionPoint, RecordedCompaction, recorded_compactions
from .deltas import (
    COMPARE_METRICS,
    DEFAULT_COMPARE_METRICS,
    Delta,
    MetricChange,
    RowMatch,
    RowPair,
    compare_runs,
    comparison_notes,
    match_rows,
)
from .deltas_render import (
    DELTAS_CSS,
    deltas_html_page,
    format_deltas_html,
    format_deltas_md,
    format_deltas_text,
    paired_note,
)
from .engine import ScenarioResult, run_scenario
from .executor import (
    EXECUTORS,
    Executor,
    Job,
    LocalExecutor,
    bundles,
    execute_jobs,
    make_executor,
    report_until_failure,
)
from .explain import ProbeExplanation, explain_probe, format_explanation
from .frames import RunFrames, load_run, probe_frame
from .gate import DEFAULT_FAIL_ON, Regression, check_gate, compare, parse_fail_on
from .journal import JOURNAL, PLAN, JobJournal, job_key, read_plan, write_plan
from .llm_runs import budget_line, budget_section, llm_timing, run_limits
from .metrics import aggregate, bootstrap_ci, call_cost, percentile
from .noise import SHARE_METRICS, beyond_noise, share_interval
from .outcomes import Outcomes, paired_change, probe_rows_of, same_scenarios
from .pooling import pool_records
from .ray_executor import RAY_INSTALL, RayExecutor, RayUnavailable, require_ray
from .replay import ReplayReport, format_replay, replay_transcript
from .run import (
    DEFAULT_DATASETS,
    DEFAULT_EMBEDDINGS,
    DEFAULT_STRATEGIES,
    EvalError,
    EvalOptions,
    load_suite_scenarios,
    run_dir_for,
    run_eval,
    validate_options,
)
from .runs import LATEST, RUNS, config_label, find_run, new_run_id, point_latest, read_summary
from .scenario import Probe, Scenario, ScenarioError, Session, dump_scenarios, load_scenarios
from .schema import (
    ALL_SUITES,
    NO_EMBEDDING,
    SUMMARY_SCHEMA,
    CallRow,
    ProbeRow,
    all_records,
    upgrade_summary,
)
from .strategies import (
    HOOK_STRATEGY,
    STRATEGIES,
    BaseStrategy,
    FullStrategy,
    MemoryContextStrategy,
    Messages,
    Prepared,
    Strategy,
    StrategySetup,
    TruncateStrategy,
    make_strategy,
    parse_strategy,
    register_strategy,
)
from .sweep import SWEEP_CHART, SweepPoint, format_sweep, parse_sweep, run_sweep
from .sweep import sweep_notes as sweep_notes  # for the CLI; not in __all__
from .trajectories import (
    TRAJECTORY_DATASETS,
    TRAJECTORY_WINDOWS,
    TrajectoryRow,
    find_trajectories,
    format_trajectory_table,
    replay_trajectories,
)

__all__ = [
    "ALL_SUITES",
    "CLAUDE_CODE_CONFIGS",
    "COMPARE_METRICS",
    "DEFAULT_COMPARE_METRICS",
    "DEFAULT_DATASETS",
    "DEFAULT_EMBEDDINGS",
    "DEFAULT_FAIL_ON",
    "DEFAULT_STRATEGIES",
    "DELTAS_CSS",
    "EXECUTORS",
    "HOOK_STRATEGY",
    "JOURNAL",
    "LATEST",
    "NO_EMBEDDING",
    "PLAN",
    "RAY_INSTALL",
    "RUNS",
    "SHARE_METRICS",
    "STRATEGIES",
    "SUMMARY_SCHEMA",
    "SWEEP_CHART",
    "TRAJECTORY_DATASETS",
    "TRAJECTORY_WINDOWS",
    "BaseStrategy",
    "CallRow",
    "CompactionPoint",
    "ComparisonRow",
    "Delta",
    "EvalError",
    "EvalOptions",
    "Executor",
    "FullStrategy",
    "HandProbe",
    "Job",
    "JobJournal",
    "LocalExecutor",
    "MemoryContextStrategy",
    "Messages",
    "MetricChange",
    "Outcomes",
    "Prepared",
    "Probe",
    "ProbeExplanation",
    "ProbeRow",
    "ProbesError",
    "RayExecutor",
    "RayUnavailable",
    "RecordedCompaction",
    "Regression",
    "ReplayReport",
    "RowMatch",
    "RowPair",
    "RunFrames",
    "Scenario",
    "ScenarioError",
    "ScenarioResult",
    "Session",
    "Strategy",
    "StrategySetup",
    "SweepPoint",
    "TrajectoryRow",
    "TruncateStrategy",
    "aggregate",
    "all_records",
    "beyond_noise",
    "bootstrap_ci",
    "budget_line",
    "budget_section",
    "bundles",
    "call_cost",
    "check_gate",
    "compare",
    "compare_compactions",
    "compare_runs",
    "comparison_notes",
    "config_label",
    "deltas_html_page",
    "dump_scenarios",
    "execute_jobs",
    "explain_probe",
    "find_run",
    "find_trajectories",
    "format_comparison",
    "format_deltas_html",
    "format_deltas_md",
    "format_deltas_text",
    "format_explanation",
    "format_replay",
    "format_sweep",
    "format_trajectory_table",
    "job_key",
    "llm_timing",
    "load_hand_probes",
    "load_run",
    "load_scenarios",
    "load_suite_scenarios",
    "make_executor",
    "make_strategy",
    "match_rows",
    "new_run_id",
    "normalise_answer",
    "paired_change",
    "paired_note",
    "parse_fail_on",
    "parse_strategy",
    "parse_sweep",
    "percentile",
    "point_latest",
    "pool_records",
    "probe_frame",
    "probe_rows_of",
    "read_plan",
    "read_summary",
    "recorded_compactions",
    "register_strategy",
    "replay_trajectories",
    "replay_transcript",
    "report_until_failure",
    "require_ray",
    "run_claude_code_suite",
    "run_dir_for",
    "run_eval",
    "run_limits",
    "run_scenario",
    "run_sweep",
    "same_scenarios",
    "share_interval",
    "transcript_scenario",
    "upgrade_summary",
    "validate_options",
    "write_plan",
]

"""The evaluation harness: scenarios, the replay engine with its per-call ledger and checks,
metrics, runs, the baseline gate, adapters for real transcripts, the pytest plugin, and
the strategies, generator and reports in their own subpackages.

Extend it through these names: :func:`load_scenarios` and
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
    claude_code_scenarios,
    compare_compactions,
    format_comparison,
    load_hand_probes,
    write_claude_code_section,
)
from .compactions import CompactionPoint, RecordedCompaction, recorded_compactions
from .comparability import (
    ALLOW_FLAG,
    Comparability,
    Difference,
    planned_summary,
    run_differences,
)
from .deltas import (
    COMPARE_METRICS,
    DEFAULT_COMPARE_METRICS,
    Delta,
    MetricChange,
    RowMatch,
    RowPair,
    Verdict,
    compare_runs,
    comparison_notes,
    match_rows,
    verdict_of,
)
from .deltas_render import (
    DELTAS_CSS,
    deltas_html_page,
    format_deltas_html,
    format_deltas_md,
    format_deltas_text,
    paired_note,
    verdict_html,
    verdict_md,
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
from .gate import DEFAULT_FAIL_ON, Regression, check_gate, compare, gates_cost, parse_fail_on
from .journal import JOURNAL, PLAN, JobJournal, job_key, read_plan, write_plan
from .llm_runs import budget_line, budget_section, llm_timing, run_limits
from .metrics import aggregate, bootstrap_ci, call_cost, percentile
from .noise import SHARE_METRICS, beyond_noise, share_interval
from .outcomes import Outcomes, paired_change, probe_rows_of, same_scenarios
from .pooling import pool_records
from .ray_executor import RAY_INSTALL, RayExecutor, RayUnavailable, require_ray
from .real_suites import RealDataMissing, real_suite_scenarios
from .replay import ReplayReport, format_replay, replay_transcript
from .run import (
    DEFAULT_DATASETS,
    DEFAULT_EMBEDDINGS,
    DEFAULT_STRATEGIES,
    EvalError,
    EvalOptions,
    load_suite_scenarios,
    real_limit,
    run_dir_for,
    run_eval,
    validate_options,
)
from .runs import LATEST, RUNS, config_label, find_run, new_run_id, point_latest, read_summary
from .scenario import Probe, Scenario, ScenarioError, Session, dump_scenarios, load_scenarios
from .schema import (
    ALL_SUITES,
    NO_EMBEDDING,
    REAL_DATA_SUITES,
    SUMMARY_SCHEMA,
    CallRow,
    ProbeRow,
    all_records,
    upgrade_summary,
)
from .sweep import SWEEP_CHART, SweepPoint, format_sweep, parse_sweep, run_sweep
from .sweep import sweep_notes as sweep_notes  # for the CLI; not in __all__
from .trajectories import (
    TRAJECTORY_DATASETS,
    TRAJECTORY_WINDOWS,
    TrajectoryRow,
    find_trajectories,
    format_trajectory_table,
    trajectory_rows,
    trajectory_scenarios,
)

__all__ = [
    "Probe",
    "Scenario",
    "Session",
    "dump_scenarios",
    "load_scenarios",
    "replay_transcript",
    "transcript_scenario",
]

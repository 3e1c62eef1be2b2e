"""The pytest plugin: options, the run and thresholds fixtures, and the evals/ gates."""

from __future__ import annotations

# Imported before pytester runs anything in-process: it restores sys.modules after each
# inner run, and a module first imported inside one would be imported again later as a new
# object, which breaks pickling ProcessPoolExecutor's worker function for a later eval run.
import concurrent.futures.process  # noqa: F401
import multiprocessing.popen_spawn_posix  # noqa: F401
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from helpers.synthetic_run import build_run, write_run

import memctx.harness.run  # noqa: F401

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
# Named with -p only until the pytest11 entry point is installed (twice would be an error).
PLUGIN = (
    []
    if any(ep.value == "memctx.harness.pytest_plugin" for ep in entry_points(group="pytest11"))
    else ["-p", "memctx.harness.pytest_plugin"]
)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run")


def test_given_run_dir_is_loaded(pytester: pytest.Pytester, run_dir: Path) -> None:
    pytester.makepyfile(
        """
        import pytest

        def test_run(memctx_run):
            record = memctx_run.record("needle", "memory-context", "hash")
            assert record["probes"] == 24
            assert memctx_run.record("all", "full")["strategy"] == "full"
            assert len(memctx_run.records()) == 40 and len(memctx_run.records("cjk")) == 4
            assert memctx_run.suites()[0] == "needle" and len(memctx_run.suites()) == 9
            assert ("memory-context", "transformer") in memctx_run.pairs()
            assert len(memctx_run.probes) == 9 * 4 * 24
            with pytest.raises(KeyError, match="pairs: full/none, memory-context/hash"):
                memctx_run.record("needle", "planner", "hash")
        """
    )
    result = pytester.runpytest(*PLUGIN, "--memctx-run", str(run_dir), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"memctx: using run directory {run_dir}"])


def test_bad_run_dir_is_a_clear_error(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile("def test_run(memctx_run):\n    pass\n")
    result = pytester.runpytest(*PLUGIN, "--memctx-run", str(tmp_path / "nope"))
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*--memctx-run*nope*summary.json is missing*"])


_FAKE_RUNNER = """
import memctx.harness.run as runner
from helpers.synthetic_run import write_run

SEEN = []
_real = runner.run_eval


def fake_run_eval(options):
    SEEN.append(options)
    return write_run(options.out_dir)


def pytest_configure(config):
    runner.run_eval = fake_run_eval


def pytest_unconfigure(config):
    runner.run_eval = _real
"""


def test_default_runs_the_quick_benchmark_once_per_session(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(_FAKE_RUNNER)
    pytester.makepyfile(
        """
        from conftest import SEEN

        def test_one(memctx_run, tmp_path_factory):
            (options,) = SEEN
            assert options.quick and options.embeddings == ("hash",) and not options.progress
            assert tmp_path_factory.getbasetemp() in options.out_dir.parents
            assert memctx_run.path == options.out_dir

        def test_two(memctx_run):
            assert len(SEEN) == 1
        """
    )
    pytester.runpytest(*PLUGIN, "-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_full_option_runs_the_full_benchmark(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(_FAKE_RUNNER)
    pytester.makepyfile(
        """
        from conftest import SEEN

        def test_full(memctx_run):
            assert not SEEN[0].quick and "transformer" in SEEN[0].embeddings
        """
    )
    pytester.runpytest(*PLUGIN, "--memctx-full").assert_outcomes(passed=1)


def test_skips_when_the_runner_is_not_importable(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import sys

        _saved = sys.modules.get("memctx.harness.run")


        def pytest_configure(config):
            sys.modules["memctx.harness.run"] = None  # import now raises ImportError


        def pytest_unconfigure(config):
            if _saved is not None:
                sys.modules["memctx.harness.run"] = _saved
            else:
                sys.modules.pop("memctx.harness.run", None)
        """
    )
    pytester.makepyfile("def test_run(memctx_run):\n    pass\n")
    result = pytester.runpytest(*PLUGIN, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*memctx.harness.run is not importable*--memctx-run DIR*"])


def test_thresholds_fixture(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(
        """
        def test_thresholds(memctx_thresholds):
            assert memctx_thresholds["suites"]["needle"]["min_recall_accuracy"] == 0.5
        """
    )
    result = pytester.runpytest(*PLUGIN, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*no thresholds file at*thresholds.toml*"])
    pytester.mkdir("evals")
    toml = "[suites.needle]\nmin_recall_accuracy = 0.5\n"
    (pytester.path / "evals" / "thresholds.toml").write_text(toml, encoding="utf-8")
    pytester.runpytest(*PLUGIN).assert_outcomes(passed=1)
    other = tmp_path / "other.toml"
    other.write_text(toml, encoding="utf-8")
    pytester.runpytest(*PLUGIN, "--memctx-thresholds", str(other)).assert_outcomes(passed=1)


def test_repository_thresholds_cover_every_suite() -> None:
    import tomllib

    from memctx.harness.gen.suites import SUITES

    data = tomllib.loads((REPO / "evals" / "thresholds.toml").read_text(encoding="utf-8"))
    # The real-data suites that ask probes too (trajectories ask none: nothing to bound).
    assert sorted(data["suites"]) == sorted([*SUITES, "locomo", "claude-code"])
    assert data["target"] == {"strategy": "memory-context", "embedding": "hash"}
    assert data["checks"]["max_violations"] == 0


def _run_evals(pytester: pytest.Pytester, run_dir: Path) -> pytest.RunResult:
    # evals/conftest.py names the plugin itself when its entry point is not installed.
    return pytester.runpytest(
        str(REPO / "evals"), "--memctx-run", str(run_dir), "-p", "no:cacheprovider"
    )


def test_evals_pass_on_a_good_run(pytester: pytest.Pytester, run_dir: Path) -> None:
    # The real-data suites' thresholds skip: a synthetic run does not hold them; nor does
    # this one hold the six working-state suites (it has the nine fact suites).
    _run_evals(pytester, run_dir).assert_outcomes(passed=12, skipped=8)


def test_evals_fail_on_violations_and_memory_context_below_truncate(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    run = build_run()
    run.record("cjk", "memory-context", "hash")["recall_accuracy"] = 0.01
    run.record("secrets", "truncate", "none")["violations"] = 1
    result = _run_evals(pytester, write_run(tmp_path / "bad", run))
    result.assert_outcomes(passed=9, failed=3, skipped=8)
    result.stdout.fnmatch_lines(
        [
            "*secrets/truncate/none: 1*",
            "*cjk: memory-context/hash 0.010 < truncate*",
            "*cjk memory-context/hash: recall_accuracy = 0.01, min 0.8*",
        ]
    )


def test_xdist_workers_share_one_run(tmp_path: Path) -> None:
    """Three processes ask at once: one makes the run, all three get its folder."""
    import multiprocessing

    from helpers.shared_run import ask_for_run

    shared, answers = tmp_path / "shared", tmp_path / "answers.txt"
    context = multiprocessing.get_context("spawn")
    procs = [
        context.Process(target=ask_for_run, args=(str(shared), str(answers))) for _ in range(3)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
        assert proc.exitcode == 0
    made = (shared / "made.txt").read_text(encoding="utf-8").splitlines()
    assert len(made) == 1, made
    assert answers.read_text(encoding="utf-8").splitlines() == made * 3
    assert Path(made[0]).is_dir()


def test_a_failed_shared_run_is_made_again_by_the_next_worker(tmp_path: Path) -> None:
    from memctx.harness.pytest_plugin import made_once

    def broken(out: Path) -> Path:
        raise RuntimeError("the eval failed")

    with pytest.raises(RuntimeError, match="the eval failed"):
        made_once(tmp_path, broken)
    made = made_once(tmp_path, lambda out: out)
    assert made.parent == tmp_path
    assert made_once(tmp_path, broken) == made  # finished: read, not made again

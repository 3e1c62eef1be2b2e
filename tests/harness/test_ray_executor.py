"""The evaluation matrix on Ray: the same summary as the local process pool, the scenarios in
the object store once each, and a one-line error naming the extra when Ray is missing."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.failing_strategy import assert_stopped_and_kept, failing_run
from helpers.run_files import rows_without_timing, without_timing

from memctx.cli import main
from memctx.harness import (
    RAY_INSTALL,
    EvalOptions,
    RayUnavailable,
    require_ray,
    run_eval,
)

SUITES = ("needle",)  # one quick suite: seven jobs (strategies) share each of its scenarios


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    """A local two-CPU Ray, quiet (no dashboard, no worker logs, no usage report)."""
    ray = pytest.importorskip("ray", reason=f"Ray is not installed ({RAY_INSTALL})")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.ERROR,
        object_store_memory=100 * 1024 * 1024,
    )
    try:
        yield ray
    finally:
        ray.shutdown()


def test_ray_writes_the_process_pool_s_summary(
    ray_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = EvalOptions(quick=True, suites=SUITES, embeddings=("hash",), jobs=2, progress=False)
    pool = run_eval(EvalOptions(**{**base.__dict__, "out_dir": tmp_path / "pool"}))
    put = ray_cluster.put
    stored: list[Any] = []

    def counting_put(value: Any, **kwargs: Any) -> Any:
        stored.append(value)
        return put(value, **kwargs)

    monkeypatch.setattr(ray_cluster, "put", counting_put)
    on_ray = run_eval(
        EvalOptions(**{**base.__dict__, "out_dir": tmp_path / "ray", "executor": "ray"})
    )
    ran, ray_ran = (json.loads((d / "summary.json").read_text("utf-8")) for d in (pool, on_ray))
    for summary in (ran, ray_ran):  # others may commit to this checkout meanwhile
        summary["provenance"].pop("git")
    assert without_timing(ray_ran) == without_timing(ran)
    assert ray_ran["config"] == ran["config"]  # the executor is not part of the config
    for name in ("results.jsonl", "trace.jsonl"):
        assert rows_without_timing(on_ray / name) == rows_without_timing(pool / name)
    # The datasets travel by reference: each scenario stored once, whatever its job count.
    assert stored and all(type(s).__name__ == "Scenario" for s in stored)
    assert len({id(s) for s in stored}) == len(stored)
    assert len(stored) == len(
        {(r["suite"], r["scenario"]) for r in rows_without_timing(pool / "results.jsonl")}
    )
    assert ray_cluster.is_initialized()  # a cluster it did not start is left running


def test_a_failing_job_stops_the_ray_run(
    ray_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The actors find the plugin next to the driver's folder, as a user's would be.
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    folder = failing_run(tmp_path, monkeypatch, executor="ray")
    assert_stopped_and_kept(tmp_path, folder)


def test_without_ray_eval_fails_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(RayUnavailable, match=r"pip install 'memctx\[ray\]'"):
        require_ray()
    out = tmp_path / "run"
    args = ["eval", "--quick", "--executor", "ray", "--no-report", "--out", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--executor ray" in err and RAY_INSTALL in err, err
    assert not out.exists()  # nothing planned, nothing written


def test_ray_address_needs_the_ray_executor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["eval", "--quick", "--ray-address", "host:6379", "--out", str(out)]) == 2
    assert "--ray-address needs --executor ray" in capsys.readouterr().err
    assert not out.exists()

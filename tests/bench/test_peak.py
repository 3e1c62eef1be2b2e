"""Each benchmark case reports its own peak memory, not its parent's nor a sibling's.

``make bench`` once printed the same 1,080 MB for three cases whose footprints differ by
hundreds of MB: the figure was inherited from the large process that started them. Here
the parent is made large on purpose (a ballast well above what either case uses), then two
cases run the way the bench runs them: one allocates ~200 MB, one allocates nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memctx.bench import peak
from memctx.bench.peak import CaseFailed, own_peak_mb, run_case_process

BALLAST_MB = 600
CASE_MB = 200

# The case process loads peak.py by path: the measurement is the module's own function,
# without the seconds and ~190 MB that importing the whole package costs each child.
_CASE = """
import json, runpy, sys
own_peak_mb = runpy.run_path(sys.argv[1])["own_peak_mb"]
data = b"x" * (int(sys.argv[2]) << 20)  # written, so every page is resident
print("figures follow")
print(json.dumps({"peak_mb": own_peak_mb(), "held": len(data)}))
"""


def _case(mb: int) -> dict[str, float]:
    return run_case_process([sys.executable, "-c", _CASE, peak.__file__, str(mb)], timeout=120)


def test_each_case_reports_its_own_peak_not_the_parents() -> None:
    ballast = b"x" * (BALLAST_MB << 20)
    parent = own_peak_mb()
    assert parent >= BALLAST_MB  # the parent's own figure sees its ballast
    allocating, idle = _case(CASE_MB), _case(0)
    assert allocating["held"] == CASE_MB << 20
    # The allocating case reports clearly more than the idle one (about its 200 MB) ...
    assert allocating["peak_mb"] - idle["peak_mb"] >= 0.75 * CASE_MB
    # ... and neither carries the parent's peak, which is larger than both.
    assert idle["peak_mb"] < parent - BALLAST_MB / 2
    assert allocating["peak_mb"] < parent - CASE_MB / 2
    assert idle["peak_mb"] > 0
    del ballast


def test_a_case_that_fails_says_so_with_its_stderr() -> None:
    code = "import sys; sys.exit('the case broke: disk full')"
    with pytest.raises(CaseFailed, match=r"exit status 1(.|\n)*the case broke: disk full"):
        run_case_process([sys.executable, "-c", code])


def test_a_case_without_json_figures_is_refused() -> None:
    with pytest.raises(CaseFailed, match="not a JSON object"):
        run_case_process([sys.executable, "-c", "print('done')"])
    with pytest.raises(CaseFailed, match="not a JSON object"):
        run_case_process([sys.executable, "-c", "print('[1, 2]')"])


def test_own_peak_reads_the_kernels_high_water_mark() -> None:
    status = Path("/proc/self/status")
    if not status.exists():
        pytest.skip("no /proc on this platform")
    line = next(x for x in status.read_text().splitlines() if x.startswith("VmHWM:"))
    # VmHWM only grows, so the figure read after the line is at least the line's.
    assert own_peak_mb() >= int(line.split()[1]) / 1024

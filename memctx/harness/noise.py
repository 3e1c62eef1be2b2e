"""Whether a share of probes changed by more than the noise of the two measurements.

Each share (:data:`SHARE_METRICS`) has a 95 % interval, :func:`share_interval`: the record's
bootstrap interval (``<metric>_ci``) widened, side by side, to the Wilson score interval of
the share over ``fit`` probes where that is wider. The percentile bootstrap collapses to a
point at 0 % and 100 % (44 of 44 probes give ``[1, 1]``, as if one more probe could not
fail); a share without a stored interval (``tool_accuracy``, ``stale_rate``, a pooled figure
rebuilt by :func:`memctx.harness.pooling.pool_records`) gets the Wilson interval alone.

A change is beyond the noise when the 95 % interval of the *difference* excludes 0, that
interval built from the two by the square-root rule of Newcombe's hybrid score method
(MOVER): a fall from ``b`` to ``a`` is beyond the noise when
``b - a > sqrt((b - b_low)**2 + (a_high - a)**2)``, a rise symmetrically
(:func:`noise_for`). It is an approximate two-sided 5 % test treating the runs as
independent samples; non-overlapping intervals would ask for about 1.4 times the change.
One probe's worth (``1 / fit``) is never beyond the noise: even at 0 % or 100 % the Wilson
half-width is ``z**2 / (n + z**2)``, more than ``1 / n`` for any n >= 2.

What that takes, with the intervals :func:`memctx.harness.bootstrap_ci` gives: a suite's
row of 44 probes fails from a fall of 9 probes (at 37 of 44: 84 % to 64 %; 6 from 44 of 44);
a pooled row of 380 probes from 26 (at 276 of 380: 73 % to 66 %).

**Paired** (:func:`paired_noise`): when both figures are over the same probes and each
probe's outcome is known (two configurations of one run), the difference's interval is
Newcombe's method 10 for paired proportions: the same two Wilson intervals, combined with
the correlation of the outcomes (continuity-corrected, as published; it reproduces the
reference values of Fagerland, Lydersen and Laake's implementation). Probes both
configurations answer (or both miss) then cancel out and only the probes they disagree on
move the difference: 25 probes won and 7 lost in 380 is a difference beyond the noise
although the unpaired rule, blind to the pairing, reads 292 against 274 of 380 as noise.
One flipped probe in 44 is still within it.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypeVar

from .pooling import FIT_WEIGHTED, to_number

__all__ = [
    "SHARE_METRICS",
    "Z95",
    "beyond_noise",
    "noise_for",
    "paired_noise",
    "share_interval",
    "wilson_interval",
]

_Key = TypeVar("_Key", bound=Hashable)  # a probe's identity in paired outcomes
SHARE_METRICS = FIT_WEIGHTED  # shares of fitted probes: the metrics with intervals
Z95 = 1.959963984540054
_EPS = 1e-9


def wilson_interval(share: float, n: float) -> tuple[float, float]:
    """The 95 % Wilson score interval of a share observed over ``n`` trials (``n > 0``)."""
    p = min(max(share, 0.0), 1.0)
    z2 = Z95 * Z95
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def share_interval(record: Mapping[str, Any], metric: str) -> tuple[float, float] | None:
    """The 95 % interval a comparison uses for a share: the stored bootstrap interval
    widened to the Wilson interval over ``fit`` probes on whichever side that is wider.

    Returns:
        ``(low, high)``, or ``None`` when the record has no value or nothing to build an
        interval from.
    """
    value = to_number(record.get(metric))
    if value is None:
        return None
    low = high = value
    known = False
    stored = record.get(f"{metric}_ci")
    if isinstance(stored, Sequence) and len(stored) == 2:
        bounds = [to_number(b) for b in stored]
        if bounds[0] is not None and bounds[1] is not None:
            low, high, known = min(low, bounds[0]), max(high, bounds[1]), True
    fit = to_number(record.get("fit"))
    if fit and fit > 0:
        w_low, w_high = wilson_interval(value, fit)
        low, high, known = min(low, w_low), max(high, w_high), True
    return (low, high) if known else None


def noise_for(
    before: Mapping[str, Any], after: Mapping[str, Any], metric: str
) -> tuple[float, float] | None:
    """``(change, noise)`` of a share: the change after − before and the half-width of its
    95 % interval on the side of the change (see the module docstring); ``None`` when
    either value or interval is missing."""
    b, a = to_number(before.get(metric)), to_number(after.get(metric))
    b_ci, a_ci = share_interval(before, metric), share_interval(after, metric)
    if b is None or a is None or b_ci is None or a_ci is None:
        return None
    change = a - b
    if change < 0:
        return change, math.hypot(b - b_ci[0], a_ci[1] - a)
    return change, math.hypot(b_ci[1] - b, a - a_ci[0])


def beyond_noise(before: Mapping[str, Any], after: Mapping[str, Any], metric: str) -> bool | None:
    """Whether a share changed by more than the noise of the two records (either way).

    Returns:
        ``None`` for a metric that is not a share of probes or a record without the value.
    """
    if metric not in SHARE_METRICS:
        return None
    measured = noise_for(before, after, metric)
    if measured is None:
        return None
    change, noise = measured
    return abs(change) > noise + _EPS


def paired_noise(
    before: Mapping[_Key, bool], after: Mapping[_Key, bool]
) -> tuple[float, float] | None:
    """``(change, noise)`` of a share measured on the same probes twice (see the module's
    docstring): the change after − before over the probes both have, and the half-width of
    its 95 % interval on the side of the change (Newcombe 1998, method 10).

    Args:
        before: Each probe's outcome (True answered, False not) in the first measurement.
        after: The same probes' outcomes in the second; probes of one only are left out.

    Returns:
        ``None`` when no probe is in both.
    """
    keys = [key for key in after if key in before]
    n = len(keys)
    if not n:
        return None
    both = sum(1 for k in keys if before[k] and after[k])
    after_only = sum(1 for k in keys if after[k] and not before[k])
    before_only = sum(1 for k in keys if before[k] and not after[k])
    neither = n - both - after_only - before_only
    p_after, p_before = (both + after_only) / n, (both + before_only) / n
    low_a, high_a = wilson_interval(p_after, n)
    low_b, high_b = wilson_interval(p_before, n)
    margins = (both + after_only) * (before_only + neither) * (both + before_only)
    margins *= after_only + neither
    # The correlation of the two outcomes (phi), with Newcombe's continuity correction of its
    # numerator (a positive one is lowered by n/2, to 0 at most); 0 when one side is constant.
    cross = both * neither - after_only * before_only
    corrected = max(cross - n / 2, 0.0) if cross >= 0 else float(cross)
    phi = corrected / math.sqrt(margins) if margins else 0.0
    change = (after_only - before_only) / n
    if change < 0:  # the interval's upper end: how far up from the change it reaches
        x, y = high_a - p_after, p_before - low_b
    else:  # its lower end
        x, y = p_after - low_a, high_b - p_before
    return change, math.sqrt(max(0.0, x * x - 2 * phi * x * y + y * y))

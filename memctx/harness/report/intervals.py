"""How sure a share of probes is, and whether two shares differ beyond noise: the report's
reading of :mod:`memctx.harness.noise`, the rule the gate and ``memctx compare`` use too.

A share's 95 % interval is the record's bootstrap interval widened to the Wilson score
interval over its ``fit`` probes where that is wider, so 2 answers out of 2 probes read as
"somewhere between 34 % and 100 %", not as a certain 100 %. Two shares differ beyond noise
when the 95 % interval of their difference excludes zero. Two configurations of one run
ask the same probes: given the run's probe rows
(:class:`memctx.harness.outcomes.Outcomes`), their difference is judged probe by probe
(:func:`memctx.harness.outcomes.paired_change`, Newcombe's method for paired proportions),
so the probes both answer cancel out. Without the rows, or for a metric that is not a
yes/no per probe (evidence recall), the two figures are treated as independent samples
(Newcombe's square-root rule over the two intervals), which errs towards "not
distinguishable", never towards a false loss or a false win.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..noise import noise_for, share_interval
from ..outcomes import Outcomes, paired_change
from .cells import num

__all__ = ["INTERVAL_NOTE", "Difference", "Outcomes", "Share", "difference", "share_of"]

INTERVAL_NOTE = (
    "Intervals are 95 %: the run's bootstrap interval, widened to the Wilson score interval "
    "over n (the probes a figure is over) where that is wider, since the bootstrap collapses "
    "to a point at 0 % and 100 %. Two figures differ beyond noise when the 95 % interval of "
    "their difference excludes zero; two configurations of this run are compared probe by "
    "probe (a paired interval, Newcombe's method for paired proportions), so only the probes "
    "they disagree on count."
)
_EPS = 1e-9


@dataclass(frozen=True)
class Share:
    """A share of probes with its 95 % interval.

    Attributes:
        value: The share (0 to 1), None when nothing was scored.
        n: The probes it is over (fitted probes), None when unknown.
        low: The interval's lower end (None when unknown).
        high: Its upper end.
    """

    value: float | None
    n: int | None
    low: float | None
    high: float | None

    @property
    def known(self) -> bool:
        """True when the share and its interval are both known."""
        return self.value is not None and self.low is not None and self.high is not None

    @property
    def half_width(self) -> float | None:
        """Half the interval's width (0 to 0.5), None when unknown."""
        if self.low is None or self.high is None:
            return None
        return (self.high - self.low) / 2

    def text(self, *, n: bool = True) -> str:
        """``"72.7 % (57–85) n=44"``; ``"none fitted"`` when no probe fitted, ``"n/a"``
        when there is no figure."""
        if self.value is None:
            return "none fitted" if self.n == 0 else "n/a"
        out = f"{100 * self.value:.1f} %"
        if self.low is not None and self.high is not None:
            out += f" ({100 * self.low:.0f}–{100 * self.high:.0f})"
        if n and self.n is not None:
            out += f" n={self.n:,}"
        return out


def share_of(record: Mapping[str, Any] | None, metric: str = "recall_accuracy") -> Share:
    """``record[metric]`` over the record's fitted probes, with its 95 % interval."""
    if record is None:
        return Share(None, None, None, None)
    value, fit = num(record.get(metric)), num(record.get("fit"))
    n = None if fit is None else int(fit)
    interval = None if value is None else share_interval(record, metric)
    low, high = interval or (None, None)
    return Share(value, n, low, high)


@dataclass(frozen=True)
class Difference:
    """``a − b`` of two shares and the noise it is judged against.

    Attributes:
        delta: The difference of the point estimates (−1 to 1), None when one is unknown.
        noise: The half-width of the difference's 95 % interval on the side of the change.
        paired: Judged probe by probe (both figures over the same probes).
    """

    delta: float | None
    noise: float | None
    paired: bool = False

    @property
    def significant(self) -> bool:
        """True when the difference is beyond noise (its interval excludes zero)."""
        if self.delta is None or self.noise is None:
            return False
        return abs(self.delta) > self.noise + _EPS

    @property
    def sign(self) -> int:
        """+1 (``a`` ahead beyond noise), −1 (behind beyond noise) or 0 (not distinguishable)."""
        if not self.significant or self.delta is None:
            return 0
        return 1 if self.delta > 0 else -1

    def text(self) -> str:
        """``"+12.5 points (noise ±9.1)"``; ``"n/a"`` when unknown."""
        if self.delta is None or self.noise is None:
            return "n/a"
        return f"{100 * self.delta:+.1f} points (noise ±{100 * self.noise:.1f})"


def difference(
    a: Mapping[str, Any] | None,
    b: Mapping[str, Any] | None,
    metric: str = "recall_accuracy",
    outcomes: Outcomes | None = None,
) -> Difference:
    """``a[metric] − b[metric]`` of two records and its noise: probe by probe when
    ``outcomes`` has both records' outcomes over the same probes
    (:func:`noise.paired_noise`), else as independent samples (:func:`noise.noise_for`)."""
    if a is None or b is None:
        return Difference(None, None)
    paired = paired_change(a, outcomes, b, outcomes, metric)
    if paired is not None:
        return Difference(paired[0], paired[1], paired=True)
    measured = noise_for(b, a, metric)
    if measured is None:
        return Difference(None, None)
    change, noise = measured
    return Difference(change, noise)

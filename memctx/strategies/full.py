"""The ``full`` strategy: send the whole history, never compact.

The upper bound of what any strategy can recall, while the history fits: past the window a
provider refuses the call, which the harness reports as "not fit" rather than as a
violation of this strategy.
"""

from __future__ import annotations

from .base import BaseStrategy, Messages, Prepared

__all__ = ["FullStrategy"]


class FullStrategy(BaseStrategy):
    """Send everything, never compact: the ceiling while it fits."""

    name = "full"

    def prepare(self, transcript: Messages) -> Prepared:
        # The harness shows the path only for calls whose history exceeded the window.
        return Prepared(list(transcript), recovery="none: sent whole")

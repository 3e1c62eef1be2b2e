"""How the harness looks for an answer in text.

The scorer (is the expected answer in the context the model would receive?) and the
generator's checker (is the answer planted only where the probe's evidence says?) must
normalise alike, or a scenario the generator accepts could be scored against text it never
checked. Both use :func:`normalise_answer`.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["normalise_answer"]

_SPACE: Final = re.compile(r"\s+")


def normalise_answer(text: str) -> str:
    """Case-folded, whitespace collapsed: ``"Port  8443\\n"`` and ``"port 8443"`` match."""
    return _SPACE.sub(" ", text).strip().casefold()

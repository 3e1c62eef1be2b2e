"""What every chart of the report shares: the figure, its style, colours, markers and the
byte-stable PNG writer.

matplotlib is imported inside the functions, never at module import, so that ``import
memctx`` and ``memctx eval --no-report`` stay fast. Figures are built with the object API
(no pyplot, no global backend switch) and saved without the "Software" metadata, so the same
data gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..schema import NO_EMBEDDING, all_records
from .checks import ALL, pair_label

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "DPI",
    "MARKERS",
    "Chart",
    "Pair",
    "colours_for",
    "marker_for",
    "new_figure",
    "pooled_by_pair",
    "save_figure",
    "tick",
]

DPI = 110
Pair = tuple[str, str]
# One marker per embedding, so hash and transformer differ in shape as well as colour.
MARKERS = {NO_EMBEDDING: "o", "hash": "s", "transformer": "^"}


@dataclass(frozen=True)
class Chart:
    """A written chart: its file, title and a one-line explanation for the report."""

    path: Path
    title: str
    caption: str


def colours_for(run_pairs: Sequence[Pair]) -> dict[Pair, Any]:
    """One tab10 colour per (strategy, embedding), in the run's order."""
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {pair: cmap(i % 10) for i, pair in enumerate(run_pairs)}


def marker_for(embedding: str) -> str:
    """The marker of an embedding (a diamond for one the report does not know)."""
    return MARKERS.get(embedding, "D")


def new_figure(width: float, height: float) -> Figure:
    """A figure of the report's size and layout (no pyplot state)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def save_figure(fig: Figure, path: Path) -> Path:
    """Write ``fig`` as a byte-stable PNG (no "Software" metadata) and return ``path``."""
    fig.savefig(path, format="png", dpi=DPI, metadata={"Software": None})
    return path


def pooled_by_pair(summary: Mapping[str, Any]) -> dict[Pair, Mapping[str, Any]]:
    """The records over all suites, by (strategy, embedding)."""
    return {
        (str(r["strategy"]), str(r["embedding"])): r
        for r in all_records(summary)
        if r["suite"] == ALL
    }


def tick(pair: Pair) -> str:
    """A configuration's label on two lines, for a bar chart's axis."""
    return pair_label(*pair).replace(" × ", "\n× ")

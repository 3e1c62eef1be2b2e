"""How the report writes one number: the cells of every table, in one place."""

from __future__ import annotations

from typing import Any

__all__ = ["count", "latency", "num", "pct", "pct_ci", "usd"]


def num(value: Any) -> float | None:
    """``value`` as a float when it is a number (not a boolean), else None."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def pct(value: Any) -> str:
    """``"72.7 %"``; ``"n/a"`` for no number."""
    number = num(value)
    return "n/a" if number is None else f"{100 * number:.1f} %"


def pct_ci(value: Any, ci: Any) -> str:
    """``"72.7 % (68–77)"``: a share and the interval ``ci`` carries (whole points)."""
    text = pct(value)
    if text != "n/a" and isinstance(ci, list | tuple) and len(ci) == 2:
        low, high = num(ci[0]), num(ci[1])
        if low is not None and high is not None:
            text += f" ({100 * low:.0f}–{100 * high:.0f})"
    return text


def count(value: Any) -> str:
    """``"12,345"``; ``"n/a"`` for no number."""
    number = num(value)
    return "n/a" if number is None else f"{number:,.0f}"


def usd(value: Any, places: int = 4) -> str:
    """``"$1.2345"``; ``"n/a"`` for no number."""
    number = num(value)
    return "n/a" if number is None else f"${number:,.{places}f}"


def latency(p50: Any, p95: Any) -> str:
    """``"3.5 / 11.0"`` (milliseconds); ``"n/a"`` when either is missing."""
    a, b = num(p50), num(p95)
    return "n/a" if a is None or b is None else f"{a:.1f} / {b:.1f}"

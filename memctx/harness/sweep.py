"""Sweeps: several values of one setting in one command, reported as a curve.

``memctx eval --sweep hardCapTokens=1000,2000,4000`` runs the matrix once per value, each a
complete run folder of its own (``<sweep folder>/hardCapTokens=1000/`` …, so ``memctx
compare``, ``show`` and ``load_run`` work on each point), and writes ``sweep.json``,
``sweep.md`` and a chart of the pooled figures against the value: recall accuracy (with its
interval) and cost per call for every strategy × embedding. A value is checked against the
config before anything runs.

The recall block's cap is ``min(hardCapTokens, floor(window x recallWindowRatio))``: a sweep
of ``hardCapTokens`` past a tenth of the windows it plays measures the ratio's cap, not the
setting. :func:`sweep_notes` says so before the run (the CLI prints it) and in ``sweep.md``
/ ``sweep.json``, and names the values whose points are identical by construction (the same
effective cap at every window, nothing else different).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memctx.config import MemoryContextConfig, recall_cap_note, recall_caps

from .run import EvalError, EvalOptions, load_suite_scenarios, run_dir_for, run_eval
from .schema import upgrade_summary

__all__ = [
    "SWEEP_CHART",
    "SweepPoint",
    "format_sweep",
    "parse_sweep",
    "played_windows",
    "run_sweep",
    "sweep_notes",
]

SWEEP_CHART = "sweep.png"
# The only settings the recall cap is made of (MemoryContextConfig.recall_cap_tokens).
_CAP_FIELDS = frozenset({"hard_cap_tokens", "recall_window_ratio"})


@dataclass(frozen=True)
class SweepPoint:
    """One strategy × embedding at one value of the swept setting (its pooled record)."""

    value: Any
    strategy: str
    embedding: str
    recall_accuracy: float | None
    recall_accuracy_ci: list[float]
    tokens_per_call: float
    cost_per_call: float | None
    violations: int
    run_dir: str


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_sweep(spec: str) -> tuple[str, list[Any]]:
    """``"hardCapTokens=1000,2000,4000"`` → ``("hardCapTokens", [1000, 2000, 4000])``.

    Raises:
        EvalError: Not ``KEY=V1,V2,...`` with two or more distinct values, or a value the
            config refuses (the message names the key and the fix).
    """
    key, sep, values = spec.partition("=")
    items = [v.strip() for v in values.split(",") if v.strip()]
    if not sep or not key.strip() or len(items) < 2:
        raise EvalError(
            f"--sweep {spec!r}: expected KEY=V1,V2[,...] with at least two values, e.g. "
            "--sweep hardCapTokens=1000,2000,4000"
        )
    parsed = [_value(v) for v in items]
    if len({json.dumps(v, sort_keys=True) for v in parsed}) != len(parsed):
        raise EvalError(f"--sweep {spec!r}: a value is given twice")
    for value in parsed:
        try:
            MemoryContextConfig().with_overrides({key.strip(): value})
        except ValueError as exc:
            raise EvalError(f"--sweep {key.strip()}={value!r}: {exc}") from None
    return key.strip(), parsed


def played_windows(options: EvalOptions) -> list[int]:
    """The context windows a run of ``options`` plays: ``--window`` values, else each
    scenario's own (distinct, ascending).

    Raises:
        EvalError: The suites cannot be loaded (as :func:`run_eval` would raise).
    """
    if options.windows:
        return sorted(set(options.windows))
    suites = load_suite_scenarios(options)
    return sorted({scenario.window for scenarios in suites.values() for scenario in scenarios})


def _shown(key: str, value: Any) -> str:
    return f"{key}={value if isinstance(value, str) else json.dumps(value)}"


def sweep_notes(
    options: EvalOptions, key: str, values: Sequence[Any], windows: Sequence[int] | None = None
) -> list[str]:
    """What the windows played make of the swept values: one sentence per value whose
    ``hardCapTokens`` is capped below itself by ``recallWindowRatio``, and one per group of
    values that give the same effective recall cap at every window while nothing else differs
    (their points are identical by construction). Empty when neither applies.

    Args:
        options: The sweep's options (their overrides under each value, their windows).
        key: The swept setting, as ``--sweep`` names it.
        values: Its values.
        windows: The windows played; ``None`` reads them (:func:`played_windows`).
    """
    played = list(windows) if windows is not None else played_windows(options)
    base = MemoryContextConfig().with_overrides(dict(options.overrides))
    configs = [base.with_overrides({key: value}) for value in values]
    notes = list(dict.fromkeys(n for c in configs if (n := recall_cap_note(c, played))))
    rest = {json.dumps(c.model_dump(exclude=set(_CAP_FIELDS)), sort_keys=True) for c in configs}
    if len(rest) != 1 or not played:
        return notes  # another setting changes too: equal caps do not make equal runs
    groups: dict[tuple[int, ...], list[Any]] = {}
    for value, config in zip(values, configs, strict=True):
        groups.setdefault(tuple(recall_caps(config, played).values()), []).append(value)
    for caps, same in groups.items():
        if len(same) < 2:
            continue
        at = ", ".join(f"{cap:,} at {w:,} tokens" for w, cap in zip(played, caps, strict=True))
        every = len(same) == len(values)
        who = (
            "every value of this sweep gives"
            if every
            else f"{', '.join(_shown(key, v) for v in same)} give"
        )
        notes.append(
            f"{who} the same recall cap at every window played ({at}) and nothing else "
            f"differs: {'the' if every else 'their'} points are identical by construction"
        )
    return notes


def _point_dir(value: Any, key: str) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    safe = "".join(c if c.isalnum() or c in "._+-" else "_" for c in text)
    return f"{key}={safe}"


def run_sweep(
    options: EvalOptions,
    key: str,
    values: Sequence[Any],
    *,
    after_each: Callable[[Path], None] | None = None,
    notes: Sequence[str] | None = None,
) -> tuple[Path, list[SweepPoint]]:
    """Run the matrix of ``options`` once per value of ``key`` and write the sweep's files.

    Args:
        options: The run's options; their ``out_dir`` (or a new run folder) holds the sweep.
        key: A config key (dotted or camelCase, as ``--set``).
        values: Its values, in the order the curve is drawn.
        after_each: Called with each point's run folder once it is written (the CLI
            renders its report there).
        notes: :func:`sweep_notes` when the caller has them already; ``None`` makes them.

    Returns:
        The sweep folder and one point per value × strategy × embedding.
    """
    run_id, folder = run_dir_for(options)
    notes = list(notes) if notes is not None else sweep_notes(options, key, values)
    points: list[SweepPoint] = []
    for value in values:
        out = folder / _point_dir(value, key)
        overrides = {**dict(options.overrides), key: value}
        run_dir = run_eval(
            replace(options, overrides=overrides, out_dir=out, run_id=f"{run_id}/{out.name}")
        )
        if after_each is not None:
            after_each(run_dir)
        summary = upgrade_summary(json.loads((run_dir / "summary.json").read_text("utf-8")))
        points += [_point(value, record, run_dir) for record in summary["pooled"]]
    _write(folder, key, points, notes)
    return folder, points


def _point(value: Any, record: Mapping[str, Any], run_dir: Path) -> SweepPoint:
    calls = record.get("calls") or 0
    cost = record.get("cost_usd")
    return SweepPoint(
        value=value,
        strategy=str(record["strategy"]),
        embedding=str(record["embedding"]),
        recall_accuracy=record.get("recall_accuracy"),
        recall_accuracy_ci=list(record.get("recall_accuracy_ci") or []),
        tokens_per_call=float(record.get("tokens_per_call") or 0.0),
        cost_per_call=(float(cost) / calls) if cost is not None and calls else None,
        violations=int(record.get("violations") or 0),
        run_dir=str(run_dir),
    )


def format_sweep(key: str, points: Sequence[SweepPoint]) -> str:
    """A Markdown table: one row per strategy × embedding, one column per value."""
    values = list(dict.fromkeys(json.dumps(p.value) for p in points))
    pairs = list(dict.fromkeys((p.strategy, p.embedding) for p in points))
    index = {(p.strategy, p.embedding, json.dumps(p.value)): p for p in points}

    def cell(point: SweepPoint | None) -> str:
        if point is None or point.recall_accuracy is None:
            return "n/a"
        ci = point.recall_accuracy_ci
        spread = f" ({100 * ci[0]:.1f}–{100 * ci[1]:.1f})" if len(ci) == 2 else ""
        cost = "" if point.cost_per_call is None else f", ${point.cost_per_call:.4f}/call"
        return f"{100 * point.recall_accuracy:.1f} %{spread}{cost}"

    head = ["strategy", "embedding", *(f"{key}={json.loads(v)}" for v in values)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for strategy, embedding in pairs:
        cells = [cell(index.get((strategy, embedding, v))) for v in values]
        lines.append("| " + " | ".join([strategy, embedding, *cells]) + " |")
    return "\n".join(lines)


def _write(folder: Path, key: str, points: Sequence[SweepPoint], notes: Sequence[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    data = {"key": key, "notes": list(notes), "points": [p.__dict__ for p in points]}
    (folder / "sweep.json").write_text(json.dumps(data, indent=2, default=str) + "\n", "utf-8")
    said = "".join(f"Note: {note}.\n\n" for note in notes)
    text = (
        f"# Sweep of {key}\n\nPooled over every suite: recall accuracy (95 % interval) and "
        f"cost per call at each value; each value's full run is in its own folder.\n\n"
        f"{said}{format_sweep(key, points)}\n"
    )
    (folder / "sweep.md").write_text(text, "utf-8")

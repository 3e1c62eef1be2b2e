"""Whether two runs can be compared: did they play the same scenarios, the same way?

Two runs' figures measure the same thing only when the runs played the same scenarios under
the same conditions; otherwise a gate or a comparison reads differences of data as
differences of quality (a quick run's 8 probes a suite against a baseline's 44 "pass" a gate
that cannot tell). :func:`run_differences` names every difference that makes two summaries
incomparable, each with what the runs hold and the fix:

- ``suites``: the runs played different suites (a ``--suite`` subset, a suite new in one);
  the suites both played on the same scenarios are named, so the user sees what a
  comparison of the intersection would cover;
- ``scenarios``: a suite both played holds different scenarios (``provenance.scenarios``:
  scenario count, probe count or sha256 differ): regenerated datasets, another ``--seed``
  of the generated set, another ``--datasets`` folder;
- ``quick``: one run played the small generated set (``--quick``), the other the frozen
  datasets;
- ``windows``: the runs played at different context windows (``--window``);
- ``judge``: probes answered and judged by different models (``--llm``), or by one only;
- ``answer model``: calls priced for different models (``--answer-model``); a difference
  only where cost is judged (``costs``), since it changes no other figure.

Not differences: strategies and embeddings (rows are matched by suite × strategy ×
embedding and rows of one run only are noted), config overrides (what a gate exists to
judge) and the seed of frozen datasets (it only seeds the bootstrap). A suite whose
checksum one summary lacks (written before provenance, or by hand) cannot be checked: it is
listed as unverified, not refused.

The gate (:func:`memctx.harness.gate.check_gate`), ``memctx compare`` and the report's
baseline section refuse to compare (exit 2) when there is a difference, unless the user
asks to compare anyway (:data:`ALLOW_FLAG`). ``memctx eval --baseline`` checks the same
before it runs anything (:func:`planned_summary`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .provenance import provenance
from .schema import ALL_SUITES

if TYPE_CHECKING:
    from .run import EvalOptions

__all__ = [
    "ALLOW_FLAG",
    "Comparability",
    "Difference",
    "planned_summary",
    "run_differences",
]

ALLOW_FLAG = "--allow-different-scenarios"
GENERATED = "generated (quick)"  # provenance.datasets of a run on the generated set
_SHOWN = 4  # suites named at most in a short phrase


@dataclass(frozen=True)
class Difference:
    """One reason two runs cannot be compared.

    Attributes:
        kind: ``"suites"``, ``"scenarios"``, ``"quick"``, ``"windows"``, ``"judge"`` or
            ``"answer model"``.
        summary: A short phrase for a verdict line (``"different scenarios in needle"``).
        detail: What each run holds, in full.
        fix: What makes the two comparable.
    """

    kind: str
    summary: str
    detail: str
    fix: str


@dataclass(frozen=True)
class Comparability:
    """What :func:`run_differences` found.

    Attributes:
        differences: Every difference (empty: the runs can be compared).
        before: How the first run is named (``"the baseline"``, ``"A"``).
        after: How the second run is named (``"this run"``, ``"B"``).
        same: Suites both runs played on identical scenarios.
        unverified: Suites both runs played whose scenarios cannot be checked (a checksum
            missing on one side).
    """

    differences: tuple[Difference, ...]
    before: str
    after: str
    same: tuple[str, ...] = ()
    unverified: tuple[str, ...] = ()

    @property
    def comparable(self) -> bool:
        return not self.differences

    @property
    def summary(self) -> str:
        """Every difference in one phrase (``""`` when there is none)."""
        return "; ".join(d.summary for d in self.differences)

    def lines(self) -> list[str]:
        """Each difference with its fix, then which suites match (one item per line)."""
        out = [f"{d.kind}: {d.detail}; fix: {d.fix}" for d in self.differences]
        if self.differences and any(d.kind in ("suites", "scenarios") for d in self.differences):
            same = ", ".join(self.same) if self.same else "none"
            out.append(f"suites both runs played on the same scenarios: {same}")
        if self.unverified:
            out.append(
                "scenarios not verified (no checksum in one summary): " + ", ".join(self.unverified)
            )
        return out

    def refusal_lines(self) -> list[str]:
        """:meth:`lines`, then how to compare anyway."""
        return [
            *self.lines(),
            f"to compare anyway, pass {ALLOW_FLAG} (rows are then matched by suite × strategy "
            "× embedding whatever they played)",
        ]

    def refusal(self) -> str:
        """The message of a refusal: a head line, then the differences with their fixes and
        how to compare anyway, one indented item per line."""
        head = f"cannot compare {self.after} with {self.before}: {self.summary}"
        return "\n".join([head, *(f"  - {line}" for line in self.refusal_lines())])


def _suites(summary: Mapping[str, Any]) -> list[str]:
    """The suites a summary played: its records' and its scenario checksums', in order."""
    named = [str(r.get("suite")) for r in summary.get("records") or [] if isinstance(r, Mapping)]
    named += list(_digests(summary))
    named += [str(s) for s in summary.get("suites_planned") or ()]
    return [s for s in dict.fromkeys(named) if s != ALL_SUITES]


def _provenance(summary: Mapping[str, Any]) -> Mapping[str, Any]:
    found = summary.get("provenance")
    return found if isinstance(found, Mapping) else {}


def _digests(summary: Mapping[str, Any]) -> Mapping[str, Any]:
    found = _provenance(summary).get("scenarios")
    return found if isinstance(found, Mapping) else {}


def _config(summary: Mapping[str, Any]) -> Mapping[str, Any]:
    found = summary.get("config")
    return found if isinstance(found, Mapping) else {}


def _generated(summary: Mapping[str, Any]) -> bool | None:
    """Whether the run played the small generated set; ``None`` when the summary does not
    say. ``provenance.datasets`` first: ``--quick --datasets DIR`` plays frozen files."""
    datasets = _provenance(summary).get("datasets")
    if isinstance(datasets, str):
        return datasets == GENERATED
    quick = _config(summary).get("quick")
    return quick if isinstance(quick, bool) else None


def _listed(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def _suite_difference(
    before: list[str], after: list[str], names: tuple[str, str]
) -> Difference | None:
    only_before = [s for s in before if s not in after]
    only_after = [s for s in after if s not in before]
    if not only_before and not only_after:
        return None
    parts = []
    if only_before:
        parts.append(f"only {names[0]} played {', '.join(only_before)}")
    if only_after:
        parts.append(f"only {names[1]} played {', '.join(only_after)}")
    summary = "different suites (" + "; ".join(
        f"only in {who}: {_listed(suites)}"
        for who, suites in ((names[0], only_before), (names[1], only_after))
        if suites
    )
    fix = (
        f"play the suites {names[0]} played ({', '.join(before) or 'none'}: --suite for "
        f"each, or no --suite when that is every suite), or compare with a run of the "
        f"suites {names[1]} played"
    )
    return Difference("suites", summary + ")", "; ".join(parts), fix)


def _counts(a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    """``2/44 vs 1/8`` (scenarios/probes), with the checksums when the counts agree."""
    text = f"{a.get('scenarios')}/{a.get('probes')} vs {b.get('scenarios')}/{b.get('probes')}"
    if (a.get("scenarios"), a.get("probes")) == (b.get("scenarios"), b.get("probes")):
        text += f" (sha256 {str(a.get('sha256'))[:12]} vs {str(b.get('sha256'))[:12]})"
    return text


def _scenario_difference(
    before: Mapping[str, Any], after: Mapping[str, Any], both: list[str], names: tuple[str, str]
) -> tuple[Difference | None, list[str], list[str]]:
    """The scenarios difference over the suites both played, the suites on the same
    scenarios and those that cannot be checked."""
    old, new = _digests(before), _digests(after)
    same, unverified, differ = [], [], []
    for suite in both:
        a, b = old.get(suite), new.get(suite)
        if not (isinstance(a, Mapping) and a.get("sha256")) or not (
            isinstance(b, Mapping) and b.get("sha256")
        ):
            unverified.append(suite)
            continue
        keys = ("scenarios", "probes", "sha256")
        if all(a.get(k) == b.get(k) for k in keys):
            same.append(suite)
        else:
            differ.append((suite, a, b))
    if not differ:
        return None, same, unverified
    detail = f"scenarios/probes of {names[0]} vs {names[1]}: " + ", ".join(
        f"{suite} {_counts(a, b)}" for suite, a, b in differ
    )
    seeds = {
        (tuple(a.get("seeds") or ()), tuple(b.get("seeds") or ()))
        for _, a, b in differ
        if a.get("seeds") != b.get("seeds")
    }
    cause = (
        " (generated from different seeds: "
        + ", ".join(f"{list(x)} vs {list(y)}" for x, y in sorted(seeds))
        + ")"
        if seeds
        else ""
    )
    datasets = _provenance(before).get("datasets")
    fix = (
        f"play the scenarios {names[0]} played"
        + (f" ({datasets}{', --seed as it was' if seeds else ''})" if datasets else "")
        + f", or re-make {names[0]} on the current scenarios"
    )
    suites = [suite for suite, _, _ in differ]
    summary = f"different scenarios in {_listed(suites)}"
    return Difference("scenarios", summary, detail + cause, fix), same, unverified


def _windows(summary: Mapping[str, Any]) -> tuple[int, ...] | None:
    found = _config(summary).get("windows")
    if not isinstance(found, list | tuple):
        return None
    return tuple(sorted(int(w) for w in found if isinstance(w, int | float)))


def _window_text(windows: tuple[int, ...]) -> str:
    if not windows:
        return "each scenario's own window"
    return ", ".join(f"{w:,}" for w in windows) + " tokens"


def _setting_differences(
    before: Mapping[str, Any], after: Mapping[str, Any], names: tuple[str, str], costs: bool
) -> list[Difference]:
    out: list[Difference] = []
    generated = (_generated(before), _generated(after))
    if None not in generated and generated[0] != generated[1]:
        quick_one, other = (names[1], names[0]) if generated[1] else names
        frozen = _provenance(after if generated[0] else before).get("datasets")
        out.append(
            Difference(
                "quick",
                f"{quick_one} is a quick run, {other} a full one",
                f"{quick_one} played the small generated set (--quick), {other} the frozen "
                f"datasets{f' ({frozen})' if frozen else ''}",
                "make both runs alike: both with --quick or both without (a baseline for "
                "quick runs is a quick run's summary.json)",
            )
        )
    windows = (_windows(before), _windows(after))
    if windows[0] is not None and windows[1] is not None and windows[0] != windows[1]:
        out.append(
            Difference(
                "windows",
                "different context windows",
                f"{names[0]} played at {_window_text(windows[0])}, {names[1]} at "
                f"{_window_text(windows[1])}",
                f"play at the windows {names[0]} played (--window for each, or none for "
                "each scenario's own)",
            )
        )
    old, new = _config(before), _config(after)
    if "llm" in old and "llm" in new and old["llm"] != new["llm"]:
        out.append(
            Difference(
                "judge",
                "different models answer the probes",
                f"{names[0]} --llm {old['llm'] or '(none)'}, {names[1]} --llm "
                f"{new['llm'] or '(none)'}",
                f"use the --llm {names[0]} used",
            )
        )
    models = [_answer_model(s) for s in (before, after)]
    if costs and None not in models and models[0] != models[1]:
        out.append(
            Difference(
                "answer model",
                "costs priced for different models",
                f"{names[0]} priced for {models[0]}, {names[1]} for {models[1]}",
                f"use the --answer-model {names[0]} used ({models[0]}), or leave cost out of "
                "the comparison",
            )
        )
    return out


def _answer_model(summary: Mapping[str, Any]) -> str | None:
    found = _config(summary).get("answer_model") or _provenance(summary).get("answer_model")
    return str(found) if found else None


def run_differences(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    *,
    names: tuple[str, str] = ("the baseline", "this run"),
    costs: bool = True,
) -> Comparability:
    """Every difference between two summaries that makes their figures incomparable.

    Args:
        before: The baseline's summary (or A's).
        after: The run's summary (or B's, or :func:`planned_summary` before a run).
        names: How the two are named in the messages.
        costs: Whether cost is judged (then a different answer model is a difference).

    Returns:
        The differences, the suites on the same scenarios and those unverified.
    """
    b_suites, a_suites = _suites(before), _suites(after)
    differences: list[Difference] = []
    differences += _setting_differences(before, after, names, costs)
    suites = _suite_difference(b_suites, a_suites, names)
    if suites is not None:
        differences.append(suites)
    both = [s for s in b_suites if s in a_suites]
    scenarios, same, unverified = _scenario_difference(before, after, both, names)
    if scenarios is not None:
        differences.append(scenarios)
    return Comparability(tuple(differences), names[0], names[1], tuple(same), tuple(unverified))


def planned_summary(
    options: EvalOptions, scenarios: Mapping[str, Sequence[Any]], other_suites: Iterable[str] = ()
) -> dict[str, Any]:
    """What a run's summary will say about its setup, from its options and its loaded
    scenarios (:func:`memctx.harness.run.load_suite_scenarios`), before it runs:
    :func:`run_differences` reads it as it reads a finished run's.

    Args:
        options: The run's :class:`memctx.harness.run.EvalOptions`.
        scenarios: Per suite, the scenarios it will play.
        other_suites: Suites played outside the scenario files (real-data suites).
    """
    return {
        "config": options.config_json(),
        "provenance": provenance(options, scenarios),
        "records": [],
        "suites_planned": [*scenarios, *other_suites],
    }

"""Plain statements about a run, computed from its data: the report's "Checks" section.

Three claims the harness exists to test:

1. memory-context beats truncate on recall accuracy in every suite (per embedding);
2. full, while it fits its window, is the ceiling (nothing answers more of the same probes);
3. invariant violations are zero in every record.

Each :class:`Check` says PASS/FAIL and names the suites or records that break the claim, so a
reader does not have to scan the tables.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..schema import ALL_SUITES, LEGACY_NO_EMBEDDING, NO_EMBEDDING, all_records

__all__ = ["ALL", "Check", "pair_label", "pairs", "run_checks", "suites"]

ALL = ALL_SUITES  # the pooled records' suite name, under the name the reports use
_EPS = 1e-9
Pair = tuple[str, str]


@dataclass(frozen=True)
class Check:
    """One claim and its verdict.

    Attributes:
        name: The claim, e.g. "memory-context beats truncate".
        ok: True (holds), False (broken) or None (cannot be judged from this run).
        text: The finding in one or two sentences, with the suites that break it.
    """

    name: str
    ok: bool | None
    text: str

    @property
    def verdict(self) -> str:
        return {True: "PASS", False: "FAIL", None: "N/A"}[self.ok]


def pair_label(strategy: str, embedding: str) -> str:
    """``"memory-context × hash"``, or just the strategy when it does not search."""
    no_embedder = embedding in (NO_EMBEDDING, LEGACY_NO_EMBEDDING, "")
    return strategy if no_embedder else f"{strategy} × {embedding}"


def pairs(records: Iterable[Mapping[str, Any]]) -> list[Pair]:
    """The run's (strategy, embedding) pairs in first-seen order."""
    return list(dict.fromkeys((str(r["strategy"]), str(r["embedding"])) for r in records))


def suites(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """The run's suites in first-seen order, without the ``"all"`` aggregate."""
    return list(dict.fromkeys(str(r["suite"]) for r in records if r["suite"] != ALL))


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


def _index(records: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str], Mapping[str, Any]]:
    return {(str(r["suite"]), str(r["strategy"]), str(r["embedding"])): r for r in records}


def _acc(record: Mapping[str, Any] | None) -> float | None:
    value = None if record is None else record.get("recall_accuracy")
    return float(value) if isinstance(value, int | float) else None


def _beats_truncate(records: Sequence[Mapping[str, Any]]) -> list[Check]:
    index = _index(records)
    names = suites(records)
    embeddings = [e for s, e in pairs(records) if s == "memory-context"]
    name = "memory-context beats truncate on recall accuracy in every suite"
    if not embeddings or not any(p == ("truncate", NO_EMBEDDING) for p in pairs(records)):
        return [Check(name, None, "the run lacks memory-context or truncate.")]
    out = []
    for embedding in embeddings:
        label = pair_label("memory-context", embedding)
        losses = []
        for suite in names:
            mine = _acc(index.get((suite, "memory-context", embedding)))
            theirs = _acc(index.get((suite, "truncate", NO_EMBEDDING)))
            if mine is None or theirs is None:
                continue
            if mine <= theirs + _EPS:
                how = (
                    "tie at " + _pct(mine)
                    if abs(mine - theirs) <= _EPS
                    else (f"{_pct(mine)} vs {_pct(theirs)}")
                )
                losses.append(f"{suite} ({how})")
        if losses:
            text = (
                f"{label} beats truncate on recall accuracy in {len(names) - len(losses)} of "
                f"{len(names)} "
                f"suites; not in {', '.join(losses)}."
            )
        else:
            text = f"{label} beats truncate on recall accuracy in all {len(names)} suites."
        out.append(Check(f"{name} ({label})", not losses, text))
    return out


def _full_ceiling_from_probes(probes: Sequence[Mapping[str, Any]]) -> Check:
    name = "full is the ceiling where it fits"
    full_rows = {
        (p["suite"], p["scenario"], p["probe"]): p for p in probes if p["strategy"] == "full"
    }
    fitted = {key for key, p in full_rows.items() if p["fits"]}
    if not full_rows:
        return Check(name, None, "the run lacks the full strategy.")
    if not fitted:
        return Check(name, None, f"full overflowed its window on all {len(full_rows)} probes.")
    # On the probes full fitted: answers per other pair, and probes full missed but it held.
    hits: Counter[Pair] = Counter()
    asked: Counter[Pair] = Counter()
    beaten: dict[str, Counter[str]] = defaultdict(Counter)
    for p in probes:
        key = (p["suite"], p["scenario"], p["probe"])
        pair = (str(p["strategy"]), str(p["embedding"]))
        if key not in fitted:
            continue
        hits[pair] += bool(p["recall_accuracy"])
        asked[pair] += 1
        if pair[0] != "full" and p["recall_accuracy"] and not full_rows[key]["recall_accuracy"]:
            beaten[str(p["suite"])][pair_label(*pair)] += 1
    full = ("full", NO_EMBEDDING)
    others = [p for p in asked if p != full]
    best = max(others, key=lambda p: (hits[p] / asked[p], p), default=None)
    text = f"full fits {len(fitted)} of {len(full_rows)} probes; on those it answers "
    text += _pct(hits[full] / asked[full])
    if best is not None:
        text += f", the best other strategy {pair_label(*best)} {_pct(hits[best] / asked[best])}"
    text += "."
    if hits[full] < asked[full]:
        text += f" full misses {asked[full] - hits[full]} probe(s) it fits."
    if beaten:
        where = "; ".join(
            f"{suite}: " + ", ".join(f"{label} {n}" for label, n in counts.items())
            for suite, counts in beaten.items()
        )
        return Check(
            name,
            False,
            f"{text} full is not the ceiling: other strategies answer fitted probes full "
            f"misses in {where}.",
        )
    return Check(name, True, f"{text} full is the ceiling.")


def _full_ceiling_from_records(records: Sequence[Mapping[str, Any]]) -> Check:
    name = "full is the ceiling where it fits"
    index = _index(records)
    beaten = []
    for suite in suites(records):
        full = _acc(index.get((suite, "full", NO_EMBEDDING)))
        if full is None:
            continue
        for strategy, embedding in pairs(records):
            other = _acc(index.get((suite, strategy, embedding)))
            if strategy != "full" and other is not None and other > full + _EPS:
                beaten.append(f"{suite} ({pair_label(strategy, embedding)} {_pct(other)})")
    if not any(k[1] == "full" for k in index):
        return Check(name, None, "the run lacks the full strategy.")
    note = "over different probe sets; report.md compares the same probes"
    if beaten:
        return Check(
            name,
            False,
            f"full's accuracy on the probes it fits is beaten in {', '.join(beaten)} ({note}).",
        )
    return Check(
        name, True, f"full's accuracy on the probes it fits is the highest in every suite ({note})."
    )


def _violations(records: Sequence[Mapping[str, Any]]) -> Check:
    name = "invariant violations are zero"
    detailed = [r for r in records if r["suite"] != ALL] or list(records)
    bad = []
    for r in detailed:
        count = r.get("violations") or 0
        if count:
            kinds = ", ".join(f"{k} {v}" for k, v in (r.get("violation_kinds") or {}).items() if v)
            label = pair_label(str(r["strategy"]), str(r["embedding"]))
            bad.append(f"{r['suite']} {label}: {count}" + (f" ({kinds})" if kinds else ""))
    if bad:
        return Check(name, False, f"violations in {'; '.join(bad)}.")
    return Check(name, True, f"0 violations in all {len(detailed)} records.")


def run_checks(
    summary: Mapping[str, Any], probes: Sequence[Mapping[str, Any]] | None = None
) -> list[Check]:
    """The checks of a run; ``probes`` (results.jsonl rows) makes the full check exact."""
    records: Sequence[Mapping[str, Any]] = all_records(summary)
    full = _full_ceiling_from_probes(probes) if probes else _full_ceiling_from_records(records)
    return [*_beats_truncate(records), full, _violations(records)]

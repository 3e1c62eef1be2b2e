"""Plain statements about a run, computed from its data: the report's "Checks" section.

Three claims the harness exists to test:

1. memory-context beats truncate on recall accuracy (per embedding): ahead over all suites
   beyond noise (the pooled records: the synthetic suites; with real-data suites alone,
   ahead in every suite it is judged in), and behind beyond noise in no suite;
2. no strategy beats full on the probes whose context fits full's window (full sees the
   whole transcript there, so another strategy answering a probe full misses is a
   contradiction, not noise);
3. invariant violations are zero in every record.

Each :class:`Check` says PASS, FAIL or N/A and names the suites or records that decide it.
Differences are judged with the intervals of :mod:`.intervals`: a difference within noise is
never a FAIL, a tie is said to be one, and a claim the data cannot decide is N/A.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..frames import probe_frame
from ..schema import ALL_SUITES, LEGACY_NO_EMBEDDING, NO_EMBEDDING, REAL_DATA_SUITES, all_records
from .intervals import Outcomes, Share, difference, share_of

__all__ = ["ALL", "Check", "pair_label", "pairs", "run_checks", "suites"]

ALL = ALL_SUITES  # the pooled records' suite name, under the name the reports use
Pair = tuple[str, str]
_KEY = ["suite", "scenario", "probe"]


@dataclass(frozen=True)
class Check:
    """One claim and its verdict.

    Attributes:
        name: The claim, e.g. "memory-context beats truncate".
        ok: True (holds), False (broken beyond noise) or None (the data cannot decide).
        text: The finding in one or two sentences, with the suites that decide it.
    """

    name: str
    ok: bool | None
    text: str

    @property
    def verdict(self) -> str:
        """``"PASS"``, ``"FAIL"`` or ``"N/A"``."""
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


def _versus(suite: str, mine: Share, theirs: Share) -> str:
    """``"paraphrase (50.0 % vs 50.0 %, n=8 each: a tie)"``."""
    counts = f"n={mine.n} each" if mine.n == theirs.n else f"n={mine.n} vs {theirs.n}"
    tie = ": a tie" if mine.value == theirs.value else ""
    return f"{suite} ({_pct(mine.value)} vs {_pct(theirs.value)}, {counts}{tie})"


def _beats_truncate(
    records: Sequence[Mapping[str, Any]], outcomes: Outcomes | None = None
) -> list[Check]:
    index = _index(records)
    names = suites(records)
    embeddings = [e for s, e in pairs(records) if s == "memory-context"]
    name = "memory-context beats truncate on recall accuracy"
    if not embeddings or not any(p == ("truncate", NO_EMBEDDING) for p in pairs(records)):
        return [Check(name, None, "the run lacks memory-context or truncate.")]
    out = []
    for embedding in embeddings:
        label = pair_label("memory-context", embedding)
        ahead: list[str] = []
        within: list[str] = []
        behind: list[str] = []
        for suite in names:
            mine_record = index.get((suite, "memory-context", embedding))
            theirs_record = index.get((suite, "truncate", NO_EMBEDDING))
            mine, theirs = share_of(mine_record), share_of(theirs_record)
            if not (mine.known and theirs.known):
                continue
            sign = difference(mine_record, theirs_record, outcomes=outcomes).sign
            bucket = ahead if sign > 0 else behind if sign < 0 else within
            bucket.append(_versus(suite, mine, theirs))
        judged = len(ahead) + len(within) + len(behind)
        mine_pooled = index.get((ALL, "memory-context", embedding))
        theirs_pooled = index.get((ALL, "truncate", NO_EMBEDDING))
        mine_all, theirs_all = share_of(mine_pooled), share_of(theirs_pooled)
        overall = difference(mine_pooled, theirs_pooled, outcomes=outcomes)
        # The pooled records cover the synthetic suites only; a run of real data has none,
        # and then the suites alone decide.
        over = "over all suites"
        if any(r["suite"] in REAL_DATA_SUITES for r in records):
            over = "pooled over the synthetic suites"
        pooled = f"{_pct(mine_all.value)} vs {_pct(theirs_all.value)} {over}, {overall.text()}"
        if all(r["suite"] in REAL_DATA_SUITES for r in records):
            pooled = "nothing pooled (real-data suites only)"
            ahead_overall = bool(ahead) and not within
        else:
            ahead_overall = overall.sign > 0
        detail = f"ahead beyond noise in {len(ahead)} of {judged} suites"
        if within:
            detail += f"; not distinguishable in {', '.join(within)}"
        if behind:
            text = f"{label} is behind truncate beyond noise in {', '.join(behind)}; {detail}."
            ok: bool | None = False
        elif ahead_overall:
            text = f"{label} beats truncate on recall accuracy: {pooled}; {detail}."
            ok = True
        else:
            text = f"{label} vs truncate cannot be told apart: {pooled}; {detail}."
            ok = None
        out.append(Check(f"{name} ({label})", ok, text))
    return out


def _full_ceiling_from_probes(probes: Sequence[Mapping[str, Any]]) -> Check:
    name = "no strategy beats full on the probes it fits"
    frame = probe_frame([dict(p) for p in probes])
    if frame.empty or not (frame["strategy"] == "full").any():
        return Check(name, None, "the run lacks the full strategy.")
    frame = frame.assign(answers=frame["recall_accuracy"].fillna(False).astype(bool))
    full = frame[frame["strategy"] == "full"].drop_duplicates(_KEY, keep="last")
    fitted = full[full["fits"].fillna(False).astype(bool)]
    if fitted.empty:
        return Check(name, None, f"full overflowed its window on all {len(full)} probes.")
    # Every other strategy's rows on the probes full fitted, beside full's own answer there.
    full_answers = fitted.set_index(_KEY)["answers"].rename("full_answers")
    on = frame[frame["strategy"] != "full"].join(full_answers, on=_KEY, how="inner")
    others = on.groupby(["strategy", "embedding"], sort=False)["answers"].mean()
    full_share = float(fitted["answers"].mean())
    beaten = on[on["answers"] & ~on["full_answers"].astype(bool)]
    text = f"full fits {len(fitted)} of {len(full)} probes; on those it answers {_pct(full_share)}"
    if not others.empty:
        best = max(others.index, key=lambda p: (others[p], p))
        text += f", the best other strategy {pair_label(*best)} {_pct(float(others[best]))}"
    text += "."
    misses = int((~fitted["answers"]).sum())
    if misses:
        text += f" full misses {misses} probe(s) it fits."
    if not beaten.empty:
        counts = beaten.groupby(["suite", "strategy", "embedding"], sort=False).size()
        by_suite: dict[str, list[str]] = {}
        for row in counts.reset_index(name="n").itertuples(index=False):
            label = pair_label(str(row.strategy), str(row.embedding))
            by_suite.setdefault(str(row.suite), []).append(f"{label} {row.n}")
        where = "; ".join(f"{suite}: {', '.join(items)}" for suite, items in by_suite.items())
        return Check(
            name,
            False,
            f"{text} full is not the ceiling: other strategies answer fitted probes full "
            f"misses in {where}.",
        )
    ties = [pair_label(*p) for p in others.index if others[p] >= full_share]
    if ties:
        if len(ties) == len(others):
            said = "every other configuration ties it"
        elif len(ties) <= 3:
            said = f"{', '.join(ties)} {'ties' if len(ties) == 1 else 'tie'} it"
        else:
            said = f"{len(ties)} of the {len(others)} other configurations tie it"
        return Check(name, True, f"{text} No strategy beats full on them; {said}.")
    return Check(name, True, f"{text} full is the ceiling: every other strategy answers fewer.")


def _full_ceiling_from_records(records: Sequence[Mapping[str, Any]]) -> Check:
    name = "no strategy beats full on the probes it fits"
    index = _index(records)
    if not any(k[1] == "full" for k in index):
        return Check(name, None, "the run lacks the full strategy.")
    beaten, within = [], []
    for suite in suites(records):
        full_record = index.get((suite, "full", NO_EMBEDDING))
        full = share_of(full_record)
        if not full.known:
            continue
        for strategy, embedding in pairs(records):
            record = index.get((suite, strategy, embedding))
            other = share_of(record)
            if strategy == "full" or not other.known:
                continue
            assert other.value is not None and full.value is not None
            said = f"{suite} ({pair_label(strategy, embedding)} {_pct(other.value)} vs "
            said += f"{_pct(full.value)}, n={other.n} vs {full.n})"
            if difference(record, full_record).sign > 0:
                beaten.append(said)
            elif other.value > full.value:
                within.append(said)
    note = "over different probe sets; report.md compares the same probes"
    if beaten:
        return Check(
            name,
            False,
            f"full's accuracy on the probes it fits is beaten beyond noise in "
            f"{', '.join(beaten)} ({note}).",
        )
    text = "no strategy is ahead of full beyond noise in any suite"
    if within:
        text += f"; ahead within noise: {', '.join(within)}"
    return Check(name, True, f"{text} ({note}).")


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
    """The checks of a run; ``probes`` (results.jsonl rows) makes the full check exact and
    the comparisons with truncate paired (probe by probe)."""
    records: Sequence[Mapping[str, Any]] = all_records(summary)
    full = _full_ceiling_from_probes(probes) if probes else _full_ceiling_from_records(records)
    outcomes = Outcomes.from_probes(probes) if probes else None
    return [*_beats_truncate(records, outcomes), full, _violations(records)]

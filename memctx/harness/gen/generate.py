"""The seeded scenario generator behind ``memctx gen``.

Long synthetic coding sessions in OpenAI or Anthropic message format (alternating across a
suite's scenarios): a project from a bank of stacks, requests worked through with tool calls
(parallel reads, greps, edits, test runs that fail and get fixed), large tool outputs, one-
word turns, Chinese turns, secrets in config files; facts of the six kinds planted in varied
wording in user text, assistant text or tool output, some revised later; and probes asked
long after the plant. Every fact value occurs only where it was planted, so the harness can
score a probe by the presence of an answer string.

Everything is a function of ``(suite, seed, scale)``: each scenario draws from
``random.Random(f"{suite}:{seed}:{index}:...")`` streams, never from global state or the
clock, so the same arguments give byte-identical files. :func:`write_datasets` writes one
``<suite>.jsonl.gz`` per suite plus ``MANIFEST.json`` (sha256 of the uncompressed content,
counts, tokens); :func:`verify_datasets` checks a folder against its manifest.

Sizes (see :mod:`memctx.harness.gen.suites`): at ``scale=1.0`` about 2.3 M estimated tokens and 380
probes, ``long-haul`` being one scenario of >= 1 M tokens at a 200,000-token window; at the
quick scale 0.15 every suite has one smaller scenario (``long-haul`` ~150,000 tokens).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from memctx.messages import estimate_messages_tokens

from ..scenario import (
    SCENARIO_SCHEMA,
    Scenario,
    ScenarioError,
    content_sha256,
    dump_scenarios,
    load_scenarios,
)
from .build import GenError, build_scenario
from .suites import DEFAULT_SUITES, SUITES, suite_plans

__all__ = [
    "DEFAULT_SUITES",
    "GENERATOR_VERSION",
    "SUITES",
    "GenError",
    "gen_main",
    "generate_suite",
    "suite_stats",
    "verify_datasets",
    "write_datasets",
]

GENERATOR_VERSION = "1.0.0"
MANIFEST = "MANIFEST.json"


def generate_suite(suite: str, *, seed: int = 0, scale: float = 1.0) -> list[Scenario]:
    """Every scenario of ``suite`` for ``seed`` and ``scale``.

    Raises:
        ValueError: ``suite`` is not one of :data:`SUITES`, or ``scale`` is not positive.
    """
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; valid suites: {', '.join(SUITES)}")
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale!r}")
    return [build_scenario(plan) for plan in suite_plans(suite, seed, scale)]


def suite_stats(scenarios: Sequence[Scenario]) -> dict[str, int]:
    """Scenario, probe and message counts and estimated tokens of one suite."""
    return {
        "scenarios": len(scenarios),
        "probes": sum(len(s.probes) for s in scenarios),
        "messages": sum(len(x.messages) for s in scenarios for x in s.sessions),
        "tokens": sum(estimate_messages_tokens(x.messages) for s in scenarios for x in s.sessions),
    }


def write_datasets(
    out_dir: Path, *, seed: int = 0, scale: float = 1.0, suites: Iterable[str] = SUITES
) -> dict[str, Any]:
    """Generate ``suites`` into ``out_dir`` (one ``<suite>.jsonl.gz`` each) with a manifest.

    Returns:
        The manifest written to ``out_dir/MANIFEST.json``.
    """
    out_dir = Path(out_dir)
    manifest: dict[str, Any] = {
        "version": GENERATOR_VERSION,
        "schema": SCENARIO_SCHEMA,
        "seed": seed,
        "scale": scale,
        "suites": {},
    }
    for suite in suites:
        scenarios = generate_suite(suite, seed=seed, scale=scale)
        name = f"{suite}.jsonl.gz"
        digest = dump_scenarios(scenarios, out_dir / name)
        manifest["suites"][suite] = {"file": name, "sha256": digest, **suite_stats(scenarios)}
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def verify_datasets(directory: Path) -> list[str]:
    """What is wrong with a dataset folder against its manifest (empty when it matches)."""
    directory = Path(directory)
    path = directory / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return [f"{path} is missing"]
    except (OSError, ValueError) as exc:
        return [f"{path} is unreadable: {exc}"]
    problems = []
    if manifest.get("version") != GENERATOR_VERSION:
        problems.append(
            f"generator version {manifest.get('version')!r} != current {GENERATOR_VERSION!r}"
        )
    if manifest.get("schema") != SCENARIO_SCHEMA:
        problems.append(f"schema {manifest.get('schema')!r} != current {SCENARIO_SCHEMA}")
    suites = manifest.get("suites")
    if not isinstance(suites, dict) or not suites:
        return [*problems, f"{path} lists no suites"]
    for suite, entry in sorted(suites.items()):
        file = directory / str(entry.get("file", f"{suite}.jsonl.gz"))
        if not file.exists():
            problems.append(f"{suite}: {file.name} is missing")
            continue
        try:
            digest = content_sha256(file)
        except (OSError, EOFError, ValueError) as exc:
            problems.append(f"{suite}: {file.name} is unreadable ({exc})")
            continue
        if digest != entry.get("sha256"):
            problems.append(
                f"{suite}: {file.name} checksum {digest[:12]} != manifest "
                f"{str(entry.get('sha256'))[:12]}"
            )
    return problems


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memctx gen", description="Generate the synthetic scenario datasets."
    )
    parser.add_argument("--out", default="datasets/v1", help="output folder (default: datasets/v1)")
    parser.add_argument("--seed", type=int, default=0, help="generator seed (default: 0)")
    parser.add_argument("--scale", type=float, default=1.0, help="size factor (quick: 0.15)")
    parser.add_argument("--suite", action="append", choices=SUITES, help="only these suites")
    parser.add_argument(
        "--check", action="store_true", help="verify --out against its manifest, write nothing"
    )
    return parser


def gen_main(argv: list[str]) -> int:
    """``memctx gen``: write the datasets, or with ``--check`` verify them (exit 1 on a
    mismatch, 2 on bad arguments)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    out = Path(args.out)
    if args.check:
        problems = verify_datasets(out)
        if not problems:
            problems = _check_loads(out)
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        if problems:
            print(f"regenerate with `memctx gen --out {out}`", file=sys.stderr)
            return 1
        print(f"{out}: datasets match {MANIFEST}")
        return 0
    if args.scale <= 0:
        print(f"error: --scale must be positive, got {args.scale}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    try:
        manifest = write_datasets(
            out, seed=args.seed, scale=args.scale, suites=args.suite or SUITES
        )
    except GenError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for suite, entry in manifest["suites"].items():
        print(
            f"{suite:14} {entry['scenarios']:3} scenarios {entry['probes']:4} probes "
            f"{entry['messages']:6} messages {entry['tokens']:>10,} tokens"
        )
    print(f"wrote {out} in {time.perf_counter() - start:.1f}s")
    return 0


def _check_loads(directory: Path) -> list[str]:
    manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    problems = []
    for suite, entry in sorted(manifest["suites"].items()):
        try:
            load_scenarios(directory / entry["file"])
        except ScenarioError as exc:
            problems.append(f"{suite}: {exc}")
    return problems

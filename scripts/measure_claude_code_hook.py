"""Measure ``memctx claude-code hook`` on the real Claude Code sessions and their hand probes.

Usage::

    .venv/bin/python scripts/measure_claude_code_hook.py [DATASETS_DIR] [--subprocess]
        [--compare]

For each ``datasets/claude-code/<session>.probes.json`` the session file
``DATASETS_DIR/claude-code/<session>.jsonl`` (default ``$MEMCTX_DATASETS``, else
``../shared/datasets``) is cut at its compaction (the records before ``boundary_line``,
the ``compact_boundary`` record) and handed to a ``PreCompact`` event, as Claude Code would
at that compaction; then each probe's question goes in a ``UserPromptSubmit`` event of a
new session of the same project (one store for all three sessions, as the per-project store
would be). A probe counts when one of its answers (normalised as the harness judges) is in
the ``additionalContext`` printed. ``--subprocess`` runs the real command line for every
event (one Python start per event); by default the hook runs in this process through the
same :func:`memctx.integrations.run_hook`. ``--compare`` also prints the rows of
``memctx eval --suite claude-code`` for the same sessions (``compare_compactions``: the
summary, summary + recall, recall at the summary's tokens) for the acceptance line.

Measured on this revision (hash embeddings, the defaults): 115/146 probes (78.8 %) in
``additionalContext`` (blocks of 9,664-9,729 characters on average, at most 10,000);
``memctx recall at the summary's tokens`` 122/146 (83.6 %, ~4,000-5,200 tokens, one store
per session), the summary alone 62/146 (42.5 %).
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memctx.harness import compare_compactions, load_hand_probes, normalise_answer
from memctx.integrations import run_hook
from memctx.transcripts import shared_datasets_dir

REPO = Path(__file__).resolve().parents[1]
PROBES = REPO / "datasets" / "claude-code"


def _hook(event: dict[str, object], store: Path, *, subprocess_run: bool) -> str:
    data = json.dumps(event)
    if subprocess_run:
        done = subprocess.run(
            [sys.executable, "-m", "memctx.cli", "claude-code", "hook", "--store", str(store)],
            input=data,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout
    out = io.StringIO()
    run_hook(io.StringIO(data), out, store_dir=store)
    return out.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="?", default=str(shared_datasets_dir()))
    parser.add_argument("--subprocess", action="store_true", help="run the real command")
    parser.add_argument("--compare", action="store_true", help="also the eval suite's rows")
    args = parser.parse_args()
    sessions = Path(args.datasets) / "claude-code"
    total = found = 0
    with tempfile.TemporaryDirectory(prefix="memctx-cc-hook-") as tmp:
        store, cwd = Path(tmp) / "store", Path(tmp) / "project"
        for probes_file in sorted(PROBES.glob("*.probes.json")):
            meta = json.loads(probes_file.read_text(encoding="utf-8"))
            session, probes = load_hand_probes(probes_file)
            lines = (sessions / f"{session}.jsonl").read_text(encoding="utf-8").splitlines()
            cut = Path(tmp) / f"{session}.jsonl"
            cut.write_text("\n".join(lines[: meta["boundary_line"]]) + "\n", encoding="utf-8")
            event: dict[str, object] = {
                "session_id": session,
                "transcript_path": str(cut),
                "cwd": str(cwd),
                "hook_event_name": "PreCompact",
                "trigger": "auto",
            }
            start = time.perf_counter()
            _hook(event, store, subprocess_run=args.subprocess)
            archive_s = time.perf_counter() - start
            kept, chars, times = 0, [], []
            for probe in probes:
                ask = {
                    **event,
                    "session_id": f"{session}-next",
                    "hook_event_name": "UserPromptSubmit",
                    "prompt": probe.question,
                }
                start = time.perf_counter()
                printed = _hook(ask, store, subprocess_run=args.subprocess)
                times.append(time.perf_counter() - start)
                text = ""
                if printed:
                    text = json.loads(printed)["hookSpecificOutput"]["additionalContext"]
                chars.append(len(text))
                shown = normalise_answer(text)
                kept += any(normalise_answer(a) in shown for a in probe.answers)
            total += len(probes)
            found += kept
            times.sort()
            print(
                f"{session}: {kept}/{len(probes)} probes answered in additionalContext "
                f"({100 * kept / len(probes):.1f} %); PreCompact {archive_s:.1f} s over "
                f"{meta['boundary_line']} records; UserPromptSubmit median "
                f"{times[len(times) // 2]:.2f} s, max {times[-1]:.2f} s; context mean "
                f"{sum(chars) / len(chars):,.0f} chars, max {max(chars):,}"
            )
    print(f"all: {found}/{total} probes ({100 * found / total:.1f} %)")
    if args.compare:
        for probes_file in sorted(PROBES.glob("*.probes.json")):
            session, _ = load_hand_probes(probes_file)
            for row in compare_compactions(sessions / f"{session}.jsonl", probes_file):
                print(
                    f"eval {row.session[:8]} {row.config}: {len(row.kept)}/{row.probes} "
                    f"({100 * len(row.kept) / row.probes:.1f} %), {row.tokens:,.0f} tokens"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Which heavy modules a statement loads, seen from a fresh interpreter.

memctx keeps its start-up light: litellm, torch, sentence-transformers, pandas, ray and
matplotlib load on first use, never on ``import memctx`` or ``memctx --help``. A test cannot
see that from its own process (pytest and earlier tests have imported everything), so
:func:`modules_loaded_by` runs the statements in a new interpreter, one after another, and
says which of the watched modules each one loaded first.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["HEAVY_MODULES", "cli_statement", "modules_loaded_by"]

# Each takes from half a second to several seconds to import on a 2-core machine.
HEAVY_MODULES = ("litellm", "torch", "sentence_transformers", "pandas", "ray", "matplotlib")

# Runs in the child: argv[1] is a JSON list of statements, argv[2] of the watched modules.
# Output of the statements (``--help`` text) is swallowed so stdout carries only the answer.
_CHILD = """
import contextlib, io, json, sys
statements, watched = json.loads(sys.argv[1]), json.loads(sys.argv[2])
loaded = []
for statement in statements:
    before = {name for name in watched if name in sys.modules}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            exec(statement, {"__name__": "__startup_check__"})
        except SystemExit as exc:  # --help exits 0; anything else is the statement failing
            if exc.code not in (0, None):
                raise RuntimeError(f"{statement!r} exited with {exc.code!r}") from exc
    loaded.append(sorted(name for name in watched if name in sys.modules and name not in before))
print(json.dumps(loaded))
"""

_ROOT = Path(__file__).resolve().parents[2]


def cli_statement(*args: str) -> str:
    """The statement that runs ``memctx ARGS`` in-process, as the console script does."""
    return (
        "import runpy, sys; "
        f"sys.argv = ['memctx', *{list(args)!r}]; "
        "runpy.run_module('memctx.cli', run_name='__main__')"
    )


def modules_loaded_by(
    statements: Sequence[str], modules: Sequence[str] = HEAVY_MODULES
) -> dict[str, list[str]]:
    """Run ``statements`` in order in a fresh interpreter.

    Returns:
        Statement -> the watched ``modules`` it imported (those already loaded by an
        earlier statement are not counted again), in the order given.

    Raises:
        AssertionError: The child failed; the message carries its stderr.
    """
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(list(statements)), json.dumps(list(modules))],
        capture_output=True,
        text=True,
        cwd=_ROOT,
        check=False,
    )
    assert done.returncode == 0, f"the child interpreter failed:\n{done.stderr}"
    loaded: list[list[str]] = json.loads(done.stdout)
    return dict(zip(statements, loaded, strict=True))

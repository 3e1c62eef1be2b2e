"""Write docs/configuration.md from the config model (:func:`memctx.config.config_reference`).

Usage::

    .venv/bin/python scripts/config_docs.py [--check]

Run it after changing a setting, its default or its docstring in memctx/config/model.py, and
commit the page with the change (``tests/config/test_config_docs.py`` fails while they differ).
``--check`` writes nothing and exits 1 when the page is out of date.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memctx.config import CONFIG_DOCS_PATH, config_reference

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when the page differs; write nothing"
    )
    args = parser.parse_args(argv)
    page = ROOT / CONFIG_DOCS_PATH
    text = config_reference()
    current = page.read_text(encoding="utf-8") if page.exists() else None
    if args.check:
        if current != text:
            print(f"{page} is out of date: run python scripts/config_docs.py", file=sys.stderr)
            return 1
        print(f"{page} is up to date")
        return 0
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text, encoding="utf-8")
    print(f"wrote {page} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

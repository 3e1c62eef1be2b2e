"""The package's layout rules hold, and the checks that guard them fail when broken.

The layers contract is import-linter's (``[tool.importlinter]`` in pyproject.toml, run by
``make check``); the rest (public names only across subpackages, no private names, no
relative import out of a subpackage) is ``scripts/check_imports.py``. Both run here so that
CI, which runs ``make test``, enforces them too.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.check_imports import problems

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    if not LINT_IMPORTS.exists():
        pytest.skip(f"{LINT_IMPORTS} is missing: install the dev extra (make setup)")
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(root / "pyproject.toml")],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "memctx", root / "memctx", ignore=ignore)
    for folder in ("tests", "scripts"):
        (root / folder).mkdir(parents=True)
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def test_the_layers_contract_is_kept() -> None:
    result = _lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout


def test_an_upward_import_breaks_the_layers_contract(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    tokens = root / "memctx" / "messages" / "tokens.py"
    # A foundation reaching up into the runtime, as a quick fix might.
    tokens.write_text(tokens.read_text() + "\nfrom memctx.runtime import MemoryContext\n")
    result = _lint_imports(root)
    assert result.returncode != 0
    assert "BROKEN" in result.stdout
    assert "memctx.messages.tokens -> memctx.runtime" in result.stdout


def test_no_import_reaches_inside_another_subpackage_or_takes_a_private_name() -> None:
    assert problems(REPO) == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "tree"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_import_checker_finds_each_kind_of_breach(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "memctx/__init__.py": "",
            "memctx/errors.py": '__all__ = ["Oops"]\nclass Oops(Exception): ...\n',
            "memctx/low/__init__.py": '__all__ = ["Public"]\nfrom .inner import Public\n',
            "memctx/low/inner.py": "class Public: ...\nclass Hidden: ...\n_private = 1\n",
            "memctx/high/__init__.py": "",
            "memctx/high/fine.py": (
                "from memctx.low import Public\nfrom memctx.errors import Oops\n"
                "from .sibling import thing\n"
            ),
            "memctx/high/sibling.py": "thing = 1\n_secret = 2\n",
            "memctx/high/bad.py": (
                "from memctx.low.inner import Public\n"  # reaches inside
                "from memctx.low import Hidden\n"  # not exported
                "from memctx.low.inner import _private\n"  # private (and inside)
                "from .sibling import _secret\n"  # private within the package
                "from ..low import Public as P\n"  # climbs out of its package
                "import memctx.low.inner\n"  # reaches inside
            ),
            "tests/test_x.py": "from memctx.low.inner import _private, Hidden\n",
        },
    )
    found = problems(root)
    assert all("fine.py" not in line for line in found)
    expected = [
        r"bad\.py:1: imports from memctx\.low\.inner, inside memctx\.low",
        r"bad\.py:2: Hidden is not imported by memctx\.low's __init__",
        r"bad\.py:3: imports the private name _private",
        r"bad\.py:4: imports the private name _secret",
        r"bad\.py:5: relative import of memctx\.low leaves memctx\.high",
        r"bad\.py:6: 'import memctx\.low\.inner' reaches inside memctx\.low",
        r"test_x\.py:1: imports the private name _private",
    ]
    for pattern in expected:
        assert any(re.search(pattern, line) for line in found), (pattern, found)
    # Tests may import a module's public names from the module itself.
    assert not any("test_x.py" in line and "Hidden" in line for line in found)


def test_user_docs_name_no_private_path() -> None:
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        assert not re.search(r"memctx\._", text), f"{doc.name} names a private module"


PUBLIC_NAMES_LIMIT = 150


def _public_names() -> dict[str, list[str]]:
    """``__all__`` of every package's ``__init__``, by package."""
    import ast

    out: dict[str, list[str]] = {}
    for init in sorted((REPO / "memctx").rglob("__init__.py")):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                value = node.value
                assert value is not None
                package = ".".join(init.relative_to(REPO).parent.parts)
                out[package] = list(ast.literal_eval(value))
    return out


def test_the_public_surface_stays_small_and_each_name_is_public_once() -> None:
    names = _public_names()
    total = sum(len(v) for v in names.values())
    assert total < PUBLIC_NAMES_LIMIT, {k: len(v) for k, v in names.items()}
    # One public place per name: a front door re-exports, the package it came from does not
    # list it again (register_strategy lives in memctx.strategies only).
    seen: dict[str, str] = {}
    for package, listed in names.items():
        for name in listed:
            assert name not in seen, f"{name} is public in {seen[name]} and in {package}"
            seen[name] = package
    assert seen["register_strategy"] == "memctx.strategies"
    assert seen["make_strategy"] == "memctx"
    for front_door, wanted in {
        "memctx.eval": {"run_eval", "EvalOptions", "load_run", "check_gate", "compare_runs"},
        "memctx.strategies": {"Strategy", "BaseStrategy", "Prepared", "register_strategy"},
        "memctx": {"MemoryContext", "MemoryContextConfig", "load_config", "make_strategy"},
    }.items():
        assert wanted <= set(names[front_door]), front_door


def test_every_public_name_is_bound() -> None:
    import importlib

    for package, listed in _public_names().items():
        module = importlib.import_module(package)
        for name in listed:
            assert hasattr(module, name), f"{package}.__all__ names {name}, which it lacks"

"""Check the import rules that import-linter's layers contract does not cover.

The layers (which subpackage may import which) are checked by ``lint-imports`` with the
contract in ``pyproject.toml``. This script checks the rest of docs/ARCHITECTURE.md's rules:

1. Across subpackages, code imports only what a package's ``__init__`` binds (imports or
   defines): ``from memctx.store import RawStore`` is fine, ``from memctx.store.raw.io import
   validate_session_id`` is not (that is the store's inside), nor is a name the package's
   ``__init__`` does not bind. ``import memctx.store.raw.io`` is refused for the same reason.
   The ``__init__`` is the package's interface to the other packages of memctx; its
   ``__all__`` is the smaller, user-facing part of it (counted by the architecture test).
2. Nobody imports a name starting with ``_`` from another module, inside the package or
   outside it (tests, evals, scripts): a private name is the module's own.
3. A relative import never climbs out of its own subpackage.

Usage: ``python scripts/check_imports.py [REPO_ROOT]``; prints one line per problem and
exits 1 when there is any.
"""

from __future__ import annotations

import ast
import sys
from functools import cache
from pathlib import Path

__all__ = ["problems"]

PACKAGE = "memctx"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _top(module: str) -> str:
    """The subpackage (or top-level module) a module belongs to; ``""`` for the root."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


@cache
def _exports(init: Path) -> frozenset[str] | None:
    """The ``__all__`` of a module or package ``__init__``; ``None`` when it has none."""
    tree = ast.parse(init.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return frozenset(ast.literal_eval(node.value))
    return None


@cache
def _bound(init: Path) -> frozenset[str]:
    """Every name a module or package ``__init__`` binds at its top level: what it imports
    (also inside ``if TYPE_CHECKING:``), defines or assigns. A submodule is not among them:
    ``from memctx.store import payloads`` reaches inside as much as ``memctx.store.payloads``."""
    tree = ast.parse(init.read_text(encoding="utf-8"))
    names: set[str] = set(_exports(init) or ())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom | ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return frozenset(names)


def _public_surface(root: Path, module: str) -> Path | None:
    """The file whose ``__all__`` is ``module``'s public surface, if ``module`` is public.

    A package (``memctx.store``, ``memctx.harness.report``) or a top-level module
    (``memctx.errors``) is public; a plain module inside a subpackage is not.
    """
    path = root.joinpath(*module.split("."))
    if (path / "__init__.py").exists():
        return path / "__init__.py"
    if len(module.split(".")) == 2 and path.with_suffix(".py").exists():
        return path.with_suffix(".py")
    return None


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a relative ``from`` import names."""
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _check_file(path: Path, root: Path, inside: bool) -> list[str]:
    where = path.relative_to(root)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    module = _module_name(path, root) if inside else ""
    is_package = path.name == "__init__.py"
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.name
                crosses = inside and name.startswith(PACKAGE + ".") and _top(name) != _top(module)
                if crosses and _public_surface(root, name) is None:
                    out.append(
                        f"{where}:{node.lineno}: 'import {name}' reaches inside "
                        f"memctx.{_top(name)}: import names from its package instead"
                    )
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            if not inside:
                continue
            target = _resolve(module, is_package, node)
            if _top(target) != _top(module) or not target.startswith(PACKAGE + "."):
                out.append(
                    f"{where}:{node.lineno}: relative import of {target} leaves "
                    f"memctx.{_top(module)}: import it as 'from memctx.{_top(target)} import ...'"
                )
        else:
            target = node.module or ""
            if target != PACKAGE and not target.startswith(PACKAGE + "."):
                continue
        names = [alias.name for alias in node.names]
        for name in names:
            if name.startswith("_") and name != "__version__":
                out.append(
                    f"{where}:{node.lineno}: imports the private name {name} from {target}: "
                    "make it public in its module (no leading underscore) or keep it there"
                )
        if not inside or _top(target) == _top(module) or target == PACKAGE:
            continue
        surface = _public_surface(root, target)
        if surface is None:
            package = f"{PACKAGE}.{_top(target)}"
            out.append(
                f"{where}:{node.lineno}: imports from {target}, inside {package}: "
                f"import the names from {package} (add them to its __all__ if they are public)"
            )
            continue
        bound = _bound(surface)
        for name in names:
            if name not in bound and not name.startswith("_"):
                out.append(
                    f"{where}:{node.lineno}: {name} is not imported by {target}'s __init__: "
                    f"import it there or do not use it outside memctx.{_top(target)}"
                )
    return out


def problems(root: Path) -> list[str]:
    """Every breach of the rules above in the repository at ``root``."""
    found: list[str] = []
    for path in sorted((root / PACKAGE).rglob("*.py")):
        found += _check_file(path, root, inside=True)
    for folder in ("tests", "evals", "scripts"):
        for path in sorted((root / folder).rglob("*.py")):
            found += _check_file(path, root, inside=False)
    return found


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1]
    found = problems(root)
    for line in found:
        print(line)
    print(f"import rules: {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

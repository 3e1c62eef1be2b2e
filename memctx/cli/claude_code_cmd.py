"""``memctx claude-code install|uninstall|hook`` and ``memctx mcp``: the command line of
:mod:`memctx.integrations` (Claude Code's hooks and the MCP server)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .options import OptionError

__all__ = ["add_claude_code_parser", "add_mcp_parser"]

_STORE_HELP = (
    "the memctx store (default: one per project, under $MEMCTX_HOME or ~/.memctx, chosen by "
    "the event's cwd)"
)


def add_claude_code_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``claude-code`` command and its three subcommands."""
    parser = sub.add_parser(
        "claude-code",
        help="Claude Code's hooks: install them, remove them, or run one (the hook command)",
    )
    actions = parser.add_subparsers(dest="action", required=True)
    install = actions.add_parser(
        "install",
        help="write memctx's hooks into Claude Code's settings.json and register `memctx mcp`",
    )
    where = install.add_mutually_exclusive_group()
    where.add_argument(
        "--project",
        metavar="DIR",
        help="the project: DIR/.claude/settings.json and DIR/.mcp.json (default: this folder)",
    )
    where.add_argument(
        "--user",
        action="store_true",
        help="every project of this user: ~/.claude/settings.json and ~/.claude.json",
    )
    install.add_argument("--store", metavar="DIR", help=_STORE_HELP)
    install.set_defaults(func=_install)
    uninstall = actions.add_parser(
        "uninstall", help="remove memctx's hooks and MCP server only (others stay)"
    )
    where = uninstall.add_mutually_exclusive_group()
    where.add_argument("--project", metavar="DIR", help="as for install")
    where.add_argument("--user", action="store_true", help="as for install")
    uninstall.set_defaults(func=_uninstall)
    hook = actions.add_parser(
        "hook",
        help="answer one hook event (JSON on stdin, as Claude Code sends it); always exits 0",
    )
    hook.add_argument("--store", metavar="DIR", help=_STORE_HELP)
    hook.set_defaults(func=_hook)


def add_mcp_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``mcp`` command."""
    parser = sub.add_parser(
        "mcp",
        help="an MCP server over stdio: memory_search, read_output_ref and memory_get",
    )
    parser.add_argument(
        "--store",
        metavar="DIR",
        help="the memctx store (default: this folder's project store, as the hook chooses)",
    )
    parser.set_defaults(func=_mcp)


def _paths(args: argparse.Namespace) -> tuple[Path, Path]:
    from memctx.integrations import settings_paths

    if args.project is not None and not Path(args.project).is_dir():
        raise OptionError(f"--project {args.project} is not a folder; pass the project's folder")
    return settings_paths(project=args.project, user=args.user)


def _install(args: argparse.Namespace) -> int:
    from memctx.integrations import install

    settings, mcp_file = _paths(args)
    try:
        install(settings, mcp_file, store_dir=args.store)
    except ValueError as exc:
        raise OptionError(str(exc)) from exc
    print(f"memctx hooks in {settings}; MCP server 'memctx' in {mcp_file}")
    return 0


def _uninstall(args: argparse.Namespace) -> int:
    from memctx.integrations import uninstall

    settings, mcp_file = _paths(args)
    try:
        uninstall(settings, mcp_file)
    except ValueError as exc:
        raise OptionError(str(exc)) from exc
    print(f"memctx hooks removed from {settings}; MCP server removed from {mcp_file}")
    return 0


def _hook(args: argparse.Namespace) -> int:
    from memctx.integrations import run_hook

    return run_hook(sys.stdin, sys.stdout, store_dir=args.store)


def _mcp(args: argparse.Namespace) -> int:
    from memctx.integrations import default_store_dir, serve

    store = Path(args.store) if args.store else default_store_dir(Path.cwd())
    return serve(store)

"""The ``memctx`` command line."""

from memctx.cli.main import main

__all__ = ["main"]

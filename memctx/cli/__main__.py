"""``python -m memctx.cli``: the ``memctx`` command without the console script."""

import sys

from memctx.cli.main import main

if __name__ == "__main__":
    sys.exit(main())

"""``python -m memctx.bench``: the benchmarks behind ``make bench``."""

from .foundations import main

if __name__ == "__main__":
    main()

"""``python -m bench``: run the benchmarks (see ``bench.runner``)."""

from __future__ import annotations

from bench.runner import main

if __name__ == "__main__":
    raise SystemExit(main())

"""``python -m taskctx``: the ``taskctx`` command."""

from __future__ import annotations

from taskctx.cli import main

__all__: list[str] = []

if __name__ == "__main__":
    main(prog_name="taskctx")

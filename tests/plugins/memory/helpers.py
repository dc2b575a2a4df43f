"""A tiny real projection source the request-context tests share."""

from __future__ import annotations

__all__ = ["TinyState"]


class TinyState:
    """A real working state: notes shown on user input, tasks always."""

    def __init__(self, notes: tuple[str, ...] = (), tasks: tuple[str, ...] = ()) -> None:
        self.notes = notes
        self.tasks = tasks
        self.boundaries: list[str] = []

    def project(self, boundary: str) -> str | None:
        """Tasks always; notes only on ``user_input``; None when empty."""
        self.boundaries.append(boundary)
        lines = [f"task: {t}" for t in self.tasks]
        if boundary == "user_input":
            lines = [f"note: {n}" for n in self.notes] + lines
        return "\n".join(["Working state:", *lines]) if lines else None

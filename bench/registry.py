"""The benchmarks ``python -m bench`` knows: add a module, then one entry here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from bench import (
    budget,
    documents,
    fts,
    index_build,
    llm_index,
    mcp_server,
    postgres,
    postgres_index,
    put_floor,
    read_floor,
    reader,
    records,
    repo,
    request_filters,
    scale,
    tantivy_index,
    workspace,
)

__all__ = ["BENCHMARKS", "Benchmark", "by_name"]


@dataclass(frozen=True)
class Benchmark:
    """One benchmark: ``run(quick)`` returns a JSON-safe result; ``summary`` renders it."""

    name: str
    description: str
    run: Callable[[bool], dict[str, Any]]
    summary: Callable[[dict[str, Any]], list[str]]
    in_default_run: bool = True
    """False for benchmarks that take minutes: only ``--only NAME`` runs them."""

    @classmethod
    def of(cls, module: ModuleType) -> Benchmark:
        """The benchmark a module defines: ``NAME``, ``DESCRIPTION``, ``run``, ``summary_lines``."""
        return cls(
            name=module.NAME,
            description=module.DESCRIPTION,
            run=module.run,
            summary=module.summary_lines,
            in_default_run=getattr(module, "IN_DEFAULT_RUN", True),
        )

    def targets_met(self, result: dict[str, Any]) -> bool | None:
        """Whether the result meets its targets (None if the benchmark sets none)."""
        targets = result.get("targets")
        met = targets.get("met") if isinstance(targets, dict) else None
        return None if met is None else bool(met)

    def failed_checks(self, result: dict[str, Any]) -> list[str]:
        """Names of the result's consistency checks that failed."""
        checks = result.get("checks")
        if not isinstance(checks, dict):
            return []
        return [name for name, ok in checks.items() if not ok]


BENCHMARKS: tuple[Benchmark, ...] = tuple(
    Benchmark.of(module)
    for module in (
        reader,
        workspace,
        documents,
        fts,
        budget,
        index_build,
        records,
        postgres,
        postgres_index,
        tantivy_index,
        request_filters,
        llm_index,
        put_floor,
        read_floor,
        repo,
        mcp_server,
        scale,
    )
)


def by_name() -> dict[str, Benchmark]:
    """Benchmarks by name, in registry order."""
    return {benchmark.name: benchmark for benchmark in BENCHMARKS}

"""``read_context`` over MCP (stdio) beside the same read through the Python API.

Target (issue 16): on a warm 1,000-file workspace the protocol adds under 10 ms per call
(median of 50 calls over stdio minus the median of 50 reads through the Python API).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio

from bench.common import result_header, summarize, timing_line
from bench.workspace import make_files, write_tree

__all__ = ["DESCRIPTION", "FULL", "NAME", "QUICK", "McpParams", "run", "summary_lines"]

NAME = "mcp"
DESCRIPTION = "read_context over MCP stdio beside the same read through the Python API"
TARGET_OVERHEAD_S = 0.010
PLUGINS = ("taskctx-workspace", "taskctx-fts", "taskctx-mcp")
QUERY = "index revision cache"


@dataclass(frozen=True)
class McpParams:
    """Sizes and read settings of one run."""

    files: int = 1_000
    calls: int = 50
    min_bytes: int = 2048
    max_bytes: int = 4096
    max_chars: int = 6000
    max_blocks: int = 12
    seed: int = 16


FULL = McpParams()
QUICK = McpParams(files=100, calls=5)

NOTES = (
    "stdio: the SDK's Client over StdioServerParameters, a real `taskctx-mcp serve "
    "--workspace DIR` subprocess with TASKCTX_LOAD_PLUGINS=taskctx-workspace,taskctx-fts,"
    "taskctx-mcp; read_context calls, each a fresh reader on the warm index (what the "
    "server does).",
    "api: in this process, the same plugins, state directory and budget: "
    "await ctx.reader(...).async_read(ContextReadIntent(query=...)) and package.render(), "
    "a fresh reader per call.",
    "side by side: one untimed warm-up round (it builds the FTS index), then `calls` "
    "rounds of one call each way, the order alternating round by round.",
    "overhead = median(stdio) - median(api): JSON-RPC framing, pydantic validation and "
    "serialization of the structured output, the pipe, and the client's output-schema "
    "validation.",
)


def _side_by_side(
    root: Path, state: Path, params: McpParams
) -> tuple[dict[str, list[float]], dict[str, list[str]]]:
    """``calls`` reads each way, interleaved call by call (the order alternating), so
    both paths see the same machine load; one untimed warm-up call each first."""
    from mcp import Client, StdioServerParameters

    from taskctx import ContextBudget, ContextReadIntent, PluginHost, TaskContext

    env = dict(os.environ)
    env.update(TASKCTX_LOAD_PLUGINS=",".join(PLUGINS), TASKCTX_STATE_DIR=str(state))
    server = StdioServerParameters(
        command=str(Path(sys.executable).parent / "taskctx-mcp"),
        args=["serve", "--workspace", str(root)],
        env=env,
    )
    arguments = {"query": QUERY, "max_chars": params.max_chars, "max_blocks": params.max_blocks}
    ctx = TaskContext("mcp", host=PluginHost(allow=PLUGINS), state_dir=state)
    ctx.attach(ctx.source("task_workspace", root=str(root), mode="read_only"), binding_id="files")
    budget = ContextBudget(max_chars=params.max_chars, max_blocks=params.max_blocks)
    samples: dict[str, list[float]] = {"stdio": [], "api": []}
    digests: dict[str, list[str]] = {"stdio": [], "api": []}

    async def api_read() -> tuple[float, list[str]]:
        start = time.perf_counter()
        package = await ctx.reader("mcp", budget=budget).async_read(ContextReadIntent(query=QUERY))
        package.render()
        return time.perf_counter() - start, [block.digest for block in package.blocks]

    async def main() -> None:
        async with Client(server, mode="legacy") as client:
            await client.list_tools()  # the client learns the output schemas

            async def stdio_read() -> tuple[float, list[str]]:
                start = time.perf_counter()
                result = await client.call_tool("read_context", arguments)
                elapsed = time.perf_counter() - start
                if result.is_error or not isinstance(result.structured_content, dict):
                    raise RuntimeError(f"read_context failed over stdio: {result.content}")
                return elapsed, [b["digest"] for b in result.structured_content["blocks"]]

            for number in range(params.calls + 1):
                order = [("stdio", stdio_read), ("api", api_read)]
                for way, read in order if number % 2 else reversed(order):
                    elapsed, digests[way] = await read()
                    if number:  # the first round is the warm-up
                        samples[way].append(elapsed)

    anyio.run(main)
    return samples, digests


def run(quick: bool) -> dict[str, Any]:
    """The registry entry point: full sizes, or ``QUICK`` ones for smoke runs."""
    params = QUICK if quick else FULL
    files = make_files(params.files, params.seed, params.min_bytes, params.max_bytes)
    with tempfile.TemporaryDirectory(prefix="taskctx-bench-mcp-") as temp:
        root, state = Path(temp) / "workspace", Path(temp) / "state"
        write_tree(root, files)
        samples, digests = _side_by_side(root, state, params)
    timings = {way: summarize(found) for way, found in samples.items()}
    overhead = timings["stdio"]["median_s"] - timings["api"]["median_s"]
    return {
        **result_header(
            NAME,
            quick=quick,
            params={**asdict(params), "query": QUERY, "plugins": list(PLUGINS)},
            notes=NOTES,
        ),
        "timings": timings,
        "overhead_s": overhead,
        "targets": {
            "max_overhead_s": TARGET_OVERHEAD_S,
            "applies": not quick,
            "met": None if quick else overhead < TARGET_OVERHEAD_S,
        },
        "checks": {
            "same_blocks_over_stdio_and_api": digests["stdio"] == digests["api"],
            "blocks_delivered": bool(digests["api"]),
        },
    }


def summary_lines(result: dict[str, Any]) -> list[str]:
    """Medians with min-max for both paths, and the overhead against the target."""
    params, timings, targets = result["params"], result["timings"], result["targets"]
    overhead_ms = result["overhead_s"] * 1e3
    limit_ms = targets["max_overhead_s"] * 1e3
    verdict = "met" if overhead_ms < limit_ms else "MISSED"
    if not targets["applies"]:
        verdict = "quick run: not judged"
    lines = [
        f"{params['files']} files, {params['calls']} read_context calls each; median (min-max)",
        timing_line("stdio (MCP)", timings["stdio"], 14),
        timing_line("python API", timings["api"], 14),
        f"protocol overhead {overhead_ms:.2f} ms per call, target < {limit_ms:.0f} ms: {verdict}",
    ]
    failed = [name for name, ok in result["checks"].items() if not ok]
    if failed:
        lines.append(f"CHECKS FAILED: {', '.join(failed)}")
    return lines

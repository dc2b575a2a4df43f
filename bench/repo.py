"""A pinned git repository (``pinned_repository``): enumeration, first read, next commit.

A generated repository of 3,000 text files of 1-4 KB (plain text, Markdown with
headings, Python) in two commits (the second rewrites 1 % of the files) is read through
``PinnedRepository(...).source()`` attached to a ``TaskContext`` with the FTS index.

Target (DESIGN.md, "Performance principles": one changed file costs one file): a read
at the second commit, over the state the first read left (fact cache and index), costs
under 10 % of the first read.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from taskctx_repo import PinnedRepository
from taskctx_repo.facts import FACTS_VERSION

from bench.common import (
    package_facts,
    ratio_verdict,
    result_header,
    summarize,
    timing_line,
)
from bench.workspace import WorkspaceParams, corpus_facts, make_files, write_tree
from taskctx import ContextBudget, ContextPackage, PluginHost, TaskContext
from taskctx.model import EnumerationRequest

__all__ = [
    "DESCRIPTION",
    "FULL",
    "HOST_ALLOW",
    "JUDGED",
    "NAME",
    "PHASES",
    "QUICK",
    "TARGET_RATIO",
    "RepoParams",
    "changed_paths",
    "make_repository",
    "run",
    "run_repo",
    "summary_lines",
]

NAME = "repo"
DESCRIPTION = (
    "pinned_repository: cold and warm enumeration, first read and a read at a second "
    "commit that changed 1 % of 3,000 files"
)
TARGET_RATIO = 0.10
PHASES = ("cold_enumeration", "warm_enumeration", "first_read", "second_commit_read")
JUDGED = ("second_commit_read_over_first_read",)
"""The ratios held to the target."""
HOST_ALLOW = ("taskctx-repo", "taskctx-fts")
BINDING = "repo"
TASK_ID = "bench-repo"
CONSUMER = "bench-agent"
REVISED = "\nRevised in the second commit: the upload retry budget and the index timeout.\n"
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "taskctx bench",
    "GIT_AUTHOR_EMAIL": "bench@example.org",
    "GIT_COMMITTER_NAME": "taskctx bench",
    "GIT_COMMITTER_EMAIL": "bench@example.org",
    "GIT_AUTHOR_DATE": "2024-06-11T12:00:00+00:00",
    "GIT_COMMITTER_DATE": "2024-06-11T12:00:00+00:00",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


@dataclass(frozen=True)
class RepoParams(WorkspaceParams):
    """The workspace benchmark's tree and read settings, smaller, and the files commit 2
    revises."""

    files: int = 3_000
    min_bytes: int = 1024
    changed: int = 30


FULL = RepoParams()
QUICK = RepoParams(files=300, changed=3, rounds=2)

NOTES = (
    "Host: PluginHost(allow=['taskctx-repo', 'taskctx-fts']): the repository source and the "
    "FTS5 lexical index provider, loaded from their entry points.",
    "The repository is generated once per run in a temp dir (never in the repo) with "
    "bench.workspace.make_files (deterministic words for the seed: 70 % .txt, 20 % .md with "
    "headings, 10 % .py, in 9 folders) and committed with one `git add -A && git commit`; "
    "the second commit appends one line to `changed` files spread evenly in path order. "
    "Commit 1 is repacked (`git repack -a -d`, as a clone or `git gc` leaves a repository) "
    "before commit 2, whose new objects stay loose (as a local commit leaves them); "
    "params.ls_tree_loose_s / ls_tree_packed_s time `git ls-tree -r -l` of commit 1 before "
    "and after the repack (-l reads every blob's header, which costs more when loose).",
    "Every phase is timed with time.perf_counter around the work named (construction of the "
    "PinnedRepository included: one `git rev-parse`); gc.collect() runs before each.",
    "cold_enumeration: a fresh state_dir (no fact cache), a new PinnedRepository at commit 1 "
    "and every descriptor page of its source, pages of 500 in one event loop (git ls-tree, "
    "every blob read through one git cat-file --batch, media type, text length and Markdown "
    "sections computed and stored in the SQLite fact cache).",
    "warm_enumeration: a new PinnedRepository over the same state_dir, every descriptor "
    "again: git ls-tree plus fact-cache lookups; no blob is read (cat-file not started).",
    "first_read: another fresh state_dir (no facts, no index), a new PinnedRepository at "
    "commit 1, a new TaskContext (fresh context state dir), attach, a new reader and its "
    "first read: enumeration, FTS indexing of every file's text, ranking, assembly.",
    "second_commit_read: a new PinnedRepository at commit 2 over first_read's state_dir "
    "(its fact cache and the persistent FTS partition under <state_dir>/index), a new "
    "TaskContext, the same binding id, a new reader and its read: the partition key (binding, "
    "source identity = git dir + globs, provider) is the same, so the sync diffs content "
    "versions (git blob ids) and indexes only the changed blobs.",
    "Counts per phase: cat_file_started (git cat-file processes started), facts_learnt "
    "(rows added to the fact cache), descriptors; for reads the index sync report (mode, "
    "added, updated, unchanged).",
    "An untimed warm-up round on a small repository imports lazily loaded modules first.",
    "Ratios are median(phase) / median(reference); the target is second_commit_read under "
    "10 % of first_read, judged on full runs only (targets.met null for --quick).",
)


# -- the repository --------------------------------------------------------------------------


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        env={**os.environ, **_GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def changed_paths(files: Mapping[str, str], count: int) -> list[str]:
    """The ``count`` paths the second commit rewrites, spread evenly in path order."""
    ordered = sorted(files)
    step = max(1, len(ordered) // max(1, count))
    return ordered[step // 2 :: step][:count]


def _ls_tree_seconds(root: Path, commit: str) -> float:
    started = time.perf_counter()
    _git(root, "ls-tree", "-r", "-l", "-z", "--full-tree", commit)
    return time.perf_counter() - started


def make_repository(
    root: Path, files: Mapping[str, str], changed: int
) -> tuple[tuple[str, str], dict[str, float]]:
    """A repository at ``root``: ``files`` in commit 1, ``changed`` of them revised in 2.

    Commit 1 is repacked (as a clone leaves it), commit 2's objects stay loose (as a
    local commit leaves them). Also returns ``git ls-tree -r -l`` times of commit 1 with
    loose and with packed objects.
    """
    root.mkdir(parents=True)
    _git(root, "init", "-q")
    write_tree(root, files)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "first")
    first = _git(root, "rev-parse", "HEAD")
    loose = _ls_tree_seconds(root, first)
    _git(root, "repack", "-a", "-d", "-q")
    packed = _ls_tree_seconds(root, first)
    for rel in changed_paths(files, changed):
        with open(root / rel, "a", encoding="utf-8") as handle:
            handle.write(REVISED)
    _git(root, "commit", "-q", "-a", "-m", "second")
    second = _git(root, "rev-parse", "HEAD")
    return (first, second), {"ls_tree_loose_s": loose, "ls_tree_packed_s": packed}


# -- one round -------------------------------------------------------------------------------


def _fact_rows(state_dir: Path) -> int:
    path = state_dir / f"facts-v{FACTS_VERSION}.db"
    if not path.exists():
        return 0
    db = sqlite3.connect(path)
    try:
        (count,) = db.execute("SELECT count(*) FROM facts").fetchone()
    finally:
        db.close()
    return int(count)


def _enumerate(repo: PinnedRepository) -> int:
    """Every descriptor page of the repository's source, in one event loop; how many."""
    source = repo.source()

    async def pages() -> int:
        count = 0
        cursor: str | None = None
        while True:
            request = EnumerationRequest(cursor=cursor, page_size=500)
            page = await source.async_enumerate_descriptors(request)
            count += len(page.descriptors)
            cursor = page.next_cursor
            if cursor is None:
                return count

    return asyncio.run(pages())


def _round(
    host: PluginHost,
    root: Path,
    commits: tuple[str, str],
    params: RepoParams,
    budget: ContextBudget,
    changed: int,
) -> dict[str, Any]:
    """One round: every phase of :data:`PHASES`, their times and what each did.

    ``changed`` is how many files commit 2 revised.
    """
    times: dict[str, float] = {}
    counts: dict[str, dict[str, Any]] = {}
    packages: dict[str, ContextPackage] = {}
    repos: list[PinnedRepository] = []
    contexts: list[TaskContext] = []

    def measure(phase: str, state_dir: Path, work: Callable[[], Any]) -> Any:
        rows = _fact_rows(state_dir)
        gc.collect()
        started = time.perf_counter()
        value = work()
        times[phase] = time.perf_counter() - started
        counts[phase] = {
            "cat_file_started": repos[-1].cat.started,
            "facts_learnt": _fact_rows(state_dir) - rows,
        }
        return value

    def pinned(commit: str, state_dir: Path) -> PinnedRepository:
        repo = PinnedRepository(root, commit, host=host, state_dir=state_dir)
        repos.append(repo)
        return repo

    def read(commit: str, state_dir: Path, context_dir: Path) -> Callable[[], ContextPackage]:
        def work() -> ContextPackage:
            context = TaskContext(TASK_ID, host=host, state_dir=context_dir)
            contexts.append(context)
            context.attach(pinned(commit, state_dir).source(), binding_id=BINDING)
            return context.reader(CONSUMER, budget=budget).read(params.query)

        return work

    first, second = commits
    with tempfile.TemporaryDirectory(prefix="taskctx-bench-repo-state-") as temp:
        base = Path(temp)
        enum_state, read_state = base / "enumeration", base / "read"
        for phase in ("cold_enumeration", "warm_enumeration"):
            found = measure(phase, enum_state, lambda: _enumerate(pinned(first, enum_state)))
            counts[phase]["descriptors"] = found
        for phase, commit, context_dir in (
            ("first_read", first, base / "ctx-1"),
            ("second_commit_read", second, base / "ctx-2"),
        ):
            packages[phase] = measure(phase, read_state, read(commit, read_state, context_dir))
            context = contexts[-1]
            report = context.partition_state(context.bindings[BINDING]).last_sync
            assert report is not None
            counts[phase]["sync"] = report.model_dump(mode="json", exclude={"seconds"})
            counts[phase]["index_provider"] = context.index_provider.name
        for context in contexts:
            context.index.close()
        for repo in repos:
            repo.close()
    files = params.files
    first_sync, second_sync = counts["first_read"]["sync"], counts["second_commit_read"]["sync"]
    checks = {
        "blocks_delivered": all(p.blocks for p in packages.values()),
        "cold_enumeration_describes_every_file": (
            counts["cold_enumeration"]["descriptors"] == files
            and counts["cold_enumeration"]["facts_learnt"] == files
            and counts["cold_enumeration"]["cat_file_started"] == 1
        ),
        "warm_enumeration_reads_no_blob": (
            counts["warm_enumeration"]["cat_file_started"] == 0
            and counts["warm_enumeration"]["facts_learnt"] == 0
        ),
        "first_read_indexes_every_file": first_sync["added"] == files,
        "second_commit_indexes_only_the_changed_files": (
            second_sync["mode"] == "diff"
            and second_sync["added"] == 0
            and second_sync["updated"] == changed
            and second_sync["unchanged"] == files - changed
            and counts["second_commit_read"]["facts_learnt"] == changed
        ),
        "second_commit_is_a_new_revision": (
            packages["second_commit_read"].snapshot.sources.get(BINDING)
            != packages["first_read"].snapshot.sources.get(BINDING)
        ),
        "one_cat_file_per_repository": all(r.cat.started <= 1 for r in repos),
    }
    return {
        "times": times,
        "counts": counts,
        "checks": checks,
        "index_provider": counts["first_read"]["index_provider"],
        "packages": {phase: package_facts(p, BINDING) for phase, p in packages.items()},
    }


# -- the run ---------------------------------------------------------------------------------


def run_repo(params: RepoParams, *, quick: bool = False) -> dict[str, Any]:
    """Generate the repository, run one warm-up and ``params.rounds`` rounds; the JSON result."""
    host = PluginHost(allow=list(HOST_ALLOW))
    budget = ContextBudget(max_chars=params.max_chars, max_blocks=params.max_blocks)
    files = make_files(params.files, params.seed, params.min_bytes, params.max_bytes)
    with tempfile.TemporaryDirectory(prefix="taskctx-bench-repo-") as temp:
        warmup_files = make_files(
            params.warmup_files, params.seed + 1, params.min_bytes, params.max_bytes
        )
        warm_params = RepoParams(files=params.warmup_files, changed=1, rounds=1)
        warm_commits, _ = make_repository(Path(temp) / "warmup", warmup_files, 1)
        _round(host, Path(temp) / "warmup", warm_commits, warm_params, budget, 1)
        root = Path(temp) / "repository"
        started = time.perf_counter()
        commits, ls_tree = make_repository(root, files, params.changed)
        generate_s = time.perf_counter() - started
        changed = len(changed_paths(files, params.changed))
        rounds = [
            _round(host, root, commits, params, budget, changed) for _ in range(params.rounds)
        ]
    timings = {phase: summarize([r["times"][phase] for r in rounds]) for phase in PHASES}

    def ratio(phase: str, reference: str) -> float:
        return float(timings[phase]["median_s"] / timings[reference]["median_s"])

    ratios = {
        "second_commit_read_over_first_read": ratio("second_commit_read", "first_read"),
        "warm_enumeration_over_cold_enumeration": ratio("warm_enumeration", "cold_enumeration"),
        "first_read_over_cold_enumeration": ratio("first_read", "cold_enumeration"),
    }
    per_target = {name: ratios[name] < TARGET_RATIO for name in JUDGED}
    checks = {name: all(r["checks"][name] for r in rounds) for name in rounds[0]["checks"]}
    return {
        **result_header(
            NAME,
            quick=quick,
            params={
                **asdict(params),
                "binding": BINDING,
                "consumer": CONSUMER,
                "host_allow": list(HOST_ALLOW),
                "index_provider": rounds[-1]["index_provider"],
                "changed_files": changed_paths(files, params.changed),
                **corpus_facts(files),
                "generate_s": generate_s,
                "commits": list(commits),
                **ls_tree,
            },
            notes=NOTES,
        ),
        "timings": timings,
        "ratios": ratios,
        "targets": {
            "max_ratio": TARGET_RATIO,
            "judged": list(JUDGED),
            **per_target,
            "applies": not quick,
            "met": None if quick else all(per_target.values()),
        },
        "checks": checks,
        "counts_by_round": [r["counts"] for r in rounds],
        "packages_last_round": rounds[-1]["packages"],
    }


def run(quick: bool) -> dict[str, Any]:
    """The registry entry point: full sizes, or ``QUICK`` ones for smoke runs."""
    return run_repo(QUICK if quick else FULL, quick=quick)


def summary_lines(result: dict[str, Any]) -> list[str]:
    """A few lines for humans: medians with min-max, the judged ratio and its verdict, counts."""
    params, timings, ratios = result["params"], result["timings"], result["ratios"]
    targets = result["targets"]
    lines = [
        f"{params['files']} files ({params['bytes_min']}-{params['bytes_max']} B), "
        f"{params['changed']} changed in commit 2, {params['rounds']} rounds, "
        f"index {params['index_provider']}; median (min-max)"
    ]
    counts = result["counts_by_round"][-1]
    for phase in PHASES:
        line = timing_line(phase, timings[phase], 20)
        c = counts[phase]
        line += f"  [cat-file started {c['cat_file_started']}, facts learnt {c['facts_learnt']}"
        sync = c.get("sync")
        if sync is not None:
            line += (
                f", sync {sync['mode']}: added {sync['added']}, updated {sync['updated']}, "
                f"unchanged {sync['unchanged']}"
            )
        lines.append(line + "]")
    for name, value in ratios.items():
        line = f"{name:<40} {value:7.2%}"
        if name in targets["judged"]:
            line += f", {ratio_verdict(value, targets['max_ratio'], targets['applies'])}"
        lines.append(line)
    failed = [name for name, ok in result["checks"].items() if not ok]
    if failed:
        lines.append(f"CHECKS FAILED: {', '.join(failed)}")
    return lines

"""Talking to git: one-shot commands and one long-lived ``git cat-file --batch``.

Every command runs with a fixed environment (no prompts, no system or global config,
no optional locks) so a read never changes the repository or waits for a terminal.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from taskctx_repo.errors import GitError

__all__ = ["CatFile", "TreeEntry", "git_env", "ls_tree", "run_git"]

SAFE_CONFIG = (
    "-c", "protocol.allow=never",
    "-c", "protocol.http.allow=always",
    "-c", "protocol.https.allow=always",
    "-c", "protocol.file.allow=always",
    "-c", "http.followRedirects=false",
    "-c", "core.fsmonitor=false",
    "-c", "core.hooksPath=/dev/null",
)  # fmt: skip
"""Only http(s) and local transports; git follows no redirect on its own (the caller
authorises each hop); no fsmonitor or hooks run on our behalf."""

NETWORK_PROTOCOLS = "http:https"
"""``GIT_ALLOW_PROTOCOL`` of the commands that fetch (``network=True``): http(s) only."""
NO_PROTOCOLS = ""
"""``GIT_ALLOW_PROTOCOL`` of every other command: set and empty, no transport at all.

The variable overrides every ``protocol.*.allow`` setting, the repository's own
included, so a read of a local partial clone cannot lazily fetch a missing object
from its promisor remote, a host no configuration approved."""


def git_env(*, network: bool = False) -> dict[str, str]:
    """The environment of every git command: quiet, prompt-free, config-free.

    Only with ``network`` may git use a transport (http and https).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_ALLOW_PROTOCOL=NETWORK_PROTOCOLS if network else NO_PROTOCOLS,
        GIT_TERMINAL_PROMPT="0",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_OPTIONAL_LOCKS="0",
        GIT_ASKPASS="",
        SSH_ASKPASS="",
        LC_ALL="C",
    )
    return env


def _git() -> str:
    found = shutil.which("git")
    if found is None:
        raise GitError("git is not installed (needed by taskctx-repo)")
    return found


def run_git(
    git_dir: Path | None,
    args: Sequence[str],
    *,
    timeout: float = 600,
    env: Mapping[str, str] | None = None,
    network: bool = False,
) -> bytes:
    """Run ``git [--git-dir=...] args`` and return stdout; GitError names the failure.

    ``network`` lets the command fetch over http(s) (``clone`` and ``fetch`` of a URL
    the caller authorised); every other command may use no transport.
    """
    command = [_git(), *SAFE_CONFIG]
    if git_dir is not None:
        command.append(f"--git-dir={git_dir}")
    command.extend(args)
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            env={**git_env(network=network), **(env or {})},
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise GitError(f"git {' '.join(args)} timed out after {timeout} s") from None
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
        raise GitError(f"git {' '.join(args)} failed: {detail}")
    return done.stdout


class TreeEntry(NamedTuple):
    """One entry of ``git ls-tree -r -l``: mode, type, object id, size and path.

    A named tuple: a tree of thousands of entries is parsed on every pin, and tuples
    are the cheapest immutable records Python builds.
    """

    mode: str
    type: str
    oid: str
    size: int | None
    path: str
    valid_name: bool = True
    """False when the tree's bytes for this name are not UTF-8 (``path`` is lossy then)."""

    @property
    def is_symlink(self) -> bool:
        """A symbolic link (mode 120000): its blob is the target path."""
        return self.mode == "120000"

    @property
    def is_submodule(self) -> bool:
        """A submodule (a gitlink, type ``commit``)."""
        return self.type == "commit"


def ls_tree(git_dir: Path, commit: str) -> Iterator[TreeEntry]:
    """Every entry of ``commit``'s tree, recursively, with blob sizes."""
    raw = run_git(git_dir, ["ls-tree", "-r", "-l", "-z", "--full-tree", commit])
    try:
        records = raw.decode("utf-8").split("\0")
        valid = True
    except UnicodeDecodeError:  # some name is not UTF-8: decode record by record
        records, valid = [], False
    if valid:
        for record in records:
            if record:
                meta, _, path = record.partition("\t")
                mode, kind, oid, size = meta.split()
                yield TreeEntry(mode, kind, oid, int(size) if size != "-" else None, path)
        return
    for chunk in raw.split(b"\0"):
        if not chunk:
            continue
        head, _, name = chunk.partition(b"\t")
        mode, kind, oid, size = head.decode().split()
        try:
            path, ok = name.decode("utf-8"), True
        except UnicodeDecodeError:  # not representable in a ref: the caller reports it
            path, ok = name.decode("utf-8", "replace"), False
        yield TreeEntry(mode, kind, oid, int(size) if size != "-" else None, path, ok)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """End a batch process and close its pipes (also when its owner is collected)."""
    if process.poll() is None:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for stream in (process.stdin, process.stdout):
        if stream is not None and not stream.closed:
            stream.close()


class CatFile:
    """One long-lived ``git cat-file --batch`` serving object reads by id, thread-safe.

    Started on first use and restarted if it died; ``close()`` ends it.
    """

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self.started = 0

    def _ensure(self) -> subprocess.Popen[bytes]:
        process = self._process
        if process is None or process.poll() is not None:
            process = subprocess.Popen(
                [_git(), *SAFE_CONFIG, f"--git-dir={self.git_dir}", "cat-file", "--batch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=git_env(),
            )
            self._process = process
            self.started += 1
            weakref.finalize(self, _stop, process)
        return process

    def read(self, oid: str) -> tuple[str, bytes]:
        """The type and bytes of object ``oid``; GitError if it is missing."""
        if not oid or any(c not in "0123456789abcdef" for c in oid):
            raise GitError(f"not an object id: {oid!r}")
        with self._lock:
            process = self._ensure()
            assert process.stdin is not None
            assert process.stdout is not None
            try:
                process.stdin.write(oid.encode() + b"\n")
                process.stdin.flush()
                header = process.stdout.readline()
                if not header:
                    raise GitError(f"git cat-file ended while reading {oid}")
                parts = header.split()
                if len(parts) == 2 and parts[1] == b"missing":
                    raise GitError(f"object {oid} is missing from {self.git_dir}")
                kind, size = parts[1].decode(), int(parts[2])
                data = process.stdout.read(size)
                process.stdout.read(1)  # the newline after the content
            except (BrokenPipeError, ValueError, IndexError) as exc:
                self._kill()
                raise GitError(f"git cat-file failed reading {oid}: {exc}") from None
            if len(data) != size:
                self._kill()
                raise GitError(f"git cat-file returned {len(data)} of {size} bytes for {oid}")
            return kind, data

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            _stop(self._process)
            self._process = None

    def close(self) -> None:
        """End the batch process."""
        with self._lock:
            if self._process is not None:
                _stop(self._process)
                self._process = None

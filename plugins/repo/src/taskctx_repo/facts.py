"""What a blob is, cached by blob id: media type, representation, text length, sections.

A blob id names its bytes, so a fact learnt once is true in every commit that holds
the blob: a second commit that changed 1 % of the files reads 1 % of the blobs. Facts
persist in a small SQLite file beside the repository's index.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import attrs

from taskctx.model import Problem, Representation, SectionInfo

__all__ = ["BlobFacts", "FactCache"]

FACTS_VERSION = 1


@attrs.define(frozen=True, slots=True)
class BlobFacts:
    """The description of one blob that does not depend on where it sits in a tree."""

    media_type: str
    representation: Representation
    chars: int | None
    sections: tuple[SectionInfo, ...] = ()
    problem: Problem | None = None

    def to_json(self) -> str:
        """A compact JSON form for the cache."""
        return json.dumps(
            {
                "m": self.media_type,
                "r": self.representation.value,
                "c": self.chars,
                "s": [s.model_dump(mode="json") for s in self.sections],
                "p": self.problem.model_dump(mode="json") if self.problem else None,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, raw: str) -> BlobFacts:
        """The facts of :meth:`to_json`."""
        body = json.loads(raw)
        # rows this module wrote itself (versioned file name): constructing without
        # re-validation keeps a warm enumeration of thousands of blobs cheap
        return cls(
            media_type=body["m"],
            representation=Representation(body["r"]),
            chars=body["c"],
            sections=tuple(SectionInfo.model_construct(**s) for s in body["s"]),
            problem=Problem.model_construct(**body["p"]) if body["p"] else None,
        )


class FactCache:
    """Facts by (blob id, path suffix class) in memory and, given a file, on disk."""

    def __init__(self, path: Path | None) -> None:
        self._memory: dict[str, BlobFacts] = {}
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._db = self._open(path)
            except sqlite3.DatabaseError:  # a damaged cache is only a cache: start again
                path.unlink(missing_ok=True)
                self._db = self._open(path)

    @staticmethod
    def _open(path: Path) -> sqlite3.Connection:
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA busy_timeout=30000")
        db.execute("CREATE TABLE IF NOT EXISTS facts (key TEXT PRIMARY KEY, body TEXT NOT NULL)")
        db.execute("SELECT count(*) FROM facts").fetchone()
        return db

    def get_many(self, keys: list[str]) -> dict[str, BlobFacts]:
        """The cached facts of ``keys`` (missing ones are absent from the result)."""
        found = {k: self._memory[k] for k in keys if k in self._memory}
        missing = [k for k in keys if k not in found]
        if self._db is not None and missing:
            with self._lock:
                for start in range(0, len(missing), 500):
                    chunk = missing[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    rows = self._db.execute(
                        f"SELECT key, body FROM facts WHERE key IN ({marks})", chunk
                    ).fetchall()
                    for key, body in rows:
                        try:
                            found[key] = self._memory[key] = BlobFacts.from_json(body)
                        except (ValueError, KeyError, TypeError):
                            continue  # a bad row is recomputed
        return found

    def put_many(self, facts: dict[str, BlobFacts]) -> None:
        """Remember ``facts`` (one transaction)."""
        self._memory.update(facts)
        if self._db is not None and facts:
            with self._lock:
                self._db.execute("BEGIN")
                self._db.executemany(
                    "INSERT OR REPLACE INTO facts (key, body) VALUES (?, ?)",
                    [(k, f.to_json()) for k, f in facts.items()],
                )
                self._db.execute("COMMIT")

    def close(self) -> None:
        """Close the database."""
        if self._db is not None:
            self._db.close()
            self._db = None

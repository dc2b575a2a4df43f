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

FACTS_VERSION = 3
"""Bumped when blob facts change meaning (3: one media classifier, NULs anywhere are binary)."""


@attrs.define(frozen=True, slots=True)
class BlobFacts:
    """The description of one blob that does not depend on where it sits in a tree."""

    media_type: str
    representation: Representation
    chars: int | None
    sections: tuple[SectionInfo, ...] = ()
    problem: Problem | None = None

    def to_row(self) -> tuple[str, str, int | None, str | None, str | None]:
        """Columns for the cache: JSON only for the rare parts (sections, problems)."""
        sections = (
            json.dumps([x.model_dump(mode="json") for x in self.sections], separators=(",", ":"))
            if self.sections
            else None
        )
        problem = self.problem.model_dump_json() if self.problem else None
        return (self.media_type, self.representation.value, self.chars, sections, problem)

    @classmethod
    def from_row(
        cls, media_type: str, representation: str, chars: int | None,
        sections: str | None, problem: str | None,
    ) -> BlobFacts:  # fmt: skip
        """The facts of :meth:`to_row`."""
        return cls(
            media_type=media_type,
            representation=Representation(representation),
            chars=chars,
            sections=tuple(SectionInfo(**x) for x in json.loads(sections)) if sections else (),
            problem=Problem.model_validate_json(problem) if problem else None,
        )


class FactCache:
    """Facts by (blob id, path suffix class) in memory and, given a file, on disk."""

    def __init__(self, path: Path | None) -> None:
        self._memory: dict[str, BlobFacts] = {}
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError:  # a state folder that cannot be made: the facts stay in memory
                return
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
        db.execute(
            "CREATE TABLE IF NOT EXISTS facts (key TEXT PRIMARY KEY, media_type TEXT NOT NULL, "
            "representation TEXT NOT NULL, chars INTEGER, sections TEXT, problem TEXT)"
        )
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
                        "SELECT key, media_type, representation, chars, sections, problem "
                        f"FROM facts WHERE key IN ({marks})",
                        chunk,
                    ).fetchall()
                    for key, *columns in rows:
                        try:
                            found[key] = self._memory[key] = BlobFacts.from_row(*columns)
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
                    "INSERT OR REPLACE INTO facts VALUES (?, ?, ?, ?, ?, ?)",
                    [(k, *f.to_row()) for k, f in facts.items()],
                )
                self._db.execute("COMMIT")

    def close(self) -> None:
        """Close the database."""
        if self._db is not None:
            self._db.close()
            self._db = None

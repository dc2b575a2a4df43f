"""Exact k-NN over one set of unit vectors: numpy beside sqlite-vec, same queries, same k.

numpy: the documents as one normalized float32 matrix, ``matrix @ query``, then
``argpartition`` for the top k and a sort of those k. sqlite-vec (when ``pysqlite3`` and
``sqlite_vec`` import and the SQLite loads extensions): a ``vec0`` table with cosine
distance (its k-NN query) and a plain table scanned with ``vec_distance_cosine``. Each
searcher runs one query at a time, single thread; the first pass and the median of the
warm passes are reported, with how often each agrees with numpy's top k.
"""

from __future__ import annotations

import gc
import importlib
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.common import summarize

__all__ = ["Matrix", "agreement", "knn_numpy", "knn_sqlite_vec", "load_sqlite_vec"]

Matrix = npt.NDArray[np.float32]
Search = Callable[[Matrix], list[int]]


def _passes(search: Search, queries: Matrix, passes: int) -> tuple[dict[str, Any], list[list[int]]]:
    """The first pass and ``passes`` warm ones of ``search`` over every query row."""
    samples: list[float] = []
    ranked: list[list[int]] = []
    for _ in range(passes + 1):
        gc.collect()
        start = time.perf_counter()
        ranked = [search(row) for row in queries]
        samples.append(time.perf_counter() - start)
    warm = summarize(samples[1:])
    count = len(queries)
    return {
        "first_pass_qps": count / samples[0],
        "warm_qps": count / warm["median_s"],
        "warm_passes": warm,
    }, ranked


def agreement(ranked: Sequence[Sequence[Any]], truth: Sequence[Sequence[Any]]) -> dict[str, float]:
    """How often ``ranked`` matches ``truth``: same top-k set, same order, mean overlap."""
    pairs = list(zip(ranked, truth, strict=True))
    if not pairs:
        return {"same_set_share": 1.0, "same_order_share": 1.0, "mean_overlap": 1.0}
    return {
        "same_set_share": sum(set(a) == set(b) for a, b in pairs) / len(pairs),
        "same_order_share": sum(list(a) == list(b) for a, b in pairs) / len(pairs),
        "mean_overlap": statistics.fmean(len(set(a) & set(b)) / max(len(b), 1) for a, b in pairs),
    }


def knn_numpy(
    matrix: Matrix, queries: Matrix, k: int, passes: int
) -> tuple[dict[str, Any], list[list[int]]]:
    """Exact cosine top ``k`` of every query by one matrix product each; figures, rankings."""
    top = min(k, len(matrix))

    def search(query: Matrix) -> list[int]:
        scores = matrix @ query
        best = np.argpartition(-scores, top - 1)[:top] if top < len(matrix) else np.arange(top)
        return [int(i) for i in best[np.argsort(-scores[best], kind="stable")]]

    figures, ranked = _passes(search, queries, passes)
    return {**figures, "bytes_in_memory": int(matrix.nbytes)}, ranked


def load_sqlite_vec() -> tuple[Any, Any] | str:
    """``(pysqlite3.dbapi2, sqlite_vec)`` when both import and the SQLite loads
    extensions, else why not."""
    try:
        dbapi = importlib.import_module("pysqlite3.dbapi2")
        sqlite_vec = importlib.import_module("sqlite_vec")
    except ImportError as exc:
        return f"not importable here: {exc}"
    if not hasattr(dbapi.Connection, "enable_load_extension"):
        return "pysqlite3 was built without loadable extensions"
    return dbapi, sqlite_vec


def _connect(dbapi: Any, sqlite_vec: Any, path: Path) -> Any:
    conn = dbapi.connect(str(path))
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    return conn


def _fill(conn: Any, matrix: Matrix) -> dict[str, float]:
    """Seconds to fill the vec0 table and the plain one (rowid = matrix row + 1)."""
    dims = int(matrix.shape[1])
    conn.execute(
        f"CREATE VIRTUAL TABLE vec USING vec0(embedding float[{dims}] distance_metric=cosine)"
    )
    conn.execute("CREATE TABLE plain (id INTEGER PRIMARY KEY, embedding BLOB NOT NULL)")
    rows = [(number + 1, row.astype(np.float32).tobytes()) for number, row in enumerate(matrix)]
    seconds: dict[str, float] = {}
    for table in ("vec", "plain"):
        column = "rowid" if table == "vec" else "id"
        start = time.perf_counter()
        with conn:
            conn.executemany(f"INSERT INTO {table} ({column}, embedding) VALUES (?, ?)", rows)
        seconds[f"{table}_fill_s"] = time.perf_counter() - start
    return seconds


def knn_sqlite_vec(
    matrix: Matrix, queries: Matrix, k: int, passes: int, folder: Path
) -> tuple[dict[str, Any], dict[str, list[list[int]]]]:
    """sqlite-vec's vec0 k-NN and a vec_distance_cosine scan over the same vectors, in a
    database file under ``folder``; figures (or why not measured) and rankings by searcher."""
    loaded = load_sqlite_vec()
    if isinstance(loaded, str):
        return {"available": False, "reason": loaded}, {}
    dbapi, sqlite_vec = loaded
    path = folder / "vec.db"
    conn = _connect(dbapi, sqlite_vec, path)
    fill = _fill(conn, matrix)
    statements = {
        "vec0": "SELECT rowid FROM vec WHERE embedding MATCH ? AND k = ? ORDER BY distance",
        "scan": "SELECT id FROM plain ORDER BY vec_distance_cosine(embedding, ?) LIMIT ?",
    }
    figures: dict[str, Any] = {"available": True, **fill, "bytes_on_disk": path.stat().st_size}
    rankings: dict[str, list[list[int]]] = {}
    for name, sql in statements.items():

        def search(query: Matrix, sql: str = sql) -> list[int]:
            rows = conn.execute(sql, (query.astype(np.float32).tobytes(), k))
            return [int(row[0]) - 1 for row in rows]

        figures[name], rankings[name] = _passes(search, queries, passes)
    versions = conn.execute("SELECT vec_version(), sqlite_version()").fetchone()
    figures["vec_version"], figures["sqlite_version"] = versions
    conn.close()
    return figures, rankings

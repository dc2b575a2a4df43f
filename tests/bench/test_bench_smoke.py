"""The benchmarks run in quick mode and write well-formed JSON results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import documents, workspace
from bench.reader import PHASES, QUICK
from bench.registry import by_name
from bench.runner import main
from tests.bench.helpers import TIMED_RESULT_KEYS, quick_result


@pytest.fixture(scope="module")
def reader_result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The JSON the reader benchmark writes in quick mode."""
    return quick_result("reader", tmp_path_factory.mktemp("bench-results"))


def test_registry_lists_the_reader_benchmark() -> None:
    """The reader benchmark is registered under its name."""
    assert "reader" in by_name()


def test_result_has_the_expected_keys(reader_result: dict[str, Any]) -> None:
    """The result names its benchmark, parameters, machine, commit, notes and timings."""
    assert TIMED_RESULT_KEYS | {"source_calls_last_round"} <= reader_result.keys()
    assert reader_result["benchmark"] == "reader"
    assert reader_result["quick"] is True
    assert {"python", "platform", "cpu_count"} <= reader_result["machine"].keys()
    assert "commit" in reader_result["git"]
    assert reader_result["notes"]


def test_quick_mode_uses_quick_sizes(reader_result: dict[str, Any]) -> None:
    """Quick mode runs the small source for few rounds."""
    params = reader_result["params"]
    assert params["descriptors"] == QUICK.descriptors
    assert params["rounds"] == QUICK.rounds
    assert params["max_chars"] > 0
    assert params["max_blocks"] > 0


def test_every_phase_has_positive_timings(reader_result: dict[str, Any]) -> None:
    """Cold, warm and one-change timings are positive, one sample per round."""
    rounds = reader_result["params"]["rounds"]
    for phase in PHASES:
        timing = reader_result["timings"][phase]
        assert len(timing["samples_s"]) == rounds
        assert all(sample > 0 for sample in timing["samples_s"])
        assert 0 < timing["min_s"] <= timing["median_s"] <= timing["max_s"]


def test_ratios_and_targets_are_reported(reader_result: dict[str, Any]) -> None:
    """Both ratios are reported; quick runs do not judge the targets."""
    ratios = reader_result["ratios"]
    assert set(ratios) == {"warm_over_cold", "one_change_over_cold"}
    assert all(ratio > 0 for ratio in ratios.values())
    assert reader_result["targets"]["max_ratio"] == pytest.approx(0.05)
    assert reader_result["targets"]["met"] is None


def test_every_phase_delivered_a_page(reader_result: dict[str, Any]) -> None:
    """The consistency checks hold and each phase's package holds blocks."""
    assert all(reader_result["checks"].values()), reader_result["checks"]
    for phase in PHASES:
        assert reader_result["packages_last_round"][phase]["blocks"] > 0


def test_unknown_benchmark_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """``--only`` with an unknown name exits with a usage error."""
    with pytest.raises(SystemExit) as exited:
        main(["--only", "no-such-benchmark"])
    assert exited.value.code == 2
    assert "no-such-benchmark" in capsys.readouterr().err


# -- workspace benchmark ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def workspace_result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The JSON the workspace benchmark writes in quick mode."""
    return quick_result("workspace", tmp_path_factory.mktemp("bench-results"))


def test_registry_lists_the_new_benchmarks() -> None:
    """The workspace and documents benchmarks are registered under their names."""
    assert {"workspace", "documents"} <= by_name().keys()


def test_workspace_result_has_the_expected_keys(workspace_result: dict[str, Any]) -> None:
    """The workspace result names its parameters, machine, commit, notes, timings and counts."""
    assert TIMED_RESULT_KEYS | {"source_calls_by_round"} <= workspace_result.keys()
    assert workspace_result["benchmark"] == "workspace"
    assert workspace_result["quick"] is True
    assert workspace_result["notes"]


def test_workspace_quick_mode_uses_quick_sizes(workspace_result: dict[str, Any]) -> None:
    """Quick mode generates the small folder of 2-4 KB files and runs few rounds."""
    params = workspace_result["params"]
    assert params["files"] == workspace.QUICK.files
    assert params["rounds"] == workspace.QUICK.rounds
    assert sum(params["files_by_suffix"].values()) == params["files"]
    assert {"txt", "md", "py"} <= params["files_by_suffix"].keys()
    assert 2048 <= params["bytes_min"] <= params["bytes_max"] <= 4096
    assert params["index_provider"] == "structural"


def test_workspace_every_phase_has_positive_timings(workspace_result: dict[str, Any]) -> None:
    """Every phase has one positive sample per round and consistent statistics."""
    rounds = workspace_result["params"]["rounds"]
    for phase in workspace.PHASES:
        timing = workspace_result["timings"][phase]
        assert len(timing["samples_s"]) == rounds
        assert all(sample > 0 for sample in timing["samples_s"])
        assert 0 < timing["min_s"] <= timing["median_s"] <= timing["max_s"]


def test_workspace_ratios_and_targets_are_reported(workspace_result: dict[str, Any]) -> None:
    """Every phase has a ratio to cold; warm and one-change are judged, not in quick runs."""
    ratios = workspace_result["ratios"]
    assert set(ratios) == {f"{phase}_over_cold" for phase in workspace.PHASES[1:]}
    assert all(ratio > 0 for ratio in ratios.values())
    targets = workspace_result["targets"]
    assert targets["max_ratio"] == pytest.approx(0.05)
    assert set(targets["judged"]) == {"warm_over_cold", "one_change_over_cold"}
    assert targets["met"] is None


def test_workspace_counts_show_the_work_of_each_phase(workspace_result: dict[str, Any]) -> None:
    """Cold describes every file, warm none, one change exactly one; checks hold."""
    assert all(workspace_result["checks"].values()), workspace_result["checks"]
    files = workspace_result["params"]["files"]
    for calls in workspace_result["source_calls_by_round"]:
        assert calls["cold"]["files_described"] == files
        assert calls["cold"]["enumeration_pages"] >= 1
        assert calls["warm"]["files_described"] == 0
        assert calls["one_change"]["files_described"] == 1
        assert calls["cold_kept_workspace_state"]["files_described"] == files
        assert all(c["hashed_by_digest_cache"] >= 0 for c in calls.values())
    for phase in workspace.PHASES:
        assert workspace_result["packages_last_round"][phase]["blocks"] > 0


# -- documents benchmark ---------------------------------------------------------------------


def _sample_documents(folder: Path) -> Path:
    """A small DOCX, XLSX and PPTX made with the libraries themselves."""
    import docx
    import openpyxl
    import pptx

    folder.mkdir(parents=True, exist_ok=True)
    document = docx.Document()
    document.add_heading("Upload limits", level=1)
    document.add_paragraph("Uploads time out after 30 s when the index is rebuilt.")
    document.save(str(folder / "sample.docx"))
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["setting", "value"])
    sheet.append(["timeout", 30])
    workbook.save(folder / "sample.xlsx")
    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])
    title = slide.shapes.title
    assert title is not None
    title.text = "Upload retries"
    presentation.save(str(folder / "sample.pptx"))
    (folder / "notes.txt").write_text("not a document with a handler\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def documents_result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The documents benchmark in quick mode over three generated documents."""
    folder = _sample_documents(tmp_path_factory.mktemp("bench-docs"))
    return documents.run_documents(documents.QUICK, docs_dir=folder, quick=True)


def test_documents_result_has_the_expected_keys(documents_result: dict[str, Any]) -> None:
    """The documents result has aggregates, exclusions, targets, checks and per-document rows."""
    expected = {
        "benchmark",
        "schema_version",
        "created_utc",
        "quick",
        "skipped",
        "params",
        "machine",
        "git",
        "notes",
        "aggregates",
        "excluded",
        "handler_extracts_more",
        "targets",
        "checks",
        "documents",
    }
    assert expected <= documents_result.keys()
    assert documents_result["benchmark"] == "documents"
    assert documents_result["skipped"] is False
    assert documents_result["params"]["without_handler"] == ["notes.txt"]
    assert {
        "handler_over_raw",
        "handler_over_raw_wall",
        "first_over_cached",
    } == documents_result["aggregates"].keys()
    assert documents_result["aggregates"]["handler_over_raw"]["clock"] == "cpu_median_s"
    assert documents_result["targets"]["met"] is None


def test_documents_rows_have_positive_timings(documents_result: dict[str, Any]) -> None:
    """Each document has one positive sample per phase and round, and ratios."""
    rows = documents_result["documents"]
    assert {row["format"] for row in rows} == {"docx", "xlsx", "pptx"}
    rounds = documents.QUICK.rounds
    for row in rows:
        assert row["raw_ok"] is True
        assert row["handler_outcome"] == "parsed"
        assert row["read_representation"] == "parsed_text"
        for phase in documents.PHASES:
            timing = row["timings"][phase]
            assert len(timing["samples_s"]) == rounds
            assert all(sample > 0 for sample in timing["samples_s"])
            assert timing["cpu_median_s"] >= 0
        assert row["handler_over_raw"] > 0
        assert row["first_over_cached"] > 0
    assert all(documents_result["checks"].values()), documents_result["checks"]
    for aggregate in documents_result["aggregates"].values():
        assert aggregate["documents"] == len(rows)
        assert aggregate["total_ratio"] > 0
        assert aggregate["median_ratio"] > 0


def test_documents_skip_cleanly_without_the_folder(tmp_path: Path) -> None:
    """A missing documents folder gives a skipped result, not an error."""
    missing = tmp_path / "no-such-docs"
    result = documents.run_documents(documents.QUICK, docs_dir=missing, quick=True)
    assert result["benchmark"] == "documents"
    assert result["skipped"] is True
    assert str(missing) in result["reason"]
    assert result["targets"]["met"] is None
    assert result["checks"] == {}
    assert documents.summary_lines(result) == [f"skipped: {result['reason']}"]
    json.dumps(result)  # JSON-safe


def test_documents_quick_run_through_the_runner(tmp_path: Path) -> None:
    """``--quick --only documents`` writes a result, measured or skipped (eval folder absent)."""
    assert main(["--quick", "--only", "documents", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "documents.json").read_text(encoding="utf-8"))
    assert data["benchmark"] == "documents"
    if data["skipped"]:
        assert "absent" in data["reason"]
    else:
        assert 0 < data["params"]["documents"] <= len(documents.QUICK_KINDS)
        assert all(data["checks"].values()), data["checks"]


# -- fts benchmark ---------------------------------------------------------------------------


def test_fts_quick_run_through_the_runner(tmp_path: Path) -> None:
    """``--quick --only fts`` measures a synthetic corpus and writes a consistent result."""
    from bench import fts

    assert "fts" in by_name()
    assert main(["--quick", "--only", "fts", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "fts.json").read_text(encoding="utf-8"))
    assert data["benchmark"] == "fts"
    assert data["skipped"] is False
    assert data["corpus"]["source"] == "synthetic"
    assert data["corpus"]["documents"] == fts.QUICK.synthetic_docs
    assert all(data["checks"].values()), data["checks"]
    assert data["targets"]["met"] is None
    assert data["throughput"]["warm_qps"] > 0
    assert data["throughput"]["cold_qps"] > 0
    assert data["baselines"]["plain_or"]["qps"] > 0
    assert data["update"]["median_s"] > 0
    assert 0 < data["quality"]["ndcg_at_10"] <= 1
    assert data["build"]["bytes_on_disk"] > 0


def test_fts_skips_cleanly_without_scifact(tmp_path: Path) -> None:
    """A missing SciFact folder gives a skipped result, not an error."""
    from bench import fts

    missing = tmp_path / "no-scifact"
    result = fts.run_fts(fts.FULL, corpus_dir=missing)
    assert result["skipped"] is True
    assert str(missing) in result["reason"]
    assert fts.summary_lines(result) == [f"skipped: {result['reason']}"]
    json.dumps(result)


# -- records benchmark -----------------------------------------------------------------------


def test_records_quick_run_through_the_runner(tmp_path: Path) -> None:
    """``--quick --only records`` writes throughput, page timings, source reads and checks."""
    from bench import records

    assert "records" in by_name()
    assert main(["--quick", "--only", "records", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "records.json").read_text(encoding="utf-8"))
    assert data["benchmark"] == "records"
    assert data["quick"] is True
    assert all(data["checks"].values()), data["checks"]
    assert data["targets"]["met"] is None
    assert {f"put_{n}" for n in records.QUICK.put_counts} <= data["writes"].keys()
    assert all(w["rps"] > 0 for w in data["writes"].values())
    deep = f"page_{records.QUICK.deep_page}"
    assert {"page_1", "page_2", deep} == data["timings"].keys()
    assert all(ratio > 0 for ratio in data["ratios"].values())
    source = data["source_read"]
    assert data["params"]["source_records"] == records.QUICK.source_records
    for name, allow in records.SOURCE_VARIANTS.items():
        variant = source[name]
        assert variant["host_allow"] == list(allow)
        assert variant["index_provider"] == name
        assert set(variant["timings"]) == set(records.SOURCE_PHASES)
        for timing in variant["timings"].values():
            assert len(timing["samples_s"]) == records.QUICK.source_rounds
            assert all(sample > 0 for sample in timing["samples_s"])
        assert set(variant["ratios"]) == {"warm_over_cold", "one_put_over_cold"}
    assert source["fts_cold_over_structural_cold"] > 0

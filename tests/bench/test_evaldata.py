"""bench.evaldata: one answer to where the eval data lives, for tests and benches."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import evaldata


def test_the_environment_names_the_eval_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TASKCTX_EVAL moves every set; TASKCTX_EVAL_DOCS moves the documents alone; a
    missing set's skip reason names the folder and the variable."""
    monkeypatch.setenv("TASKCTX_EVAL", str(tmp_path / "eval"))
    monkeypatch.delenv("TASKCTX_EVAL_DOCS", raising=False)
    assert evaldata.eval_root() == tmp_path / "eval"
    assert evaldata.docs_dir() == tmp_path / "eval" / "docs"
    monkeypatch.setenv("TASKCTX_EVAL_DOCS", str(tmp_path / "docs"))
    assert evaldata.docs_dir() == tmp_path / "docs"
    reason = evaldata.missing_reason(tmp_path / "eval" / "beir")
    assert str(tmp_path / "eval" / "beir") in reason
    assert "TASKCTX_EVAL" in reason


def test_without_the_environment_it_is_beside_the_checkout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Unset, the folder is shared/eval beside this checkout (or its main checkout)."""
    monkeypatch.delenv("TASKCTX_EVAL", raising=False)
    root = evaldata.eval_root()
    assert root.parts[-2:] == ("shared", "eval")
    assert root.parent.parent in {evaldata.REPO_ROOT.parent, *evaldata.REPO_ROOT.parents}

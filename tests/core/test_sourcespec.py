"""One parser of ``KIND[:key=value,...]`` for every place a source is given as text."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from taskctx import SourceSpec, SourceSpecError, TaskCtxError, parse_source_spec
from taskctx.cli import main


def test_a_spec_names_kind_options_and_binding() -> None:
    """Options reach the factory as strings; ``id`` names the binding and is not an option."""
    spec = parse_source_spec("record_store:root=/x,scope={},id=recs")
    assert spec == SourceSpec(
        kind="record_store", options={"root": "/x", "scope": "{}"}, binding_id="recs"
    )
    assert parse_source_spec("task_workspace") == SourceSpec(kind="task_workspace")
    assert parse_source_spec("k:a=,b=c=d").options == {"a": "", "b": "c=d"}


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ("", "expected KIND"),
        (":root=x", "expected KIND"),
        ("k:root", "expected key=value, got 'root'"),
        ("k:=x", "expected key=value, got '=x'"),
        ("k:a=1,a=2", "option 'a' given twice"),
        ("k:id=a,id=b", "option 'id' given twice"),
        ("k:id=", "binding id ''"),
        ("k:id=two words", "binding id 'two words'"),
        ("k:id=../up", "binding id '../up'"),
    ],
)
def test_every_malformed_spec_names_the_fault(raw: str, words: str) -> None:
    """Each class of malformed spec is a SourceSpecError (a TaskCtxError and a ValueError)
    naming the spec and what is wrong with it."""
    with pytest.raises(SourceSpecError) as caught:
        parse_source_spec(raw)
    assert words in str(caught.value)
    assert repr(raw) in str(caught.value)
    assert isinstance(caught.value, TaskCtxError)
    assert isinstance(caught.value, ValueError)


@pytest.mark.usefixtures("with_memory_kind")
def test_read_source_id_names_the_binding() -> None:
    """``taskctx read --source KIND:...,id=NAME`` attaches under NAME, not the kind."""
    args = ["read", "--source", "memory:a.txt=alpha,id=notes", "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    package = json.loads(result.output)
    assert [block["binding_id"] for block in package["blocks"]] == ["notes"]
    assert "notes" in package["snapshot"]["sources"]


@pytest.mark.parametrize("raw", ["memory:a.txt", "memory:a=1,a=2", ":x=1", "memory:id=a b"])
def test_read_refuses_a_malformed_source_as_a_usage_error(raw: str) -> None:
    """A malformed ``--source`` is a usage error (exit 2) naming the option and the fault."""
    result = CliRunner().invoke(main, ["read", "--source", raw])
    assert result.exit_code == 2, result.output
    assert "--source" in result.output
    assert repr(raw) in result.output

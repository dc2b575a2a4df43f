"""{{ cookiecutter.__class_name }} keeps the source protocol and works through taskctx.

The contract class runs every rule of ``taskctx.testing.SourceContract``; the other
tests check this source's own promises, then the installed plugin end to end
(``pip install -e .[test]`` first: the entry point must be installed).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from taskctx import (
    ContextBudget,
    ContextReadIntent,
    ContextRef,
    DescriptorPage,
    EnumerationRequest,
    NotFoundError,
    PluginHost,
    Representation,
    TaskContext,
)
from taskctx.testing import SourceContract, sha256_of

from {{ cookiecutter.__package_name }}.source import (
    {{ cookiecutter.__class_name }},
)

DISTRIBUTION = "{{ cookiecutter.__distribution_name }}"
KIND = "{{ cookiecutter.__source_kind }}"

TICKETS = {
    "T-17.json": {"id": "T-17", "title": "Upload times out after 30 s", "status": "open"},
    "T-18.json": {"id": "T-18", "title": "Typo in the footer", "status": "closed"},
    "archive/T-03.json": {"id": "T-03", "title": "Login page is slow", "status": "closed"},
}


def write_tickets(root: Path) -> Path:
    """A folder of JSON tickets, plus files the source must not list."""
    for path, ticket in TICKETS.items():
        file = root / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(json.dumps(ticket), encoding="utf-8")
    (root / "notes.txt").write_text("not JSON", encoding="utf-8")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "secret.json").write_text('{"hidden": true}', encoding="utf-8")
    return root


def pretty(value: object) -> str:
    """The text the source delivers for a JSON value."""
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def enumerate_all(
    source: {{ cookiecutter.__class_name }},
    page_size: int = 500,
    path_prefix: str | None = None,
) -> list[DescriptorPage]:
    """Every page of an enumeration, following the cursors."""
    pages: list[DescriptorPage] = []
    cursor: str | None = None
    while not pages or cursor is not None:
        request = EnumerationRequest(cursor=cursor, page_size=page_size, path_prefix=path_prefix)
        pages.append(asyncio.run(source.async_enumerate_descriptors(request)))
        cursor = pages[-1].next_cursor
    return pages


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder of three JSON tickets."""
    return write_tickets(tmp_path / "tickets")


class Test{{ cookiecutter.__camel_name }}Contract(SourceContract):
    """Every rule of the ContextSource protocol, from taskctx's conformance kit."""

    covers = KIND

    @pytest.fixture
    def source(self, folder: Path) -> {{ cookiecutter.__class_name }}:
        """The tickets, and a broken file the kit must see listed by reference only."""
        (folder / "broken.json").write_text('{"id": ', encoding="utf-8")
        return {{ cookiecutter.__class_name }}(folder)


def test_descriptors_describe_each_json_file(folder: Path) -> None:
    """One descriptor per visible .json file: path, title, size, length, content version."""
    source = {{ cookiecutter.__class_name }}(folder)
    [page] = enumerate_all(source)
    assert [d.path for d in page.descriptors] == sorted(TICKETS)
    for descriptor in page.descriptors:
        data = (folder / descriptor.path).read_bytes()
        assert descriptor.title == TICKETS[descriptor.path]["title"]
        assert descriptor.media_type == "application/json"
        assert descriptor.size == len(data)
        assert descriptor.chars == len(pretty(TICKETS[descriptor.path]))
        assert descriptor.content_version == sha256_of(data)
    assert page.total == len(TICKETS)


def test_pages_honour_size_cursor_and_prefix(folder: Path) -> None:
    """page_size bounds a page, the cursor continues it, path_prefix narrows it."""
    source = {{ cookiecutter.__class_name }}(folder)
    pages = enumerate_all(source, page_size=2)
    assert [len(p.descriptors) for p in pages] == [2, 1]
    assert [d.path for p in pages for d in p.descriptors] == sorted(TICKETS)
    [archive] = enumerate_all(source, path_prefix="archive/")
    assert [d.path for d in archive.descriptors] == ["archive/T-03.json"]


def test_exact_read_is_pretty_json_cut_at_the_limit(folder: Path) -> None:
    """A read returns the pretty text, at most ``limit`` characters, digest of the whole."""
    source = {{ cookiecutter.__class_name }}(folder)
    ref = ContextRef(binding="tickets", path="T-17.json")
    text = pretty(TICKETS["T-17.json"])
    whole = asyncio.run(source.async_read_exact(ref))
    cut = asyncio.run(source.async_read_exact(ref, 10))
    assert (whole.text, whole.complete, whole.digest) == (text, True, sha256_of(text))
    assert (cut.text, cut.complete, cut.digest) == (text[:10], False, sha256_of(text))


def test_revision_changes_with_a_file(folder: Path) -> None:
    """The revision is stable until a file is added, changed or removed."""
    source = {{ cookiecutter.__class_name }}(folder)
    before = asyncio.run(source.async_revision())
    assert asyncio.run(source.async_revision()) == before
    (folder / "T-19.json").write_text('{"id": "T-19"}', encoding="utf-8")
    assert asyncio.run(source.async_revision()) != before


def test_invalid_json_is_listed_by_reference_only(folder: Path) -> None:
    """A broken file is listed with the problem invalid_json and never read as text."""
    (folder / "broken.json").write_text('{"id": ', encoding="utf-8")
    source = {{ cookiecutter.__class_name }}(folder)
    [page] = enumerate_all(source)
    [broken] = [d for d in page.descriptors if d.path == "broken.json"]
    assert broken.representation is Representation.REFERENCE_ONLY
    assert broken.problem is not None
    assert broken.problem.code == f"{KIND}:invalid_json"
    read = asyncio.run(source.async_read_exact(ContextRef(binding="tickets", path="broken.json")))
    assert (read.text, read.data) == (None, b'{"id": ')
    assert read.representation is Representation.REFERENCE_ONLY
    assert read.content_version == broken.content_version


def test_a_reader_omits_invalid_json_and_says_why(folder: Path, tmp_path: Path) -> None:
    """Through a reader, a broken file is omitted as reference only, with a diagnostic."""
    (folder / "broken.json").write_text('{"id": ', encoding="utf-8")
    host = PluginHost(allow=[DISTRIBUTION])
    ctx = TaskContext("triage-7", host=host, state_dir=tmp_path / "state")
    ctx.attach(host.source(KIND, root=str(folder)), binding_id="tickets")
    package = ctx.reader(consumer="triager").read(ContextReadIntent(query="broken"))
    assert "broken.json" not in {block.ref.path for block in package.blocks}
    [omission] = [o for o in package.omissions if o.ref.path == "broken.json"]
    assert omission.reason.value == "reference_only"
    assert f"{KIND}:invalid_json" in {diagnostic.code for diagnostic in package.diagnostics}


@pytest.mark.parametrize(
    "path", ["../outside.json", "/etc/outside.json", ".hidden/secret.json", "notes.txt"]
)
def test_refs_outside_the_items_are_not_found(folder: Path, path: str) -> None:
    """Paths that leave the root, hidden files and other files raise NotFoundError."""
    (folder.parent / "outside.json").write_text('{"secret": true}', encoding="utf-8")
    source = {{ cookiecutter.__class_name }}(folder)
    with pytest.raises(NotFoundError):
        asyncio.run(source.async_read_exact(ContextRef(binding="tickets", path=path)))


def test_links_that_escape_the_root_are_neither_listed_nor_read(folder: Path) -> None:
    """A symbolic link pointing outside the root is not an item."""
    outside = folder.parent / "outside.json"
    outside.write_text('{"secret": true}', encoding="utf-8")
    try:
        (folder / "link.json").symlink_to(outside)
    except OSError:
        pytest.skip("symbolic links are not available here")
    source = {{ cookiecutter.__class_name }}(folder)
    [page] = enumerate_all(source)
    assert "link.json" not in [d.path for d in page.descriptors]
    with pytest.raises(NotFoundError):
        asyncio.run(source.async_read_exact(ContextRef(binding="tickets", path="link.json")))


def test_a_reader_finds_a_ticket_by_query(folder: Path, tmp_path: Path) -> None:
    """Through the installed plugin, a TaskContext reader delivers the matching ticket."""
    host = PluginHost(allow=[DISTRIBUTION])
    ctx = TaskContext("triage-7", host=host, state_dir=tmp_path / "state")
    ctx.attach(host.source(KIND, root=str(folder)), binding_id="tickets")
    reader = ctx.reader(consumer="triager", budget=ContextBudget(max_chars=4000, max_blocks=5))
    package = reader.read(ContextReadIntent(query="upload times out"))
    delivered = {block.ref.path: block.content for block in package.blocks}
    assert delivered["T-17.json"] == pretty(TICKETS["T-17.json"])
    assert package.source_coverage["tickets"].status.value == "complete"


def test_taskctx_plugins_lists_the_plugin() -> None:
    """``taskctx plugins --json`` shows the distribution loaded, with its source kind."""
    env = {**os.environ, "TASKCTX_LOAD_PLUGINS": DISTRIBUTION}
    env.pop("TASKCTX_BLOCK_PLUGINS", None)
    result = subprocess.run(
        [sys.executable, "-m", "taskctx", "plugins", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    records = {record["name"]: record for record in json.loads(result.stdout)}
    assert DISTRIBUTION in records, f"not installed? run: pip install -e .[test]\n{records}"
    record = records[DISTRIBUTION]
    assert record["status"] == "loaded", record["error"]
    assert KIND in record["registered"]["source_kinds"]


def test_the_host_makes_the_source_by_kind(folder: Path) -> None:
    """``PluginHost().source(kind, root=...)`` builds this source from the entry point."""
    host = PluginHost()
    source = host.source(KIND, root=folder)
    assert isinstance(source, {{ cookiecutter.__class_name }})
    assert source.kind == KIND
    assert source.root == folder.resolve()

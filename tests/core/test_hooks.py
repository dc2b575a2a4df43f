"""One test per hookspec: a real in-process plugin's registration reaches its registry and is used.

Datasette's rule: every hook has a ``test_hook_<name>``; the meta-tests at the end enforce it.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pytest

from taskctx import (
    ContextReadIntent,
    ContextRef,
    ExactRead,
    MediaError,
    PluginHost,
    SectionInfo,
    TaskContext,
    hookimpl,
    hookspecs,
)
from taskctx.errors import PluginLoadWarning
from taskctx.model import Enumeration, OmissionReason, Representation
from taskctx.plugins import REGISTRY_KINDS
from taskctx.protocols import (
    ContextSource,
    FileIOHandler,
    IndexDocument,
    IndexPartition,
    IndexProvider,
    ParsedDocument,
    PartitionKey,
    RequestFilter,
    ScopedRead,
    SearchHit,
    SearchResult,
    SelectionRequest,
    Selector,
)
from taskctx.testing import MemorySource, sha256_of

Register = Callable[..., None]


def make_host(plugin: object, name: str) -> PluginHost:
    """A host with no entry points and ``plugin`` registered in-process under ``name``."""
    host = PluginHost(allow=[])
    host.register(plugin, name=name)
    record = host.plugins()[-1]
    assert (record.name, record.status, record.error) == (name, "loaded", None)
    return host


# -- register_source_kinds ----------------------------------------------------------------


class NotesSource(MemorySource):
    """A MemorySource under its own kind name, made from keyword options."""

    kind = "notes"


class NotesPlugin:
    """Registers the ``notes`` source kind."""

    @hookimpl
    def register_source_kinds(self, register: Register) -> None:
        """``notes`` -> NotesSource."""
        register("notes", NotesSource)


def test_hook_register_source_kinds() -> None:
    """A registered kind is made by host.source() and a TaskContext read delivers from it."""
    host = make_host(NotesPlugin(), "notes-plugin")
    assert host.plugins()[-1].registered == {"source_kinds": ("notes",)}
    assert host.source_kinds()["notes"] is NotesSource
    source = host.source("notes", items={"todo.txt": "Ship the docs.", "done.txt": "Kernel."})
    assert isinstance(source, NotesSource)
    assert isinstance(source, ContextSource)
    ctx = TaskContext("hook-source", host=host)
    assert ctx.attach(source) == "notes"
    package = ctx.reader(consumer="test").read("docs")
    assert [(b.ref.path, b.content, b.source_kind) for b in package.blocks] == [
        ("done.txt", "Kernel.", "notes"),
        ("todo.txt", "Ship the docs.", "notes"),
    ]
    assert package.source_coverage["notes"].delivered == 2


# -- register_scoped_readers --------------------------------------------------------------


class UpperReader:
    """Serves ``upper:`` scopes of any text item: the whole item in capitals."""

    name = "upper"
    scope_kinds: tuple[str, ...] = ("upper",)
    media_types: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def async_read_scoped(
        self, source: ContextSource, ref: ContextRef, limit: int | None
    ) -> ExactRead:
        """Read the whole item through the source and upper-case it."""
        self.calls.append(str(ref))
        whole = await source.async_read_exact(ref.with_scope(None), None)
        text = (whole.text or "").upper()
        cut = text if limit is None else text[:limit]
        return ExactRead(
            path=ref.path,
            scope=ref.scope,
            text=cut,
            media_type=whole.media_type,
            digest=sha256_of(text),
            chars_total=len(text),
            complete=cut == text,
            content_version=whole.content_version,
        )


class UpperPlugin:
    """Registers one UpperReader."""

    def __init__(self) -> None:
        self.reader = UpperReader()

    @hookimpl
    def register_scoped_readers(self, register: Register) -> None:
        """The ``upper`` reader."""
        register(self.reader)


def test_hook_register_scoped_readers() -> None:
    """An explicit ref with a custom scope kind is served by the registered reader."""
    plugin = UpperPlugin()
    host = make_host(plugin, "upper-plugin")
    assert isinstance(plugin.reader, ScopedRead)
    assert host.scoped_reader_for("upper", "text/plain") is plugin.reader
    assert host.scoped_reader_for("upper", "application/pdf") is None
    ctx = TaskContext("hook-scoped", host=host)
    ctx.attach(MemorySource({"motto.txt": "read less, say so"}), binding_id="notes")
    intent = ContextReadIntent(
        explicit_refs=["ctx://notes/motto.txt#upper:"], optional_selection="none"
    )
    package = ctx.reader(consumer="test").read(intent)
    block = package.blocks[0]
    assert (block.content, block.scope, block.required) == ("READ LESS, SAY SO", "upper:", True)
    assert block.digest == sha256_of("READ LESS, SAY SO")
    assert len(plugin.reader.calls) == 1
    assert plugin.reader.calls[0].startswith("ctx://notes/motto.txt?v=sha256")


# -- register_file_io_handlers ------------------------------------------------------------


class KeyValueHandler:
    """Parses ``.kv`` files of ``key = value`` lines; each key is a section."""

    name = "kv"
    suffixes: tuple[str, ...] = (".kv",)
    media_types: tuple[str, ...] = ("text/x-key-value",)

    def parse(self, data: bytes, path: str) -> ParsedDocument:
        """Text with one ``lines:N-N`` section per key; MediaError for non-UTF-8 bytes."""
        try:
            lines = data.decode("utf-8").splitlines()
        except UnicodeDecodeError as error:
            raise MediaError(f"{path} is not UTF-8 text") from error
        sections = tuple(
            SectionInfo(title=line.split("=", 1)[0].strip(), scope=f"lines:{n}-{n}")
            for n, line in enumerate(lines, start=1)
            if "=" in line
        )
        return ParsedDocument(
            text="\n".join(lines) + "\n", media_type=self.media_types[0], sections=sections
        )


class KeyValuePlugin:
    """Registers one KeyValueHandler."""

    def __init__(self) -> None:
        self.handler = KeyValueHandler()

    @hookimpl
    def register_file_io_handlers(self, register: Register) -> None:
        """The ``kv`` handler."""
        register(self.handler)


def test_hook_register_file_io_handlers() -> None:
    """The registered handler is found by suffix and media type, and its parse works."""
    plugin = KeyValuePlugin()
    host = make_host(plugin, "kv-plugin")
    assert isinstance(plugin.handler, FileIOHandler)
    assert host.file_io_handlers()[-1] is plugin.handler
    handler = host.file_io_handler_for(path="config/App.KV")
    assert handler is plugin.handler
    assert host.file_io_handler_for(media_type="text/x-key-value") is plugin.handler
    assert host.file_io_handler_for(path="config/app.kvx") is None
    parsed = handler.parse(b"timeout = 30\nretries = 3\n", "config/App.KV")
    assert parsed.representation is Representation.PARSED_TEXT
    assert parsed.text == "timeout = 30\nretries = 3\n"
    assert [(s.title, s.scope) for s in parsed.sections] == [
        ("timeout", "lines:1-1"),
        ("retries", "lines:2-2"),
    ]
    with pytest.raises(MediaError, match="not UTF-8"):
        handler.parse(b"\xff\xfe\x00", "bad.kv")


# -- register_index_providers -------------------------------------------------------------

WORD = re.compile(r"\w+")


class TermCountPartition:
    """In-memory partition: a document's score is how often the query's terms occur in it."""

    def __init__(self) -> None:
        self.docs: dict[str, tuple[str, list[str]]] = {}
        self.applied: list[str] = []

    def indexed_versions(self) -> Mapping[str, str]:
        """doc id -> content version."""
        return {doc_id: version for doc_id, (version, _) in self.docs.items()}

    def apply(self, upserts: Sequence[IndexDocument], deletes: Sequence[str]) -> None:
        """Tokenise path and text of each upsert; drop deletes."""
        for doc_id in deletes:
            self.docs.pop(doc_id, None)
        for doc in upserts:
            self.applied.append(doc.doc_id)
            words = WORD.findall(f"{doc.path} {doc.text or ''}".lower())
            self.docs[doc.doc_id] = (doc.content_version, words)

    def search(self, query: str, doc_ids: Sequence[str] | None, limit: int | None) -> SearchResult:
        """Documents with at least one query term, most occurrences first."""
        terms = WORD.findall(query.lower())
        pool = self.docs if doc_ids is None else doc_ids
        scores = {d: sum(self.docs[d][1].count(t) for t in terms) for d in pool}
        ranked = sorted((d for d, s in scores.items() if s), key=lambda d: (-scores[d], d))
        hits = tuple(SearchHit(doc_id=d, score=float(scores[d])) for d in ranked[:limit])
        return SearchResult(hits=hits, considered=len(ranked), searchable=bool(terms))

    def stats(self) -> Mapping[str, Any]:
        """How many documents it holds."""
        return {"documents": len(self.docs)}

    def close(self) -> None:
        """Nothing to release."""


class TermCountProvider:
    """A toy lexical provider that really ranks, by term count."""

    name = "termcount"
    kind: Literal["lexical"] = "lexical"
    needs_text = True

    def __init__(self) -> None:
        self.partitions: list[TermCountPartition] = []

    def open_partition(self, key: PartitionKey, directory: Path | None) -> IndexPartition:
        """A fresh in-memory partition."""
        partition = TermCountPartition()
        self.partitions.append(partition)
        return partition


class TermCountPlugin:
    """Registers one TermCountProvider."""

    def __init__(self) -> None:
        self.provider = TermCountProvider()

    @hookimpl
    def register_index_providers(self, register: Register) -> None:
        """The ``termcount`` provider."""
        register(self.provider)


def test_hook_register_index_providers() -> None:
    """configure_index(provider=name) makes the read follow the provider's ranking."""
    plugin = TermCountPlugin()
    host = make_host(plugin, "termcount-plugin")
    assert isinstance(plugin.provider, IndexProvider)
    assert host.index_provider("termcount") is plugin.provider
    ctx = TaskContext("hook-index", host=host)
    ctx.attach(
        MemorySource(
            {
                "a.txt": "the upload works",
                "b.txt": "upload fails, upload retried, upload again",
                "c.txt": "the cache is cold",
                "d.txt": "upload upload slow",
            }
        ),
        binding_id="notes",
    )
    ctx.configure_index(provider="structural")
    structural = ctx.reader(consumer="test").read("upload")
    assert [b.ref.path for b in structural.blocks] == ["a.txt", "b.txt", "c.txt", "d.txt"]
    assert "no_lexical_provider" in structural.source_coverage["notes"].reasons

    ctx.configure_index(provider="termcount")
    assert ctx.index_provider is plugin.provider
    package = ctx.reader(consumer="test").read("upload")
    assert [b.ref.path for b in package.blocks] == ["b.txt", "d.txt", "a.txt"]
    assert [b.score for b in package.blocks] == [3.0, 2.0, 1.0]
    coverage = package.source_coverage["notes"]
    assert coverage.enumeration is Enumeration.RANKED
    assert (coverage.considered, coverage.delivered) == (3, 3)
    assert sorted(plugin.provider.partitions[-1].applied) == ["a.txt", "b.txt", "c.txt", "d.txt"]


# -- register_selectors ------------------------------------------------------------------


class MentionsSelector:
    """Chooses the candidates whose preview mentions a word of the query."""

    name = "mentions"

    def __init__(self) -> None:
        self.requests: list[SelectionRequest] = []

    async def async_select(self, request: SelectionRequest) -> Sequence[str]:
        """Keys of candidates sharing a word with the query."""
        self.requests.append(request)
        words = set(request.query.lower().split())
        return [c.key for c in request.candidates if words & set(c.preview.lower().split())]


class MentionsPlugin:
    """Registers one MentionsSelector."""

    def __init__(self) -> None:
        self.selector = MentionsSelector()

    @hookimpl
    def register_selectors(self, register: Register) -> None:
        """The ``mentions`` selector."""
        register(self.selector)


def test_hook_register_selectors() -> None:
    """ctx.reader(selector=name) lets the registered selector choose the optional blocks."""
    plugin = MentionsPlugin()
    host = make_host(plugin, "mentions-plugin")
    assert isinstance(plugin.selector, Selector)
    assert host.selector("mentions") is plugin.selector
    ctx = TaskContext("hook-selector", host=host)
    ctx.attach(MemorySource({"a.txt": "cache settings", "b.txt": "the upload timeout"}), "notes")
    unselected = ctx.reader(consumer="test").read("upload")
    assert [b.ref.path for b in unselected.blocks] == ["a.txt", "b.txt"]

    package = ctx.reader(consumer="test", selector="mentions").read("upload")
    assert [b.ref.path for b in package.blocks] == ["b.txt"]
    assert [(o.ref.path, o.reason) for o in package.omissions] == [
        ("a.txt", OmissionReason.NOT_SELECTED)
    ]
    request = plugin.selector.requests[-1]
    assert [c.key for c in request.candidates] == ["c1", "c2"]
    assert all("ctx://" not in c.preview for c in request.candidates)


def test_hook_register_request_filters() -> None:
    """A registered request filter is in host.request_filters(); one that does not keep
    the protocol, or takes a used name, fails its plugin by name."""

    class Upper:
        name = "upper"
        order = 10
        automatic = True

        async def async_apply(self, request: Any, context: Any) -> Any:
            return request

    class FiltersPlugin:
        @hookimpl
        def register_request_filters(self, register):  # type: ignore[no-untyped-def]
            register(Upper())

    host = make_host(FiltersPlugin(), "filters")
    assert isinstance(host.request_filters()["upper"], RequestFilter)

    class NoApply:
        name = "no_apply"
        order = 1
        automatic = False

    class BadAutomatic(Upper):
        name = "bad"
        automatic = "yes"  # type: ignore[assignment]

    for bad, reason in ((NoApply(), "lacks async_apply"), (BadAutomatic(), "must be a bool")):

        class BadPlugin:
            def __init__(self, bad: object) -> None:
                self.bad = bad

            @hookimpl
            def register_request_filters(self, register):  # type: ignore[no-untyped-def]
                register(self.bad)

        with pytest.warns(PluginLoadWarning, match=reason):
            host.register(BadPlugin(bad), name=f"bad-{bad.name}")
        assert bad.name not in host.request_filters()
    with pytest.warns(PluginLoadWarning, match="upper"):
        host.register(FiltersPlugin(), name="filters-again")


def test_hook_register_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    """A registered click command becomes `taskctx <name>`."""
    import click
    from click.testing import CliRunner

    from taskctx import _clihost, cli

    @click.command("hello")
    @click.argument("who")
    def hello(who: str) -> None:
        """Say hello."""
        click.echo(f"hello {who}")

    class CommandsPlugin:
        @hookimpl
        def register_commands(self, register):  # type: ignore[no-untyped-def]
            register(hello)

    def host_with_commands() -> PluginHost:
        host = PluginHost(allow=[])
        host.register(CommandsPlugin(), name="commands")
        return host

    monkeypatch.setattr(_clihost, "load_host", host_with_commands)
    runner = CliRunner()
    assert runner.invoke(cli.main, ["hello", "world"]).output == "hello world\n"
    assert "hello" in runner.invoke(cli.main, ["--help"]).output
    assert sorted(host_with_commands().commands()) == ["hello"]


@pytest.mark.parametrize("kernel_command", ["plugins", "read", "index"])
def test_a_plugin_shadowing_a_kernel_command_fails(
    monkeypatch: pytest.MonkeyPatch, kernel_command: str
) -> None:
    """A plugin registering a kernel command's name fails as a whole, as the hookspec
    says, with a reason naming the command; the kernel command still runs."""
    import click
    from click.testing import CliRunner

    from taskctx import _clihost, cli

    @click.command(kernel_command)
    def shadow() -> None:
        """Tries to shadow a kernel command."""
        click.echo("shadowed")

    @click.command("hello")
    def hello() -> None:
        """A second command of the same plugin."""

    class ShadowPlugin:
        @hookimpl
        def register_commands(self, register):  # type: ignore[no-untyped-def]
            register(hello)
            register(shadow)

    def host_with_shadow() -> PluginHost:
        host = PluginHost(allow=[])
        with pytest.warns(PluginLoadWarning, match=f"command '{kernel_command}' is the kernel"):
            host.register(ShadowPlugin(), name="shadow")
        return host

    host = host_with_shadow()
    assert dict(host.commands()) == {}
    (record,) = [r for r in host.plugins() if r.name == "shadow"]
    assert record.status == "failed"
    assert record.error is not None
    assert f"taskctx {kernel_command}" in record.error
    monkeypatch.setattr(_clihost, "load_host", host_with_shadow)
    result = CliRunner().invoke(cli.main, [kernel_command, "--help"])
    assert result.exit_code == 0
    assert "shadowed" not in result.output


def test_the_kernel_names_are_the_kernel_commands() -> None:
    """The ownership table's kernel command names are exactly the commands cli.py defines."""
    from taskctx import cli
    from taskctx._ownership import KERNEL_NAMES

    assert KERNEL_NAMES["commands"] == set(cli.main.commands)


# -- register_cli_sources -----------------------------------------------------------------


def test_hook_register_cli_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    """A registered CliSource becomes a `taskctx read` flag that attaches its kind with the
    value under its factory option and its binding id."""
    from click.testing import CliRunner

    from taskctx import CliSource, CliValue, _clihost, cli

    class NotesCliPlugin:
        @hookimpl
        def register_source_kinds(self, register: Register) -> None:
            register("notes", lambda todo: NotesSource({"todo.txt": todo}))

        @hookimpl
        def register_cli_sources(self, register: Register) -> None:
            register(
                CliSource(
                    kind="notes",
                    value_option="todo",
                    flag="--todo",
                    binding_id="todo",
                    help="A to-do note.",
                    metavar="TEXT",
                    value=CliValue.TEXT,
                )
            )

    def host_with_notes() -> PluginHost:
        return make_host(NotesCliPlugin(), "notes-cli")

    assert host_with_notes().plugins()[-1].registered["cli_sources"] == ("--todo",)
    monkeypatch.setattr(_clihost, "load_host", host_with_notes)
    runner = CliRunner()
    assert "--todo TEXT" in runner.invoke(cli.main, ["read", "--help"]).output
    result = runner.invoke(cli.main, ["read", "--todo", "Ship the docs.", "--json"])
    assert result.exit_code == 0, result.output
    package = json.loads(result.output)
    assert [b["content"] for b in package["blocks"]] == ["Ship the docs."]
    assert list(package["source_coverage"]) == ["todo"]
    assert package["source_coverage"]["todo"]["source_kind"] == "notes"


# -- the meta-test -----------------------------------------------------------------------


def hookspec_names() -> list[str]:
    """The names of the hookspecs in taskctx.hookspecs."""
    marker = f"{hookspecs.PROJECT_NAME}_spec"
    return sorted(n for n, v in vars(hookspecs).items() if callable(v) and hasattr(v, marker))


def test_every_hookspec_has_a_test_hook_function() -> None:
    """Each hookspec in taskctx.hookspecs has a documented ``test_hook_<name>`` here."""
    names = hookspec_names()
    assert names, "no hookspecs found"
    missing = [n for n in names if not callable(globals().get(f"test_hook_{n}"))]
    assert not missing, f"hooks without a test_hook_<name>: {missing}"
    undocumented = [n for n in names if not (globals()[f"test_hook_{n}"].__doc__ or "").strip()]
    assert not undocumented, f"test_hook_<name> without a docstring: {undocumented}"


def test_no_test_hook_function_for_a_hook_that_does_not_exist() -> None:
    """Every ``test_hook_<name>`` here names a real hookspec (no stale or misspelled test)."""
    tests = [n.removeprefix("test_hook_") for n in globals() if n.startswith("test_hook_")]
    assert sorted(tests) == hookspec_names()


@pytest.mark.parametrize("name", hookspec_names())
def test_every_hookspec_takes_register_and_is_documented(name: str) -> None:
    """Each hookspec takes exactly one ``register`` argument (the llm convention), names
    the call in its docstring, and is listed in ``hookspecs.__all__`` and REGISTRY_KINDS."""
    function = getattr(hookspecs, name)
    assert list(inspect.signature(function).parameters) == ["register"]
    doc = inspect.getdoc(function) or ""
    assert "``register(" in doc, f"the docstring of {name} does not show the register call"
    assert name in hookspecs.__all__
    assert name.removeprefix("register_") in REGISTRY_KINDS

"""`taskctx read` and `taskctx index` learn their source options from the plugins (issue 15).

Third-party plugins are real entry-point distributions on sys.path (``tests.core.sites``)
or in-process plugins handed to the command line as ``main(args, obj=host)``.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from pydantic import ValidationError

from taskctx import CliSource, CliValue, PluginHost, PluginLoadWarning, hookimpl
from taskctx.cli import main
from taskctx.plugins import FIRST_PARTY_NAMES
from taskctx.testing import MemorySource
from tests.core.sites import Site, record

ROOT = Path(__file__).resolve().parents[2]

NOTES_PLUGIN = """
from taskctx import CliSource
from taskctx.hookspecs import hookimpl
from taskctx.testing import MemorySource


class NotesSource(MemorySource):
    kind = "{kind}"


def make(folder, label="none"):
    return NotesSource({{"where.txt": folder + " " + label}})


@hookimpl
def register_source_kinds(register):
    register("{kind}", make)


@hookimpl
def register_cli_sources(register):
    register(
        CliSource(
            kind="{kind}",
            value_option="folder",
            flag={flag!r},
            binding_id="{kind}",
            help="Attach the {kind} notes under DIR.",
            multiple=True,
            value="text",
            fixed_options={{"label": "fixed"}},
        )
    )
"""


def install_notes(site: Site, dist: str, flag: str | None, kind: str = "notes") -> None:
    """Install ``dist``: a source kind ``kind`` and a CliSource ``flag`` attaching it."""
    module = dist.replace("-", "_") + "_mod"
    site.add(dist, "1.0", module, NOTES_PLUGIN.format(kind=kind, flag=flag))


def quiet_host(**options: Any) -> PluginHost:
    """A PluginHost whose load warnings are expected (and silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginLoadWarning)
        return PluginHost(**options)


def invoke(args: list[str], env: dict[str, str] | None = None, obj: object = None) -> Result:
    """Run ``taskctx`` in-process; stderr is kept apart from stdout."""
    return CliRunner().invoke(main, args, env=env, obj=obj)


# -- options come from the loaded plugins -------------------------------------------------


def test_read_help_lists_a_third_party_option(site: Site) -> None:
    """An installed plugin's CliSource is an option of `taskctx read --help`, with its
    metavar and help, when the allow list lets it load."""
    install_notes(site, "acme-notes", "--notes")
    result = invoke(["read", "--help"], env={"TASKCTX_LOAD_PLUGINS": "acme-notes"})
    assert result.exit_code == 0, result.output
    shown = r"--notes DIR\s+Attach the notes notes under DIR\. Repeatable\."
    assert re.search(shown, result.output)


@pytest.mark.parametrize("variable", ["TASKCTX_BLOCK_PLUGINS", "TASKCTX_LOAD_PLUGINS"])
def test_option_of_a_plugin_that_does_not_load_is_absent(site: Site, variable: str) -> None:
    """A blocked (or not allowed) plugin gives no option: help lacks it, passing it fails."""
    install_notes(site, "acme-notes", "--notes")
    env = {variable: "acme-notes" if variable == "TASKCTX_BLOCK_PLUGINS" else "taskctx-records"}
    assert "--notes" not in invoke(["read", "--help"], env=env).output
    result = invoke(["read", "--notes", "x"], env=env)
    assert result.exit_code == 2
    assert "No such option '--notes'" in result.output


def test_first_party_options_come_through_the_same_hook() -> None:
    """PATH and --records are the CliSources taskctx-workspace and taskctx-records
    register (listed in their plugin records), not the kernel's."""
    host = PluginHost(allow=["taskctx-workspace", "taskctx-records"])
    assert record(host, "taskctx-workspace").registered["cli_sources"] == ("PATH",)
    assert record(host, "taskctx-records").registered["cli_sources"] == ("--records",)
    assert host.cli_sources()["PATH"].kind == "task_workspace"
    assert host.cli_sources()["--records"].kind == "record_store"
    bare = invoke(["read", "--help"], obj=PluginHost(allow=[])).output
    assert "--records" not in bare
    assert "Attach each folder" not in bare


def test_blocked_first_party_flag_names_its_distribution() -> None:
    """--records with taskctx-records blocked says which distribution gives it and why."""
    result = invoke(["read", "--records", "x"], env={"TASKCTX_BLOCK_PLUGINS": "taskctx-records"})
    assert result.exit_code == 2
    assert "No such option '--records'" in result.output
    assert "'taskctx-records'" in result.output
    assert "blocked (TASKCTX_BLOCK_PLUGINS)" in result.output


def test_index_without_a_path_owner_names_the_distribution(tmp_path: Path) -> None:
    """`taskctx index PATH` with no plugin owning PATH says which distribution to allow."""
    result = invoke(["index", str(tmp_path)], env={"TASKCTX_LOAD_PLUGINS": ""})
    assert result.exit_code == 1
    assert "'taskctx-workspace'" in result.output
    assert "not allowed (TASKCTX_LOAD_PLUGINS)" in result.output


# -- the invocation attaches the source as the CliSource says ------------------------------


def test_invocation_attaches_each_value_with_its_options(site: Site) -> None:
    """Each value becomes host.source(kind, value_option=value, **fixed_options), bound
    `<binding_id>-<n>` when repeated and `<binding_id>` when given once."""
    install_notes(site, "acme-notes", "--notes")
    env = {"TASKCTX_LOAD_PLUGINS": "acme-notes"}
    twice = invoke(["read", "--notes", "a", "--notes", "b", "--json"], env=env)
    assert twice.exit_code == 0, twice.output
    package = json.loads(twice.output)
    assert sorted(package["source_coverage"]) == ["notes-1", "notes-2"]
    assert sorted(b["content"] for b in package["blocks"]) == ["a fixed", "b fixed"]
    once = json.loads(invoke(["read", "--notes", "a", "--json"], env=env).output)
    assert list(once["source_coverage"]) == ["notes"]


def test_workspace_paths_and_records_keep_their_bindings(tmp_path: Path) -> None:
    """PATH... binds `files` (several: `files-<folder name>`) and --records binds
    `records`."""
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "a.txt").write_text(f"{name} text\n", encoding="utf-8")
    host = PluginHost(allow=["taskctx-workspace"])
    single = json.loads(invoke(["read", str(tmp_path / "one"), "--json"], obj=host).output)
    assert list(single["source_coverage"]) == ["files"]
    args = ["read", str(tmp_path / "one"), str(tmp_path / "two"), "--json"]
    double = json.loads(invoke(args, obj=host).output)
    assert list(double["source_coverage"]) == ["files-one", "files-two"]
    same = ["read", str(tmp_path / "one"), str(tmp_path / "one"), "--json"]
    assert list(json.loads(invoke(same, obj=host).output)["source_coverage"]) == [
        "files-one",
        "files-one-2",
    ]
    missing = invoke(["read", str(tmp_path / "nope")], obj=host)
    assert missing.exit_code == 2
    assert "does not exist" in missing.output


class _Notes(MemorySource):
    """A MemorySource of kind ``notes``."""

    kind = "notes"


class IndexedNotes:
    """An in-process plugin whose ``--notes`` flag `taskctx index` takes too."""

    @hookimpl
    def register_source_kinds(self, register: Callable[..., None]) -> None:
        """``notes`` made from one text."""
        register("notes", lambda text: _Notes({"n.txt": text}))

    @hookimpl
    def register_cli_sources(self, register: Callable[..., None]) -> None:
        """``--notes TEXT``, indexed as ``notes-<n>``."""
        register(
            CliSource(
                kind="notes",
                value_option="text",
                flag="--notes",
                binding_id="notes",
                help="Attach a note.",
                metavar="TEXT",
                value=CliValue.TEXT,
                index_binding_id="notes",
            )
        )


def test_index_takes_flags_that_ask_for_it() -> None:
    """A CliSource with index_binding_id is an option of `taskctx index` too, bound
    `<index_binding_id>-<n>`; without any source given the command refuses."""
    host = PluginHost(allow=[])
    host.register(IndexedNotes(), name="indexed-notes")
    assert "--notes TEXT" in invoke(["index", "--help"], obj=host).output
    result = invoke(["index", "--notes", "hello", "--json"], obj=host)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [(r["path"], r["added"]) for r in rows] == [("hello", 1)]
    empty = invoke(["index"], obj=host)
    assert empty.exit_code != 0
    assert "nothing to index" in empty.output


# -- who owns a flag ---------------------------------------------------------------------


@pytest.mark.parametrize("squatter", ["aaa-squat", "zzz-squat"])
@pytest.mark.parametrize("flag", [None, "--records"])
def test_first_party_flag_stays_with_its_distribution(
    site: Site, squatter: str, flag: str | None
) -> None:
    """A third party registering PATH or --records fails, naming the owner; the first
    party's option is what the command line gets, whoever loads first."""
    install_notes(site, squatter, flag, kind="squat_notes")
    owner = FIRST_PARTY_NAMES["cli_sources"][flag or "PATH"]
    host = quiet_host(allow=[squatter, owner])
    squat = record(host, squatter)
    assert squat.status == "failed"
    assert f"belongs to {owner!r} (a first-party name)" in (squat.error or "")
    assert host.cli_sources()[flag or "PATH"].kind != "squat_notes"
    assert "squat_notes" not in host.source_kinds()


def test_two_third_parties_claiming_one_flag_both_fail(site: Site) -> None:
    """Two third-party plugins registering --notes both fail with a warning naming both;
    neither option is offered."""
    install_notes(site, "aaa-notes", "--notes", kind="a_notes")
    install_notes(site, "zzz-notes", "--notes", kind="z_notes")
    env = {"TASKCTX_LOAD_PLUGINS": "aaa-notes,zzz-notes"}
    result = invoke(["read", "--help"], env=env)
    assert result.exit_code == 0
    assert "--notes" not in result.stdout
    warning = next(line for line in result.stderr.splitlines() if "registered by both" in line)
    assert "'aaa-notes' 1.0" in warning
    assert "'zzz-notes' 1.0" in warning


def test_a_chosen_distribution_gets_a_contested_flag(site: Site) -> None:
    """TASKCTX_CHOOSE_PLUGINS=--notes=DIST hands the flag to DIST; the other fails."""
    install_notes(site, "aaa-notes", "--notes", kind="a_notes")
    install_notes(site, "zzz-notes", "--notes", kind="z_notes")
    host = quiet_host(allow=["aaa-notes", "zzz-notes"], choose={"--notes": "zzz-notes"})
    assert host.cli_sources()["--notes"].kind == "z_notes"
    assert record(host, "aaa-notes").status == "failed"


def test_a_flag_of_the_kernel_command_is_not_added(site: Site) -> None:
    """A plugin flag equal to a kernel option (--query) is skipped with a warning on
    stderr; the kernel's --query still works."""
    install_notes(site, "acme-notes", "--query")
    env = {"TASKCTX_LOAD_PLUGINS": "acme-notes"}
    result = invoke(["read", "--put", "information=fact", "--query", "fact"], env=env)
    assert result.exit_code == 0, result.output
    assert "warning: taskctx read: --query (notes) is an option of the kernel's command" in (
        result.stderr
    )
    assert "fact" in result.stdout


# -- a CliSource is validated ------------------------------------------------------------

GOOD: dict[str, Any] = {
    "kind": "notes",
    "value_option": "root",
    "flag": "--notes",
    "binding_id": "notes",
    "help": "Attach notes.",
}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("kind", "no spaces", "not a source kind name"),
        ("value_option", "not-an-identifier", "not a keyword argument name"),
        ("flag", "-n", "must look like --name"),
        ("flag", "--Notes", "must look like --name"),
        ("binding_id", "bad id", "binding id 'bad id' must match"),
        ("index_binding_id", "/x", "binding id '/x' must match"),
        ("help", "", "at least 1 character"),
        ("help", "two\nlines", "one non-blank line"),
        ("metavar", "dir", "upper case"),
        ("value", "file", "'existing_directory' or 'positive_integer'"),
        ("fixed_options", {"not ok": "x"}, "not keyword argument names"),
        ("fixed_options", {"root": "x"}, "sets 'root', the value_option"),
        ("flag", None, "the positional PATH... is always repeatable"),
        ("surprise", 1, "Extra inputs are not permitted"),
    ],
)
def test_bad_cli_source_is_refused_naming_the_field(field: str, value: Any, message: str) -> None:
    """Each class of bad CliSource field is a ValidationError whose message says what."""
    with pytest.raises(ValidationError, match=re.escape(message)):
        CliSource(**{**GOOD, field: value})


def test_registering_something_else_fails_the_plugin() -> None:
    """register() of a non-CliSource fails the plugin with a message naming the type."""

    class Wrong:
        @hookimpl
        def register_cli_sources(self, register: Callable[..., None]) -> None:
            """Registers a dict."""
            register(dict(GOOD))

    host = PluginHost(allow=[])
    with pytest.warns(Warning, match="takes a taskctx.CliSource, not dict"):
        host.register(Wrong(), name="wrong")
    assert host.plugins()[-1].status == "failed"


def test_positional_cli_source_name_is_path() -> None:
    """The positional's registry name is PATH; a flag's is the flag; binding ids number."""
    positional = CliSource(**{**GOOD, "flag": None, "multiple": True, "index_binding_id": "f"})
    assert positional.name == "PATH"
    assert positional.binding_ids(1) == ("notes",)
    assert positional.binding_ids(2) == ("notes-1", "notes-2")
    assert positional.binding_ids(1, index=True) == ("f-1",)
    with pytest.raises(ValueError, match="not indexed by taskctx index"):
        CliSource(**GOOD).binding_ids(1, index=True)


# -- the CLI names no first-party kind -----------------------------------------------------


@pytest.mark.parametrize("module", ["cli.py", "_cliopts.py"])
def test_the_cli_names_no_first_party_kind(module: str) -> None:
    """The kernel's CLI modules spell no first-party source kind: the plugins say what
    their options attach."""
    text = (ROOT / "core" / "src" / "taskctx" / module).read_text(encoding="utf-8")
    named = [kind for kind in FIRST_PARTY_NAMES["source_kinds"] if kind in text]
    assert not named, f"{module} names {named}"


# -- a CliOption sets a factory option for every value of its source ---------------------

LABELLED_PLUGIN = """
from taskctx import CliOption, CliSource
from taskctx.hookspecs import hookimpl
from taskctx.testing import MemorySource


class NotesSource(MemorySource):
    kind = "notes"


def make(folder, label="none", copies: int = 1):
    return NotesSource({{"where.txt": " ".join([folder, label] * copies)}})


@hookimpl
def register_source_kinds(register):
    register("notes", make)


@hookimpl
def register_cli_sources(register):
    register(
        CliSource(
            kind="notes",
            value_option="folder",
            flag="--notes",
            binding_id="notes",
            help="Attach the notes under DIR.",
            multiple=True,
            value="text",
            options=(
                CliOption(flag={label_flag!r}, option="label", help="Label every note."),
                CliOption(
                    flag="--copies", option="copies", help="Repeat.", value="positive_integer"
                ),
            ),
        )
    )
"""


def test_a_cli_option_reaches_the_factory_of_every_value(site: Site) -> None:
    """--notes-label x sets label=x for each --notes value; not given, the default holds."""
    site.add("acme-notes", "1.0", "acme_notes_mod", LABELLED_PLUGIN.format(label_flag="--label"))
    env = {"TASKCTX_LOAD_PLUGINS": "acme-notes"}
    labelled = invoke(
        ["read", "--notes", "a", "--notes", "b", "--label", "x", "--copies", "2", "--json"],
        env=env,
    )
    assert labelled.exit_code == 0, labelled.output
    contents = sorted(b["content"] for b in json.loads(labelled.output)["blocks"])
    assert contents == ["a x a x", "b x b x"]
    plain = json.loads(invoke(["read", "--notes", "a", "--json"], env=env).output)
    assert [b["content"] for b in plain["blocks"]] == ["a none"]
    shown = invoke(["read", "--help"], env=env).output
    assert "--label VALUE" in shown
    assert "Label every note." in shown


def test_a_cli_option_value_is_checked_before_the_factory_runs(site: Site) -> None:
    """A positive_integer option refuses 0 and 'abc' as a usage error naming the flag."""
    site.add("acme-notes", "1.0", "acme_notes_mod", LABELLED_PLUGIN.format(label_flag="--label"))
    env = {"TASKCTX_LOAD_PLUGINS": "acme-notes"}
    for bad in ("0", "abc"):
        result = invoke(["read", "--notes", "a", "--copies", bad], env=env)
        assert result.exit_code == 2
        assert "Invalid value for '--copies'" in result.stderr


def test_a_cli_option_on_a_kernel_flag_is_not_added(site: Site) -> None:
    """An option flag the command already has (--query) is skipped with a warning."""
    site.add("acme-notes", "1.0", "acme_notes_mod", LABELLED_PLUGIN.format(label_flag="--query"))
    env = {"TASKCTX_LOAD_PLUGINS": "acme-notes"}
    result = invoke(["read", "--notes", "a", "--query", "a"], env=env)
    assert result.exit_code == 0, result.output
    assert "--query (notes) is already an option of this command; not added" in result.stderr
    assert "a none" in result.stdout


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"flag": "label"}, "must look like --name"),
        ({"option": "not-ok"}, "not a keyword argument name"),
        ({"help": "two\nlines"}, "one non-blank line"),
        ({"metavar": "n"}, "upper case"),
        ({"option": "root"}, "options sets 'root', which is already given"),
        ({"flag": "--notes"}, "options reuses this source's flag --notes"),
    ],
)
def test_bad_cli_option_is_refused_naming_the_field(options: dict[str, Any], message: str) -> None:
    """Each class of bad CliOption, alone or against its source, says what is wrong."""
    option = {"flag": "--label", "option": "label", "help": "Label.", **options}
    with pytest.raises(ValidationError, match=re.escape(message)):
        CliSource(**GOOD, options=(option,))

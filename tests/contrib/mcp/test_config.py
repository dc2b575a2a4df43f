"""The server configuration: TOML files, flags, and every class of bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from taskctx_mcp import ConfigError, ContextService, ServerConfig, load_config
from taskctx_mcp.cli import mcp_group
from taskctx_mcp.config import parse_source_spec
from taskctx_mcp.service import ServiceError

from taskctx import PolicyError


def test_a_toml_file_names_bindings_plugins_budget_consumer_and_configuration(
    tmp_path: Path, project: Path
) -> None:
    """Every section of the file reaches the config, and bindings by table or by the
    ``--source`` string form."""
    path = tmp_path / "mcp.toml"
    path.write_text(
        f"""
task_id = "review-42"
plugins = ["taskctx-workspace", "taskctx-records"]
sources = ["record_store:root={tmp_path / "state"},id=review-records"]

[budget]
max_chars = 6000
max_blocks = 12

[consumer]
name = "review-planner"
capabilities = {{ attachments = {{ image = true }} }}

[configuration]
allowed_hosts = ["github.com"]

[resources]
page_size = 25
poll_interval = 0

[[bindings]]
kind = "task_workspace"
id = "project-files"
options = {{ root = "{project}", mode = "read_only" }}
"""
    )
    from taskctx_records import RecordStore

    RecordStore(tmp_path / "state")
    config = load_config(path)
    assert config.task_id == "review-42"
    assert config.plugins == ("taskctx-workspace", "taskctx-records")
    assert (config.budget.max_chars, config.budget.max_blocks) == (6000, 12)
    assert config.consumer.accepts_image_attachments()
    assert config.configuration.allowed_hosts == ("github.com",)
    assert config.resources.page_size == 25
    assert [b.binding_id for b in config.bindings] == ["project-files", "review-records"]
    service = ContextService.from_config(config)
    assert list(service.context.bindings) == ["project-files", "review-records"]
    assert service.context.configuration.allowed_hosts == ("github.com",)


def test_source_strings_are_the_read_source_form(tmp_path: Path) -> None:
    """``KIND:k=v,...`` parses like ``taskctx read --source``; ``id=`` names the binding."""
    binding = parse_source_spec("record_store:root=/x,scope={},id=recs")
    assert binding.kind == "record_store"
    assert binding.binding_id == "recs"
    assert dict(binding.options) == {"root": "/x", "scope": "{}"}
    assert parse_source_spec("task_workspace").binding_id == "task_workspace"


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (":root=x", "KIND"),
        ("record_store:root", "key=value"),
        ("record_store:=x", "key=value"),
        ("record_store:root=a,root=b", "twice"),
    ],
)
def test_bad_source_strings_say_what_is_wrong(raw: str, words: str) -> None:
    """Each malformed source string is a ConfigError naming the string and the fault."""
    with pytest.raises(ConfigError, match=words) as caught:
        parse_source_spec(raw)
    assert raw in str(caught.value)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("bindings = [\n", "not valid TOML"),
        ("unknown_key = 1\n", "unknown_key"),
        ("[budget]\nmax_chars = 0\n", "budget.max_chars"),
        ("[budget]\nmax_chars = 'many'\n", "budget.max_chars"),
        ("[resources]\npage_size = 0\n", "resources.page_size"),
        ("[configuration]\nallowed_hosts = ['http://x/']\n", "http://x/"),
        ("[configuration]\nnot_a_field = 1\n", "not_a_field"),
        ("[consumer]\ncapabilities = {}\n", "consumer.name"),
        (
            "[[bindings]]\nkind = 'task_workspace'\n[[bindings]]\nkind = 'task_workspace'\n",
            "used twice",
        ),
        ("[[bindings]]\nid = 'x'\n", "bindings.0.kind"),
        ("task_id = ''\n", "task_id"),
        ("sources = 'task_workspace'\n", "list of KIND"),
        ("sources = ['task_workspace:root']\n", "key=value"),
    ],
)
def test_bad_files_are_config_errors_naming_file_and_field(
    tmp_path: Path, text: str, words: str
) -> None:
    """Every class of bad file content is a ConfigError naming the file and the field."""
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=words.replace("[", r"\[")) as caught:
        load_config(path)
    assert "bad.toml" in str(caught.value)


def test_unreadable_and_non_utf8_files_are_config_errors(tmp_path: Path) -> None:
    """A missing file and a file that is not UTF-8 are ConfigErrors, not tracebacks."""
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.toml")
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="UTF-8"):
        load_config(binary)


def test_flags_number_repeated_bindings(tmp_path: Path) -> None:
    """Two --workspace folders become files-1 and files-2; one --records is records."""
    config = ServerConfig.from_flags(workspace=["a", "b"], records=["s"])
    assert [b.binding_id for b in config.bindings] == ["files-1", "files-2", "records"]
    assert dict(config.bindings[0].options) == {"root": "a", "mode": "read_only"}


def test_a_binding_that_cannot_be_made_fails_the_start_by_name(tmp_path: Path) -> None:
    """An unknown kind, a missing option and a refused host name the binding."""
    bad = [
        (["nowhere_kind:root=x"], "nowhere_kind"),
        (["task_workspace:rooot=x,id=typo"], "typo"),
    ]
    for sources, words in bad:
        config = ServerConfig.from_flags(
            sources=sources, base=ServerConfig(plugins=("taskctx-workspace",))
        )
        with pytest.raises((ServiceError, ConfigError), match=words):
            ContextService.from_config(config)


def test_allowed_hosts_govern_what_bound_sources_fetch(tmp_path: Path) -> None:
    """A pinned repository at a host the configuration does not allow is refused before
    anything is fetched."""
    config = ServerConfig.model_validate(
        {
            "plugins": ["taskctx-repo"],
            "configuration": {"allowed_hosts": ["example.org"]},
            "bindings": [
                f"pinned_repository:location=https://github.com/x/y.git,state_dir={tmp_path}"
            ],
        }
    )
    with pytest.raises((ServiceError, PolicyError), match=r"github\.com"):
        ContextService.from_config(config)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["serve"], "nothing to serve"),
        (["serve", "--workspace", ".", "--http", "localhost"], "HOST:PORT"),
        (["serve", "--workspace", ".", "--http", "127.0.0.1:99999"], "HOST:PORT"),
        (["serve", "--source", "record_store:root"], "key=value"),
    ],
)
def test_serve_refuses_bad_flags(args: list[str], words: str, tmp_path: Path) -> None:
    """``taskctx mcp serve`` with bad flags exits with a usage error naming the fault."""
    result = CliRunner().invoke(mcp_group, args)
    assert result.exit_code != 0
    assert words in result.output
    assert "Traceback" not in result.output

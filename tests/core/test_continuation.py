"""Going on from a package another reader showed: aliases keep their numbers; the
reader says when it cannot (tests/plugins/workspace/test_continuation.py reads pages of
a real folder across processes)."""

from __future__ import annotations

import pytest

from taskctx import ContextRef, PluginHost
from taskctx.aliases import AliasTable
from taskctx.errors import TaskCtxError
from taskctx.testing import MemorySource
from tests.core.test_reader import make_context

LONG = "".join(f"walrus line {n} " + "filler " * 30 + "\n" for n in range(80))
ITEMS = {"long.txt": LONG, "other.txt": "walrus, briefly\n"}


@pytest.fixture
def host() -> PluginHost:
    """The kernel's built-ins only."""
    return PluginHost(allow=[], load_entrypoints=False)


def test_an_alias_table_numbers_on_past_the_highest_alias() -> None:
    """Restored from the aliases one package shows (with gaps), new refs never reuse one."""
    ref = ContextRef(binding="b", path="a.txt")
    table = AliasTable.restore({"ref_3": ref})
    assert table.alias(ref) == "ref_3"
    assert table.alias(ContextRef(binding="b", path="b.txt")) == "ref_4"
    with pytest.raises(TaskCtxError, match="aliases must be ref_<n>"):
        AliasTable.restore({"alias_1": ref})


def test_continue_from_comes_first_and_only_for_its_task(host: PluginHost) -> None:
    """After a read, or with another task's package, continue_from says what is wrong."""
    ctx = make_context(host, mem=MemorySource(ITEMS))
    reader = ctx.reader("a")
    package = reader.read("walrus")
    with pytest.raises(TaskCtxError, match="before the reader's first read"):
        reader.continue_from(package)
    other = make_context(host, mem=MemorySource(ITEMS))
    foreign = package.model_copy(update={"task_id": "another-task"})
    with pytest.raises(TaskCtxError, match="belongs to task 'another-task'"):
        other.reader("a").continue_from(foreign)

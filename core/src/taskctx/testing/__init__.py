"""The conformance kits for plugins, and an in-memory reference source.

Three pytest base classes hold the protocol rules: :class:`SourceContract` (provide a
``source`` fixture), :class:`FileIOHandlerContract` (``handler`` and ``sample``) and
:class:`IndexProviderContract` (``provider``). Subclass one in a test module and pytest
runs every rule against your object; ``covers`` names what the subclass tests::

    class TestMySource(SourceContract):
        covers = "my_kind"

        @pytest.fixture
        def source(self, tmp_path) -> ContextSource:
            return MySource(tmp_path)

:class:`MemorySource` is a complete source held in memory, with a change journal and
optionally the history to serve pinned revisions; it is handy in tests and examples.
docs/testing-plugins.md lists every rule.
"""

from __future__ import annotations

from taskctx.testing._common import make_png, sha256_of
from taskctx.testing._handler_contract import FileIOHandlerContract
from taskctx.testing._index_contract import IndexProviderContract
from taskctx.testing._memory import MemorySource
from taskctx.testing._source_contract import SourceContract

__all__ = [
    "FileIOHandlerContract",
    "IndexProviderContract",
    "MemorySource",
    "SourceContract",
    "make_png",
    "sha256_of",
]

"""The conformance kits for third-party sources, and an in-memory reference source.

Subclass :class:`SourceContract` in a test module and provide a ``source`` fixture;
pytest then runs every protocol rule against it::

    class TestMySource(SourceContract):
        @pytest.fixture
        def source(self, tmp_path) -> ContextSource:
            return MySource(tmp_path)

:class:`MemorySource` is a complete source held in memory, with a change journal and
optionally the history to serve pinned revisions; it is handy in tests and examples.
"""

from __future__ import annotations

from taskctx.testing._common import sha256_of
from taskctx.testing._handler_contract import FileIOHandlerContract
from taskctx.testing._index_contract import IndexProviderContract
from taskctx.testing._memory import MemorySource
from taskctx.testing._source_contract import SourceContract

__all__ = [
    "FileIOHandlerContract",
    "IndexProviderContract",
    "MemorySource",
    "SourceContract",
    "sha256_of",
]

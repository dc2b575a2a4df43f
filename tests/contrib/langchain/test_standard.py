"""LangChain's own standard retriever suite (langchain-tests) against TaskContextRetriever."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests
from taskctx_langchain import TaskContextRetriever

from taskctx import TaskContext
from tests.contrib.langchain.conftest import workspace_context


class TestTaskContextRetrieverStandard(RetrieversIntegrationTests):
    """RetrieversIntegrationTests over a real workspace: k per call and in the constructor."""

    context: TaskContext

    @pytest.fixture(autouse=True)
    def _workspace(self, tmp_path: Path) -> None:
        """Each standard test reads a fresh workspace context."""
        self.context = workspace_context(tmp_path)

    @property
    def retriever_constructor(self) -> type[TaskContextRetriever]:
        """The retriever under test."""
        return TaskContextRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        """Over the workspace context, as a named consumer."""
        return {"context": self.context, "consumer": "langchain-standard-tests"}

    @property
    def retriever_query_example(self) -> str:
        """Four files match it, so k=3 and k=1 are both reached."""
        return "upload"

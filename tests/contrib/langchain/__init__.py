"""Tests of taskctx-langchain."""

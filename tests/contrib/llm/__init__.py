"""Tests of contrib/llm (taskctx-llm)."""

"""Tests of contrib/tantivy (taskctx-tantivy)."""

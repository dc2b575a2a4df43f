"""Tests of taskctx-fts, the SQLite FTS5 lexical index provider."""

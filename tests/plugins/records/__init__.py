"""Tests of taskctx-records."""

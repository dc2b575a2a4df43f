"""Benchmarks of taskctx: ``python -m bench`` runs them and writes ``bench/results/*.json``.

Speed targets live here, not in the test suite: tests only check that each benchmark
runs and reports well-formed results.
"""

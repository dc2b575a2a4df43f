"""Smoke tests of the benchmarks (they run; speed targets are judged by ``python -m bench``)."""

"""The cyclic garbage collector paused while a sync builds objects that all live on.

A first sync makes a descriptor, a candidate and an index document (each a few container
objects) for every item, and nearly all of them survive it. CPython's collector runs a
full collection whenever the survivors grow by a quarter, and each one traverses every
object again: a first sync of 10,000 records spent about a quarter of its time there.
A sync makes no reference cycles of its own (what it drops is freed by reference
counting), so the collector is paused for its duration, as Mercurial pauses it while
it builds large indexes. What other code makes meanwhile is collected once it resumes.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused(enabled: bool = True) -> Iterator[None]:
    """Pause the collector inside the block (if ``enabled``), and leave it as it was
    found: a collector the application turned off stays off, and a pause nested in
    another (a second sync running meanwhile) changes nothing."""
    if not enabled or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()

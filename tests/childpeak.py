"""The peak-memory function that the tests' child processes define: its source, to paste
into a ``python -c`` script before the code that calls it.

``peak_rss_kib()`` is the process's own peak resident size (``VmHWM``). Not
``ru_maxrss``: Linux carries the parent's peak into it across fork and exec (a vfork
child borrows the parent's memory until exec), so a child of a large test runner would
report the runner's size, and a growth measured with it would read 0.
"""

from __future__ import annotations

__all__ = ["PEAK_RSS_SOURCE"]

PEAK_RSS_SOURCE = """
import resource as _resource


def peak_rss_kib():
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return _resource.getrusage(_resource.RUSAGE_SELF).ru_maxrss
"""

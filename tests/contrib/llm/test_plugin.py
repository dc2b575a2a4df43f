"""Loading the plugin registers its providers and selector without loading llm or numpy."""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import json, sys
from taskctx import PluginHost
host = PluginHost(allow=["taskctx-fts", "taskctx-llm"], strict=True)
print(json.dumps({
    "providers": sorted(host.index_providers()),
    "selectors": sorted(host.selectors()),
    "loaded": sorted(m for m in ("llm", "numpy") if m in sys.modules),
}))
"""


def test_the_plugin_loads_without_llm_or_numpy() -> None:
    """A host with taskctx-llm offers ``vector``, ``hybrid`` and the ``llm`` selector, and
    neither llm (0.3 s to import, with its plugins) nor numpy is imported until used."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=120
    )
    found = json.loads(done.stdout)
    assert {"vector", "hybrid"} <= set(found["providers"])
    assert found["selectors"] == ["llm"]
    assert found["loaded"] == []

"""The taskctx-langchain entry point loads, warns about nothing and registers nothing."""

from __future__ import annotations

import warnings

from taskctx import PluginHost


def test_entry_point_loads_without_registering() -> None:
    """PluginHost loads the plugin module (it has no hookimpl) with no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        host = PluginHost(allow=["taskctx-langchain"], strict=True)
    (record,) = [p for p in host.plugins() if p.name == "taskctx-langchain"]
    assert record.status == "loaded"
    assert record.hooks == ()
    assert record.registered == {}

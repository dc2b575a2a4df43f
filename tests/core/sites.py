"""Throwaway distributions on sys.path: real entry-point plugins for PluginHost tests."""

from __future__ import annotations

import importlib
import textwrap
from pathlib import Path

from taskctx.plugins import PluginHost, PluginRecord, normalize_name

SOURCE_PLUGIN = """
from taskctx.hookspecs import hookimpl

class DemoSource:
    kind = "{kind}"

    def __init__(self, **options):
        self.options = options

    async def async_revision(self):
        return "r1"

    async def async_enumerate_descriptors(self, request):
        raise NotImplementedError

    async def async_read_exact(self, ref, limit=None):
        raise NotImplementedError

@hookimpl
def register_source_kinds(register):
    register("{kind}", DemoSource)
    {extra}
"""


class Site:
    """A directory on sys.path holding throwaway distributions (dist-info + module)."""

    def __init__(self, root: Path, modules: list[str]) -> None:
        self.root = root
        self.modules = modules

    def add(self, dist: str, version: str, module: str, source: str) -> None:
        """Install distribution ``dist`` whose ``taskctx`` entry point is ``module``."""
        info = self.root / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n", encoding="utf-8"
        )
        (info / "entry_points.txt").write_text(f"[taskctx]\n{module} = {module}\n")
        (self.root / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        self.modules.append(module)
        importlib.invalidate_caches()

    def source_plugin(self, dist: str, module: str, kind: str, version: str = "1.0") -> None:
        """Install a plugin registering source kind ``kind``."""
        self.add(dist, version, module, SOURCE_PLUGIN.format(kind=kind, extra=""))


def record(host: PluginHost, name: str) -> PluginRecord:
    """The single record of distribution ``name``."""
    found = [r for r in host.plugins() if normalize_name(r.name) == normalize_name(name)]
    assert len(found) == 1, host.plugins()
    return found[0]

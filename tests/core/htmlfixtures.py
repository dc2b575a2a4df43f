"""A package with every part the HTML page shows, hostile content included (for the
HTML page tests)."""

from __future__ import annotations

from taskctx import (
    ContextBudget,
    ContextConsumer,
    ContextPackage,
    ContextReadIntent,
    PluginHost,
    TaskContext,
)
from taskctx.testing import MemorySource
from taskctx.testing import make_png as png

__all__ = ["HOSTILE", "rich_package"]

HOSTILE = (
    '<script>document.title="owned"</script><img src="{leak}/leak.png">'
    '<link rel="stylesheet" href="{leak}/leak.css"><iframe src="{leak}/frame"></iframe>'
)
"""Block content that would run, fetch or frame if the page did not escape it."""


def rich_package(leak: str = "http://127.0.0.1:9") -> ContextPackage:
    """A page with blocks (one hostile, one required), an image attachment, omissions of
    several reasons, a diagnostic, two bindings and a next page."""
    host = PluginHost(allow=[], load_entrypoints=False)
    ctx = TaskContext("inspect-me", host=host)
    ctx.put(role="instruction", content="Answer from these files only.", required=True)
    items: dict[str, str | bytes] = {
        "hostile.md": "# Upload\n\nupload " + HOSTILE.format(leak=leak) + "\n",
        "plain.txt": "the upload times out after 30 s\n",
        "pic.png": png(3, 2),
        "blob.bin": b"\x00\x01upload\x02",
        "zz-big.txt": "padding " * 300 + "upload\n",
    }
    items.update({f"more/{n}.txt": f"upload note {n}\n" for n in range(2)})
    ctx.attach(MemorySource(items), binding_id="files")
    ctx.attach(MemorySource({"notes.txt": "upload notes\n"}), binding_id="notes")
    consumer = ContextConsumer(name="viewer", capabilities={"attachments": {"image": True}})
    budget = ContextBudget(max_chars=1500, max_blocks=10)
    intent = ContextReadIntent(query="upload", explicit_refs=["ctx://files/missing.txt"])
    return ctx.reader(consumer, budget=budget).read(intent)

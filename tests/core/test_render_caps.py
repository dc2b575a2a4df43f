"""The model-hot view: capped repeats, canonical names of media, the quality statement
(issue 14 §3 and the render half of §2)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from pydantic import ValidationError

from taskctx import (
    ContextBudget,
    ContextConsumer,
    ContextPackage,
    ContextReadIntent,
    PluginHost,
    TaskContext,
)
from taskctx.model import OmissionReason, Severity
from taskctx.render import LISTED_PER_REASON, QUALITY_TEXT
from taskctx.testing import MemorySource
from taskctx.testing import make_png as png
from tests.core.forgery import assert_view_is_the_package

BINARY = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4


@pytest.fixture
def host() -> PluginHost:
    """A host with the kernel built-ins only (no document handler)."""
    return PluginHost(allow=[])


def _read(host: PluginHost, items: dict[str, str | bytes], **reader: object) -> ContextPackage:
    ctx = TaskContext("task-r", host=host)
    ctx.attach(MemorySource(items), binding_id="files")
    return ctx.reader(consumer="model", **reader).read("")  # type: ignore[arg-type]


def _children(package: ContextPackage) -> list[ET.Element]:
    return list(ET.fromstring(package.render()))


def test_forty_binaries_render_eight_lines_and_a_count(host: PluginHost) -> None:
    """A folder of 40 binaries shows LISTED_PER_REASON omissions and one count line;
    the package keeps all 40 for audit."""
    package = _read(host, {f"bin/tool{n:02d}.bin": BINARY for n in range(40)})
    assert len(package.omissions) == 40
    assert {o.reason for o in package.omissions} == {OmissionReason.REFERENCE_ONLY}
    children = _children(package)
    omitted = [c for c in children if c.tag == "omitted"]
    assert len(omitted) == LISTED_PER_REASON == 8
    assert [c.get("name") for c in omitted] == [f"bin/tool{n:02d}.bin" for n in range(8)]
    (summary,) = [c for c in children if c.tag == "omitted-summary"]
    assert summary.attrib == {"reason": "reference_only", "count": "40", "listed": "8"}
    assert_view_is_the_package(package)


def test_every_reason_present_gets_a_count_line_once_capping_starts(host: PluginHost) -> None:
    """Once one reason is capped, each reason present has its own summary line."""
    items: dict[str, str | bytes] = {f"bin/b{n:02d}.bin": BINARY for n in range(10)}
    items |= {f"text/t{n}.txt": "x" * 60 for n in range(3)}
    package = _read(host, items, budget=ContextBudget(max_chars=100, max_blocks=50))
    children = _children(package)
    summaries = {c.get("reason"): c.attrib for c in children if c.tag == "omitted-summary"}
    assert summaries == {
        "reference_only": {"reason": "reference_only", "count": "10", "listed": "8"},
        "over_char_budget": {"reason": "over_char_budget", "count": "1", "listed": "1"},
    }


def test_few_omissions_render_whole_without_a_summary(host: PluginHost) -> None:
    """Up to the cap, every omission is listed and no summary is added."""
    package = _read(host, {f"b{n}.bin": BINARY for n in range(LISTED_PER_REASON)})
    children = _children(package)
    assert sum(c.tag == "omitted" for c in children) == LISTED_PER_REASON
    assert not any(c.tag == "omitted-summary" for c in children)


def test_required_omissions_are_always_listed_whole(host: PluginHost) -> None:
    """Twelve missing explicit refs (required) are all listed, each with its own line."""
    ctx = TaskContext("task-r", host=host)
    ctx.attach(MemorySource({"a.txt": "a"}), binding_id="files")
    refs = [f"ctx://files/missing{n}.txt" for n in range(12)]
    package = ctx.reader(consumer="model").read(ContextReadIntent(explicit_refs=refs))
    omitted = [c for c in _children(package) if c.tag == "omitted"]
    assert len(omitted) == 12
    assert all(c.get("required") == "true" for c in omitted)
    assert not any(c.tag == "omitted-summary" for c in _children(package))
    assert sum(c.tag == "diagnostic" for c in _children(package)) == 12


def test_repeated_info_diagnostics_are_capped_warnings_are_not(host: PluginHost) -> None:
    """Twelve optional PDFs without a handler: eight info diagnostics and a count; the same
    code as a warning (required PDFs) is listed whole."""
    pdf = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n"
    package = _read(host, {f"doc{n:02d}.pdf": pdf for n in range(12)})
    infos = [d for d in package.diagnostics if d.code == "handler_missing"]
    assert len(infos) == 12
    assert all(d.severity is Severity.INFO for d in infos)
    children = _children(package)
    assert sum(c.tag == "diagnostic" for c in children) == LISTED_PER_REASON
    (summary,) = [c for c in children if c.tag == "diagnostic-summary"]
    assert summary.attrib == {"code": "handler_missing", "count": "12", "listed": "8"}
    ctx = TaskContext("task-r", host=host)
    ctx.attach(MemorySource({f"doc{n:02d}.pdf": pdf for n in range(12)}), binding_id="files")
    refs = [f"ctx://files/doc{n:02d}.pdf" for n in range(12)]
    required = ctx.reader(consumer="model").read(ContextReadIntent(explicit_refs=refs))
    assert len(required.omissions) == 12  # each explicit ref once, not again as optional
    assert all(o.required for o in required.omissions)
    children = _children(required)
    assert sum(c.tag == "diagnostic" for c in children) == 12
    assert not any(c.tag == "diagnostic-summary" for c in children)


def test_an_omitted_binary_shows_its_name_not_its_mime_type_or_size(host: PluginHost) -> None:
    """Non-text omissions render the canonical name (escaped) with the alias; MIME type,
    size and digest stay in the package only."""
    name = 'reports/<q3> "final".bin'
    package = _read(host, {name: BINARY})
    (omission,) = package.omissions
    assert omission.media_type is not None
    text = package.render()
    (node,) = [c for c in _children(package) if c.tag == "omitted"]
    assert node.get("name") == name
    assert node.get("media_type") is None
    assert node.get("size") is None
    assert omission.media_type not in text
    assert "&lt;q3&gt; &quot;final&quot;" in text
    assert omission.detail is not None
    assert "/" not in omission.detail  # no MIME type in the rendered detail either


def test_an_omitted_image_shows_its_name_only(host: PluginHost) -> None:
    """An image for a consumer without attachments: name and reason, no MIME type."""
    package = _read(host, {"shots/screen.png": png()})
    (node,) = [c for c in _children(package) if c.tag == "omitted"]
    assert node.get("name") == "shots/screen.png"
    assert "image/png" not in package.render()


def test_an_omitted_text_item_shows_name_and_size(host: PluginHost) -> None:
    """A text omission (over budget) keeps its size, which helps the model ask for it."""
    package = _read(
        host, {"a.txt": "a" * 50, "notes/b.md": "b" * 80}, budget=ContextBudget(max_chars=60)
    )
    (node,) = [c for c in _children(package) if c.tag == "omitted"]
    assert node.attrib["name"] == "notes/b.md"
    assert node.attrib["size"] == "80"
    assert "media_type" not in node.attrib


def test_an_attachment_shows_its_name_not_a_title_or_mime_type(host: PluginHost) -> None:
    """An attached image renders the ref's path as its name, and no MIME type."""
    ctx = TaskContext("task-r", host=host)
    ctx.attach(MemorySource({"shots/screen.png": png()}), binding_id="files")
    consumer = ContextConsumer(name="vision", capabilities={"attachments": {"image": True}})
    package = ctx.reader(consumer=consumer).read("")
    (attachment,) = package.attachments
    (node,) = [c for c in _children(package) if c.tag == "attachment"]
    assert node.attrib == {
        "ref": f"[[ref:{attachment.alias}]]",
        "name": "shots/screen.png",
        "width": str(attachment.width),
        "height": str(attachment.height),
    }


def test_every_view_states_its_quality_is_not_evaluated(host: PluginHost) -> None:
    """The last element before <more> is the kernel's fixed quality statement; the package
    says the same in quality_evaluated, which round-trips and cannot be set True."""
    package = _read(host, {"a.txt": "alpha"})
    children = _children(package)
    assert children[-1].tag == "quality"
    assert children[-1].attrib == {"evaluated": "false"}
    assert children[-1].text == QUALITY_TEXT
    assert package.quality_evaluated is False
    again = ContextPackage.model_validate_json(package.model_dump_json())
    assert again.quality_evaluated is False
    assert again == package
    data = package.model_dump(mode="json") | {"quality_evaluated": True}
    with pytest.raises(ValidationError):
        ContextPackage.model_validate(data)

"""Packages prepare images by the consumer's image policy: ordered segment attachments
under scoped refs, omissions for what cannot fit, max_images, and the view."""

from __future__ import annotations

import base64
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from taskctx_workspace import TaskWorkspace

from taskctx import (
    ContextBudget,
    ContextConsumer,
    ContextPackage,
    ContextReadIntent,
    ContextRef,
    OmissionReason,
    PluginHost,
    RequiredOverflowError,
    TaskContext,
)
from taskctx.errors import MediaError
from taskctx.imageprep import ImageInputPolicy
from taskctx.testing import MemorySource
from tests.core.imageprep_samples import animation, decoded, noise, row_of, rows, save

TALL = save(rows((200, 12000)), "PNG")


def vision(policy: Any = ..., **attachments: Any) -> ContextConsumer:
    """A consumer taking images, with ``image_policy`` = ``policy`` unless left out."""
    declared: dict[str, Any] = {"image": True, **attachments}
    if policy is not ...:
        declared["image_policy"] = policy
    return ContextConsumer("vision", capabilities={"attachments": declared})


@pytest.fixture
def host() -> PluginHost:
    """A host with the kernel built-ins only."""
    return PluginHost(allow=[])


def _read(
    host: PluginHost,
    items: dict[str, str | bytes],
    consumer: ContextConsumer,
    budget: ContextBudget | None = None,
) -> ContextPackage:
    ctx = TaskContext("images", host=host)
    ctx.attach(MemorySource(items), binding_id="files")
    return ctx.reader(consumer=consumer, budget=budget).read("")


def _view(package: ContextPackage) -> list[ET.Element]:
    return list(ET.fromstring(package.render()))


def test_a_tall_workspace_png_becomes_three_ordered_segments(tmp_path: Path) -> None:
    """200x12000 in a TaskWorkspace: 3 attachments in order, each under its own
    ``segment:i/3`` ref that its alias resolves to, with the original's size."""
    root = tmp_path / "ws"
    (root / "shots").mkdir(parents=True)
    (root / "shots" / "tall.png").write_bytes(TALL)
    ctx = TaskContext("t", host=PluginHost(allow=[]), state_dir=tmp_path / "state")
    ctx.attach(TaskWorkspace(root, host=ctx.host).source(), binding_id="files")
    intent = ContextReadIntent(explicit_refs=["ctx://files/shots/tall.png"])
    package = ctx.reader(consumer=vision()).read(intent)
    assert [a.ref for a in package.attachments] == [
        ContextRef(binding="files", path="shots/tall.png", scope=f"segment:{n}/3")
        for n in (1, 2, 3)
    ]
    for number, attachment in enumerate(package.attachments, start=1):
        assert package.resolve_alias(attachment.alias) == attachment.ref
        assert (attachment.segment, attachment.segments, attachment.prepared) == (number, 3, True)
        assert (attachment.original_width, attachment.original_height) == (200, 12000)
        assert attachment.original_bytes == len(TALL)
        assert attachment.media_type == "image/png"
        data = base64.b64decode(attachment.data_base64)
        assert attachment.bytes == len(data)
        with decoded(data) as image:
            assert image.size == (attachment.width, attachment.height)
            assert row_of(image.getpixel((0, 0))) == attachment.top
    spans = [(a.top, a.bottom) for a in package.attachments]
    assert spans == [(0, 4096), (4046, 8142), (8092, 12000)]
    coverage = package.source_coverage["files"]
    assert (coverage.considered, coverage.delivered, coverage.omitted) == (1, 1, 0)
    assert ContextPackage.model_validate_json(package.model_dump_json()) == package


def test_the_view_shows_each_segment_in_order_with_the_originals_size(
    host: PluginHost,
) -> None:
    """Every segment's element says which it is, the rows it covers and the original."""
    package = _read(host, {"tall.png": TALL}, vision())
    nodes = [node for node in _view(package) if node.tag == "attachment"]
    assert [node.attrib for node in nodes] == [
        {
            "ref": f"[[ref:{a.alias}]]",
            "name": "tall.png",
            "width": str(a.width),
            "height": str(a.height),
            "segment": str(a.segment),
            "segments": "3",
            "top": str(a.top),
            "bottom": str(a.bottom),
            "original_width": "200",
            "original_height": "12000",
            "prepared": "true",
        }
        for a in package.attachments
    ]


def test_a_downscaled_image_is_one_unscoped_attachment_marked_prepared(
    host: PluginHost,
) -> None:
    """An image over the side limit: one attachment under the item's ref, its original
    size on it and in the view."""
    data = save(noise((900, 300)), "PNG")
    policy = {"max_image_dimension": 300}
    package = _read(host, {"wide.png": data}, vision(policy))
    (attachment,) = package.attachments
    assert attachment.ref == ContextRef(binding="files", path="wide.png")
    assert (attachment.width, attachment.height, attachment.prepared) == (300, 100, True)
    assert (attachment.original_width, attachment.original_height) == (900, 300)
    assert attachment.segment is None
    assert attachment.top is None
    (node,) = [n for n in _view(package) if n.tag == "attachment"]
    assert node.get("original_width") == "900"
    assert node.get("prepared") == "true"


def test_an_image_within_the_limits_attaches_as_before(host: PluginHost) -> None:
    """Unchanged: the source's bytes under the item's ref, original_* set, view as ever."""
    data = save(noise((40, 30)), "PNG")
    package = _read(host, {"pic.png": data}, vision())
    (attachment,) = package.attachments
    assert base64.b64decode(attachment.data_base64) == data
    assert (attachment.ref.scope, attachment.prepared, attachment.segment) == (None, False, None)
    assert (attachment.original_width, attachment.original_height) == (40, 30)
    assert attachment.original_bytes == attachment.bytes == len(data)
    (node,) = [n for n in _view(package) if n.tag == "attachment"]
    assert set(node.attrib) == {"ref", "name", "width", "height"}


def test_an_image_over_the_limits_is_an_omission_not_a_failed_read(host: PluginHost) -> None:
    """No encoding fits 80 bytes: omitted image_over_limits with the reason; the text
    beside it is still delivered."""
    policy = {"max_image_bytes": 80}
    items: dict[str, str | bytes] = {"photo.png": save(noise((300, 200)), "PNG"), "a.txt": "a"}
    package = _read(host, items, vision(policy))
    assert package.attachments == ()
    assert [b.ref.path for b in package.blocks] == ["a.txt"]
    (omission,) = package.omissions
    assert (omission.ref.path, omission.reason) == ("photo.png", OmissionReason.IMAGE_OVER_LIMITS)
    assert omission.detail is not None
    assert "300x200 px" in omission.detail
    assert "80 bytes of base64" in omission.detail
    (node,) = [n for n in _view(package) if n.tag == "omitted"]
    assert node.get("reason") == "image_over_limits"
    assert package.source_coverage["files"].omitted == 1


def test_an_animation_over_the_limits_is_omitted(host: PluginHost) -> None:
    """An animated GIF over the side limit is never resized: image_over_limits."""
    policy = {"max_image_dimension": 100}
    package = _read(host, {"anim.gif": animation("GIF", (300, 20))}, vision(policy))
    (omission,) = package.omissions
    assert omission.reason is OmissionReason.IMAGE_OVER_LIMITS
    assert omission.detail is not None
    assert "animated" in omission.detail


def test_a_gif_under_support_gif_false_is_image_unsupported(host: PluginHost) -> None:
    """GIF off: a GIF is omitted image_unsupported; a PNG beside it attaches."""
    items: dict[str, str | bytes] = {
        "a.gif": animation("GIF"),
        "b.png": save(noise((8, 8)), "PNG"),
    }
    package = _read(host, items, vision({"support_gif": False}))
    assert [a.ref.path for a in package.attachments] == ["b.png"]
    (omission,) = package.omissions
    assert (omission.ref.path, omission.reason) == ("a.gif", OmissionReason.IMAGE_UNSUPPORTED)


@pytest.mark.parametrize("policy", [..., None, {"max_image_bytes": 0}], ids=["default", "off", "p"])
def test_a_corrupt_image_still_fails_the_read(host: PluginHost, policy: Any) -> None:
    """Whatever the policy, an image that does not decode fails with invalid_image."""
    broken = save(noise((40, 40)), "PNG")[:300]
    with pytest.raises(MediaError, match=re.escape("ctx://files/pic.png")) as caught:
        _read(host, {"pic.png": broken}, vision(policy))
    assert caught.value.code == "invalid_image"


def test_image_policy_none_attaches_images_as_they_are(host: PluginHost) -> None:
    """Preparation off: the tall PNG and an image over every default limit are each one
    attachment of the source's own bytes."""
    big = save(noise((1400, 1400)), "PNG")  # over 5 MiB of base64
    package = _read(host, {"tall.png": TALL, "big.png": big}, vision(None))
    by_path = {a.ref.path: a for a in package.attachments}
    assert set(by_path) == {"tall.png", "big.png"}
    assert base64.b64decode(by_path["tall.png"].data_base64) == TALL
    assert base64.b64decode(by_path["big.png"].data_base64) == big
    for attachment in package.attachments:
        assert (attachment.ref.scope, attachment.prepared, attachment.segments) == (
            None,
            False,
            None,
        )
    assert vision(None).image_policy() is None


def test_twenty_six_images_give_twenty_attachments_and_six_omissions(host: PluginHost) -> None:
    """The default max_images=20: the first 20 in delivery order attach, the rest are
    omitted over_image_count; coverage counts all 26."""
    items: dict[str, str | bytes] = {
        f"img{n:02d}.png": save(noise((6, 4), seed=n), "PNG") for n in range(26)
    }
    package = _read(host, items, vision())
    assert len(package.attachments) == 20
    assert [o.reason for o in package.omissions] == [OmissionReason.OVER_IMAGE_COUNT] * 6
    attached = {a.ref.path for a in package.attachments}
    assert attached.isdisjoint(o.ref.path for o in package.omissions)
    coverage = package.source_coverage["files"]
    assert (coverage.considered, coverage.delivered, coverage.omitted) == (26, 20, 6)


def test_max_images_counts_images_not_segments(host: PluginHost) -> None:
    """Under max_images=2 a tall image (3 segments) and one more image both attach."""
    items: dict[str, str | bytes] = {
        "a.png": TALL,
        "b.png": save(noise((6, 4)), "PNG"),
        "c.png": save(noise((6, 4), seed=9), "PNG"),
    }
    package = _read(host, items, vision({"max_images": 2}))
    assert len(package.attachments) == 4
    assert [o.reason for o in package.omissions] == [OmissionReason.OVER_IMAGE_COUNT]
    assert vision({"max_images": 0}).image_policy() == ImageInputPolicy(max_images=0)
    assert len(_read(host, items, vision({"max_images": 0})).attachments) == 5


def test_a_partial_policy_takes_the_defaults_for_the_rest(host: PluginHost) -> None:
    """``{"segment_height": 1000}``: 1000 px segments with the default 50 px overlap."""
    consumer = vision({"segment_height": 1000})
    assert consumer.image_policy() == ImageInputPolicy(segment_height=1000)
    package = _read(host, {"t.png": save(rows((200, 3000)), "PNG")}, consumer)
    spans = [(a.top, a.bottom) for a in package.attachments]
    assert spans == [(0, 1000), (950, 1950), (1900, 2900), (2850, 3000)]


def test_a_consumer_without_a_policy_gets_the_defaults() -> None:
    """No image_policy: every default; no image capability: no policy at all."""
    assert vision().image_policy() == ImageInputPolicy()
    assert ContextConsumer("plain").image_policy() is None


@pytest.mark.parametrize(
    ("policy", "named"),
    [
        ({"segment_height": 0}, "segment_height"),
        ({"segment_height": 100, "segment_overlap": 100}, "segment_overlap (100)"),
        ({"max_imgs": 3}, "max_imgs"),
        ({"tall_ratio": "tall"}, "tall_ratio"),
        (5, "must be a mapping of ImageInputPolicy fields or None"),
    ],
)
def test_an_invalid_policy_is_refused_when_the_consumer_is_made(policy: Any, named: str) -> None:
    """A bad image_policy raises at ContextConsumer construction, naming the field."""
    with pytest.raises(ValidationError, match="image_policy") as caught:
        vision(policy)
    assert named in str(caught.value)


def test_a_policy_given_as_a_model_is_kept_as_json() -> None:
    """An ImageInputPolicy instance is stored as its mapping, and round-trips."""
    consumer = vision(ImageInputPolicy(max_images=3))
    assert consumer.capabilities["attachments"]["image_policy"]["max_images"] == 3
    again = ContextConsumer.model_validate_json(consumer.model_dump_json())
    assert again == consumer
    assert again.image_policy() == ImageInputPolicy(max_images=3)


def test_segments_that_do_not_fit_the_blocks_left_open_the_next_page(host: PluginHost) -> None:
    """1 required block + 3 segments > max_blocks=3: the image is omitted
    over_block_budget and opens page 2, which holds all 3 segments."""
    ctx = TaskContext("images", host=host)
    ctx.put(role="instruction", content="Look at the screenshot.", required=True)
    ctx.attach(MemorySource({"tall.png": TALL}), binding_id="files")
    reader = ctx.reader(consumer=vision(), budget=ContextBudget(max_chars=1000, max_blocks=3))
    first = reader.read("")
    assert first.attachments == ()
    assert [o.reason for o in first.omissions] == [OmissionReason.OVER_BLOCK_BUDGET]
    assert first.has_more
    assert first.cursor is not None
    second = reader.read_next(first.cursor)
    assert [a.segment for a in second.attachments] == [1, 2, 3]


def test_segments_more_than_any_page_holds_are_omitted_once(host: PluginHost) -> None:
    """3 segments under max_blocks=2 fit no page: omitted over_block_budget, no next page."""
    budget = ContextBudget(max_chars=1000, max_blocks=2)
    package = _read(host, {"tall.png": TALL}, vision(), budget)
    (omission,) = package.omissions
    assert omission.reason is OmissionReason.OVER_BLOCK_BUDGET
    assert omission.detail == "its 3 segments need 3 of max_blocks=2"
    assert not package.has_more


def test_a_required_tall_image_over_max_blocks_fails_closed(host: PluginHost) -> None:
    """An explicit tall image whose segments exceed max_blocks: RequiredOverflowError."""
    ctx = TaskContext("images", host=host)
    ctx.attach(MemorySource({"tall.png": TALL}), binding_id="files")
    reader = ctx.reader(consumer=vision(), budget=ContextBudget(max_chars=1000, max_blocks=2))
    with pytest.raises(RequiredOverflowError, match="3 required blocks"):
        reader.read(ContextReadIntent(explicit_refs=["ctx://files/tall.png"]))


def test_an_image_both_explicit_and_ranked_attaches_once(host: PluginHost) -> None:
    """The explicit tall image is not delivered again when it also ranks."""
    ctx = TaskContext("images", host=host)
    ctx.attach(MemorySource({"tall.png": TALL}), binding_id="files")
    intent = ContextReadIntent(query="tall", explicit_refs=["ctx://files/tall.png"])
    package = ctx.reader(consumer=vision()).read(intent)
    assert [a.segment for a in package.attachments] == [1, 2, 3]


def test_a_segment_ref_asked_for_is_an_unsupported_scope(host: PluginHost) -> None:
    """A segment's ref resolves in its package; read back as an explicit ref, no reader
    serves its scope: omitted unsupported_scope with an error diagnostic."""
    ctx = TaskContext("images", host=host)
    ctx.attach(MemorySource({"tall.png": TALL}), binding_id="files")
    first = ctx.reader(consumer=vision()).read("")
    segment = first.resolve_alias(first.attachments[1].alias)
    assert segment.scope == "segment:2/3"
    intent = ContextReadIntent(explicit_refs=[segment], optional_selection="none")
    again = ctx.reader(consumer=vision()).read(intent)
    assert again.attachments == ()
    (omission,) = again.omissions
    assert (omission.ref, omission.reason) == (segment, OmissionReason.UNSUPPORTED_SCOPE)
    assert [d.code for d in again.diagnostics] == ["unsupported_scope"]

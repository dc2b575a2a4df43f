"""One image validation for every source: hostile images never become attachments.

Each case puts the same bytes behind a direct entry, a task workspace, a record store,
a pinned git repository, a skill library and a minimal third-party source, then reads
them for a consumer that takes images. The kernel validates every attachment itself,
so the outcome does not depend on which source the bytes came from.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import attrs
import pytest
from taskctx_records import RecordStore
from taskctx_repo import PinnedRepository
from taskctx_skills import SkillLibrary
from taskctx_workspace import TaskWorkspace

from taskctx import (
    ContextConsumer,
    ContextPackage,
    ContextReadIntent,
    ContextRef,
    MediaError,
    OmissionReason,
    PluginHost,
    TaskContext,
)
from taskctx.model import (
    DescriptorPage,
    EnumerationRequest,
    ExactRead,
    Representation,
    SourceDescriptor,
)
from taskctx.testing import make_png
from tests.core import image_samples as samples
from tests.plugins.repo.conftest import make_repo
from tests.plugins.skills.conftest import write_skill

VISION = ContextConsumer(name="vision", capabilities={"attachments": {"image": True}})
SUFFIXES = {b"\x89PNG": "png", b"\xff\xd8\xff": "jpg", b"GIF8": "gif", b"RIFF": "webp"}


class PictureSource:
    """A minimal third-party source of named images, typed as it declares them."""

    kind = "picture_frame"

    def __init__(self, items: dict[str, tuple[bytes, str, str]]) -> None:
        """``items``: path -> (bytes, descriptor media type, read media type)."""
        self.items = items

    async def async_revision(self) -> str:
        """One fixed revision."""
        return "r1"

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        """Every picture, reference only."""
        descriptors = tuple(
            SourceDescriptor(
                path=path,
                media_type=declared,
                size=len(data),
                content_version="sha256:" + hashlib.sha256(data).hexdigest(),
                representation=Representation.REFERENCE_ONLY,
            )
            for path, (data, declared, _) in sorted(self.items.items())
        )
        return DescriptorPage(descriptors=descriptors, revision="r1")

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        """The picture's bytes, with the media type the read declares."""
        data, _, said = self.items[ref.path]
        return ExactRead.from_bytes(
            ref.path,
            data,
            media_type=said,
            content_version="sha256:" + hashlib.sha256(data).hexdigest(),
        )


@attrs.define
class Placed:
    """A TaskContext holding one image, and the canonical ref of that image."""

    context: TaskContext
    ref: str


Place = Callable[[str, bytes], Placed]


def _suffix(data: bytes) -> str:
    return next((s for magic, s in SUFFIXES.items() if data.startswith(magic)), "bin")


@attrs.define
class Places:
    """Puts bytes behind each source kind in its own folder."""

    tmp_path: Path
    stack: ExitStack
    count: int = 0

    def context(self, allow: list[str]) -> TaskContext:
        self.count += 1
        return TaskContext(
            "images",
            host=PluginHost(allow=allow),
            state_dir=self.tmp_path / f"state-{self.count}",
        )

    def folder(self, name: str) -> Path:
        path = self.tmp_path / f"{name}-{self.count}"
        path.mkdir(parents=True)
        return path

    def direct(self, name: str, data: bytes) -> Placed:
        ctx = self.context([])
        return Placed(ctx, str(ctx.put(role="information", content=data, title=name)))

    def task_workspace(self, name: str, data: bytes) -> Placed:
        ctx = self.context(["taskctx-workspace"])
        root = self.folder("ws")
        (root / name).write_bytes(data)
        ctx.attach(TaskWorkspace(root, host=ctx.host).source(), binding_id="files")
        return Placed(ctx, f"ctx://files/{name}")

    def record_store(self, name: str, data: bytes) -> Placed:
        ctx = self.context(["taskctx-records"])
        store = RecordStore(self.folder("records"), host=ctx.host)
        record = store.put(data, collection="screenshots", scope={"task_id": "images"})
        ctx.attach(store.source(scope={"task_id": "images"}), binding_id="records")
        return Placed(ctx, f"ctx://records/{record.id}")

    def pinned_repository(self, name: str, data: bytes) -> Placed:
        ctx = self.context(["taskctx-repo"])
        path = self.folder("repo")
        make_repo(path, {name: data, "README.md": "# Pictures\n"})
        repository = self.stack.enter_context(PinnedRepository(path, "HEAD", host=ctx.host))
        ctx.attach(repository.source(), binding_id="repo")
        return Placed(ctx, f"ctx://repo/{name}")

    def skill_library(self, name: str, data: bytes) -> Placed:
        ctx = self.context(["taskctx-skills"])
        root = self.folder("skills")
        write_skill(root, "draw", "Draw a diagram.", files={f"assets/{name}": data})
        ctx.attach(SkillLibrary(root, trusted=["draw"]).source(optional=["draw"]), "skills")
        return Placed(ctx, f"ctx://skills/draw/assets/{name}")

    def third_party(self, name: str, data: bytes, declared: str | None = None) -> Placed:
        ctx = self.context([])
        media_type = declared or f"image/{_suffix(data).replace('jpg', 'jpeg')}"
        ctx.attach(PictureSource({name: (data, media_type, media_type)}), binding_id="pictures")
        return Placed(ctx, f"ctx://pictures/{name}")


SOURCES = [
    "direct",
    "task_workspace",
    "record_store",
    "pinned_repository",
    "skill_library",
    "third_party",
]


@pytest.fixture
def places(tmp_path: Path) -> Iterator[Places]:
    """Placers for every source kind; repositories closed at teardown."""
    with ExitStack() as stack:
        yield Places(tmp_path, stack)


def place(places: Places, kind: str, data: bytes, name: str | None = None) -> Placed:
    """``data`` behind a source of ``kind`` under ``name`` (default: by its real format)."""
    placer: Callable[[str, bytes], Placed] = getattr(places, kind)
    return placer(name or f"pic.{_suffix(data)}", data)


def read_ref(placed: Placed, consumer: ContextConsumer | str = VISION) -> ContextPackage:
    """Read exactly the placed image (as a required, explicit ref)."""
    intent = ContextReadIntent(explicit_refs=[placed.ref], optional_selection="none")
    return placed.context.reader(consumer=consumer).read(intent)


def _jpeg() -> bytes:
    return samples.encoded("JPEG", (64, 64))


HOSTILE: dict[str, Callable[[], bytes]] = {
    "png-bomb": samples.png_bomb,
    "png-just-over-the-limit": lambda: samples.png_1bit(5000, 5001),
    "jpeg-truncated": lambda: _jpeg()[: len(_jpeg()) * 2 // 3],
    "png-garbage": lambda: b"\x89PNG\r\n\x1a\ngarbage" * 3,
    "png-corrupt-idat": lambda: make_png(4, 4, idat=b"not zlib data at all"),
    "gif-bomb": samples.gif_bomb,
    "gif-frame-outside": samples.gif_frame_outside,
    "webp-lying-canvas": samples.webp_lying_canvas,
    "webp-lying-bitstream": samples.webp_bitstream_bigger,
    "jpeg-scan-bomb": lambda: samples.jpeg_scan_bomb(1000),
}


@pytest.mark.parametrize("hostile", sorted(HOSTILE))
@pytest.mark.parametrize("kind", SOURCES)
def test_hostile_images_fail_the_read_through_every_source(
    places: Places, kind: str, hostile: str
) -> None:
    """A bomb, a truncated, garbage or lying image fails the read: never an attachment."""
    placed = place(places, kind, HOSTILE[hostile]())
    with pytest.raises(MediaError) as caught:
        read_ref(placed)
    assert caught.value.code == "invalid_image"
    assert placed.ref in str(caught.value)


@pytest.mark.parametrize("kind", SOURCES)
def test_hostile_images_in_ranked_candidates_fail_the_read_too(places: Places, kind: str) -> None:
    """An optional (not explicitly requested) image is validated the same way."""
    placed = place(places, kind, samples.png_bomb())
    reader = placed.context.reader(consumer=VISION)
    with pytest.raises(MediaError, match="over the limit") as caught:
        reader.read(ContextReadIntent())
    assert caught.value.code == "invalid_image"


@pytest.mark.parametrize("kind", SOURCES)
def test_a_text_only_consumer_never_touches_the_image(places: Places, kind: str) -> None:
    """For a consumer without image capability a bomb is only a reference_only omission."""
    placed = place(places, kind, samples.png_bomb())
    package = read_ref(placed, consumer="planner")
    assert not package.attachments
    (omission,) = (o for o in package.omissions if str(o.ref) == placed.ref)
    assert omission.reason is OmissionReason.REFERENCE_ONLY


@pytest.mark.parametrize(
    ("fmt", "size", "media_type"),
    [
        ("PNG", (7, 5), "image/png"),
        ("JPEG", (9, 4), "image/jpeg"),
        ("GIF", (3, 8), "image/gif"),
        ("WEBP", (6, 6), "image/webp"),
    ],
)
@pytest.mark.parametrize("kind", SOURCES)
def test_valid_images_attach_through_every_source(
    places: Places, kind: str, fmt: str, size: tuple[int, int], media_type: str
) -> None:
    """A small valid image is an Attachment with its real type, size and exact bytes."""
    data = samples.encoded(fmt, size)
    placed = place(places, kind, data)
    (attachment,) = read_ref(placed).attachments
    assert (attachment.media_type, attachment.width, attachment.height) == (media_type, *size)
    assert base64.b64decode(attachment.data_base64) == data
    assert attachment.bytes == len(data)
    assert str(attachment.ref) == placed.ref


MISLABELLED_OUTCOME = {
    # the bytes decide the type where the source classifies by them ...
    "task_workspace": "image/jpeg",
    "record_store": "image/jpeg",
    "pinned_repository": "image/jpeg",
    # ... a source that declares image/png for JPEG bytes is refused
    "skill_library": None,
    "third_party": None,
}


@pytest.mark.parametrize("kind", sorted(MISLABELLED_OUTCOME))
def test_a_jpeg_called_png_never_attaches_as_png(places: Places, kind: str) -> None:
    """photo.png holding a JPEG: attached as image/jpeg, or refused if declared image/png."""
    placer: Callable[..., Placed] = getattr(places, kind)
    placed = (
        places.third_party("photo.png", _jpeg(), declared="image/png")
        if kind == "third_party"
        else placer("photo.png", _jpeg())
    )
    expected = MISLABELLED_OUTCOME[kind]
    if expected is None:
        with pytest.raises(
            MediaError, match="declares image/png but the bytes are image/jpeg"
        ) as caught:
            read_ref(placed)
        assert caught.value.code == "invalid_image"
    else:
        (attachment,) = read_ref(placed).attachments
        assert attachment.media_type == expected


def test_a_direct_entry_declared_png_holding_a_jpeg_is_refused_at_put(places: Places) -> None:
    """ctx.put(media_type="image/png") with JPEG (or garbage) bytes raises invalid_image."""
    ctx = places.context([])
    for data in (_jpeg(), b"\x89PNG\r\n\x1a\ngarbage", samples.encoded("GIF")):
        with pytest.raises(MediaError, match=r"image/png|IHDR") as caught:
            ctx.put(role="information", content=data, media_type="image/png")
        assert caught.value.code == "invalid_image"
    assert ctx.entries == {}
    ctx.put(role="information", content=samples.encoded("PNG"), media_type="image/png")


def test_a_source_whose_read_contradicts_its_descriptor_is_refused(places: Places) -> None:
    """Descriptor image/jpeg, read image/png, bytes JPEG: the read fails, nothing attaches."""
    ctx = places.context([])
    ctx.attach(PictureSource({"a.jpg": (_jpeg(), "image/jpeg", "image/png")}), "pictures")
    placed = Placed(ctx, "ctx://pictures/a.jpg")
    with pytest.raises(
        MediaError, match="declares image/png but the bytes are image/jpeg"
    ) as caught:
        read_ref(placed)
    assert caught.value.code == "invalid_image"


def test_an_empty_image_fails_the_read(places: Places) -> None:
    """A source that declares an image and returns no bytes fails the read."""
    ctx = places.context([])
    ctx.attach(PictureSource({"a.png": (b"", "image/png", "image/png")}), "pictures")
    with pytest.raises(MediaError, match="empty image data"):
        read_ref(Placed(ctx, "ctx://pictures/a.png"))


def test_a_generic_binary_declaration_defers_to_the_bytes(places: Places) -> None:
    """A source typing pic.png as application/octet-stream attaches it by its real type."""
    ctx = places.context([])
    data = samples.encoded("PNG", (3, 2))
    ctx.attach(
        PictureSource({"pic.png": (data, "application/octet-stream", "application/octet-stream")}),
        "pictures",
    )
    (attachment,) = read_ref(Placed(ctx, "ctx://pictures/pic.png")).attachments
    assert (attachment.media_type, attachment.width, attachment.height) == ("image/png", 3, 2)

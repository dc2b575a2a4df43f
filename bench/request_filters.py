"""Image preparation throughput and the request pipeline's overhead (issue 21).

Images are made here, as real encoded files: "photos" (smooth gradients under per-pixel
noise, saved as JPEG at quality 92 with a phone photo's density: 12 MP, and a 24 MP
panorama over the 8,000 px side limit) and "tall screenshots" (1,280 x 19,000 px PNGs
of text-like rows, just under the 25-megapixel validation limit, which become
segments). Each kind is made and prepared without a cache, in rounds, in a process of
its own (spawned) whose peak RSS is reset once the images are made (the RSS then is
reported beside it); images/s is of the median round.

The pipeline is timed on a 500-turn history (tool calls, string results, user text and
20 screenshots among them): one request built with the default filters, cold, then
warm (the images' preparations cached), beside the floor of deriving the request with
no filter but message integrity. The overhead is the warm build minus the floor.
"""

from __future__ import annotations

import gc
import multiprocessing
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from io import BytesIO
from typing import Any

from PIL import Image, ImageDraw

from bench.common import peak_rss_bytes, reset_peak_rss, result_header, rss_bytes, summarize
from taskctx import PluginHost
from taskctx.imageprep import ImageInputPolicy, prepare_image

__all__ = ["DESCRIPTION", "NAME", "run", "summary_lines"]

NAME = "request_filters"
DESCRIPTION = (
    "image preparation images/s and peak RSS on photos and tall screenshots; the request "
    "pipeline's overhead on a 500-turn history"
)
NOTES = (
    "images are made in the bench: JPEG photos of a phone photo's density, PNG screenshots",
    "each image kind is made and prepared in its own spawned process, without a cache; its "
    "peak RSS is reset once the images are made",
    "pipeline overhead = warm build with the default filters minus integrity-only build",
    "the history's images are one screenshot's bytes: the cold build prepares it once",
)

FULL = {"rounds": 3, "photos": 4, "screenshots": 2, "turns": 500, "history_images": 20}
QUICK = {"rounds": 2, "photos": 1, "screenshots": 1, "turns": 60, "history_images": 4}
KINDS = {
    "photo_12mp": (4032, 3024, "photo"),
    "photo_24mp_over_side": (8400, 2900, "photo"),
    "screenshot_1280x19000": (1280, 19000, "screenshot"),
}
QUICK_KINDS = {
    "photo_12mp": (1600, 1200, "photo"),
    "photo_24mp_over_side": (9000, 600, "photo"),
    "screenshot_1280x19000": (640, 9000, "screenshot"),
}


def make_photo(width: int, height: int, seed: int) -> bytes:
    """A JPEG with a phone photo's density (about 0.3 bytes a pixel at quality 92): smooth
    gradients in each channel under per-pixel noise."""
    gradient = Image.linear_gradient("L").resize((width, height))
    noise = Image.effect_noise((width, height), 30 + seed)
    red = Image.blend(gradient, noise, 0.4)
    green = gradient.rotate(90).resize((width, height))
    blue = Image.blend(gradient.transpose(Image.Transpose.FLIP_LEFT_RIGHT), noise, 0.4)
    out = BytesIO()
    Image.merge("RGB", (red, green, blue)).save(out, format="JPEG", quality=92)
    return out.getvalue()


def make_screenshot(width: int, height: int, seed: int) -> bytes:
    """A PNG of text-like rows on white, the shape of a long page's screenshot."""
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    for row, y in enumerate(range(8, height - 20, 22)):
        words = f"row {row} of the page seed {seed}: the upload service timed out " * 3
        draw.text((12, y), words[: (width - 24) // 6], fill=(30, 30, 30))
    out = BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _make(kind: tuple[int, int, str], how_many: int) -> list[bytes]:
    width, height, shape = kind
    maker = make_photo if shape == "photo" else make_screenshot
    return [maker(width, height, seed) for seed in range(how_many)]


def _prepare_kind(kind: tuple[int, int, str], how_many: int, rounds: int) -> dict[str, Any]:
    """In a fresh process (spawned): make the images, then prepare them in rounds; the
    peak RSS is of the preparation (reset once the images are made)."""
    images = _make(kind, how_many)
    policy = ImageInputPolicy()
    gc.collect()
    reset = reset_peak_rss()
    before = rss_bytes()
    per_round: list[float] = []
    segments = changed = 0
    for _ in range(rounds):
        start = time.perf_counter()
        for data in images:
            prepared = prepare_image(data, policy)
            segments, changed = len(prepared.segments), int(prepared.changed)
        per_round.append(time.perf_counter() - start)
    median = statistics.median(per_round)
    return {
        "images": len(images),
        "input_mb": round(sum(map(len, images)) / 1e6, 2),
        "segments_each": segments,
        "changed": bool(changed),
        "timing": summarize(per_round),
        "images_per_s": len(images) / median,
        "peak_rss_bytes": peak_rss_bytes(),
        "rss_before_bytes": before,
        "peak_rss_reset": reset,
    }


def _prepare_apart(
    kinds: dict[str, tuple[int, int, str]], params: dict[str, int]
) -> dict[str, dict[str, Any]]:
    """Each kind in its own spawned process, one after the other, so peaks do not mix."""
    context = multiprocessing.get_context("spawn")
    out: dict[str, dict[str, Any]] = {}
    for name, kind in kinds.items():
        how_many = params["photos"] if kind[2] == "photo" else params["screenshots"]
        with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
            out[name] = pool.submit(_prepare_kind, kind, how_many, params["rounds"]).result()
    return out


def _history(turns: int, images: int, screenshot: bytes) -> Any:
    """A run of ``turns`` turns: user text, tool calls, long string results, screenshots."""
    from datetime import datetime, timedelta, timezone

    from taskctx_conversation.history import MessageHistory, Turn
    from taskctx_conversation.parts import ImagePart, TextPart, ToolCallPart, ToolResultPart

    start = datetime(2026, 12, 1, tzinfo=timezone.utc)
    made: list[Turn] = [Turn.text("user", "Review the upload service and fix the timeout.")]
    every = max(1, (turns // 3) // max(images, 1))
    n = 0
    while len(made) < turns:
        shot = (
            (ImagePart(data=screenshot, media_type="image/png"),)
            if n % every == 0 and n // every < images
            else ()
        )
        made.append(
            Turn(
                role="assistant",
                parts=(
                    TextPart(text=f"step {n}"),
                    ToolCallPart(call_id=f"c{n}", name="run", arguments={"n": n}),
                ),
                at=start + timedelta(seconds=10 * n),
            )
        )
        made.append(
            Turn(
                role="tool",
                parts=(ToolResultPart(call_id=f"c{n}", content="log line\n" * 200, images=shot),),
            )
        )
        made.append(Turn.text("user", f"keep going ({n})"))
        n += 1
    return MessageHistory(turns=tuple(made[:turns]))


def _pipeline(turns: int, images: int, rounds: int, screenshot: bytes) -> dict[str, Any]:
    from taskctx_conversation.images import ImageInputFilter, PreparedImageCache
    from taskctx_conversation.pipeline import RequestPipeline

    history = _history(turns, images, screenshot)
    host = PluginHost(allow=["taskctx-conversation"])
    floor = RequestPipeline(host=PluginHost(allow=[]))
    cold_s: list[float] = []
    warm_s: list[float] = []
    floor_s: list[float] = []
    request = None
    for _ in range(rounds):
        pipeline = RequestPipeline(
            host=host, filters=[ImageInputFilter(cache=PreparedImageCache())]
        )
        start = time.perf_counter()
        request = pipeline.build(history)
        cold_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        pipeline.build(history)
        warm_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        floor.build(history)
        floor_s.append(time.perf_counter() - start)
    assert request is not None
    warm, base = statistics.median(warm_s), statistics.median(floor_s)
    return {
        "turns": len(history),
        "images_in_history": images,
        "filters": [f.name for f in pipeline.active_filters],
        "cold": summarize(cold_s),
        "warm": summarize(warm_s),
        "integrity_only": summarize(floor_s),
        "overhead_warm_ms": (warm - base) * 1e3,
        "warm_over_floor": warm / base if base else None,
        "changes_in_request": len(request.changes),
    }


def run(quick: bool) -> dict[str, Any]:
    """The benchmark entry point of ``python -m bench``."""
    params = QUICK if quick else FULL
    kinds = QUICK_KINDS if quick else KINDS
    prepared = _prepare_apart(kinds, params)
    shot = _make(kinds["screenshot_1280x19000"], 1)[0]
    pipeline = _pipeline(params["turns"], params["history_images"], params["rounds"], shot)
    return {
        **result_header(NAME, quick=quick, params={**params, "kinds": kinds}, notes=NOTES),
        "images": prepared,
        "pipeline": pipeline,
        "process_peak_rss_bytes": peak_rss_bytes(),
        "targets": {"met": None, "applies": False},
        "checks": {
            "screenshots_split": prepared["screenshot_1280x19000"]["segments_each"] > 1,
            "over_side_photo_resized": prepared["photo_24mp_over_side"]["changed"],
            "history_images_prepared": pipeline["changes_in_request"] > 0,
        },
    }


def summary_lines(result: dict[str, Any]) -> list[str]:
    """Per image kind: images/s and peak RSS; then the pipeline's build times."""
    lines = [
        f"{'image kind':<24} {'images/s':>9} {'segments':>9} {'peak RSS MB':>12} {'before':>7}"
    ]
    for kind, facts in result["images"].items():
        before = facts.get("rss_before_bytes")
        lines.append(
            f"{kind:<24} {facts['images_per_s']:>9.2f} {facts['segments_each']:>9}"
            f" {facts['peak_rss_bytes'] / 1e6:>12.0f}"
            f" {before / 1e6 if before else float('nan'):>7.0f}"
        )
    p = result["pipeline"]
    lines.append(
        f"pipeline on {p['turns']} turns with {p['images_in_history']} images: cold "
        f"{p['cold']['median_s'] * 1e3:.0f} ms, warm {p['warm']['median_s'] * 1e3:.1f} ms, "
        f"integrity only {p['integrity_only']['median_s'] * 1e3:.1f} ms "
        f"(overhead {p['overhead_warm_ms']:.1f} ms)"
    )
    return lines

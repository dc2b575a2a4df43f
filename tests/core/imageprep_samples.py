"""Real images for the image-preparation tests, made by Pillow (deterministic)."""

from __future__ import annotations

import io
import random

from PIL import Image


def save(image: Image.Image, fmt: str, **options: object) -> bytes:
    """``image`` encoded as ``fmt``."""
    out = io.BytesIO()
    image.save(out, format=fmt, **options)
    return out.getvalue()


def noise(size: tuple[int, int], mode: str = "RGB", seed: int = 3) -> Image.Image:
    """A photo-like image that does not compress: every byte random (seeded)."""
    bands = len(mode)
    data = random.Random(seed).randbytes(size[0] * size[1] * bands)
    return Image.frombytes(mode, size, data)


def rows(size: tuple[int, int]) -> Image.Image:
    """A tall-screenshot stand-in whose every row has its own colour (row y is
    ``(y % 256, y // 256, 90)``), so a segment shows which rows it holds."""
    width, height = size
    data = b"".join(bytes((y % 256, y // 256, 90)) * width for y in range(height))
    return Image.frombytes("RGB", size, data)


def row_of(pixel: tuple[int, ...]) -> int:
    """The original row a pixel of :func:`rows` came from."""
    return pixel[0] + 256 * pixel[1]


def halves(size: tuple[int, int] = (40, 20)) -> Image.Image:
    """Left half red, right half blue: shows which way an orientation turned it."""
    image = Image.new("RGB", size, (0, 0, 255))
    image.paste((255, 0, 0), (0, 0, size[0] // 2, size[1]))
    return image


def oriented_jpeg(orientation: int, size: tuple[int, int] = (40, 20)) -> bytes:
    """A JPEG of :func:`halves` whose EXIF says ``orientation``."""
    exif = Image.Exif()
    exif[0x0112] = orientation
    return save(halves(size), "JPEG", quality=95, exif=exif.tobytes())


def animation(fmt: str, size: tuple[int, int] = (8, 6), frames: int = 3) -> bytes:
    """An animated GIF, APNG or WebP of ``frames`` different frames."""
    images = [Image.new("RGB", size, (n * 70 % 256, 40, 90)) for n in range(frames)]
    out = io.BytesIO()
    images[0].save(out, format=fmt, save_all=True, append_images=images[1:], duration=50)
    return out.getvalue()


def translucent(size: tuple[int, int]) -> Image.Image:
    """Noise with a half-transparent alpha channel."""
    image = noise(size, "RGBA")
    image.putalpha(128)
    return image


def decoded(data: bytes) -> Image.Image:
    """``data`` decoded (loaded, so the buffer may go)."""
    image = Image.open(io.BytesIO(data))
    image.load()
    return image

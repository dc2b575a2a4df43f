"""Real and hostile images for the image-validation tests.

Valid images are made by Pillow; hostile ones are built by hand with struct and zlib
(or cut out of valid ones), so each attacks exactly one thing.
"""

from __future__ import annotations

import io
import re
import struct
import zlib
from collections.abc import Callable

from PIL import Image

from taskctx.testing import make_png


def png_chunk(kind: bytes, body: bytes) -> bytes:
    """One PNG chunk with its CRC."""
    crc = zlib.crc32(kind + body) & 0xFFFFFFFF
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)


def encoded(fmt: str, size: tuple[int, int] = (5, 4), **options: object) -> bytes:
    """A real image of ``fmt`` made by Pillow: a fixed busy pattern, the same every call."""
    pixels = bytes((n * 37 + n // 7) % 256 for n in range(size[0] * size[1] * 3))
    image = Image.frombytes("RGB", size, pixels)
    out = io.BytesIO()
    image.save(out, format=fmt, **options)
    return out.getvalue()


def animated(fmt: str, frames: int, size: tuple[int, int] = (8, 6)) -> bytes:
    """A real animated GIF, PNG (APNG) or WebP of ``frames`` different frames."""
    images = [Image.new("RGB", size, (n * 7 % 256, 40, 90)) for n in range(frames)]
    out = io.BytesIO()
    images[0].save(out, format=fmt, save_all=True, append_images=images[1:], duration=50)
    return out.getvalue()


# --- PNG ---------------------------------------------------------------------------------


def png_bomb(side: int = 100_000) -> bytes:
    """A PNG declaring side x side pixels with a few bytes of pixel data (74 bytes)."""
    return make_png(side, side, idat=zlib.compress(b"\x00" * 16))


def png_1bit(width: int, height: int) -> bytes:
    """A complete, valid 1-bit greyscale PNG of any size (its zeros compress to little)."""
    row = b"\x00" * (1 + (width + 7) // 8)
    packer = zlib.compressobj(9)
    idat = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + png_chunk(b"IHDR", header)
        + png_chunk(b"IDAT", idat)
        + png_chunk(b"IEND", b"")
    )


def png_with_chunks(chunks: list[bytes], width: int = 2, height: int = 2) -> bytes:
    """A valid 2x2 PNG with ``chunks`` inserted before its IEND."""
    data = make_png(width, height)
    return data[:-12] + b"".join(chunks) + data[-12:]


def apng_declaring(
    frames: int, controls: list[tuple[int, int, int, int]], size: tuple[int, int] = (4, 4)
) -> bytes:
    """A PNG of ``size`` with an acTL of ``frames`` and one fcTL per (w, h, x, y).

    Beyond 4x4 its pixel data is empty: only the structure is meant to be checked.
    """
    actl = png_chunk(b"acTL", struct.pack(">II", frames, 0))
    fctls = [
        png_chunk(b"fcTL", struct.pack(">IIIIIHHBB", n, w, h, x, y, 1, 10, 0, 0))
        for n, (w, h, x, y) in enumerate(controls)
    ]
    data = make_png(*size) if size == (4, 4) else make_png(*size, idat=zlib.compress(b""))
    ihdr_end = 8 + 25
    return data[:ihdr_end] + actl + b"".join(fctls) + data[ihdr_end:]


# --- JPEG --------------------------------------------------------------------------------


def jpeg_scan_bomb(scans: int, side: int = 64) -> bytes:
    """A progressive JPEG whose last scan is repeated until it has ``scans`` scans."""
    out = io.BytesIO()
    Image.new("RGB", (side, side), (10, 20, 30)).save(out, format="JPEG", progressive=True)
    data = out.getvalue()
    starts = [m.start() for m in re.finditer(b"\xff\xda", data)]
    end = data.rindex(b"\xff\xd9")
    last = data[starts[-1] : end]
    return data[:end] + last * (scans - len(starts)) + b"\xff\xd9"


def jpeg_two_frames() -> bytes:
    """A JPEG with a second frame header (SOF) after its first scan."""
    data = encoded("JPEG", (8, 8))
    sof = data.index(b"\xff\xc0")
    length = struct.unpack(">H", data[sof + 2 : sof + 4])[0]
    end = data.rindex(b"\xff\xd9")
    return data[:end] + data[sof : sof + 2 + length] + data[end:]


# --- GIF ---------------------------------------------------------------------------------


def gif(
    screen: tuple[int, int], frames: list[tuple[int, int, int, int]], trailer: bool = True
) -> bytes:
    """A GIF89a: logical screen ``screen``, one 1x1 frame of LZW data per (x, y, w, h)."""
    head = b"GIF89a" + struct.pack("<HHBBB", screen[0], screen[1], 0x80, 0, 0) + b"\x00" * 6
    body = b""
    for x, y, w, h in frames:
        body += b"\x2c" + struct.pack("<HHHHB", x, y, w, h, 0) + b"\x02\x02\x44\x01\x00"
    return head + body + (b"\x3b" if trailer else b"")


def gif_bomb() -> bytes:
    """A GIF whose logical screen is 65535x65535 and whose one frame is 1x1."""
    return gif((65535, 65535), [(0, 0, 1, 1)])


def gif_frame_outside() -> bytes:
    """A 1x1 logical screen holding a 16000x16000 frame (Pillow would grow the canvas)."""
    return gif((1, 1), [(0, 0, 16000, 16000)])


# --- WebP --------------------------------------------------------------------------------


def riff(chunks: bytes, declared: int | None = None) -> bytes:
    """A RIFF/WEBP container of ``chunks`` (``declared`` overrides the RIFF size)."""
    payload = b"WEBP" + chunks
    return b"RIFF" + struct.pack("<I", len(payload) if declared is None else declared) + payload


def webp_chunk(fourcc: bytes, body: bytes) -> bytes:
    """One RIFF chunk, padded to an even size."""
    return fourcc + struct.pack("<I", len(body)) + body + (b"\x00" if len(body) & 1 else b"")


def vp8x(width: int, height: int, flags: int = 0) -> bytes:
    """A VP8X chunk declaring a ``width`` x ``height`` canvas."""
    body = bytes([flags, 0, 0, 0]) + (width - 1).to_bytes(3, "little")
    return webp_chunk(b"VP8X", body + (height - 1).to_bytes(3, "little"))


def webp_bitstream(size: tuple[int, int] = (4, 3)) -> bytes:
    """The VP8L chunk of a real lossless WebP of ``size``."""
    data = encoded("WEBP", size, lossless=True)
    assert data[12:16] == b"VP8L"
    return data[12:]


def webp_lying_canvas() -> bytes:
    """A VP8X canvas of 16383x16383 around a 4x3 bitstream."""
    return riff(vp8x(16383, 16383) + webp_bitstream())


def webp_bitstream_bigger() -> bytes:
    """A VP8X canvas of 4x3 around a 300x200 bitstream."""
    return riff(vp8x(4, 3) + webp_bitstream((300, 200)))


def webp_riff_too_long() -> bytes:
    """A real WebP whose RIFF header declares more bytes than the file has."""
    data = encoded("WEBP", (6, 6))
    return data[:4] + struct.pack("<I", len(data) * 4) + data[8:]


def webp_frame_outside() -> bytes:
    """An animated 4x3 WebP canvas with a 300x200 frame."""
    stream = webp_bitstream((300, 200))
    frame = (0).to_bytes(6, "little") + (299).to_bytes(3, "little") + (199).to_bytes(3, "little")
    anmf = webp_chunk(b"ANMF", frame + b"\x00\x00\x00\x00" + stream)
    anim = webp_chunk(b"ANIM", b"\x00" * 6)
    return riff(vp8x(4, 3, flags=0x02) + anim + anmf)


Builder = Callable[[], bytes]

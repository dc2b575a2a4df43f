"""The raster formats an attachment may have: header sizes and structure walks.

Nothing here decompresses a pixel. A header parser reads the declared size from the
first bytes; a structure walk reads every chunk, segment or block of the whole file
(checksums, frame extents, the end marker) and counts the frames and JPEG scans, so the
cost of a decode is known before anything is decoded. Each raises ``MediaError`` with
code ``invalid_image`` naming what is wrong. :mod:`taskctx.images` is the public side.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Callable
from typing import NamedTuple

from taskctx.codes import ProblemCode
from taskctx.errors import MediaError

__all__ = ["HEADER_PARSERS", "STRUCTURE_WALKS", "Structure", "invalid"]


class Structure(NamedTuple):
    """What a structure walk found: frames to decode, JPEG scans, chunks walked."""

    frames: int
    scans: int
    chunks: int


def invalid(message: str) -> MediaError:
    """The one error of image validation."""
    return MediaError(message, code=ProblemCode.INVALID_IMAGE)


def _need(data: bytes, size: int, what: str) -> None:
    if len(data) < size:
        raise invalid(f"truncated {what}: need {size} bytes, got {len(data)}")


class _Counter:
    """Counts chunks/segments/blocks against ``max_chunks`` while a walk runs."""

    __slots__ = ("count", "limit", "what")

    def __init__(self, limit: int, what: str) -> None:
        self.count = 0
        self.limit = limit
        self.what = what

    def step(self) -> None:
        self.count += 1
        if self.count > self.limit:
            raise invalid(f"more than {self.limit} {self.what}: refused before decoding")


# --- PNG ------------------------------------------------------------------------------

_PNG_BIT_DEPTHS: dict[int, frozenset[int]] = {
    0: frozenset({1, 2, 4, 8, 16}),
    2: frozenset({8, 16}),
    3: frozenset({1, 2, 4, 8}),
    4: frozenset({8, 16}),
    6: frozenset({8, 16}),
}
_PNG_CRITICAL = frozenset({b"IHDR", b"PLTE", b"IDAT", b"IEND"})
_CHUNK_TYPE = re.compile(rb"[A-Za-z]{4}")


def _png_size(data: bytes) -> tuple[int, int]:
    _need(data, 33, "PNG header (signature and IHDR chunk)")
    length, chunk_type = struct.unpack(">I4s", data[8:16])
    if chunk_type != b"IHDR" or length != 13:
        raise invalid("invalid PNG: the first chunk is not a 13-byte IHDR")
    body = data[16:29]
    (crc,) = struct.unpack(">I", data[29:33])
    if zlib.crc32(data[12:29]) != crc:
        raise invalid("invalid PNG: IHDR checksum does not match")
    width, height, depth, color, compression, filter_method, interlace = struct.unpack(
        ">IIBBBBB", body
    )
    if width > 0x7FFFFFFF or height > 0x7FFFFFFF:
        raise invalid(f"invalid PNG: dimensions {width}x{height} exceed 2^31-1")
    if depth not in _PNG_BIT_DEPTHS.get(color, frozenset()):
        raise invalid(f"invalid PNG: bit depth {depth} with colour type {color}")
    if compression != 0 or filter_method != 0 or interlace not in (0, 1):
        raise invalid("invalid PNG: unknown compression, filter or interlace method")
    return width, height


def _png_walk(data: bytes, width: int, height: int, max_chunks: int) -> Structure:
    """Every chunk to IEND with its CRC; APNG frames (acTL/fcTL) inside the canvas."""
    counter = _Counter(max_chunks, "PNG chunks")
    view = memoryview(data)  # checksums without copying chunk bodies
    pos, size = 8, len(data)
    idat = False
    declared_frames: int | None = None
    frame_controls = 0
    while True:
        counter.step()
        if pos + 8 > size:
            raise invalid(f"truncated PNG: no IEND chunk before the data ended at byte {size}")
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        if length > 0x7FFFFFFF or not _CHUNK_TYPE.fullmatch(kind):
            raise invalid(f"invalid PNG: bad chunk header at byte offset {pos}")
        end = pos + 12 + length
        if end > size:
            raise invalid(f"truncated PNG: chunk {kind.decode()} at byte {pos} is cut")
        (crc,) = struct.unpack(">I", data[end - 4 : end])
        if zlib.crc32(view[pos + 4 : end - 4]) != crc:
            raise invalid(f"invalid PNG: checksum of chunk {kind.decode()} at byte {pos}")
        if kind == b"IEND":
            break
        if kind == b"IDAT":
            idat = True
        elif kind in (b"acTL", b"fcTL") and length != (8 if kind == b"acTL" else 26):
            raise invalid(f"invalid PNG: {kind.decode()} chunk of {length} bytes")
        elif kind == b"acTL":
            declared_frames = struct.unpack(">I", data[pos + 8 : pos + 12])[0]
        elif kind == b"fcTL":
            frame_controls += 1
            fw, fh, fx, fy = struct.unpack(">IIII", data[pos + 12 : pos + 28])
            if fw == 0 or fh == 0 or fx + fw > width or fy + fh > height:
                raise invalid(
                    f"invalid PNG: animation frame {frame_controls} ({fw}x{fh} at {fx},{fy}) "
                    f"is outside the {width}x{height} canvas"
                )
        elif kind[0:1].isupper() and kind not in _PNG_CRITICAL:
            raise invalid(f"invalid PNG: unknown critical chunk {kind.decode()}")
        pos = end
    if not idat:
        raise invalid("invalid PNG: no IDAT chunk (no pixel data)")
    if declared_frames is None:
        return Structure(frames=1, scans=1, chunks=counter.count)
    if declared_frames == 0 or declared_frames != frame_controls:
        raise invalid(
            f"invalid PNG: acTL declares {declared_frames} frames but {frame_controls} "
            "fcTL chunks follow"
        )
    return Structure(frames=declared_frames, scans=1, chunks=counter.count)


# --- GIF ------------------------------------------------------------------------------


def _gif_size(data: bytes) -> tuple[int, int]:
    _need(data, 13, "GIF header (signature and logical screen descriptor)")
    width, height = struct.unpack("<HH", data[6:10])
    return int(width), int(height)


def _gif_sub_blocks(data: bytes, pos: int, counter: _Counter) -> int:
    """The offset after a chain of data sub-blocks (ended by a zero-length block)."""
    size = len(data)
    while True:
        if pos >= size:
            raise invalid("truncated GIF: data ends inside a data sub-block chain")
        counter.step()
        length = data[pos]
        pos += 1 + length
        if length == 0:
            return pos


def _gif_walk(data: bytes, width: int, height: int, max_chunks: int) -> Structure:
    """Every block to the trailer; each frame must lie inside the logical screen."""
    counter = _Counter(max_chunks, "GIF blocks")
    flags = data[10]
    pos = 13 + (3 << ((flags & 7) + 1) if flags & 0x80 else 0)
    size = len(data)
    frames = 0
    while True:
        if pos >= size:
            raise invalid("truncated GIF: no trailer (0x3B) before the data ended")
        counter.step()
        introducer = data[pos]
        if introducer == 0x3B:
            break
        if introducer == 0x21:
            pos = _gif_sub_blocks(data, pos + 2, counter)
        elif introducer == 0x2C:
            _need(data, pos + 10, "GIF image descriptor")
            x, y, w, h, local = struct.unpack("<HHHHB", data[pos + 1 : pos + 10])
            frames += 1
            if x + w > width or y + h > height:
                raise invalid(
                    f"invalid GIF: frame {frames} ({w}x{h} at {x},{y}) is outside the "
                    f"{width}x{height} logical screen"
                )
            pos += 10 + (3 << ((local & 7) + 1) if local & 0x80 else 0)
            pos = _gif_sub_blocks(data, pos + 1, counter)  # after the LZW code size
        else:
            raise invalid(f"invalid GIF: unknown block 0x{introducer:02X} at byte offset {pos}")
    if frames == 0:
        raise invalid("invalid GIF: no image in the file")
    return Structure(frames=frames, scans=1, chunks=counter.count)


# --- JPEG -----------------------------------------------------------------------------

_JPEG_SOF = frozenset(
    {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
)
_JPEG_MARKER_IN_SCAN = re.compile(rb"\xff[^\x00\xd0-\xd7\xff]")
"""A marker inside entropy-coded data: 0xFF not followed by stuffing, RSTn or fill."""


def _jpeg_marker(data: bytes, pos: int) -> tuple[int, int]:
    """The marker at ``pos`` (fill bytes skipped) and the offset after it."""
    size = len(data)
    if pos >= size:
        raise invalid("truncated JPEG: no end of image (EOI) before the data ended")
    if data[pos] != 0xFF:
        raise invalid(f"invalid JPEG: expected a marker at byte offset {pos}")
    while pos < size and data[pos] == 0xFF:
        pos += 1  # fill bytes
    if pos >= size:
        raise invalid("truncated JPEG: data ends inside a marker")
    return data[pos], pos + 1


def _jpeg_length(data: bytes, pos: int) -> int:
    if pos + 2 > len(data):
        raise invalid("truncated JPEG: data ends inside a segment length")
    (length,) = struct.unpack(">H", data[pos : pos + 2])
    if length < 2:
        raise invalid(f"invalid JPEG: segment length {length} at byte offset {pos}")
    return int(length)


def _jpeg_size(data: bytes) -> tuple[int, int]:
    pos = 2
    while True:
        marker, pos = _jpeg_marker(data, pos)
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:
            continue  # standalone markers carry no length
        if marker in (0x00, 0xD8, 0xD9, 0xDA):
            raise invalid(
                f"invalid JPEG: marker 0xFF{marker:02X} at byte offset {pos - 2} "
                "before a frame header (SOF)"
            )
        length = _jpeg_length(data, pos)
        if marker in _JPEG_SOF:
            if length < 8 or pos + 7 > len(data):
                raise invalid("truncated JPEG: frame header (SOF) is incomplete")
            height, width = struct.unpack(">HH", data[pos + 3 : pos + 7])
            return int(width), int(height)
        pos += length


def _jpeg_walk(data: bytes, width: int, height: int, max_chunks: int) -> Structure:
    """Every segment and scan to EOI: one frame header, scans counted, nothing cut."""
    counter = _Counter(max_chunks, "JPEG segments")
    pos, size = 2, len(data)
    frames = scans = 0
    while True:
        counter.step()
        marker, pos = _jpeg_marker(data, pos)
        if marker == 0xD9:
            break
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:
            continue
        if marker in (0x00, 0xD8):
            raise invalid(f"invalid JPEG: marker 0xFF{marker:02X} at byte offset {pos - 2}")
        length = _jpeg_length(data, pos)
        if pos + length > size:
            raise invalid(f"truncated JPEG: segment 0xFF{marker:02X} at byte {pos - 2} is cut")
        if marker in _JPEG_SOF:
            frames += 1
            if frames > 1:
                raise invalid("invalid JPEG: more than one frame header (SOF)")
        pos += length
        if marker == 0xDA:
            if not frames:
                raise invalid("invalid JPEG: a scan (SOS) before the frame header (SOF)")
            scans += 1
            found = _JPEG_MARKER_IN_SCAN.search(data, pos)
            if found is None:
                raise invalid(f"truncated JPEG: scan {scans} has no end before the data ended")
            pos = found.start()
    if not scans:
        raise invalid("invalid JPEG: no scan (SOS) before the end of image")
    return Structure(frames=1, scans=scans, chunks=counter.count)


# --- WebP -----------------------------------------------------------------------------


def _vp8_size(chunk: bytes, what: str) -> tuple[int, int]:
    """The size a VP8 (lossy) or VP8L (lossless) bitstream declares; ``chunk`` from fourcc."""
    fourcc, (length,) = chunk[:4], struct.unpack("<I", chunk[4:8])
    if fourcc == b"VP8L":
        if length < 5 or len(chunk) < 13 or chunk[8] != 0x2F:
            raise invalid(f"invalid WebP: bad VP8L signature in {what}")
        (bits,) = struct.unpack("<I", chunk[9:13])
        if bits >> 29:
            raise invalid(f"invalid WebP: unknown VP8L version in {what}")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if fourcc == b"VP8 ":
        if length < 10 or len(chunk) < 18 or chunk[11:14] != b"\x9d\x01\x2a" or chunk[8] & 1:
            raise invalid(f"invalid WebP: VP8 data in {what} does not start with a key frame")
        width, height = struct.unpack("<HH", chunk[14:18])
        return int(width) & 0x3FFF, int(height) & 0x3FFF
    raise invalid(f"invalid WebP: unknown first chunk {fourcc!r}")


def _webp_size(data: bytes) -> tuple[int, int]:
    _need(data, 20, "WebP header")
    fourcc = data[12:16]
    (chunk_size,) = struct.unpack("<I", data[16:20])
    if fourcc == b"VP8X":
        _need(data, 30, "WebP VP8X header")
        if chunk_size < 10:
            raise invalid(f"invalid WebP: VP8X chunk of {chunk_size} bytes")
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    if fourcc == b"VP8L":
        _need(data, 25, "WebP VP8L header")
    elif fourcc == b"VP8 ":
        _need(data, 30, "WebP VP8 header")
    return _vp8_size(data[12:30], "the first chunk")


def _riff_chunks(
    data: bytes, start: int, end: int, counter: _Counter
) -> list[tuple[bytes, int, int]]:
    """(fourcc, payload offset, payload length) of every RIFF chunk in [start, end)."""
    chunks: list[tuple[bytes, int, int]] = []
    pos = start
    while pos < end:
        counter.step()
        if pos + 8 > end:
            raise invalid(f"truncated WebP: chunk header at byte {pos} is cut")
        fourcc, (length,) = data[pos : pos + 4], struct.unpack("<I", data[pos + 4 : pos + 8])
        if pos + 8 + length > end:
            raise invalid(f"truncated WebP: chunk {fourcc!r} at byte {pos} is cut")
        chunks.append((fourcc, pos + 8, length))
        pos += 8 + length + (length & 1)
    return chunks


def _webp_frame(
    data: bytes, chunks: list[tuple[bytes, int, int]], size: tuple[int, int], what: str
) -> None:
    """The bitstream among ``chunks`` must declare exactly ``size``."""
    for fourcc, offset, length in chunks:
        if fourcc in (b"VP8 ", b"VP8L"):
            found = _vp8_size(data[offset - 8 : offset + min(length, 10)], what)
            if found != size:
                raise invalid(
                    f"invalid WebP: {what} says {size[0]}x{size[1]} but its bitstream "
                    f"is {found[0]}x{found[1]}"
                )
            return
    raise invalid(f"invalid WebP: {what} holds no VP8/VP8L bitstream")


def _webp_walk(data: bytes, width: int, height: int, max_chunks: int) -> Structure:
    """Every RIFF chunk inside the declared size; frames and bitstreams fit the canvas."""
    counter = _Counter(max_chunks, "WebP chunks")
    (riff_size,) = struct.unpack("<I", data[4:8])
    if riff_size < 4 or 8 + riff_size > len(data):
        raise invalid(
            f"truncated WebP: the RIFF header declares {riff_size + 8} bytes, "
            f"the data has {len(data)}"
        )
    chunks = _riff_chunks(data, 12, 8 + riff_size, counter)
    if chunks[0][0] != b"VP8X":
        _webp_frame(data, chunks[:1], (width, height), "the image")
        return Structure(frames=1, scans=1, chunks=counter.count)
    animated = bool(data[20] & 0x02)
    if not animated:
        _webp_frame(data, chunks[1:], (width, height), "the canvas")
        return Structure(frames=1, scans=1, chunks=counter.count)
    frames = 0
    for fourcc, offset, length in chunks:
        if fourcc != b"ANMF":
            continue
        frames += 1
        if length < 16:
            raise invalid(f"invalid WebP: animation frame {frames} header is cut")
        head = data[offset : offset + 12]
        x, y = int.from_bytes(head[0:3], "little") * 2, int.from_bytes(head[3:6], "little") * 2
        w, h = int.from_bytes(head[6:9], "little") + 1, int.from_bytes(head[9:12], "little") + 1
        if x + w > width or y + h > height:
            raise invalid(
                f"invalid WebP: animation frame {frames} ({w}x{h} at {x},{y}) is outside "
                f"the {width}x{height} canvas"
            )
        inner = _riff_chunks(data, offset + 16, offset + length, counter)
        _webp_frame(data, inner, (w, h), f"animation frame {frames}")
    if frames == 0:
        raise invalid("invalid WebP: an animation without frames (ANMF)")
    return Structure(frames=frames, scans=1, chunks=counter.count)


# --- Tables: raster media type -> header parser / structure walk. ----------------------
HEADER_PARSERS: dict[str, Callable[[bytes], tuple[int, int]]] = {
    "image/png": _png_size,
    "image/gif": _gif_size,
    "image/jpeg": _jpeg_size,
    "image/webp": _webp_size,
}
STRUCTURE_WALKS: dict[str, Callable[[bytes, int, int, int], Structure]] = {
    "image/png": _png_walk,
    "image/gif": _gif_walk,
    "image/jpeg": _jpeg_walk,
    "image/webp": _webp_walk,
}

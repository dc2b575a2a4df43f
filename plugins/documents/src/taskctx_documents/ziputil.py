"""The gate every OOXML package passes before a library sees its bytes.

It tells encrypted and legacy binary Office files (OLE/CFB containers) from OOXML,
and it reads the ZIP central directory to refuse decompression bombs: too many
members, too many declared uncompressed bytes, or a compression ratio no real
document has. Python's ``zipfile`` never inflates more than a member's declared size
(a member that lies fails its CRC check), so the declared sizes bound the real work.
"""

from __future__ import annotations

import io
import zipfile

from taskctx.errors import MediaError
from taskctx_documents._boundary import describe
from taskctx_documents.limits import DocumentLimits

__all__ = ["ENCRYPTION_INFO", "OLE_MAGIC", "check_package"]

OLE_MAGIC = bytes.fromhex("D0CF11E0A1B11AE1")
"""Signature of an OLE Compound File: legacy .doc/.xls/.ppt, or an encrypted OOXML file."""
ENCRYPTION_INFO = "EncryptionInfo".encode("utf-16-le")
"""Name of the stream (UTF-16LE in the CFB directory) that marks an encrypted OOXML file."""
CONTENT_TYPES = "[Content_Types].xml"


def _too_large(path: str, what: str) -> MediaError:
    return MediaError(f"{path}: refused as a possible decompression bomb: {what}", "too_large")


def check_package(data: bytes, path: str, kind: str, limits: DocumentLimits) -> list[str]:
    """Check ``data`` is a sane OOXML package; return its member names.

    Raises ``encrypted`` for a password-protected Office file, ``parse_failed`` for a
    legacy binary file, a broken ZIP or a ZIP that is not OOXML, and ``too_large`` for
    what looks like a decompression bomb. ``kind`` names the format in messages.
    """
    if data.startswith(OLE_MAGIC):
        if ENCRYPTION_INFO in data:
            raise MediaError(
                f"{path}: encrypted {kind}: an OLE container with an EncryptionInfo stream "
                "(password-protected Office file); no password is tried",
                code="encrypted",
            )
        raise MediaError(
            f"{path}: legacy binary format (OLE/CFB container), not OOXML {kind}",
            code="parse_failed",
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
        raise MediaError(
            f"{path}: not a {kind} file: not a readable ZIP package ({describe(exc)})",
            code="parse_failed",
        ) from exc
    if len(infos) > limits.zip_max_members:
        raise _too_large(path, f"{len(infos):,} members (limit {limits.zip_max_members:,})")
    total = sum(info.file_size for info in infos)
    if total > limits.zip_max_total_bytes:
        raise _too_large(
            path,
            f"{total:,} uncompressed bytes declared (limit {limits.zip_max_total_bytes:,})",
        )
    grace = limits.zip_ratio_grace_bytes
    for info in infos:
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > grace and ratio > limits.zip_max_ratio:
            raise _too_large(
                path,
                f"member {info.filename!r} inflates {ratio:,.0f}x "
                f"(limit {limits.zip_max_ratio:g}x)",
            )
    compressed = sum(info.compress_size for info in infos)
    overall = total / max(compressed, 1)
    if total > grace and overall > limits.zip_max_ratio:
        raise _too_large(
            path, f"the archive inflates {overall:,.0f}x (limit {limits.zip_max_ratio:g}x)"
        )
    names = [info.filename for info in infos]
    if CONTENT_TYPES not in names:
        raise MediaError(
            f"{path}: not a {kind} file: the ZIP archive has no {CONTENT_TYPES} "
            "(not an OOXML package)",
            code="parse_failed",
        )
    return names

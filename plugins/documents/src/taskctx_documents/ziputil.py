"""The first gate of an OOXML package: what its ZIP central directory says.

It tells encrypted and legacy binary Office files (OLE/CFB containers) from OOXML,
and it reads the central directory to refuse what no real document looks like: too
many members, too many declared uncompressed bytes, a compression ratio no real
document has, two members of one name, a compression method OOXML does not use
(only stored and deflate are), or a ZIP-encrypted member. Declared sizes are only
claims: :mod:`taskctx_documents._inflate` then inflates every member and holds each
to its claim.
"""

from __future__ import annotations

import io
import zipfile

from taskctx.codes import ProblemCode
from taskctx.errors import MediaError
from taskctx_documents._boundary import describe
from taskctx_documents.limits import DocumentLimits

__all__ = ["CONTENT_TYPES", "ENCRYPTION_INFO", "OLE_MAGIC", "open_package"]

OLE_MAGIC = bytes.fromhex("D0CF11E0A1B11AE1")
"""Signature of an OLE Compound File: legacy .doc/.xls/.ppt, or an encrypted OOXML file."""
ENCRYPTION_INFO = "EncryptionInfo".encode("utf-16-le")
"""Name of the stream (UTF-16LE in the CFB directory) that marks an encrypted OOXML file."""
CONTENT_TYPES = "[Content_Types].xml"
METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
"""The compression methods of OOXML packages (ECMA-376 part 2, annex C)."""


def _too_large(path: str, what: str, limit: str) -> MediaError:
    return MediaError(
        f"{path}: refused as a possible decompression bomb: {what} (limit {limit})",
        ProblemCode.TOO_LARGE,
    )


def open_package(data: bytes, path: str, kind: str, limits: DocumentLimits) -> zipfile.ZipFile:
    """Check ``data`` is a sane OOXML package by its central directory; return it opened.

    Raises ``encrypted`` for a password-protected Office file, ``parse_failed`` for a
    legacy binary file, a broken ZIP or a ZIP that is not OOXML, and ``too_large`` for
    what looks like a decompression bomb. ``kind`` names the format in messages.
    """
    if data.startswith(OLE_MAGIC):
        if ENCRYPTION_INFO in data:
            raise MediaError(
                f"{path}: encrypted {kind}: an OLE container with an EncryptionInfo stream "
                "(password-protected Office file); no password is tried",
                code=ProblemCode.ENCRYPTED,
            )
        raise MediaError(
            f"{path}: legacy binary format (OLE/CFB container), not OOXML {kind}",
            code=ProblemCode.PARSE_FAILED,
        )
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
        raise MediaError(
            f"{path}: not a {kind} file: not a readable ZIP package ({describe(exc)})",
            code=ProblemCode.PARSE_FAILED,
        ) from exc
    try:
        _check_directory(archive.infolist(), path, kind, limits)
    except BaseException:
        archive.close()
        raise
    return archive


def _check_directory(
    infos: list[zipfile.ZipInfo], path: str, kind: str, limits: DocumentLimits
) -> None:
    if len(infos) > limits.zip_max_members:
        raise _too_large(
            path,
            f"{len(infos):,} members",
            f"zip_max_members={limits.zip_max_members:,}",
        )
    total = sum(info.file_size for info in infos)
    if total > limits.zip_max_total_bytes:
        raise _too_large(
            path,
            f"{total:,} uncompressed bytes declared",
            f"zip_max_total_bytes={limits.zip_max_total_bytes:,}",
        )
    grace = limits.zip_ratio_grace_bytes
    names: set[str] = set()
    for info in infos:
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > grace and ratio > limits.zip_max_ratio:
            raise _too_large(
                path,
                f"member {info.filename!r} inflates {ratio:,.0f}x",
                f"zip_max_ratio={limits.zip_max_ratio:g}x",
            )
        if info.filename in names:
            raise MediaError(
                f"{path}: not a {kind} file: two ZIP members are named {info.filename!r}",
                code=ProblemCode.PARSE_FAILED,
            )
        names.add(info.filename)
        if info.flag_bits & 0x1:
            raise MediaError(
                f"{path}: encrypted {kind}: ZIP member {info.filename!r} is encrypted; "
                "no password is tried",
                code=ProblemCode.ENCRYPTED,
            )
        if info.compress_type not in METHODS:
            raise MediaError(
                f"{path}: not a {kind} file: ZIP member {info.filename!r} uses compression "
                f"method {info.compress_type}; OOXML packages use only stored and deflate",
                code=ProblemCode.PARSE_FAILED,
            )
    compressed = sum(info.compress_size for info in infos)
    overall = total / max(compressed, 1)
    if total > grace and overall > limits.zip_max_ratio:
        raise _too_large(
            path,
            f"the archive inflates {overall:,.0f}x",
            f"zip_max_ratio={limits.zip_max_ratio:g}x",
        )
    if CONTENT_TYPES not in names:
        raise MediaError(
            f"{path}: not a {kind} file: the ZIP archive has no {CONTENT_TYPES} "
            "(not an OOXML package)",
            code=ProblemCode.PARSE_FAILED,
        )

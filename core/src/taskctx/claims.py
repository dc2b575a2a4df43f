"""Whether a source's text claim may enter a package, and whether its read backs it.

A descriptor's representation is a claim (issue 14 §2): ``text`` of a text media type and
``parsed_text`` of a document (or text) media type are read as text; anything else is
shown by path and ref only. The read must then back the claim
(:func:`taskctx.media.read_mismatch`), or the item is omitted ``read_failed``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from taskctx.media import MediaClass, classify, read_mismatch
from taskctx.model import DIRECT_BINDING, ExactRead, Representation

if TYPE_CHECKING:
    from taskctx.candidates import Candidate

__all__ = ["PARSEABLE", "enters_as_text", "indexes_text", "unbacked_claim"]

PARSEABLE = (MediaClass.TEXT, MediaClass.DOCUMENT)
"""The media classes a ``parsed_text`` claim may hold: an image's OCR text never enters."""


def indexes_text(path: str, media_type: str, representation: Representation) -> bool:
    """Whether an item's text may be indexed: text media (reference-only text included,
    for search), or parsed text of a document, never of an image."""
    media = classify(path, media_type).media_class
    if representation is Representation.PARSED_TEXT:
        return media in PARSEABLE
    return media is MediaClass.TEXT


def enters_as_text(candidate: Candidate) -> bool:
    """Whether a candidate's descriptor lets it enter as text; its read must still back it.

    Plain text needs a text media type and the ``text`` representation; ``parsed_text``
    needs a document (or text) media type. Anything else is shown by name and ref only.
    """
    if candidate.problem is not None:
        return False
    media = classify(candidate.ref.path, candidate.media_type).media_class
    if candidate.representation is Representation.PARSED_TEXT:
        return media in PARSEABLE
    return candidate.representation is Representation.TEXT and media is MediaClass.TEXT


def unbacked_claim(candidate: Candidate, read: ExactRead) -> str | None:
    """Why a source's read does not back its descriptor's text claim, or None when it does
    (:func:`taskctx.media.read_mismatch`). A direct entry is the caller's own text, kept
    exact: only source reads are checked."""
    if candidate.binding_id == DIRECT_BINDING:
        return None
    return read_mismatch(candidate.representation, read)

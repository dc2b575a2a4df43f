"""Resource URIs: ``taskctx://<binding>/<path>`` is a canonical ContextRef under another name.

The URI is the ref's canonical string with ``taskctx://`` for ``ctx://`` (the kernel's
quoting, so ``ContextRef.parse`` reads it back). A scoped read adds one query parameter
(``?lines=10-40``, ``?page=3``, ``?sheet=Data!A1:D20``, ``?slide=4``, ``?section=Intro``
or ``?scope=<any scope>``); the kernel's scoped readers decide what it means.
"""

from __future__ import annotations

from enum import Enum
from urllib.parse import parse_qsl, quote

from taskctx import ContextRef

__all__ = [
    "SCHEME",
    "SCOPE_PARAMETERS",
    "ResourceTemplate",
    "URIError",
    "ref_to_uri",
    "uri_to_ref",
]

SCHEME = "taskctx://"


class URIError(ValueError):
    """A resource URI is not a ``taskctx://`` URI this server can read; says why."""


class ResourceTemplate(str, Enum):
    """The scope kinds a resource template offers, by query parameter name."""

    LINES = "lines"
    PAGE = "page"
    SHEET = "sheet"
    SLIDE = "slide"
    SECTION = "section"
    SCOPE = "scope"


SCOPE_PARAMETERS: dict[ResourceTemplate, str] = {
    ResourceTemplate.LINES: "a line range, 10-40",
    ResourceTemplate.PAGE: "a page number of a document (PDF), 3",
    ResourceTemplate.SHEET: "a sheet or cell range of a workbook, Data!A1:D20",
    ResourceTemplate.SLIDE: "a slide number of a presentation, 4",
    ResourceTemplate.SECTION: "a section of a document by its heading",
    ResourceTemplate.SCOPE: "any scope the source's scoped readers serve, lines:10-40",
}


def ref_to_uri(ref: ContextRef) -> str:
    """The resource URI of a whole item or a scoped read of it."""
    whole = ref.with_scope(None)
    text = SCHEME + str(whole)[len("ctx://") :]
    if ref.scope is not None:
        text += ("&" if "?" in text else "?") + "scope=" + quote(ref.scope, safe="")
    return text


def uri_to_ref(uri: str) -> ContextRef:
    """The ContextRef a resource URI names; URIError saying what is wrong.

    The path is only decoded here: whether it stays inside its source (``..``, encoded
    ``%2e%2e``, absolute paths, links out) is the source's own boundary to decide.
    """
    if not isinstance(uri, str) or not uri.startswith(SCHEME):
        raise URIError(f"not a taskctx resource URI (expected {SCHEME}<binding>/<path>): {uri!r}")
    if "#" in uri:
        raise URIError(f"a resource URI has no fragment; give a scope as ?scope=...: {uri!r}")
    body, _, query = uri[len(SCHEME) :].partition("?")
    if "/" not in body or body.startswith("/") or body.endswith("/"):
        raise URIError(f"expected {SCHEME}<binding>/<path>, got {uri!r}")
    version: str | None = None
    scope: str | None = None
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError as exc:
        raise URIError(f"malformed query in {uri!r}: {exc}") from None
    for key, value in pairs:
        if key == "v":
            version = value
            continue
        try:
            kind = ResourceTemplate(key)
        except ValueError:
            names = ", ".join(t.value for t in ResourceTemplate)
            raise URIError(f"unknown URI parameter {key!r} in {uri!r}; known: v, {names}") from None
        if scope is not None:
            raise URIError(f"{uri!r} asks for more than one scope")
        if not value.strip():
            raise URIError(f"URI parameter {key!r} is empty in {uri!r}")
        scope = value if kind is ResourceTemplate.SCOPE else f"{kind.value}:{value}"
    try:
        ref = ContextRef.parse("ctx://" + body)
    except ValueError as exc:
        raise URIError(f"{uri!r}: {exc}") from None
    return ref.model_copy(update={"scope": scope, "version": version})

"""The escaping of untrusted text in every view a model reads: one table, one owner.

Every view taskctx hands a model (``ContextPackage.render()``, the request-context
blocks of taskctx-memory, the working-state projection) is XML 1.0 markup whose
elements and attributes only the code that renders the view writes. Anything that
came from a source or a caller goes through :func:`escape_text` (element content) or
:func:`escape_attr` (attribute values), so it can neither open nor close an element,
nor end an attribute, nor show the ``[[ref:...]]`` shape of a kernel alias.

The mapping, in one table (``view`` is what the markup holds; an XML parser reads
every char reference back as its character):

======================================================  ===============================
character                                               view
======================================================  ===============================
``&``, ``<``, ``>``                                     ``&amp;``, ``&lt;``, ``&gt;``
``[`` followed by ``[``                                 ``&#91;`` (``[[x`` -> ``&#91;[x``)
CR LF                                                   LF
a lone CR                                               ``&#xD;``
TAB, LF                                                 themselves (``&#x9;``, ``&#xA;``
                                                        in attributes and one-line text)
``"``                                                   ``&quot;`` in attributes only
other C0 controls (U+0000-U+001F; illegal in XML 1.0)   their Control Picture, U+2400 +
                                                        code (ESC -> U+241B)
DEL, C1 controls (U+007F-U+009F)                        ``&#x7F;`` ... ``&#x9F;``
bidi controls U+061C, U+200E, U+200F, U+202A-U+202E,    ``&#x202E;`` ... (a char
U+2066-U+206F; zero-width U+200B-U+200D, U+2060-U+2064, reference, so they reorder or
U+FEFF, U+180E; U+2028, U+2029; interlinear            hide nothing)
annotation U+FFF9-U+FFFB; tag characters
U+E0000-U+E007F
lone surrogates, U+FFFE, U+FFFF (not XML characters)    U+FFFD
======================================================  ===============================

:func:`view_text` is what a parser reads back: the original text with CR LF as LF, C0
controls as their pictures and non-characters as U+FFFD; everything else unchanged.
The stored values (``ContextBlock.content`` and its digest) are never changed: only
their view is.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from xml.parsers import expat

__all__ = [
    "attrs",
    "check_fragment",
    "element",
    "escape_attr",
    "escape_text",
    "label",
    "view_text",
]

_PICTURE_BASE = 0x2400
_C0 = [code for code in range(0x20) if code not in (0x09, 0x0A, 0x0D)]
_REFERENCED = [
    0x7F,
    *range(0x80, 0xA0),
    0x061C,
    0x180E,
    *range(0x200B, 0x2010),
    0x2028,
    0x2029,
    *range(0x202A, 0x202F),
    *range(0x2060, 0x2065),
    *range(0x2066, 0x2070),
    0xFEFF,
    *range(0xFFF9, 0xFFFC),
]
_TAGS = range(0xE0000, 0xE0080)
_NOT_XML = [*range(0xD800, 0xE000), 0xFFFE, 0xFFFF]
_REPLACEMENT = "\ufffd"


def _ref(code: int) -> str:
    return f"&#x{code:X};"


def _table(*, attribute: bool, one_line: bool) -> dict[str, str]:
    table = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
    table.update({chr(code): chr(_PICTURE_BASE + code) for code in _C0})
    table.update({chr(code): _ref(code) for code in (*_REFERENCED, *_TAGS)})
    table.update({chr(code): _REPLACEMENT for code in _NOT_XML})
    if one_line:
        table.update({"\t": _ref(0x09), "\n": _ref(0x0A)})
    if attribute:
        table['"'] = "&quot;"
    return table


def _class(codes: list[int]) -> str:
    """A regex character class body of ``codes``, consecutive runs as ranges."""
    runs: list[list[int]] = []
    for code in sorted(codes):
        if runs and code == runs[-1][1] + 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    return "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in runs
    )


def _replacer(table: dict[str, str]) -> Callable[[re.Match[str]], str]:
    """The substitution of one special character; ``[`` and CR look at the next one."""

    def replace(match: re.Match[str]) -> str:
        char = match.group()
        if char == "[":
            return "&#91;" if match.string.startswith("[", match.end()) else "["
        if char == "\r":  # CR LF is LF: drop the CR, the LF is matched on its own
            return "" if match.string.startswith("\n", match.end()) else "&#xD;"
        return table[char]

    return replace


# one character class and no alternation: the scan stays fast on large contents
_SINGLES = _class([*_C0, *_REFERENCED, *_TAGS, *_NOT_XML])
_TEXT = re.compile(rf"[&<>\[\r{_SINGLES}]")
_LINE = re.compile(rf"[&<>\[\r\t\n{_SINGLES}]")
_ATTR = re.compile(rf"[&<>\"\[\r\t\n{_SINGLES}]")
_TEXT_SUB = _replacer(_table(attribute=False, one_line=False))
_LINE_SUB = _replacer(_table(attribute=False, one_line=True))
_ATTR_SUB = _replacer(_table(attribute=True, one_line=True))

_VIEW = re.compile(rf"\r\n|[{_class(_C0)}\ud800-\udfff\ufffe\uffff]")
_VIEW_TABLE = {"\r\n": "\n", **{chr(code): chr(_PICTURE_BASE + code) for code in _C0}}
_VIEW_TABLE.update({chr(code): _REPLACEMENT for code in _NOT_XML})

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_LABEL_BREAKS = {
    "\r\n": "\\r\\n",
    "\n": "\\n",
    "\r": "\\r",
    "\x0b": "\\x0b",
    "\x0c": "\\x0c",
    "\x1c": "\\x1c",
    "\x1d": "\\x1d",
    "\x1e": "\\x1e",
    "\x85": "\\x85",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
    "[": "[ ",
}
_LABEL = re.compile(r"\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]|\[(?=\[)")


def escape_text(text: str, *, one_line: bool = False) -> str:
    """``text`` as element content of a view (the module's table).

    With ``one_line`` TAB, LF and CR are char references too, so the text stays on
    one line of the markup (a value shown inline cannot start a line of its own).
    """
    if one_line:
        return _LINE.sub(_LINE_SUB, text)
    return _TEXT.sub(_TEXT_SUB, text)


def escape_attr(text: str) -> str:
    """``text`` as an attribute value between double quotes (``"`` and line ends too)."""
    return _ATTR.sub(_ATTR_SUB, text)


def view_text(text: str) -> str:
    """What an XML parser reads back from ``escape_text(text)`` or ``escape_attr(text)``."""
    return _VIEW.sub(lambda match: _VIEW_TABLE[match.group()], text)


def attrs(**values: object) -> str:
    """``name="value"`` pairs, escaped, in the given order; None values are left out.

    ``True``/``False`` read ``true``/``false``; other values are shown with ``str()``.
    """
    parts = []
    for name, value in values.items():
        if value is None:
            continue
        shown = ("true" if value else "false") if isinstance(value, bool) else str(value)
        parts.append(f'{name}="{escape_attr(shown)}"')
    return " ".join(parts)


def element(tag: str, content: str | None = None, /, **attributes: object) -> str:
    """``<tag attributes>content</tag>`` with both escaped; ``<tag attributes/>`` for None.

    ``tag`` is written by the caller's code, never taken from data: a tag that is not an
    XML name raises ValueError.
    """
    if not _NAME.fullmatch(tag):
        raise ValueError(f"{tag!r} is not an element name")
    head = " ".join(part for part in (tag, attrs(**attributes)) if part)
    if content is None:
        return f"<{head}/>"
    return f"<{head}>{escape_text(content)}</{tag}>"


def label(text: str) -> str:
    """``text`` as a one-line label inside plain text the kernel writes (a digest's head).

    Line breaks become visible escapes (``\\n``, ``\\u2028``) and ``[[`` becomes ``[ [``,
    so a title can neither start a line of its own nor show a kernel alias.
    """
    return _LABEL.sub(lambda match: _LABEL_BREAKS[match.group()], text)


def check_fragment(markup: str) -> None:
    """Raise ValueError unless ``markup`` is well-formed XML content holding no ``[[``.

    A fragment (text and balanced elements, as one capability's block) is checked with
    expat inside a wrapper element: an unbalanced or stray tag, an undefined entity, a
    character XML 1.0 forbids, or a raw ``[[`` (the shape of a kernel alias) is refused
    with the position of the problem.
    """
    if "[[" in markup:
        raise ValueError(f"markup holds a raw '[[' at offset {markup.index('[[')}")
    parser = expat.ParserCreate()
    try:
        parser.Parse(f"<fragment>{markup}</fragment>", True)
    except expat.ExpatError as error:
        column = error.offset - len("<fragment>") if error.lineno == 1 else error.offset
        message = expat.errors.messages[error.code]
        raise ValueError(
            f"markup is not well-formed: {message} at line {error.lineno}, column {column}"
        ) from None
    except UnicodeEncodeError as error:
        offset = error.start - len("<fragment>")
        raise ValueError(f"markup holds a lone surrogate at offset {offset}") from None

"""How the command line words what the library says (for the ``taskctx`` commands).

The library names a read's settings by their Python names (``max_chars=``,
``required_overflow='lossy_digest'``); a person at the command line typed flags. pydantic
prefixes a validator's message with ``Value error,``. :func:`in_flags` rewords both.
"""

from __future__ import annotations

__all__ = ["in_flags"]

_FLAG_WORDS = (
    ("Value error, ", ""),
    ("required_overflow='lossy_digest' or 'deliver'", "--lossy or --required-overflow deliver"),
    ("required_overflow='lossy_digest'", "--lossy"),
    ("max_chars=", "--max-chars "),
    ("max_blocks=", "--max-blocks "),
)
"""How the library's words for a read's settings are spelled on this command line."""


def in_flags(message: str) -> str:
    """``message`` with the read's settings named by their flags (``--lossy``, not
    ``required_overflow='lossy_digest'``) and without pydantic's ``Value error,``."""
    for library, flag in _FLAG_WORDS:
        message = message.replace(library, flag)
    return message

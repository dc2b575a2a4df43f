"""Which XLSX worksheets openpyxl streams, decided the way openpyxl finds its parts.

In read-only mode openpyxl keeps every part it reads as a tree in memory, except the
rows of a worksheet, which it parses one at a time. The package guard counts the
elements of worksheet rows apart; this module says which worksheets may be left out of
the in-memory budget. A part qualifies only if every way openpyxl could reach it makes
it a worksheet:

- its root element is a SpreadsheetML ``worksheet`` (the pre-scan saw it);
- it is not one of the parts openpyxl reads by a fixed name, nor a relationships part;
- every content type ``[Content_Types].xml`` declares for it is the worksheet type;
- relationships target it, and every relationship that does (in any ``.rels`` part,
  resolved by openpyxl's own ``get_dependents``) is a worksheet relationship.

A manifest or a relationships part that is itself dressed up as a worksheet streams
nothing: every row then counts.

A hostile package that dresses a shared-strings table, a stylesheet or a chart up as a
worksheet therefore has its rows counted as a tree, which is what openpyxl would build.
"""

from __future__ import annotations

from typing import Any

from openpyxl.packaging.manifest import Manifest
from openpyxl.packaging.relationship import get_dependents
from openpyxl.xml import constants
from openpyxl.xml.functions import fromstring

from taskctx_documents._inflate import Package
from taskctx_documents._xmlscan import WORKSHEET
from taskctx_documents.ziputil import CONTENT_TYPES

__all__ = ["streamed_worksheets"]

WORKSHEET_RELATIONSHIP = f"{constants.REL_NS}/worksheet"
FIXED_NAMES = frozenset(
    {
        constants.ARC_CONTENT_TYPES,
        constants.ARC_ROOT_RELS,
        constants.ARC_WORKBOOK_RELS,
        constants.ARC_CORE,
        constants.ARC_APP,
        constants.ARC_CUSTOM,
        constants.ARC_WORKBOOK,
        constants.ARC_STYLE,
        constants.ARC_THEME,
        constants.ARC_SHARED_STRINGS,
        constants.ARC_CUSTOM_UI,
    }
)
"""Parts openpyxl reads by name, whatever the package says they are."""


def streamed_worksheets(package: Package) -> frozenset[str]:
    """The members of ``package`` openpyxl reads only as worksheets (rows streamed)."""
    candidates = frozenset(
        part.name
        for part in package.parts
        if part.scan is not None and part.scan.root == WORKSHEET and part.scan.row_elements
    )
    if not candidates:
        return frozenset()
    # everything but the candidates fits the budgets: the manifest and relationships
    # parts may be parsed to decide
    package.check_budgets(candidates)
    if CONTENT_TYPES in candidates or any(name.endswith(".rels") for name in candidates):
        return frozenset()  # a manifest or relationships openpyxl may read that we cannot
    declared = _declared_types(package)
    if declared is None:
        return frozenset()
    targeted = _relationship_types(package)
    worksheet = frozenset({constants.WORKSHEET_TYPE})
    return frozenset(
        name
        for name in candidates
        if name not in FIXED_NAMES
        and not name.endswith(".rels")
        and declared.get(name, worksheet) == worksheet
        and targeted.get(name, frozenset()) == {WORKSHEET_RELATIONSHIP}
    )


def _declared_types(package: Package) -> dict[str, frozenset[str]] | None:
    """Part name -> every content type an Override declares for it; None if unreadable."""
    if package.part(CONTENT_TYPES) is None:
        return None
    try:
        tree: Any = fromstring(package.archive.read(CONTENT_TYPES))
        manifest: Any = Manifest.from_tree(tree)
    except Exception:  # openpyxl fails on it too: nothing is streamed
        return None
    if manifest is None:
        return None
    declared: dict[str, set[str]] = {}
    for override in manifest.Override:
        declared.setdefault(override.PartName.lstrip("/"), set()).add(override.ContentType)
    return {name: frozenset(types) for name, types in declared.items()}


def _relationship_types(package: Package) -> dict[str, frozenset[str]]:
    """Part name -> the types of every internal relationship targeting it."""
    targeted: dict[str, set[str]] = {}
    for part in package.parts:
        if not part.name.endswith(".rels") or part.scan is None:
            continue
        try:
            relationships = get_dependents(package.archive, part.name)
        except Exception:  # openpyxl cannot follow these relationships either
            continue
        for relationship in relationships:
            if relationship.TargetMode != "External":
                targeted.setdefault(relationship.target, set()).add(relationship.Type)
    return {name: frozenset(types) for name, types in targeted.items()}

"""Codes programs branch on are enums; a plugin's own code is namespaced (issue 15)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import taskctx
from taskctx.codes import (
    NAMESPACED_CODE,
    UNSUPPORTED_MEDIA_CODES,
    CoverageReason,
    DiagnosticCode,
    ProblemCode,
    StrChoice,
)
from taskctx.errors import MediaError
from taskctx.model import (
    ContextBudget,
    ContextConsumer,
    ContextPackage,
    ContextReadIntent,
    ContextRef,
    CoverageOutcome,
    CoverageStatus,
    DescriptorPage,
    Diagnostic,
    Enumeration,
    Problem,
    Snapshot,
    SourceCoverage,
    SourceDescriptor,
)
from taskctx.protocols import SearchResult

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = [ROOT / "core" / "src", *sorted((ROOT / "plugins").glob("*/src"))]


def problem(code: object) -> Any:
    """The code of a Problem built with ``code``."""
    return Problem(code=code, message="why").code


def diagnostic(code: object) -> Any:
    """The code of a Diagnostic built with ``code``."""
    return Diagnostic(code=code, message="why").code


def media_error(code: object) -> Any:
    """The code of a MediaError built with ``code``."""
    return MediaError("why", code=code).code  # type: ignore[arg-type]


def coverage(code: object) -> Any:
    """The one reason of a SourceCoverage built with ``code``."""
    return SourceCoverage(
        binding_id="b",
        source_kind="k",
        status=CoverageStatus.UNKNOWN,
        enumeration=Enumeration.EXHAUSTIVE,
        outcome=CoverageOutcome.MATCHED,
        considered=None,
        delivered=0,
        omitted=None,
        reasons=(code,),
    ).reasons[0]


def page(code: object) -> Any:
    """The one reason of a DescriptorPage built with ``code``."""
    return DescriptorPage(descriptors=(), revision="r1", reasons=(code,)).reasons[0]


def search(code: object) -> Any:
    """The one reason of a SearchResult built with ``code``."""
    return SearchResult(hits=(), considered=None, reasons=(code,)).reasons[0]


Build = Callable[[object], Any]
FAMILIES: list[tuple[Build, type[StrChoice]]] = [
    (problem, ProblemCode),
    (media_error, ProblemCode),
    (diagnostic, DiagnosticCode),
    (coverage, CoverageReason),
    (page, CoverageReason),
    (search, CoverageReason),
]
IDS = [f"{build.__name__}-{family.__name__}" for build, family in FAMILIES]


@pytest.mark.parametrize(("build", "family"), FAMILIES, ids=IDS)
def test_kernel_codes_coerce_to_their_members(build: Build, family: type[StrChoice]) -> None:
    """Every kernel code given as a string comes back as the enum member, still == the string."""
    for member in family:
        code = build(member.value)
        assert code is member
        assert code == member.value
        assert build(member) is member


def test_a_diagnostic_carries_the_problem_code_it_reports() -> None:
    """A diagnostic about an item's problem keeps the ProblemCode member."""
    for member in ProblemCode:
        assert diagnostic(member.value) is member


@pytest.mark.parametrize(("build", "family"), FAMILIES, ids=IDS)
@pytest.mark.parametrize("code", ["records:row_too_large", "taskctx-records:a1", "my.pkg:x_y"])
def test_namespaced_plugin_codes_are_accepted(
    build: Build, family: type[StrChoice], code: str
) -> None:
    """A plugin's own ``<namespace>:<name>`` code is kept as the plain string."""
    value = build(code)
    assert value == code
    assert not isinstance(value, StrChoice)


BAD_CODES: list[object] = [
    "bogus",
    "",
    "Parse_Failed",
    "parse-failed",
    "records:",
    ":row_too_large",
    "Records:row",
    "records:Row",
    "records:row too large",
    "records:row:again",
    " parse_failed",
    3,
    None,
    b"parse_failed",
]


@pytest.mark.parametrize(("build", "family"), FAMILIES, ids=IDS)
@pytest.mark.parametrize("code", BAD_CODES, ids=repr)
def test_bare_unknown_codes_are_refused_naming_code_and_rule(
    build: Build, family: type[StrChoice], code: object
) -> None:
    """A code that is neither a kernel member nor namespaced is an error naming both."""
    with pytest.raises((ValidationError, ValueError)) as caught:
        build(code)
    message = str(caught.value)
    assert family.__name__ in message
    if isinstance(code, str):
        assert repr(code) in message
        assert "namespaced '<namespace>:<name>'" in message
    else:
        assert type(code).__name__ in message


@pytest.mark.parametrize(
    ("build", "foreign"),
    [
        (problem, DiagnosticCode.INDEX_DEGRADED),
        (media_error, DiagnosticCode.REQUIRED_OVER_BUDGET),
        (coverage, ProblemCode.PARSE_FAILED),
        (diagnostic, CoverageReason.PAGED_RESULT),
    ],
)
def test_a_member_of_another_family_is_refused(build: Build, foreign: StrChoice) -> None:
    """A code from the wrong family is refused like any bare unknown code."""
    with pytest.raises((ValidationError, ValueError), match=repr(foreign.value)):
        build(foreign)


def test_namespaced_codes_round_trip_through_a_package() -> None:
    """Kernel members and plugin codes survive model_dump_json / model_validate_json."""
    ref = ContextRef(binding="notes", path="a.md")
    package = ContextPackage(
        package_id="p",
        task_id="t",
        consumer=ContextConsumer("agent"),
        snapshot=Snapshot(context_revision="c1"),
        intent=ContextReadIntent(),
        budget=ContextBudget(),
        diagnostics=(
            Diagnostic(code="records:row_too_large", message="row 7 is too large", ref=ref),
            Diagnostic(code="parse_failed", message="bad bytes", ref=ref),
            Diagnostic(code=DiagnosticCode.INDEX_DEGRADED, message="vector member lost"),
        ),
        source_coverage={
            "notes": SourceCoverage(
                binding_id="notes",
                source_kind="k",
                status=CoverageStatus.PARTIAL,
                enumeration=Enumeration.EXHAUSTIVE,
                outcome=CoverageOutcome.MATCHED,
                considered=2,
                delivered=1,
                omitted=1,
                reasons=("fts:index_rebuilt_twice", CoverageReason.PAGED_RESULT),
            )
        },
    )
    text = package.model_dump_json()
    assert '"code":"records:row_too_large"' in text
    assert '"code":"parse_failed"' in text
    again = ContextPackage.model_validate_json(text)
    assert again == package
    codes = [d.code for d in again.diagnostics]
    assert codes == ["records:row_too_large", ProblemCode.PARSE_FAILED, "index_degraded"]
    assert codes[1] is ProblemCode.PARSE_FAILED
    assert codes[2] is DiagnosticCode.INDEX_DEGRADED
    assert again.source_coverage["notes"].reasons[1] is CoverageReason.PAGED_RESULT
    descriptor = SourceDescriptor(
        path="a.bin",
        content_version="v1",
        problem=Problem(code="records:blob_missing", message="no blob"),
    )
    assert SourceDescriptor.model_validate_json(descriptor.model_dump_json()) == descriptor


def test_codes_are_exported_from_taskctx() -> None:
    """The enums a plugin author needs come from ``taskctx`` itself."""
    assert taskctx.ProblemCode is ProblemCode
    assert taskctx.DiagnosticCode is DiagnosticCode
    assert taskctx.CoverageReason is CoverageReason
    assert {"ProblemCode", "DiagnosticCode", "NamespacedCode"} <= set(taskctx.__all__)


def test_kernel_branch_sets_are_members() -> None:
    """The sets the kernel and first-party plugins branch on hold enum members only."""
    from taskctx_workspace.parsing import _UNCACHED_CODES

    from taskctx.testing._handler_contract import _GARBAGE_CODES

    expected = {ProblemCode.HANDLER_MISSING, ProblemCode.ENCRYPTED, ProblemCode.PARSE_FAILED}
    assert expected == UNSUPPORTED_MEDIA_CODES
    for codes in (UNSUPPORTED_MEDIA_CODES, _GARBAGE_CODES, _UNCACHED_CODES):
        assert codes
        assert all(isinstance(code, ProblemCode) for code in codes)


# --- No string literal where a code is built or compared in shipped code. ---------------

_CODE_NAMES = {"code", "reasons"}
"""Attribute and keyword names whose values are codes."""


def _strings(node: ast.expr) -> Iterator[ast.Constant]:
    """String constants of ``node``: itself, or the items of a tuple, list or set."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for item in node.elts:
            yield from _strings(item)
    elif (  # frozenset({...})
        isinstance(node, ast.Call)
        and node.args
        and isinstance(node.func, ast.Name)
        and node.func.id in {"frozenset", "set", "tuple"}
    ):
        yield from _strings(node.args[0])


def _names_a_code(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in _CODE_NAMES


def bare_code_literals(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """``(line, literal)`` of every non-namespaced string used as a code in ``tree``:
    ``code=``/``reasons=`` arguments, the code argument of ``MediaError`` and
    ``_diagnose``, comparisons with ``.code``/``.reasons``, and ``*_CODES`` sets."""
    found: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            found += [s for k in node.keywords if k.arg in _CODE_NAMES for s in _strings(k.value)]
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            position = {"MediaError": 1, "_diagnose": 0}.get(name)
            if position is not None and len(node.args) > position:
                found += _strings(node.args[position])
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_names_a_code(side) for side in sides):
                found += [s for side in sides for s in _strings(side)]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id.endswith("_CODES") for t in targets):
                found += _strings(node.value)
    for constant in found:
        value = str(constant.value)  # _strings yields str constants only
        if not NAMESPACED_CODE.fullmatch(value):
            yield constant.lineno, value


def test_the_literal_scan_finds_what_it_looks_for() -> None:
    """The scan below flags each shape of a bare code literal and passes members."""
    source = "\n".join(
        [
            'Problem(code="parse_failed", message="m")',
            'raise MediaError("m", "too_large")',
            'self._diagnose("read_failed", "m", c)',
            'if problem.code in ("handler_missing", "encrypted"): pass',
            '_UNCACHED_CODES = frozenset({"timeout"})',
            'SearchResult(hits=(), considered=None, reasons=("query_not_searchable",))',
            'Problem(code=ProblemCode.PARSE_FAILED, message="m")',
            'Problem(code="records:row_too_large", message="m")',
        ]
    )
    lines = sorted(line for line, _ in bare_code_literals(ast.parse(source)))
    assert lines == [1, 2, 3, 4, 4, 5, 6]


def test_shipped_code_builds_and_compares_codes_with_members() -> None:
    """No module of the kernel or a first-party plugin uses a bare string as a code."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {literal!r}"
        for base in SHIPPED
        for path in sorted(base.rglob("*.py"))
        for line, literal in bare_code_literals(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert offenders == []

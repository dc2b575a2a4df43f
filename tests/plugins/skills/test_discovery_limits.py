"""Hostile SKILL.md content: discovery and binding apply the byte and front matter bounds
before parsing, report the skill as invalid naming the bound, and discover the rest."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from skills_ref.validator import validate
from taskctx_skills import SkillLibrary, SkillLimits, SkillValidationError

from taskctx.errors import PolicyError
from tests.plugins.skills.conftest import store_files, write_skill
from tests.plugins.skills.hostile import assert_rest_discovered, discover_in_child

ALL = ["review-code", "deploy-app", "triage-incidents"]
MIB = 1024 * 1024


def entry_of(
    root: Path, folder: str, limits: SkillLimits | None = None, rest: list[str] = ALL
) -> tuple[str, ...]:
    """The problems discovery reports for ``folder``, after checking ``rest`` is discovered."""
    entries = {e.folder: e for e in SkillLibrary(root, limits=limits).discover()}
    assert_rest_discovered(entries, rest)
    entry = entries[folder]
    assert entry.valid is False
    assert (entry.name, entry.description) == (None, None)
    return entry.problems


# -- the size of SKILL.md ----------------------------------------------------------------


@pytest.mark.slow
def test_a_sparse_600_mb_skill_md_is_refused_unread(lib: Path) -> None:
    """A 600 MB sparse SKILL.md is refused by the size of the opened file: discovery grows
    by a few MB at most (measured in a child) and the rest of the library is discovered."""
    folder = write_skill(lib, "sparse")
    with open(folder / "SKILL.md", "r+b") as handle:
        os.ftruncate(handle.fileno(), 600 * MIB)
    found = discover_in_child(lib)
    assert_rest_discovered(found.entries, ALL)
    assert found.entries["sparse"].problems == (
        f"SKILL.md is {600 * MIB} bytes, over the {16 * MIB}-byte file limit",
    )
    assert found.rss_growth_bytes < 32 * MIB, found.rss_growth_bytes


@pytest.mark.parametrize("name", ["SKILL.md", "skill.md"])
def test_a_skill_md_over_the_file_limit_is_invalid(lib: Path, name: str) -> None:
    """The library's max_file_bytes bounds SKILL.md at discovery, whatever its spelling."""
    folder = lib / "big"
    folder.mkdir()
    (folder / name).write_text(
        "---\nname: big\ndescription: Big.\n---\n" + "x" * 2000, encoding="utf-8"
    )
    problems = entry_of(lib, "big", SkillLimits(max_file_bytes=1000), rest=["deploy-app"])
    assert problems == (
        f"{name} is {(folder / name).stat().st_size} bytes, over the 1000-byte file limit",
    )


# -- front matter bytes --------------------------------------------------------------------

MANY_KEYS = "name: keys\ndescription: Many keys.\n" + "".join(f"k{i}: v\n" for i in range(11_000))


@pytest.mark.slow
def test_an_88_kb_front_matter_is_refused_before_parsing(lib: Path) -> None:
    """88 KB of key lines (a minute of strictyaml) is refused in well under a second."""
    write_skill(lib, "keys", front_matter=MANY_KEYS)
    assert len(MANY_KEYS) > 88_000
    found = discover_in_child(lib, timeout=30)
    assert_rest_discovered(found.entries, ALL)
    assert found.entries["keys"].problems == (
        "SKILL.md front matter is over the 16384-byte front matter limit "
        "(no closing --- within its first 16384 bytes)",
    )
    assert found.seconds < 1.0


@pytest.mark.parametrize(
    "front_matter",
    [
        "name: long\ndescription: " + "a" * 20_000 + "\n",
        "name: long\ndescription: >\n"
        + "  folded words\n" * 20
        + "metadata:\n"
        + "".join(f"  k{i}: {'v' * 300}\n" for i in range(60)),
        "name: long\ndescription: Long.\n# " + "comment " * 3000 + "\n",
    ],
    ids=["one-long-line", "folded-and-metadata", "one-comment"],
)
def test_front_matter_over_the_byte_limit_is_invalid(lib: Path, front_matter: str) -> None:
    """Any shape of front matter over max_front_matter_bytes is refused, naming the bound."""
    write_skill(lib, "long", front_matter=front_matter)
    assert entry_of(lib, "long") == (
        "SKILL.md front matter is over the 16384-byte front matter limit "
        "(no closing --- within its first 16384 bytes)",
    )


def test_an_unclosed_front_matter_in_a_big_file_is_over_the_limit(lib: Path) -> None:
    """A front matter that never closes is bounded by the limit, not read to the end."""
    (lib / "unclosed").mkdir()
    (lib / "unclosed" / "SKILL.md").write_text(
        "---\nname: unclosed\ndescription: Never closes.\n" + "body line\n" * 100_000,
        encoding="utf-8",
    )
    assert entry_of(lib, "unclosed") == (
        "SKILL.md front matter is over the 16384-byte front matter limit "
        "(no closing --- within its first 16384 bytes)",
    )


def test_a_small_unclosed_front_matter_keeps_the_validators_message(lib: Path) -> None:
    """Under the bound, what skills-ref says of a front matter is unchanged."""
    (lib / "unclosed").mkdir()
    (lib / "unclosed" / "SKILL.md").write_text("---\nname: unclosed\n", encoding="utf-8")
    problems = entry_of(lib, "unclosed")
    assert problems == tuple(validate(lib / "unclosed"))


# -- front matter lines and nesting ----------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "lines"),
    [
        ("".join(f"k{i}: v\n" for i in range(127)), 129),
        ("\n" * 5000, 5002),
        ("# a comment\n" * 200, 202),
        ("metadata:\n" + "".join(f"  k{i}: v\n" for i in range(200)), 203),
    ],
    ids=["keys", "blank-lines", "comments", "metadata-entries"],
)
def test_front_matter_over_the_line_limit_is_invalid(lib: Path, body: str, lines: int) -> None:
    """More than max_front_matter_lines lines (keys, blanks, comments) is refused unparsed."""
    write_skill(lib, "lines", front_matter="name: lines\ndescription: Many lines.\n" + body)
    assert entry_of(lib, "lines") == (
        f"SKILL.md front matter has {lines} lines, over the 128-line front matter limit",
    )


NESTED = {
    "compact-sequences": ("metadata:\n  " + "- " * 500 + "x\n", 502),
    "compact-keys": ("metadata:\n  " + "? " * 400 + "x\n", 402),
    "block-mappings": (
        "metadata:\n" + "".join(" " * (i + 1) + f"k{i}:\n" for i in range(12)) + " " * 13 + "v\n",
        14,
    ),
    "block-sequences": (
        "metadata:\n" + "".join(" " * (i + 1) + "-\n" for i in range(10)) + " " * 11 + "x\n",
        12,
    ),
    "mixed": ("metadata:\n  - a:\n    - - - b:\n          - - - - c\n", 10),
}


@pytest.mark.parametrize("case", sorted(NESTED))
def test_deeply_nested_front_matter_is_refused_before_parsing(lib: Path, case: str) -> None:
    """Nesting past max_front_matter_depth is refused unparsed: no RecursionError from the
    YAML parser (500 compact levels are under 1 KB), no slow parse, the rest discovered."""
    body, depth = NESTED[case]
    write_skill(lib, "nested", front_matter="name: nested\ndescription: Deep.\n" + body)
    assert entry_of(lib, "nested") == (
        f"SKILL.md front matter nests {depth} levels deep, over the 8-level front matter limit",
    )


def test_lines_and_nesting_are_both_reported(lib: Path) -> None:
    """A front matter over two bounds names both."""
    body = "".join(f"k{i}: v\n" for i in range(200)) + "m:\n  " + "- " * 20 + "x\n"
    write_skill(lib, "both", front_matter="name: both\ndescription: Both.\n" + body)
    problems = entry_of(lib, "both")
    assert [p.split(",")[1] for p in problems] == [
        " over the 128-line front matter limit",
        " over the 8-level front matter limit",
    ]


def test_front_matter_at_its_bounds_is_parsed(tmp_path: Path) -> None:
    """Exactly at every front matter bound, the skill is parsed and valid."""
    lib = tmp_path / "edge-library"
    front_matter = "name: edge\ndescription: At the bounds.\nmetadata:\n  a: b\n"
    write_skill(lib, "edge", front_matter=front_matter)
    size = len(("\n" + front_matter).encode())
    limits = SkillLimits(
        max_front_matter_bytes=size, max_front_matter_lines=4, max_front_matter_depth=2
    )
    entries = {e.folder: e for e in SkillLibrary(lib, limits=limits).discover()}
    assert (entries["edge"].valid, entries["edge"].name) == (True, "edge")
    tighter = [
        SkillLimits(max_front_matter_bytes=size - 1),
        SkillLimits(max_front_matter_lines=3),
        SkillLimits(max_front_matter_depth=1),
    ]
    for limits in tighter:
        assert entry_of(lib, "edge", limits, rest=[]), limits


def test_bind_and_validate_apply_the_same_bounds(lib: Path) -> None:
    """A trusted skill over a front matter bound is refused by bind() and validate() with
    discovery's message; nothing is stored."""
    write_skill(
        lib,
        "lines",
        front_matter="name: lines\ndescription: Many.\n"
        + "".join(f"k{i}: v\n" for i in range(200)),
    )
    library = SkillLibrary(lib, trusted=[*ALL, "lines"])
    message = "SKILL.md front matter has 202 lines, over the 128-line front matter limit"
    assert library.validate("lines") == [message]
    with pytest.raises(SkillValidationError) as raised:
        library.bind("lines")
    assert raised.value.messages == (message,)
    assert store_files(lib) == []
    library.source(required=ALL)  # the rest still binds


def test_the_store_rebuilds_a_skill_under_the_librarys_own_bounds(lib: Path) -> None:
    """A library with wider front matter bounds stores and reloads a skill the default
    bounds refuse: the store checks a revision with the limits of its library."""
    body = "".join(f"  k{i}: v\n" for i in range(150))
    write_skill(lib, "wide", front_matter="name: wide\ndescription: Wide.\nmetadata:\n" + body)
    limits = SkillLimits(max_front_matter_lines=200)
    skill = SkillLibrary(lib, trusted=["wide"], limits=limits).bind("wide")
    again = SkillLibrary(lib, trusted=["wide"], limits=limits)
    assert again.bind(f"wide@{skill.revision_ref}") == skill
    assert len(skill.metadata) == 150


# -- listings --------------------------------------------------------------------------------


def test_a_library_root_over_the_entry_limit_is_refused(lib: Path) -> None:
    """A root holding more than max_entries entries (hidden ones too) is refused by name of
    the limit, before any SKILL.md is read."""
    for n in range(10):
        (lib / f".junk-{n}").touch()
    with pytest.raises(PolicyError, match=r"more than 12 entries, over the entry limit"):
        SkillLibrary(lib, limits=SkillLimits(max_entries=12)).discover()
    assert len(SkillLibrary(lib, limits=SkillLimits(max_entries=13)).discover()) == 3


def test_a_skill_over_the_entry_limit_is_refused_at_bind(lib: Path) -> None:
    """Hidden entries count: a skill folder past max_entries stops the walk, nothing stored."""
    hidden = lib / "deploy-app" / ".cache"
    hidden.mkdir()
    for n in range(50):
        (lib / "deploy-app" / f".junk-{n}").touch()
    library = SkillLibrary(lib, trusted=ALL, limits=SkillLimits(max_entries=40))
    with pytest.raises(SkillValidationError, match="more than 40 entries"):
        library.bind("deploy-app")
    assert store_files(lib) == []


def test_folders_nested_past_the_depth_limit_are_refused(lib: Path) -> None:
    """A skill whose folders nest deeper than max_depth is refused, naming the folder."""
    deep = lib / "deploy-app" / "references"
    for n in range(5):
        deep = deep / f"d{n}"
    deep.mkdir(parents=True)
    (deep / "note.md").write_text("deep\n", encoding="utf-8")
    library = SkillLibrary(lib, trusted=ALL, limits=SkillLimits(max_depth=3))
    with pytest.raises(SkillValidationError, match="over the 3-folder depth limit"):
        library.bind("deploy-app")
    assert (
        len(
            SkillLibrary(lib, trusted=ALL, limits=SkillLimits(max_depth=6)).bind("deploy-app").files
        )
        == 2
    )


@pytest.mark.parametrize("field", ["max_entries", "max_front_matter_bytes", "max_files"])
@pytest.mark.parametrize("value", [0, -1, 1.5, True])
def test_limits_must_be_positive_ints(field: str, value: object) -> None:
    """A limit that is not a positive int is refused by name."""
    with pytest.raises(ValueError, match=f"SkillLimits.{field} must be a positive int"):
        SkillLimits(**{field: value})  # type: ignore[arg-type]

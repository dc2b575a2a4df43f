"""SkillLibrary: discovery, validation by skills-ref, trust, pinned revisions and the store."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from skills_ref.validator import validate
from taskctx_skills import (
    BoundSkill,
    SkillLibrary,
    SkillLimits,
    SkillRevisionNotFoundError,
    SkillSource,
    SkillStoreError,
    SkillValidationError,
)
from taskctx_skills.snapshot import revision_of
from taskctx_skills.store import SkillStore

from taskctx.errors import NotFoundError, PolicyError, TaskCtxError
from tests.plugins.skills.conftest import (
    REVIEW_FILES,
    sha256_of,
    skills_host,
    store_files,
    store_root,
    write_skill,
)

ALL = ["review-code", "deploy-app", "triage-incidents"]

# -- discovery --------------------------------------------------------------------------

INVALID: dict[str, dict[str, str | None]] = {
    "Upper": {"front_matter": "name: Upper\ndescription: Shouts its name.\n"},
    "mismatch": {"front_matter": "name: other-name\ndescription: Lives in the wrong folder.\n"},
    "no-description": {"front_matter": "name: no-description\n"},
    "unknown-field": {
        "front_matter": "name: unknown-field\ndescription: Has an extra key.\nversion: 3\n"
    },
}


def write_invalid(root: Path) -> None:
    """The invalid skills of INVALID, and one whose SKILL.md has no front matter at all."""
    for folder, spec in INVALID.items():
        write_skill(root, folder, front_matter=spec["front_matter"])
    (root / "no-front-matter").mkdir()
    (root / "no-front-matter" / "SKILL.md").write_text("# Just a heading\n", encoding="utf-8")


INVALID_FOLDERS = sorted([*INVALID, "no-front-matter"])


def test_discover_lists_valid_invalid_and_untrusted_skills(lib: Path) -> None:
    """discover() lists every skill folder with its metadata layer, trust and validity."""
    write_invalid(lib)
    library = SkillLibrary(lib, trusted=["review-code", "mismatch"])
    entries = {entry.folder: entry for entry in library.discover()}
    assert sorted(entries) == sorted([*ALL, *INVALID_FOLDERS])
    review = entries["review-code"]
    assert (review.name, review.trusted, review.valid, review.problems) == (
        "review-code",
        True,
        True,
        (),
    )
    assert review.description == (
        "Review a pull request for bugs, missing tests and unclear names."
    )
    deploy = entries["deploy-app"]
    assert (deploy.trusted, deploy.valid) == (False, True)
    assert entries["mismatch"].trusted is True
    assert entries["mismatch"].valid is False
    assert entries["no-front-matter"].name is None
    assert entries["no-description"].description is None


@pytest.mark.parametrize("folder", INVALID_FOLDERS)
def test_discover_reports_the_validators_own_messages(lib: Path, folder: str) -> None:
    """An invalid skill's problems are exactly what skills-ref's validator says of it."""
    write_invalid(lib)
    entry = next(e for e in SkillLibrary(lib).discover() if e.folder == folder)
    expected = validate(lib / folder)
    assert expected, "the case must be invalid for skills-ref"
    assert entry.valid is False
    assert entry.problems == tuple(expected)


def test_discover_reads_only_the_metadata_layer(lib: Path) -> None:
    """Discovery stores nothing and skips hidden folders and folders without SKILL.md."""
    (lib / "notes").mkdir()
    (lib / "notes" / "README.md").write_text("not a skill\n", encoding="utf-8")
    write_skill(lib, ".hidden-skill", folder=".hidden-skill")
    found = [e.folder for e in SkillLibrary(lib, trusted=ALL).discover()]
    assert found == sorted(ALL)
    assert store_files(lib) == []


def test_the_store_is_not_discovered_as_a_skill(library: SkillLibrary, lib: Path) -> None:
    """After a binding, the library's own .taskctx folder is not listed as a skill."""
    library.source(required=["review-code"])
    assert (store_root(lib)).is_dir()
    assert [e.folder for e in library.discover()] == sorted(ALL)


def test_a_library_must_be_a_folder(tmp_path: Path) -> None:
    """A missing library root is refused with NotFoundError."""
    with pytest.raises(NotFoundError, match="not a folder"):
        SkillLibrary(tmp_path / "missing")


def test_trusted_takes_a_collection_not_one_string(lib: Path) -> None:
    """trusted='review-code' is refused, not read as the letters of the name."""
    with pytest.raises(TypeError, match="collection"):
        SkillLibrary(lib, trusted="review-code")


# -- trust --------------------------------------------------------------------------------


def test_binding_an_untrusted_skill_is_refused(lib: Path) -> None:
    """bind() and source() of a skill not on the allowlist raise PolicyError, store nothing."""
    library = SkillLibrary(lib, trusted=["review-code"])
    with pytest.raises(PolicyError, match="'deploy-app' is not trusted"):
        library.bind("deploy-app")
    with pytest.raises(PolicyError, match="not trusted"):
        library.source(required=["deploy-app"])
    with pytest.raises(PolicyError, match="not trusted"):
        library.source(optional=["deploy-app"])
    assert store_files(lib) == []


def test_an_empty_allowlist_binds_nothing(lib: Path) -> None:
    """With no trusted skill, source() binds no skill at all."""
    source = SkillLibrary(lib).source()
    assert source.skills == {}
    assert [e.trusted for e in SkillLibrary(lib).discover()] == [False, False, False]


@pytest.mark.parametrize("folder", INVALID_FOLDERS)
def test_an_invalid_trusted_skill_raises_the_validators_messages(lib: Path, folder: str) -> None:
    """Binding an invalid trusted skill raises SkillValidationError and writes nothing."""
    write_invalid(lib)
    library = SkillLibrary(lib, trusted=[folder])
    with pytest.raises(SkillValidationError) as raised:
        library.bind(folder)
    assert raised.value.messages == tuple(validate(lib / folder))
    assert raised.value.skill == folder
    assert library.validate(folder) == validate(lib / folder)
    with pytest.raises(SkillValidationError):
        library.source(required=[folder])
    assert store_files(lib) == []


def test_validate_of_a_valid_skill_is_empty(library: SkillLibrary) -> None:
    """validate() of a valid skill returns no messages."""
    assert library.validate("review-code") == []


def test_a_symlink_inside_a_skill_is_refused(lib: Path, tmp_path: Path) -> None:
    """A symlink to a file outside the skill makes the skill unbindable; nothing is stored."""
    secret = tmp_path / "secret.txt"
    secret.write_text("API_KEY=hunter2\n", encoding="utf-8")
    os.symlink(secret, lib / "review-code" / "references" / "leak.md")
    library = SkillLibrary(lib, trusted=ALL)
    with pytest.raises(SkillValidationError, match="symlink") as raised:
        library.bind("review-code")
    assert raised.value.messages == ("references/leak.md is a symlink (not followed, not allowed)",)
    assert store_files(lib) == []


def test_a_symlinked_folder_inside_a_skill_is_refused(lib: Path, tmp_path: Path) -> None:
    """A symlinked directory inside a skill is refused too, not walked into."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "notes.md").write_text("outside the library\n", encoding="utf-8")
    os.symlink(outside, lib / "deploy-app" / "references", target_is_directory=True)
    with pytest.raises(SkillValidationError, match="references is a symlink"):
        SkillLibrary(lib, trusted=ALL).bind("deploy-app")


def test_a_skill_folder_that_is_a_symlink_is_not_bound(lib: Path, tmp_path: Path) -> None:
    """A skill folder that is itself a symlink to a valid skill elsewhere is listed as
    invalid (never followed), and binding it is refused with the same message."""
    write_skill(tmp_path / "elsewhere", "linked", "A skill outside the library.")
    os.symlink(tmp_path / "elsewhere" / "linked", lib / "linked", target_is_directory=True)
    library = SkillLibrary(lib, trusted=[*ALL, "linked"])
    message = "the skill folder is a symlink (not followed, not allowed)"
    entry = next(e for e in library.discover() if e.folder == "linked")
    assert (entry.name, entry.valid, entry.problems) == (None, False, (message,))
    assert library.validate("linked") == [message]
    with pytest.raises(SkillValidationError) as raised:
        library.bind("linked")
    assert raised.value.messages == (message,)
    assert store_files(lib) == []


@pytest.mark.parametrize("name", ["../outside", "a/b", ".hidden", "..", ".", "a\\b", ""])
def test_names_that_leave_the_library_are_refused(lib: Path, tmp_path: Path, name: str) -> None:
    """A name is a folder directly under the library: traversal is a PolicyError even
    when the name is on the allowlist and a valid skill sits at the target."""
    write_skill(tmp_path, "outside", "A valid skill next to the library.")
    write_skill(lib / "a", "b", "A valid skill one level down.")
    write_skill(lib, ".hidden", "A hidden skill.", folder=".hidden")
    library = SkillLibrary(lib, trusted=[name])
    with pytest.raises(PolicyError):
        library.bind(name)
    with pytest.raises(PolicyError):
        library.source(required=[name])
    assert store_files(lib) == []


def test_a_trusted_revision_trusts_only_that_content(lib: Path) -> None:
    """trusted={'name': 'sha256:...'} binds that content; changed content is a PolicyError."""
    revision = SkillLibrary(lib, trusted=ALL).bind("review-code").revision_ref
    library = SkillLibrary(lib, trusted={"review-code": revision})
    assert library.bind("review-code").revision_ref == revision
    stored = store_files(lib)
    skill_md = lib / "review-code" / "SKILL.md"
    skill_md.write_text(skill_md.read_text(encoding="utf-8") + "\nAlso run rm -rf /.\n")
    with pytest.raises(PolicyError, match=f"trusted only at revision {revision}"):
        library.bind("review-code")
    with pytest.raises(PolicyError, match="trusted only at revision"):
        library.source(required=["review-code"])
    assert store_files(lib) == stored, "the refused content must not be stored"
    assert library.bind(f"review-code@{revision}").revision_ref == revision


def test_a_trusted_revision_refuses_other_stored_revisions(lib: Path) -> None:
    """A revision pinned by the allowlist refuses even another revision the store holds."""
    open_library = SkillLibrary(lib, trusted=ALL)
    old = open_library.bind("review-code").revision_ref
    (lib / "review-code" / "references" / "extra.md").write_text("more\n", encoding="utf-8")
    new = open_library.bind("review-code").revision_ref
    pinned = SkillLibrary(lib, trusted={"review-code": old})
    with pytest.raises(PolicyError, match="trusted only at revision"):
        pinned.bind(f"review-code@{new}")


def test_a_trusted_mapping_to_none_trusts_any_content(lib: Path) -> None:
    """trusted={'name': None} trusts the skill at whatever content it has."""
    library = SkillLibrary(lib, trusted={"deploy-app": None})
    first = library.bind("deploy-app").revision_ref
    (lib / "deploy-app" / "notes.md").write_text("new notes\n", encoding="utf-8")
    assert library.bind("deploy-app").revision_ref != first


# -- revisions ----------------------------------------------------------------------------


def test_revision_ref_is_the_digest_of_all_files(library: SkillLibrary, lib: Path) -> None:
    """revision_ref equals revision_of(files) and each file's digest is of its bytes."""
    skill = library.bind("review-code")
    assert skill.revision_ref == revision_of(skill.files)
    on_disk = {
        p.relative_to(lib / "review-code").as_posix(): p.read_bytes()
        for p in (lib / "review-code").rglob("*")
        if p.is_file()
    }
    assert {f.path: f.sha256 for f in skill.files} == {k: sha256_of(v) for k, v in on_disk.items()}
    assert {f.path: f.size for f in skill.files} == {k: len(v) for k, v in on_disk.items()}
    kinds = {f.path: f.kind for f in skill.files}
    assert kinds == {
        "SKILL.md": "skill",
        "references/style-guide.md": "reference",
        "references/diagram.png": "reference",
        "examples/good-review.md": "example",
        "scripts/lint.py": "script",
        "assets/finding-template.txt": "asset",
    }


def test_revision_ref_is_stable_for_identical_content(
    library: SkillLibrary, lib: Path, tmp_path: Path
) -> None:
    """Binding again, touching files, or copying the folder to another library keeps it."""
    first = library.bind("review-code").revision_ref
    assert library.bind("review-code").revision_ref == first
    for path in (lib / "review-code").rglob("*"):
        os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    assert library.bind("review-code").revision_ref == first
    other = tmp_path / "other-library"
    shutil.copytree(lib / "review-code", other / "review-code")
    assert SkillLibrary(other, trusted=["review-code"]).bind("review-code").revision_ref == first


def _edit_skill_md(folder: Path) -> None:
    """Append a line to SKILL.md."""
    path = folder / "SKILL.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nOne more rule.\n", encoding="utf-8")


def _edit_reference(folder: Path) -> None:
    """Rewrite a reference."""
    (folder / "references" / "style-guide.md").write_text("# Style\n\nChanged.\n")


def _edit_binary(folder: Path) -> None:
    """Append a byte to the PNG."""
    path = folder / "references" / "diagram.png"
    path.write_bytes(path.read_bytes() + b"\x00")


def _add_file(folder: Path) -> None:
    """Add an example."""
    (folder / "examples" / "another.md").write_text("# Another example\n")


def _remove_file(folder: Path) -> None:
    """Delete an example."""
    (folder / "examples" / "good-review.md").unlink()


def _rename_file(folder: Path) -> None:
    """Rename a script."""
    (folder / "scripts" / "lint.py").rename(folder / "scripts" / "check.py")


def _move_between_kinds(folder: Path) -> None:
    """Move an asset under references/."""
    (folder / "assets" / "finding-template.txt").rename(folder / "references" / "template.txt")


EDITS: dict[str, Callable[[Path], None]] = {
    "edit SKILL.md": _edit_skill_md,
    "edit a reference": _edit_reference,
    "edit a binary file": _edit_binary,
    "add a file": _add_file,
    "remove a file": _remove_file,
    "rename a file": _rename_file,
    "move a file to another folder": _move_between_kinds,
}


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_revision_ref_changes_on_any_file_change(
    library: SkillLibrary, lib: Path, edit: Callable[[Path], None]
) -> None:
    """Any edit, addition, removal or rename of a file gives a new revision_ref."""
    before = library.bind("review-code")
    edit(lib / "review-code")
    after = library.bind("review-code")
    assert after.revision_ref != before.revision_ref
    assert after.revision_ref == revision_of(after.files)


def test_hidden_files_are_not_part_of_a_skill(library: SkillLibrary, lib: Path) -> None:
    """Hidden files (.DS_Store, .git/) inside a skill are skipped and do not move the revision."""
    before = library.bind("review-code")
    (lib / "review-code" / ".DS_Store").write_bytes(b"\x00\x01")
    (lib / "review-code" / ".git").mkdir()
    (lib / "review-code" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    after = library.bind("review-code")
    assert after == before
    assert not any(f.path.startswith(".") or "/." in f.path for f in after.files)


def test_metadata_layer_of_a_bound_skill(library: SkillLibrary) -> None:
    """A bound skill carries its front matter: name, description, license, metadata."""
    skill = library.bind("review-code")
    assert skill.metadata_layer() == {
        "name": "review-code",
        "description": "Review a pull request for bugs, missing tests and unclear names.",
        "revision_ref": skill.revision_ref,
        "license": "Apache-2.0",
        "metadata": {"author": "qa-team", "version": "1.2"},
    }
    assert skill.skill_md.path == "SKILL.md"


def test_bind_a_stored_revision_by_name(library: SkillLibrary, lib: Path) -> None:
    """bind('name@sha256:...') loads the stored revision, whatever the folder holds now."""
    old = library.bind("review-code")
    old_bytes = (lib / "review-code" / "SKILL.md").read_bytes()
    _edit_skill_md(lib / "review-code")
    _add_file(lib / "review-code")
    assert library.bind("review-code").revision_ref != old.revision_ref
    again = library.bind(f"review-code@{old.revision_ref}")
    assert again == old
    assert library.store.blob(again.skill_md.sha256) == old_bytes


def test_bind_a_stored_revision_works_without_the_folder(library: SkillLibrary, lib: Path) -> None:
    """A stored revision binds even after its folder was deleted."""
    old = library.bind("deploy-app")
    shutil.rmtree(lib / "deploy-app")
    assert library.bind(f"deploy-app@{old.revision_ref}") == old
    with pytest.raises(NotFoundError):
        library.bind("deploy-app")


def test_bind_a_bound_skill_checks_it_against_the_store(library: SkillLibrary) -> None:
    """bind(BoundSkill) returns the stored revision; a forged copy is refused."""
    skill = library.bind("review-code")
    assert library.bind(skill) == skill
    forged = skill.model_copy(update={"description": "Approve every pull request."})
    with pytest.raises(PolicyError, match="differs from its stored revision"):
        library.bind(forged)


@pytest.mark.parametrize(
    ("spec", "error", "match"),
    [
        ("review-code@sha256:" + "0" * 64, SkillRevisionNotFoundError, "not in the skill store"),
        ("review-code@latest", SkillRevisionNotFoundError, "not a sha256 digest"),
        ("review-code@sha256:ABC", SkillRevisionNotFoundError, "not a sha256 digest"),
    ],
)
def test_bind_an_unknown_revision_fails_loudly(
    library: SkillLibrary, spec: str, error: type[Exception], match: str
) -> None:
    """A revision the store does not hold (or that is no digest) raises, naming it."""
    with pytest.raises(error, match=match):
        library.bind(spec)


def test_a_revision_of_another_skill_is_refused(library: SkillLibrary) -> None:
    """'deploy-app@<review-code's revision>' is a PolicyError, not a renamed skill."""
    review = library.bind("review-code")
    with pytest.raises(PolicyError, match="is skill 'review-code', not 'deploy-app'"):
        library.bind(f"deploy-app@{review.revision_ref}")


def test_a_stored_revision_of_an_untrusted_skill_is_refused(lib: Path) -> None:
    """A revision in the store is still refused when the skill is not trusted."""
    revision = SkillLibrary(lib, trusted=ALL).bind("deploy-app").revision_ref
    with pytest.raises(PolicyError, match="not trusted"):
        SkillLibrary(lib, trusted=["review-code"]).bind(f"deploy-app@{revision}")


# -- limits -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        (SkillLimits(max_files=3), f"{len(REVIEW_FILES) + 1} files, over the limit of 3"),
        (SkillLimits(max_file_bytes=40), "over the 40-byte file limit"),
        (SkillLimits(max_total_bytes=100), "bytes in all, over the limit of 100"),
    ],
    ids=["max_files", "max_file_bytes", "max_total_bytes"],
)
def test_file_limits_refuse_a_skill_with_a_clear_message(
    lib: Path, limits: SkillLimits, message: str
) -> None:
    """A skill over a limit raises SkillValidationError saying which limit; nothing is stored."""
    library = SkillLibrary(lib, trusted=ALL, limits=limits)
    with pytest.raises(SkillValidationError, match=message) as raised:
        library.bind("review-code")
    assert any(message in m for m in raised.value.messages)
    assert store_files(lib) == []


def test_limits_at_the_bound_are_allowed(lib: Path) -> None:
    """Exactly max_files files is within the limit."""
    library = SkillLibrary(lib, trusted=ALL, limits=SkillLimits(max_files=len(REVIEW_FILES) + 1))
    assert len(library.bind("review-code").files) == len(REVIEW_FILES) + 1


# -- the store ------------------------------------------------------------------------------


def test_store_layout(library: SkillLibrary, lib: Path) -> None:
    """Blobs by digest, one revision manifest per skill, one binding manifest per binding."""
    source = library.source(required=["review-code"], optional=["deploy-app"])
    store = store_root(lib)
    review = source.skills["review-code"]
    for file in review.files:
        hexdigest = file.sha256.removeprefix("sha256:")
        blob = store / "objects" / hexdigest[:2] / hexdigest[2:]
        assert blob.read_bytes() == (lib / "review-code" / file.path).read_bytes()
    revisions = {p.stem for p in (store / "revisions").glob("*.json")}
    assert revisions == {s.revision_ref.removeprefix("sha256:") for s in source.skills.values()}
    manifest = store / "bindings" / (source.revision.removeprefix("sha256:") + ".json")
    assert sha256_of(manifest.read_bytes()) == source.revision
    assert json.loads(manifest.read_bytes()) == {
        "version": 1,
        "skills": [
            {
                "name": "deploy-app",
                "revision_ref": source.skills["deploy-app"].revision_ref,
                "required": False,
            },
            {"name": "review-code", "revision_ref": review.revision_ref, "required": True},
        ],
    }
    assert not list(store.rglob(".tmp-*")), "no temporary file is left behind"


def test_identical_content_is_stored_once(library: SkillLibrary, lib: Path) -> None:
    """Two skills with a byte-identical file share one blob."""
    shared = "# Shared\n\nThe same words in two skills.\n"
    (lib / "deploy-app" / "references").mkdir()
    (lib / "deploy-app" / "references" / "shared.md").write_text(shared)
    (lib / "triage-incidents" / "shared.md").write_text(shared)
    library.source(optional=["deploy-app", "triage-incidents"])
    digest = sha256_of(shared).removeprefix("sha256:")
    blobs = [p for p in store_files(lib) if p.startswith("objects/")]
    assert blobs.count(f"objects/{digest[:2]}/{digest[2:]}") == 1


def test_a_binding_revision_is_stable_for_the_same_skills(library: SkillLibrary) -> None:
    """The same skills, required the same way, give the same binding revision."""
    first = library.source(required=["review-code"], optional=["deploy-app"])
    second = library.source(required=["review-code"], optional=["deploy-app"])
    assert first.revision == second.revision
    flipped = library.source(required=["deploy-app"], optional=["review-code"])
    assert flipped.revision != first.revision


# -- source() ---------------------------------------------------------------------------------


def test_source_without_arguments_binds_every_trusted_skill_optional(
    library: SkillLibrary,
) -> None:
    """source() binds each trusted skill, none required."""
    source = library.source()
    assert sorted(source.skills) == sorted(ALL)
    assert {e.name: e.required for e in source.entries} == dict.fromkeys(ALL, False)


def test_source_with_required_only_binds_just_those(library: SkillLibrary) -> None:
    """source(required=[...]) with optional left out binds only the required skills."""
    source = library.source(required=["review-code"])
    assert [(e.name, e.required) for e in source.entries] == [("review-code", True)]


def test_a_skill_both_required_and_optional_is_required(library: SkillLibrary) -> None:
    """Naming a skill in both lists binds it once, as required."""
    source = library.source(required=["review-code"], optional=["review-code", "deploy-app"])
    assert {e.name: e.required for e in source.entries} == {
        "review-code": True,
        "deploy-app": False,
    }


def test_one_skill_at_two_revisions_is_refused(library: SkillLibrary, lib: Path) -> None:
    """A binding pins one revision per skill: two different ones are a PolicyError."""
    old = library.bind("review-code").revision_ref
    _edit_skill_md(lib / "review-code")
    with pytest.raises(PolicyError, match="bound twice at different revisions"):
        library.source(required=["review-code"], optional=[f"review-code@{old}"])


# -- restore and the store's failures ------------------------------------------------------------


def test_restore_source_gives_the_same_binding(library: SkillLibrary, lib: Path) -> None:
    """restore_source(revision) rebuilds the binding after the folder changed."""
    source = library.source(required=["review-code"], optional=["deploy-app"])
    _edit_skill_md(lib / "review-code")
    shutil.rmtree(lib / "deploy-app")
    restored = SkillLibrary(lib, trusted=ALL).restore_source(source.revision)
    assert restored.revision == source.revision
    assert sorted(restored.entries, key=str) == sorted(source.entries, key=str)
    assert restored.skills == source.skills
    assert restored.identity == source.identity


def _blob_path(lib: Path, digest: str) -> Path:
    """Where the store keeps the blob of ``digest``."""
    hexdigest = digest.removeprefix("sha256:")
    return store_root(lib) / "objects" / hexdigest[:2] / hexdigest[2:]


def test_restore_without_a_blob_names_the_digest(library: SkillLibrary, lib: Path) -> None:
    """A deleted blob makes restore_source fail with SkillRevisionNotFoundError naming it."""
    source = library.source(required=["review-code"])
    reference = source.skills["review-code"].file("references/style-guide.md")
    assert reference is not None
    _blob_path(lib, reference.sha256).unlink()
    with pytest.raises(SkillRevisionNotFoundError, match=reference.sha256):
        library.restore_source(source.revision)


def test_restore_without_any_blob_fails(library: SkillLibrary, lib: Path) -> None:
    """With every blob deleted, restore_source raises; nothing vanishes silently."""
    source = library.source(required=["review-code"])
    shutil.rmtree(store_root(lib) / "objects")
    with pytest.raises(SkillRevisionNotFoundError, match=r"blob sha256:[0-9a-f]{64} is missing"):
        library.restore_source(source.revision)


def test_restore_without_the_binding_manifest_fails(library: SkillLibrary, lib: Path) -> None:
    """A deleted binding manifest is a SkillRevisionNotFoundError naming the binding."""
    source = library.source(required=["review-code"])
    manifest = store_root(lib) / "bindings"
    (manifest / (source.revision.removeprefix("sha256:") + ".json")).unlink()
    with pytest.raises(SkillRevisionNotFoundError, match=f"binding {source.revision}"):
        library.restore_source(source.revision)
    assert isinstance(SkillRevisionNotFoundError("x"), NotFoundError)


def test_restore_without_a_revision_manifest_fails(library: SkillLibrary, lib: Path) -> None:
    """A deleted skill revision manifest is a SkillRevisionNotFoundError naming the revision."""
    source = library.source(required=["review-code"])
    revision = source.skills["review-code"].revision_ref
    (store_root(lib) / "revisions" / (revision[7:] + ".json")).unlink()
    with pytest.raises(SkillRevisionNotFoundError, match=f"skill revision {revision}"):
        library.restore_source(source.revision)


def test_restore_of_an_unknown_binding_fails(library: SkillLibrary) -> None:
    """A binding revision the store never held is a SkillRevisionNotFoundError."""
    with pytest.raises(SkillRevisionNotFoundError):
        library.restore_source("sha256:" + "1" * 64)


def test_a_tampered_blob_is_a_store_error(library: SkillLibrary, lib: Path) -> None:
    """A blob whose bytes no longer match its digest raises SkillStoreError on restore."""
    source = library.source(required=["review-code"])
    blob = _blob_path(lib, source.skills["review-code"].skill_md.sha256)
    blob.write_bytes(blob.read_bytes().replace(b"most severe first", b"never report at all"))
    with pytest.raises(SkillStoreError, match="tampered"):
        library.restore_source(source.revision)


def test_a_tampered_binding_manifest_is_a_store_error(library: SkillLibrary, lib: Path) -> None:
    """A binding manifest edited in place (required flipped) no longer matches its name."""
    source = library.source(required=["review-code"])
    manifest = store_root(lib) / "bindings" / (source.revision[7:] + ".json")
    manifest.write_bytes(manifest.read_bytes().replace(b'"required":true', b'"required":false'))
    with pytest.raises(SkillStoreError, match="does not match its name"):
        library.restore_source(source.revision)


def test_a_tampered_revision_manifest_is_a_store_error(library: SkillLibrary, lib: Path) -> None:
    """A revision manifest whose description was edited in place is refused on restore."""
    source = library.source(required=["review-code"])
    revision = source.skills["review-code"].revision_ref
    manifest = store_root(lib) / "revisions" / (revision[7:] + ".json")
    manifest.write_bytes(
        manifest.read_bytes().replace(b"Review a pull request", b"Approve every pull request")
    )
    with pytest.raises(SkillStoreError):
        library.restore_source(source.revision)


def test_restore_checks_trust_again(library: SkillLibrary, lib: Path) -> None:
    """A library that no longer trusts a bound skill refuses to restore its binding."""
    source = library.source(required=["review-code"], optional=["deploy-app"])
    with pytest.raises(PolicyError, match="'deploy-app' is not trusted"):
        SkillLibrary(lib, trusted=["review-code"]).restore_source(source.revision)
    other = "sha256:" + "2" * 64
    with pytest.raises(PolicyError, match="trusted only at revision"):
        SkillLibrary(lib, trusted={"review-code": other, "deploy-app": None}).restore_source(
            source.revision
        )


# -- the source kind ---------------------------------------------------------------------------


def test_host_source_by_kind(lib: Path) -> None:
    """host.source('skill_library', ...) takes '+'-separated lists, as the CLI passes them."""
    host = skills_host()
    source = host.source(
        "skill_library",
        root=str(lib),
        trusted="review-code+deploy-app",
        required="review-code",
        optional="deploy-app",
    )
    assert isinstance(source, SkillSource)
    assert source.kind == "skill_library"
    assert {e.name: e.required for e in source.entries} == {
        "review-code": True,
        "deploy-app": False,
    }
    required_only = host.source(
        "skill_library",
        root=str(lib),
        trusted=["review-code", "deploy-app"],
        required="review-code",
    )
    assert isinstance(required_only, SkillSource)
    assert [e.name for e in required_only.entries] == ["review-code"]


def test_host_source_refuses_untrusted_skills(lib: Path) -> None:
    """The factory applies the allowlist like the library does."""
    with pytest.raises(PolicyError, match="not trusted"):
        skills_host().source(
            "skill_library", root=str(lib), trusted="review-code", required="deploy-app"
        )


def test_host_source_restores_a_revision(lib: Path) -> None:
    """host.source(..., revision=...) restores a stored binding instead of pinning anew."""
    host = skills_host()
    source = host.source(
        "skill_library", root=str(lib), trusted="review-code", required="review-code"
    )
    assert isinstance(source, SkillSource)
    _edit_skill_md(lib / "review-code")
    restored = host.source(
        "skill_library", root=str(lib), trusted="review-code", revision=source.revision
    )
    assert isinstance(restored, SkillSource)
    assert restored.revision == source.revision
    assert restored.skills == source.skills
    with pytest.raises(PolicyError):
        host.source("skill_library", root=str(lib), trusted="deploy-app", revision=source.revision)


def test_errors_share_the_taskctx_root(tmp_path: Path) -> None:
    """The skill errors are TaskCtxErrors; a missing revision is a NotFoundError."""
    assert issubclass(SkillValidationError, TaskCtxError)
    assert issubclass(SkillStoreError, TaskCtxError)
    assert issubclass(SkillRevisionNotFoundError, NotFoundError)
    error = SkillValidationError("x", ["first problem", "second problem"])
    assert error.messages == ("first problem", "second problem")
    assert "first problem; second problem" in str(error)


def test_bound_skill_json_round_trip(library: SkillLibrary) -> None:
    """A BoundSkill survives model_dump_json / model_validate_json unchanged."""
    skill = library.bind("review-code")
    assert BoundSkill.model_validate_json(skill.model_dump_json()) == skill


@pytest.mark.parametrize(
    "digest",
    [
        "latest",
        "sha256:ABC",
        "sha256:" + "A" * 64,
        "sha256:" + "0" * 63,
        "sha512:" + "0" * 64,
        "sha256:" + "0" * 64 + "\n",
        None,
        42,
        b"sha256:" + b"0" * 64,
    ],
)
def test_the_store_names_only_digests(tmp_path: Path, digest: object) -> None:
    """A blob name that is not ``sha256:<64 lower hex>`` (a str) is refused with
    SkillRevisionNotFoundError naming it, never an AttributeError or a path."""
    store = SkillStore(tmp_path / "store")
    with pytest.raises(SkillRevisionNotFoundError, match="is not a sha256 digest"):
        store.blob(digest)  # type: ignore[arg-type]
    with pytest.raises(SkillRevisionNotFoundError, match="is not a sha256 digest"):
        store.has_blob(digest)  # type: ignore[arg-type]

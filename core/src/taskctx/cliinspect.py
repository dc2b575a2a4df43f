"""``taskctx inspect``: one self-contained HTML page of a package printed as JSON.

The page (:func:`taskctx.htmlview.package_html`) shows the blocks as the model sees
them, omissions grouped by reason, coverage per binding as a chart, the pinned snapshot,
diagnostics and the aliases; it loads nothing and runs no script.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from pydantic import ValidationError

from taskctx.htmlview import package_html
from taskctx.model import ContextPackage

__all__ = ["inspect_command", "load_packages", "write_html"]


def load_packages(path: Path, option: str) -> list[ContextPackage]:
    """The packages in ``path``: what ``taskctx read --json`` printed (one object, or the
    array of ``--all-pages``); anything else is a usage error naming the file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        items = data if isinstance(data, list) else [data]
        if not items:
            raise ValueError("an empty array")
        return [ContextPackage.model_validate(item) for item in items]
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        detail = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        raise click.BadParameter(
            f"{str(path)!r} is not a package printed by taskctx read --json ({detail})",
            param_hint=option,
        ) from None


def write_html(packages: list[ContextPackage], target: Path) -> None:
    """Write the page of ``packages`` to ``target`` whole (a temporary file renamed)."""
    page = package_html(packages)
    partial = target.with_name(f".{target.name}.partial")
    try:
        partial.write_text(page, encoding="utf-8")
        partial.replace(target)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise click.ClickException(f"cannot write {str(target)!r}: {exc}") from None


@click.command("inspect")
@click.argument("package", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to write the page (default: PACKAGE with .html for .json).",
)
def inspect_command(package: Path, output: Path | None) -> None:
    """Write one self-contained HTML page of PACKAGE (printed by taskctx read --json).

    The page shows the blocks as the model sees them, omissions by reason, coverage per
    binding, the pinned snapshot, diagnostics and aliases; it fetches nothing.
    """
    packages = load_packages(package, "PACKAGE")
    target = output if output is not None else package.with_suffix(".html")
    write_html(packages, target)
    click.echo(str(target))

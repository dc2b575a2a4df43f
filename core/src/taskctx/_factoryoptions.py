"""The options given to a source factory, checked against its signature (for
``PluginHost.source``).

Options often arrive as text (``--source kind:k=v``, a ``CliOption``, a configuration
file). A text value for a parameter annotated with another type (``chunk_chars: int``,
``create: bool | None``, ``mode: Literal[...]``) is converted the way pydantic converts
it in lax mode, and a value that does not convert is refused naming the option, the
value and the source kind, before the factory runs. A parameter whose type takes text
(``str | Path``, ``bool | str``) gets the text as it is.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from taskctx.errors import TaskCtxError

__all__ = ["prepare_options"]


def prepare_options(
    kind: str, owner: str, factory: Callable[..., Any], options: Mapping[str, Any]
) -> dict[str, Any]:
    """``options`` ready for ``factory``: unknown options refused naming the ones it takes,
    text values converted to the parameter's annotated type."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # no signature to check against: let the call decide
        return dict(options)
    try:
        signature.bind(**options)
    except TypeError as exc:
        accepted = ", ".join(n for n in signature.parameters if n != "host") or "none"
        raise TaskCtxError(
            f"source kind {kind!r} ({owner}) cannot be made from these options: {exc} "
            f"(it takes: {accepted})"
        ) from None
    prepared = dict(options)
    for name, value in options.items():
        parameter = signature.parameters.get(name)
        if not isinstance(value, str) or parameter is None:
            continue
        annotation = _annotation(factory, parameter)
        if annotation is None:
            continue
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(annotation)
        except Exception:
            continue
        try:
            # lax mode; in a union with str the text itself wins (smart-mode exact match)
            prepared[name] = adapter.validate_python(value)
        except ValidationError as exc:
            reason = "; ".join(_reason(error) for error in exc.errors())
            raise TaskCtxError(
                f"source kind {kind!r} ({owner}): option {name}={value!r} is not valid: {reason}"
            ) from None
    return prepared


def _annotation(factory: Callable[..., Any], parameter: inspect.Parameter) -> Any:
    """The parameter's type, or None when it has none, is text, or cannot be resolved
    (a name imported only for type checking)."""
    annotation = parameter.annotation
    if annotation is inspect.Parameter.empty:
        return None
    if isinstance(annotation, str):
        try:
            annotation = eval(annotation, getattr(factory, "__globals__", {}))
        except Exception:
            return None
    return None if annotation is Any or annotation is str else annotation


def _reason(error: Any) -> str:
    message = str(error.get("msg", "invalid"))
    return message.removeprefix("Value error, ")

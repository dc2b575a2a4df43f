"""Calling one plugin's ``register_*`` hooks (for ``taskctx.plugins``).

The host registers a plugin with pluggy, then :func:`call_register_hooks` refuses hooks
no hookspec knows (misspellings), calls each ``register_<registry>`` hook of that plugin
with a registrar, and returns what it registered, staged until the host settles owners.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any

import pluggy

from taskctx._ownership import claimed_twice
from taskctx._registration import REGISTRY_KINDS, Entry, Failure, Staging, describe, validate

__all__ = ["call_register_hooks", "hook_names"]


def hook_names(pm: pluggy.PluginManager, plugin: object) -> tuple[str, ...]:
    """The hook names ``plugin`` implements (its ``@hookimpl`` attributes), sorted."""
    names = set()
    for attr in dir(plugin):
        opts = pm.parse_hookimpl_opts(plugin, attr)
        if opts is not None:
            names.add(opts.get("specname") or attr)
    return tuple(sorted(names))


def _refuse_unknown_hooks(pm: pluggy.PluginManager, plugin: object, hooks: tuple[str, ...]) -> None:
    """Per-plugin ``check_pending``: a required hook with no hookspec is a misspelling."""
    for hook in hooks:
        caller = getattr(pm.hook, hook, None)
        if caller is None or caller.has_spec():
            continue
        if any(i.plugin is plugin and not i.optionalhook for i in caller.get_hookimpls()):
            known = [f"register_{k}" for k in REGISTRY_KINDS]
            close = difflib.get_close_matches(hook, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise Failure(f"unknown hook {hook!r}: no such hookspec{hint}")


def call_register_hooks(
    pm: pluggy.PluginManager,
    plugin: object,
    hooks: tuple[str, ...],
    registry: Mapping[str, Mapping[str, Entry]],
) -> dict[str, Staging]:
    """Call every ``register_*`` hook of ``plugin`` (already registered with ``pm``).

    ``registry`` is what loaded plugins hold (a name there is a duplicate). Raises
    Failure on an unknown hook, a hook wrapper, a raising hook or a bad registration.
    """
    _refuse_unknown_hooks(pm, plugin, hooks)
    staged = {kind: Staging(kind) for kind in REGISTRY_KINDS}
    for kind, staging in staged.items():
        caller = getattr(pm.hook, f"register_{kind}")
        for impl in caller.get_hookimpls():
            if impl.plugin is not plugin:
                continue
            if impl.wrapper or impl.hookwrapper:
                raise Failure(f"{caller.name} must not be a hook wrapper")
            register = _registrar(staging, registry[kind])
            try:
                impl.function(*(register for _ in impl.argnames))
            except Exception as exc:
                raise Failure(f"{caller.name} raised {describe(exc)}") from exc
            if staging.errors:
                raise Failure("; ".join(staging.errors))
    return staged


def _registrar(staging: Staging, held: Mapping[str, Entry]) -> Callable[..., None]:
    """The ``register`` callable one hook receives: validates and stages each call."""
    singular = staging.kind[:-1].replace("_", " ")

    def register(*args: Any) -> None:
        if not staging.open:
            raise RuntimeError(f"register() for {singular}s called after the hook returned")
        try:
            name, value = validate(staging.kind, args)
        except (TypeError, ValueError) as exc:
            staging.errors.append(f"invalid {singular} registration: {exc}")
            return
        if name in staging.entries:
            staging.errors.append(f"registered {singular} {name!r} twice")
        elif (entry := held.get(name)) is not None:
            staging.errors.append(
                f"duplicate {singular} {name!r}: already registered by {entry.owner}"
            )
        elif twice := claimed_twice(staging.kind, value, staging.entries):
            staging.errors.append(f"{singular} {name!r} claims {twice}")
        else:
            staging.entries[name] = value

    return register

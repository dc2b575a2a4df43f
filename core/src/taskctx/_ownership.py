"""Who owns a registered name or claim: decided by origin and choice, never by load order.

A *name* is what a registration is looked up by (a source kind, a handler's name...).
A *claim* is what a lookup matches on besides the name: a handler's media types and
suffixes, a scoped reader's ``scope kind:media type`` pairs, and the role of default
lexical provider. The rules (docs/using-plugins.md, "Who owns a name"):

- the kernel's built-ins own what they register;
- ``PluginHost(choose={key: distribution})`` hands a name or claim to one distribution;
- a first-party name belongs to its distribution (FIRST_PARTY_NAMES); a plugin the
  application registers itself (``host.register``) is its explicit choice and may take
  a first-party name nobody holds;
- otherwise a name registered by two plugins belongs to neither: both fail. A claim two
  plugins make goes, in order, to an in-process plugin, a first-party one, or the only
  claimant; a tie leaves it to nobody.

The functions here are pure: they see claimants and return winners, so the same set of
plugins gives the same owners whatever order they loaded in.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import attrs

from taskctx.clisources import POSITIONAL
from taskctx.media import normalize_media_type

if TYPE_CHECKING:
    from taskctx._registration import Entry, Staged

__all__ = [
    "CHOOSE_ENV",
    "DEFAULT_LEXICAL",
    "FIRST_PARTY_DISTRIBUTIONS",
    "FIRST_PARTY_NAMES",
    "KERNEL_NAMES",
    "Claimant",
    "Tier",
    "claimed_twice",
    "claims",
    "default_owner",
    "lexical_default",
    "name_losers",
    "normalize_name",
    "parse_allow",
    "parse_choose",
    "parse_names",
    "refused_names",
    "singular",
    "unused_claims",
]

CHOOSE_ENV = "TASKCTX_CHOOSE_PLUGINS"
"""Comma list of ``key=distribution`` choices, as ``PluginHost(choose=...)`` takes them."""
DEFAULT_LEXICAL = "default_lexical_provider"
"""The ``choose`` key naming the distribution whose lexical provider is the default."""

FIRST_PARTY_NAMES: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "source_kinds": MappingProxyType(
            {
                "task_workspace": "taskctx-workspace",
                "record_store": "taskctx-records",
                "skill_library": "taskctx-skills",
                "session_memory": "taskctx-memory",
                "pinned_repository": "taskctx-repo",
            }
        ),
        "file_io_handlers": MappingProxyType(
            dict.fromkeys(("pdf", "docx", "xlsx", "pptx"), "taskctx-documents")
        ),
        "index_providers": MappingProxyType({"fts": "taskctx-fts"}),
        "commands": MappingProxyType({"records": "taskctx-records"}),
        "request_filters": MappingProxyType(
            dict.fromkeys(
                ("message_integrity", "image_input", "cold_start", "video_input", "content"),
                "taskctx-conversation",
            )
        ),
        "cli_sources": MappingProxyType(
            {POSITIONAL: "taskctx-workspace", "--records": "taskctx-records"}
        ),
    }
)
"""Registry -> name -> the first-party distribution that alone may register it."""
KERNEL_NAMES: Mapping[str, frozenset[str]] = MappingProxyType(
    {"commands": frozenset({"plugins", "read", "index", "state", "inspect"})}
)
"""Names the kernel itself holds (its own ``taskctx`` commands): no plugin may register
one, whatever its tier (tests/core/test_hooks.py checks the set against ``taskctx.cli``)."""

FIRST_PARTY_DISTRIBUTIONS = frozenset(
    dist for names in FIRST_PARTY_NAMES.values() for dist in names.values()
)
"""Every first-party plugin distribution (their claims outrank a third party's)."""


class Tier(enum.IntEnum):
    """Where a plugin comes from; a lower tier wins a contested claim."""

    BUILTIN = 0
    EXPLICIT = 1  # registered in-process by the application
    FIRST_PARTY = 2
    THIRD_PARTY = 3


@attrs.frozen
class Claimant:
    """One plugin as the ownership rules see it."""

    identity: str
    """PEP 503 normalised distribution name; for an in-process plugin, its name."""
    label: str
    """How messages name it (``'acme' 1.0``)."""
    tier: Tier


def parse_names(values: Iterable[str] | str | None) -> frozenset[str]:
    """Distribution names from a comma string or an iterable, normalised; None is none."""
    if values is None:
        return frozenset()
    items = values.split(",") if isinstance(values, str) else values
    return frozenset(normalize_name(v.strip()) for v in items if v.strip())


def parse_allow(values: Iterable[str] | str | None) -> frozenset[str] | None:
    """An allow list: None (everything) stays None, else :func:`parse_names`."""
    return None if values is None else parse_names(values)


def normalize_name(name: str) -> str:
    """PEP 503 normalised distribution name (``My_Plugin`` -> ``my-plugin``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def claims(kind: str, value: Any) -> tuple[str, ...]:
    """The claim keys a registration of ``kind`` makes (already validated), sorted.

    Handlers claim their media types (``application/pdf``) and dotted suffixes
    (``.pdf``); scoped readers claim ``<scope kind>:<media type>`` pairs, or
    ``<scope kind>:text/*`` when they list no media type (they serve text then).
    """
    if kind == "file_io_handlers":
        media = {normalize_media_type(m) for m in value.media_types}
        suffixes = {"." + s.lower().lstrip(".") for s in value.suffixes}
        return tuple(sorted(media | suffixes))
    if kind == "scoped_readers":
        served = sorted({normalize_media_type(m) for m in value.media_types}) or ["text/*"]
        return tuple(sorted(f"{scope}:{m}" for scope in value.scope_kinds for m in served))
    return ()


def claimed_twice(kind: str, value: Any, others: Mapping[str, Any]) -> str:
    """The claims ``value`` shares with registrations ``others`` of the same plugin, or ''."""
    return ", ".join(
        f"{key!r} ({other!r} claims it too)"
        for key in claims(kind, value)
        for other, taken in others.items()
        if key in claims(kind, taken)
    )


def parse_choose(value: Mapping[str, str] | str | None) -> Mapping[str, str]:
    """``choose`` as a read-only mapping of key -> normalised distribution name.

    Takes a mapping or the ``key=dist,key=dist`` form of the environment variable;
    raises ValueError or TypeError naming a malformed entry.
    """
    if value is None:
        return MappingProxyType({})
    pairs: Iterable[tuple[object, object]]
    if isinstance(value, str):
        pairs = []
        for item in (part.strip() for part in value.split(",")):
            if not item:
                continue
            head, equals, tail = item.partition("=")
            if not equals:
                raise ValueError(f"choose entry {item!r} is not key=distribution")
            pairs.append((head.strip(), tail.strip()))
    elif isinstance(value, Mapping):
        pairs = value.items()
    else:
        raise TypeError(f"choose must be a mapping or a 'key=dist,...' string, not {value!r}")
    chosen: dict[str, str] = {}
    for key, dist in pairs:
        if not isinstance(key, str) or not key or not isinstance(dist, str) or not dist:
            raise ValueError(f"choose entry {key!r}: {dist!r} needs a non-empty key and name")
        chosen[key] = normalize_name(dist)
    return MappingProxyType(chosen)


def _choose_hint(key: str) -> str:
    return f"choose one with PluginHost(choose={{{key!r}: '<distribution>'}}) or {CHOOSE_ENV}"


def name_losers(
    what: str, name: str, claimants: Sequence[Claimant], choose: Mapping[str, str]
) -> dict[int, str]:
    """Index -> reason for each of ``claimants`` that may not register ``name``.

    ``what`` is the registry (``source_kinds``...). A name someone already holds never
    gets here (the host refuses it as a duplicate while staging). Everyone may lose; at
    most one claimant wins.
    """
    if name in KERNEL_NAMES.get(what, frozenset()):
        reason = f"{singular(what)} {name!r} is the kernel's own (taskctx {name})"
        return {
            index: f"{reason}; {claimant.label} may not register it"
            for index, claimant in enumerate(claimants)
        }
    chosen = choose.get(name)
    owner = chosen or FIRST_PARTY_NAMES.get(what, {}).get(name)
    losers: dict[int, str] = {}
    if owner is not None:
        why = "chosen with PluginHost(choose=...)" if chosen else "a first-party name"
        for index, claimant in enumerate(claimants):
            exempt = chosen is None and claimant.tier is Tier.EXPLICIT
            if claimant.identity != owner and not exempt:
                losers[index] = (
                    f"{singular(what)} {name!r} belongs to {owner!r} ({why}); "
                    f"{claimant.label} may not register it"
                )
    rest = [i for i in range(len(claimants)) if i not in losers]
    if len(rest) > 1:
        tied = _tie(what, name, [claimants[i] for i in rest])
        losers.update({rest[i]: reason for i, reason in tied.items()})
    return losers


def _tie(what: str, name: str, claimants: Sequence[Claimant]) -> dict[int, str]:
    labels = " and ".join(sorted(c.label for c in claimants))
    reason = (
        f"{singular(what)} {name!r} is registered by both {labels}; load order does not "
        f"decide, so neither gets it: {_choose_hint(name)}"
    )
    return dict.fromkeys(range(len(claimants)), reason)


def singular(what: str) -> str:
    """A registry's name for one of its entries (``index_providers`` -> ``index provider``)."""
    return what[:-1].replace("_", " ") if what.endswith("s") else what


def default_owner(
    key: str, claimants: Sequence[Claimant], choose: Mapping[str, str]
) -> tuple[Claimant | None, str | None]:
    """The claimant that gets claim ``key``, and why the others do not (None if no one loses).

    Built-ins first; then the distribution ``choose`` names (no one else, even alone);
    then, tier by tier, the only in-process, first-party or third-party claimant. Two
    claimants of the deciding tier leave the claim to nobody.
    """
    if not claimants:
        return None, None
    builtin = [c for c in claimants if c.tier is Tier.BUILTIN]
    if builtin:
        return builtin[0], f"{key!r} belongs to the kernel's built-in {builtin[0].label}"
    chosen = choose.get(key)
    if chosen is not None:
        winner = next((c for c in claimants if c.identity == chosen), None)
        return winner, f"{key!r} is chosen for {chosen!r} with PluginHost(choose=...)"
    best = min(c.tier for c in claimants)
    top = [c for c in claimants if c.tier is best]
    if len({c.identity for c in top}) == 1:
        if len(claimants) == len(top):
            return top[0], None
        return top[0], f"{key!r} goes to {top[0].label} ({best.name.lower().replace('_', '-')})"
    labels = " and ".join(sorted(c.label for c in top))
    return None, (
        f"{key!r} is claimed by both {labels}; load order does not decide, so neither "
        f"gets it: {_choose_hint(key)}"
    )


def refused_names(staged: Sequence[Staged], choose: Mapping[str, str]) -> dict[str, list[str]]:
    """Plugin name -> why it may not have a name it registered, over one staged batch."""
    claimants: dict[tuple[str, str], list[Staged]] = {}
    for item in staged:
        for kind, entries in item.entries.items():
            for name in entries:
                claimants.setdefault((kind, name), []).append(item)
    refused: dict[str, list[str]] = {}
    for (kind, name), items in claimants.items():
        who = [item.origin.claimant for item in items]
        for index, reason in name_losers(kind, name, who, choose).items():
            refused.setdefault(items[index].origin.plugin_name, []).append(reason)
    return refused


def unused_claims(
    registry: Mapping[str, Mapping[str, Entry]], choose: Mapping[str, str]
) -> dict[tuple[str, str], tuple[Entry, str]]:
    """(registry, name) -> (entry, why) of each handler or reader making a claim it lost.

    Once they are dropped, no two handlers share a media type or suffix and no two scoped
    readers a scope and media type, so no lookup depends on load order.
    """
    holders: dict[tuple[str, str], list[tuple[str, Entry]]] = {}
    for kind in ("file_io_handlers", "scoped_readers"):
        for name, entry in registry[kind].items():
            for key in claims(kind, entry.value):
                holders.setdefault((kind, key), []).append((name, entry))
    dropped: dict[tuple[str, str], tuple[Entry, str]] = {}
    for (kind, key), items in sorted(holders.items()):
        winner, why = default_owner(key, [e.origin.claimant for _, e in items], choose)
        if why is None:
            continue
        for name, entry in items:
            if entry.origin.claimant != winner and (kind, name) not in dropped:
                dropped[(kind, name)] = (entry, f"{singular(kind)} {name!r} is not used: {why}")
    return dropped


def lexical_default(
    providers: Mapping[str, Entry], choose: Mapping[str, str]
) -> tuple[Any | None, str | None]:
    """The default lexical provider, and why there is none when plugins tie for it.

    A plugin's before a built-in's; each plugin offers its first lexical provider, and
    ``default_owner`` picks among the plugins under the key ``default_lexical_provider``.
    """
    lexical = [e for e in providers.values() if e.value.kind == "lexical"]
    first: dict[str, Entry] = {}  # identity -> its first lexical provider
    for entry in lexical:
        if not entry.builtin:
            first.setdefault(entry.origin.claimant.identity, entry)
    if not first:
        return (lexical[0].value if lexical else None), None
    winner, why = default_owner(
        DEFAULT_LEXICAL, [e.origin.claimant for e in first.values()], choose
    )
    if winner is None:
        return None, why
    return first[winner.identity].value, None

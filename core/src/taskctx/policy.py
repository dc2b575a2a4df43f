"""Run-wide policy: which URL hosts may be contacted, and namespaced extension settings.

:class:`HostPolicy` authorises URL hosts against an allow-list; :class:`RunConfiguration`
is the frozen value shared by every consumer of a run (it owns a HostPolicy and the
namespaced ``extensions``). Rule violations raise :class:`taskctx.errors.PolicyError`,
at construction for bad rules and from ``authorize_url`` for refused URLs.
:func:`govern` puts a source under a configuration (``source.with_configuration``),
as ``TaskContext.attach`` and ``PluginHost.source(..., configuration=...)`` do.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, runtime_checkable
from urllib.parse import urlsplit

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information
from pydantic import BaseModel, Field, PrivateAttr, field_validator

from taskctx.errors import PolicyError
from taskctx.jsonsafe import check_json_depth
from taskctx.model import FrozenModel

if TYPE_CHECKING:
    from taskctx.protocols import ContextSource

__all__ = [
    "REGEX_PREFIX",
    "ConfigurableSource",
    "HostPolicy",
    "RunConfiguration",
    "govern",
    "governing_method",
]

REGEX_PREFIX = "regex:"
"""Prefix of an allow-list entry: an RE2 pattern that must fully match the normalised host."""

_HOST_NAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")
_MAX_HOST_LENGTH = 253
_TOO_LONG = f"it is longer than {_MAX_HOST_LENGTH} characters, the most a DNS name holds"
# Characters IDNA 2003 (the stdlib codec) and IDNA 2008 encode differently: sharp s,
# final sigma, ZWJ and ZWNJ. A host holding one could be checked as one name and
# resolved as another, so such hosts are refused (write the xn-- form instead).
_IDNA_DEVIATIONS = frozenset("\u00df\u03c2\u200c\u200d")
_NOT_HOST_RULES = "ports and CIDR ranges are not host rules; list the bare host"
_EXTENSION_KEY = re.compile(r"[a-z0-9_][a-z0-9_-]*(?:\.[a-z0-9_][a-z0-9_-]*)*")
_RE2_SYNTAX = (
    "allowed_hosts patterns use RE2 syntax, which has no backreferences, lookaround, "
    "possessive quantifiers or repetition counts over 1000"
)


class _HostPattern(Protocol):
    """A compiled ``regex:`` pattern (an RE2 regexp: matching is linear in the host)."""

    def fullmatch(self, text: str) -> object | None: ...


def _re2_options() -> Any:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is a PolicyError, not a line on stderr
    options.never_capture = True  # groups only group: nothing reads the submatches
    return options


_RE2_OPTIONS = _re2_options()


def _normalise_host(raw: str) -> str:
    """Canonical form of a host name or IP literal; ValueError says why it is invalid.

    Lower case, one trailing dot removed, IP literals in ``ipaddress`` form (IPv6
    compressed, no brackets), names IDNA-encoded to ASCII. What ``ipaddress`` refuses
    (``127.000.000.001``, say) is treated as a name.
    """
    if len(raw) > _MAX_HOST_LENGTH + 1:  # before any work: a hop's URL may name any host
        raise ValueError(_TOO_LONG)
    host = raw.lower()
    if host.endswith("."):
        host = host[:-1]
    if not host:
        raise ValueError("the host is empty")
    try:
        return ipaddress.ip_address(host).compressed
    except ValueError:
        pass
    if _IDNA_DEVIATIONS.intersection(host):
        raise ValueError(
            "it contains a character IDNA 2003 and IDNA 2008 encode differently "
            "(ß, ς, ZWJ or ZWNJ); write the xn-- form"
        )
    try:
        encoded = host.encode("idna").decode("ascii").lower()
    except UnicodeError as exc:
        raise ValueError(f"it is not a valid IDNA host name ({exc})") from None
    try:
        # NFKC mapping can turn a Unicode name into an IP literal (full-width digits).
        return ipaddress.ip_address(encoded).compressed
    except ValueError:
        pass
    if len(encoded) > _MAX_HOST_LENGTH:
        raise ValueError(_TOO_LONG)
    if not _HOST_NAME.fullmatch(encoded):
        raise ValueError(
            "a host name may hold only letters, digits, '-', '_' and '.' in labels of "
            f"at most 63 and {_MAX_HOST_LENGTH} in all (use {REGEX_PREFIX!r} for patterns)"
        )
    return encoded


def _refuse_entry(entry: str, reason: str) -> NoReturn:
    raise PolicyError(f"allowed_hosts entry {entry!r} is refused: {reason}")


def _normalise_entry(entry: object) -> str:
    """Canonical form of one allow-list entry; PolicyError naming the entry if invalid."""
    if not isinstance(entry, str):
        raise PolicyError(f"allowed_hosts entry {entry!r} is not a string")
    if entry.startswith(REGEX_PREFIX):
        _compile_pattern(entry)
        return entry
    if "/" in entry:
        _refuse_entry(entry, f"it looks like a CIDR range or a path; {_NOT_HOST_RULES}")
    if entry.startswith("["):
        inner, bracket, rest = entry[1:].partition("]")
        if not bracket:
            _refuse_entry(entry, "the '[' of an IPv6 literal is not closed")
        if rest:
            _refuse_entry(entry, f"text after ']' (a port?); {_NOT_HOST_RULES}")
        try:
            address = ipaddress.ip_address(inner)
        except ValueError:
            _refuse_entry(entry, "brackets must hold an IPv6 literal")
        if address.version != 6:
            _refuse_entry(entry, "brackets must hold an IPv6 literal")
        return address.compressed
    if ":" in entry:
        try:
            return ipaddress.IPv6Address(entry).compressed
        except ValueError:
            _refuse_entry(entry, f"it is not an IPv6 literal (a host:port?); {_NOT_HOST_RULES}")
    try:
        return _normalise_host(entry)
    except ValueError as exc:
        _refuse_entry(entry, str(exc))


def _compile_pattern(entry: str) -> _HostPattern:
    """Compile the pattern of a ``regex:`` entry with RE2; PolicyError if empty or invalid.

    RE2 matches in time linear in the host, whatever the pattern: ``(a+)+b`` cannot be
    made to backtrack by a host a redirect chose. What RE2 cannot guarantee that for
    (backreferences, lookaround) it refuses, and so is the entry.
    """
    pattern = entry[len(REGEX_PREFIX) :]
    if not pattern:
        _refuse_entry(entry, "the regex pattern is empty")
    try:
        compiled: _HostPattern = re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        _refuse_entry(entry, f"invalid regex ({reason}); {_RE2_SYNTAX}")
    return compiled


def _normalise_entries(value: object) -> tuple[str, ...] | None:
    """None, or the sorted, de-duplicated canonical entries of an iterable of strings."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise PolicyError(
            f"allowed_hosts must be None or an iterable of host strings, not {value!r}"
        )
    return tuple(sorted({_normalise_entry(entry) for entry in value}))


class HostPolicy(FrozenModel):
    """Which hosts URLs may name: ``None`` allows every host, an empty set none.

    Entries are host names or IP literals, matched exactly after normalisation (lower
    case, trailing dot removed, IDNA to ASCII, IP literals via ``ipaddress`` so
    ``[::0001]`` and ``::1`` are one host), or ``regex:<pattern>`` entries, in RE2
    syntax, that must match the whole normalised host (ASCII, lower case, IPv6 without
    brackets); matching takes time linear in the host, which is at most 253 characters.
    Ports and CIDR ranges are refused. ``allowed_hosts`` holds the canonical entries,
    sorted. Invalid entries raise PolicyError at construction.
    """

    allowed_hosts: tuple[str, ...] | None = None
    _exact: frozenset[str] = PrivateAttr(default_factory=frozenset)
    _patterns: tuple[_HostPattern, ...] = PrivateAttr(default=())

    def __init__(self, allowed_hosts: Iterable[str] | None = None, **data: Any) -> None:
        # BaseModel.__init__ directly: the pydantic mypy plugin types FrozenModel's as empty.
        # ``data`` only carries unknown keys (from model_validate) so they fail validation.
        BaseModel.__init__(self, allowed_hosts=allowed_hosts, **data)

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _canonical_entries(cls, value: object) -> tuple[str, ...] | None:
        return _normalise_entries(value)

    def model_post_init(self, context: Any, /) -> None:
        """Split the canonical entries into exact hosts and compiled patterns."""
        entries = self.allowed_hosts or ()
        self._exact = frozenset(e for e in entries if not e.startswith(REGEX_PREFIX))
        self._patterns = tuple(_compile_pattern(e) for e in entries if e.startswith(REGEX_PREFIX))

    @property
    def unrestricted(self) -> bool:
        """Whether every host is allowed (``allowed_hosts`` is None)."""
        return self.allowed_hosts is None

    def authorize_url(self, url: str) -> None:
        """Return None if ``url`` may be fetched, else raise PolicyError naming host and URL.

        Callers call this once per request and again for every redirect hop (with the
        hop's absolute URL). When unrestricted, every URL passes unchecked. Otherwise
        the host is what ``urllib.parse`` takes as the hostname (userinfo such as
        ``allowed.com@evil.com`` does not count); ``file:`` URLs, URLs without a host,
        malformed ports and ambiguous authorities (backslash, several ``@``,
        whitespace or control characters) are refused.
        """
        if self.allowed_hosts is None:
            return
        if not isinstance(url, str):
            raise PolicyError(f"refused URL {url!r}: not a string")
        if any(char.isspace() or not char.isprintable() for char in url):
            raise PolicyError(f"refused URL {url!r}: it holds whitespace or control characters")
        try:
            parts = urlsplit(url)
            hostname = parts.hostname
            parts.port  # noqa: B018 - validates the port
        except ValueError as exc:
            raise PolicyError(f"refused URL {url!r}: {exc}") from None
        if parts.scheme.lower() == "file":
            raise PolicyError(f"refused URL {url!r}: file URLs name no network host")
        if "\\" in parts.netloc or parts.netloc.count("@") > 1:
            raise PolicyError(f"refused URL {url!r}: ambiguous authority {parts.netloc!r}")
        if not hostname:
            raise PolicyError(f"refused URL {url!r}: it has no host")
        bracketed = parts.netloc.rpartition("@")[2].startswith("[")
        try:
            host = _normalise_host(hostname)
            if bracketed and ipaddress.ip_address(host).version != 6:
                raise ValueError("brackets must hold an IPv6 literal")
        except ValueError as exc:
            raise PolicyError(f"refused URL {url!r}: invalid host {hostname!r}: {exc}") from None
        if host in self._exact or any(p.fullmatch(host) for p in self._patterns):
            return
        raise PolicyError(f"host {host!r} of URL {url!r} is not in allowed_hosts")


class _FrozenJSONDict(dict[str, Any]):
    """A read-only, hashable JSON object (values are frozen too)."""

    def _read_only(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("configuration extensions are read-only; use extension() for a copy")

    __setitem__ = __delitem__ = _read_only
    clear = pop = popitem = setdefault = update = __ior__ = _read_only

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __reduce__(self) -> tuple[type[_FrozenJSONDict], tuple[dict[str, Any]]]:
        return (type(self), (dict(self),))

    def __copy__(self) -> _FrozenJSONDict:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> _FrozenJSONDict:
        return self


def _freeze_json(value: object, where: str, active: set[int]) -> object:
    """A frozen copy of a JSON-compatible value; PolicyError saying where it is not."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise PolicyError(f"extension value at {where} is not a finite number: {value!r}")
        return value
    if not isinstance(value, (Mapping, list, tuple)):
        raise PolicyError(
            f"extension value at {where} is not JSON-compatible: {type(value).__name__}"
        )
    if id(value) in active:
        raise PolicyError(f"extension value at {where} contains itself")
    active.add(id(value))
    try:
        if isinstance(value, Mapping):
            frozen: dict[str, object] = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise PolicyError(f"extension object at {where} has a non-string key {key!r}")
                frozen[key] = _freeze_json(item, f"{where}[{key!r}]", active)
            return _FrozenJSONDict(frozen)
        return tuple(
            _freeze_json(item, f"{where}[{index}]", active) for index, item in enumerate(value)
        )
    finally:
        active.discard(id(value))


def _thaw_json(value: object) -> object:
    """A fresh, mutable deep copy of a frozen JSON value (objects as dict, arrays as list)."""
    if isinstance(value, dict):
        return {key: _thaw_json(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [_thaw_json(item) for item in value]
    return value


def _iter_extension_items(value: object) -> Iterator[tuple[str, object]]:
    if not isinstance(value, Mapping):
        raise PolicyError(f"extensions must be a mapping, not {type(value).__name__}")
    for key, item in value.items():
        if not isinstance(key, str) or not _EXTENSION_KEY.fullmatch(key):
            raise PolicyError(
                f"extension key {key!r} is not a lower-case namespace such as 'acme' or "
                "'acme.retries' (segments of [a-z0-9_-] joined by '.')"
            )
        yield key, item


class RunConfiguration(FrozenModel):
    """Frozen run-wide settings shared by every consumer: host policy and extensions.

    ``allowed_hosts`` follows :class:`HostPolicy` (None allows every host, an empty
    iterable none). ``extensions`` maps lower-case namespace keys (``acme`` or
    ``acme.retries``) to JSON-compatible values, stored read-only; ``extension()``
    hands out independent deep copies. Rule violations (bad host entries, bad keys,
    values that are not JSON) raise PolicyError; a wrong field name or an unknown
    field raises pydantic's ValidationError.
    """

    allowed_hosts: tuple[str, ...] | None = None
    extensions: Mapping[str, Any] = Field(default_factory=_FrozenJSONDict)
    _host_policy: HostPolicy = PrivateAttr(default_factory=HostPolicy)

    def __init__(
        self,
        *,
        allowed_hosts: Iterable[str] | None = None,
        extensions: Mapping[str, Any] | None = None,
        **data: Any,
    ) -> None:
        # ``data`` only carries unknown keys (from model_validate) so they fail validation.
        BaseModel.__init__(
            self,
            allowed_hosts=allowed_hosts,
            extensions=_FrozenJSONDict() if extensions is None else extensions,
            **data,
        )

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _canonical_entries(cls, value: object) -> tuple[str, ...] | None:
        return _normalise_entries(value)

    @field_validator("extensions", mode="plain")
    @classmethod
    def _frozen_extensions(cls, value: object) -> Mapping[str, Any]:
        frozen: dict[str, object] = {}
        for key, item in _iter_extension_items(value):
            try:
                check_json_depth(item, f"extension value at {key}")
            except TypeError as exc:  # _freeze_json recurses: bound its depth first
                raise PolicyError(str(exc)) from None
            frozen[key] = _freeze_json(item, key, set())
        return _FrozenJSONDict(frozen)

    def model_post_init(self, context: Any, /) -> None:
        """Build the HostPolicy from the (already canonical) allowed hosts."""
        self._host_policy = HostPolicy(allowed_hosts=self.allowed_hosts)

    @property
    def host_policy(self) -> HostPolicy:
        """The HostPolicy built from ``allowed_hosts``."""
        return self._host_policy

    def authorize_url(self, url: str) -> None:
        """Delegate to :meth:`HostPolicy.authorize_url`: None if allowed, else PolicyError."""
        self._host_policy.authorize_url(url)

    def extension(self, namespace: str, default: Any = None) -> Any:
        """An independent deep copy of the value under ``namespace`` (``default`` if absent).

        Objects come back as dicts and arrays as lists; mutating them changes neither
        this configuration nor any other consumer's copy.
        """
        if namespace not in self.extensions:
            return default
        return _thaw_json(self.extensions[namespace])


@runtime_checkable
class ConfigurableSource(Protocol):
    """A source that puts itself under a run's configuration (optional protocol method).

    ``with_configuration(configuration)`` returns the source to attach (itself, or a
    copy that consults ``configuration``) once every host it contacted or will contact
    passes ``configuration.authorize_url``, and raises PolicyError naming the refused
    URL otherwise. It must never widen what the source was built with: a source built
    under ``allowed_hosts`` keeps obeying them as well.
    """

    kind: str

    def with_configuration(self, configuration: RunConfiguration) -> ContextSource:
        """The source governed by ``configuration`` too; PolicyError if it cannot be."""
        ...


def govern(source: ContextSource, configuration: RunConfiguration, what: str) -> ContextSource:
    """``source`` put under ``configuration``; ``what`` names it in errors (a binding).

    A source with ``with_configuration`` is asked to govern itself and must return a
    source of its own kind. A source without it is returned as is when the
    configuration allows every host; when the configuration restricts hosts it is
    refused with PolicyError, since nothing says it keeps to them (fail closed).
    """
    if not isinstance(configuration, RunConfiguration):
        raise TypeError(
            f"configuration must be a RunConfiguration, not {type(configuration).__name__}"
        )
    method = governing_method(
        source,
        configuration,
        f"{what} (kind {source.kind!r}): {type(source).__qualname__} has no "
        f"with_configuration(), so the run's allowed_hosts "
        f"{list(configuration.allowed_hosts or ())} cannot govern it; a source used "
        "under allowed_hosts must implement with_configuration (docs/writing-plugins.md)",
    )
    if method is None:
        return source
    try:
        governed = method(configuration)
    except PolicyError as exc:
        raise PolicyError(f"{what} (kind {source.kind!r}): {exc}") from exc
    if getattr(governed, "kind", None) != source.kind:
        raise TypeError(
            f"{what}: {type(source).__qualname__}.with_configuration returned {governed!r}, "
            f"not a source of kind {source.kind!r}"
        )
    result: ContextSource = governed
    return result


def governing_method(
    target: object, configuration: RunConfiguration, refusal: str
) -> Callable[[RunConfiguration], Any] | None:
    """``target``'s ``with_configuration``, the one rule of :func:`govern` for anything
    the run's configuration governs (a source, or a provider a source wraps).

    None when ``target`` has no such method and ``configuration`` allows every host: it
    is used as it is. With no such method under restricted hosts it is refused with
    ``PolicyError(refusal)``, since nothing says it keeps to them (fail closed).
    """
    method = getattr(target, "with_configuration", None)
    if callable(method):
        return method  # type: ignore[no-any-return]
    if configuration.host_policy.unrestricted:
        return None
    raise PolicyError(refusal)

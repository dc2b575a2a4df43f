"""Tests of taskctx.policy: HostPolicy URL host authorisation and RunConfiguration."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from pydantic import ValidationError

from taskctx.errors import PolicyError
from taskctx.policy import HostPolicy, RunConfiguration, governing_method

# --- unrestricted and deny-all ---------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/",
        "http://evil.com/",
        "file:///etc/passwd",
        "no host at all",
        "http://allowed.com@evil.com/",
        "ssh://git@[::1]:22/repo.git",
    ],
)
def test_none_is_unrestricted(url: str) -> None:
    """allowed_hosts=None lets every URL through, even ones without a host."""
    HostPolicy(allowed_hosts=None).authorize_url(url)
    assert HostPolicy().unrestricted
    RunConfiguration().authorize_url(url)


@pytest.mark.parametrize("empty", [[], (), set(), frozenset(), iter(())])
@pytest.mark.parametrize("url", ["https://example.com/", "http://127.0.0.1/", "http://[::1]/"])
def test_empty_allow_list_denies_all(empty: Iterable[str], url: str) -> None:
    """An empty allow-list (any empty iterable) refuses every host."""
    policy = HostPolicy(allowed_hosts=empty)
    assert policy.allowed_hosts == ()
    assert not policy.unrestricted
    with pytest.raises(PolicyError, match="not in allowed_hosts"):
        policy.authorize_url(url)


def test_single_string_is_refused() -> None:
    """A bare string is not taken as an iterable of one-character hosts."""
    with pytest.raises(PolicyError, match="iterable of host strings"):
        HostPolicy(allowed_hosts="example.com")
    with pytest.raises(PolicyError, match="iterable of host strings"):
        RunConfiguration(allowed_hosts="example.com")


@pytest.mark.parametrize("entry", [1, None, b"example.com"])
def test_non_string_entry_is_refused(entry: Any) -> None:
    """Entries that are not strings fail at construction, naming the entry."""
    with pytest.raises(PolicyError, match="is not a string"):
        HostPolicy(allowed_hosts=[entry])


# --- normalisation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "url"),
    [
        ("example.com", "https://example.com/"),
        ("Example.COM", "https://example.com/"),
        ("example.com", "https://EXAMPLE.com/path"),
        ("example.com.", "https://example.com/"),
        ("example.com", "https://example.com./"),
        ("example.com", "https://example.com:8443/x?y#z"),
        ("bücher.example", "https://xn--bcher-kva.example/"),
        ("xn--bcher-kva.example", "https://bücher.example/"),
        ("BÜCHER.example", "https://bücher.example/"),
        ("::1", "http://[::1]/"),
        ("[::1]", "http://[::0001]:8080/"),
        ("::0001", "http://[0:0:0:0:0:0:0:1]/"),
        ("2001:DB8::1", "http://[2001:db8:0::1]/"),
        ("127.0.0.1", "http://127.0.0.1:80/"),
        ("127.000.000.001", "http://127.000.000.001/"),
        ("_srv.example.com", "http://_srv.example.com/"),
    ],
)
def test_exact_entries_match_normalised_host(entry: str, url: str) -> None:
    """Case, trailing dot, IDNA and IP literal spelling do not change the host."""
    HostPolicy(allowed_hosts=[entry]).authorize_url(url)


@pytest.mark.parametrize(
    ("entry", "url"),
    [
        ("127.000.000.001", "http://127.0.0.1/"),
        ("127.0.0.1", "http://127.000.000.001/"),
        ("127.0.0.1", "http://[::ffff:127.0.0.1]/"),
        ("::1", "http://127.0.0.1/"),
        ("example.com", "https://www.example.com/"),
        ("www.example.com", "https://example.com/"),
        ("bücher.example", "https://bucher.example/"),
    ],
)
def test_different_hosts_do_not_match(entry: str, url: str) -> None:
    """Zero-padded IPv4 is a name, not 127.0.0.1; subdomains and parents differ."""
    with pytest.raises(PolicyError, match="not in allowed_hosts"):
        HostPolicy(allowed_hosts=[entry]).authorize_url(url)


@pytest.mark.parametrize(
    ("entries", "canonical"),
    [
        (["Example.com.", "example.COM"], ("example.com",)),
        (["[::0001]", "::1"], ("::1",)),
        (["bücher.example"], ("xn--bcher-kva.example",)),
        (["b.example", "a.example"], ("a.example", "b.example")),
        ([r"regex:.*\.Example"], (r"regex:.*\.Example",)),
    ],
)
def test_entries_are_stored_canonical(entries: list[str], canonical: tuple[str, ...]) -> None:
    """allowed_hosts holds normalised, de-duplicated, sorted entries (regex kept verbatim)."""
    assert HostPolicy(allowed_hosts=entries).allowed_hosts == canonical
    assert RunConfiguration(allowed_hosts=entries).allowed_hosts == canonical


@pytest.mark.parametrize(
    "entry",
    ["a..example", "-" * 64 + ".example", "", ".", "*.example.com", "exa mple.com", "a@b.com"],
)
def test_invalid_host_entries_fail(entry: str) -> None:
    """Empty labels, overlong labels, wildcards and stray characters fail at construction."""
    with pytest.raises(PolicyError, match="allowed_hosts entry"):
        HostPolicy(allowed_hosts=[entry])


@pytest.mark.parametrize("entry", ["straße.example", "ς.example", "a\u200db.example"])
def test_idna_deviation_characters_are_refused(entry: str) -> None:
    """Hosts IDNA 2003 and 2008 encode differently are refused rather than guessed."""
    with pytest.raises(PolicyError, match="IDNA 2003 and IDNA 2008"):
        HostPolicy(allowed_hosts=[entry])


# --- regex entries -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "url"),
    [
        (r"regex:example\.com", "https://example.com/"),
        (r"regex:example\.com", "https://EXAMPLE.com./"),
        (r"regex:(.+\.)?example\.com", "https://api.example.com/"),
        (r"regex:[a-z]+\.example\.com", "https://bucket.example.com/"),
        (r"regex:xn--bcher-kva\.example", "https://bücher.example/"),
        (r"regex:::1", "http://[::0001]/"),
        (r"regex:10\.0\.0\.\d+", "http://10.0.0.7/"),
    ],
)
def test_regex_fullmatches_normalised_host(entry: str, url: str) -> None:
    """A regex entry allows a URL whose normalised host it fully matches."""
    HostPolicy(allowed_hosts=[entry]).authorize_url(url)


@pytest.mark.parametrize(
    ("entry", "url"),
    [
        (r"regex:example\.com", "https://evil-example.com/"),
        (r"regex:example\.com", "https://example.com.evil.net/"),
        (r"regex:example\.com", "https://www.example.com/"),
        (r"regex:(.+\.)?example\.com", "https://example.com.evil.net/"),
        (r"regex:example", "https://example.com/"),
        (r"regex:Example\.com", "https://example.com/"),
    ],
)
def test_regex_partial_match_is_refused(entry: str, url: str) -> None:
    """A regex that only matches part of the host (or the wrong case) does not allow it."""
    with pytest.raises(PolicyError, match="not in allowed_hosts"):
        HostPolicy(allowed_hosts=[entry]).authorize_url(url)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("regex:", "regex pattern is empty"),
        ("regex:(", "invalid regex"),
        ("regex:[a-", "invalid regex"),
        ("regex:*", "invalid regex"),
    ],
)
def test_empty_or_invalid_regex_fails_at_construction(entry: str, message: str) -> None:
    """Empty and uncompilable patterns raise PolicyError naming the entry."""
    with pytest.raises(PolicyError, match=message) as info:
        HostPolicy(allowed_hosts=["ok.example", entry])
    assert repr(entry) in str(info.value)
    with pytest.raises(PolicyError, match=message):
        RunConfiguration(allowed_hosts=[entry])


# --- ports and CIDR ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry",
    [
        "example.com:80",
        "127.0.0.1:8080",
        "[::1]:80",
        "[::1]80",
        "10.0.0.0/8",
        "2001:db8::/32",
        "example.com/path",
        "localhost:",
        ":::1",
    ],
)
def test_port_and_cidr_entries_are_refused(entry: str) -> None:
    """Entries with a port or a CIDR range fail: they are not host rules."""
    with pytest.raises(PolicyError, match="not host rules") as info:
        HostPolicy(allowed_hosts=[entry])
    assert repr(entry) in str(info.value)


@pytest.mark.parametrize("entry", ["::1", "fe80::1", "2001:db8::8:800:200c:417a", "[::1]"])
def test_bare_ipv6_literal_is_accepted(entry: str) -> None:
    """IPv6 literals contain colons but are hosts, not host:port."""
    assert HostPolicy(allowed_hosts=[entry]).allowed_hosts is not None


@pytest.mark.parametrize("entry", ["[127.0.0.1]", "[example.com]", "[::1"])
def test_brackets_must_hold_ipv6(entry: str) -> None:
    """Brackets are only for (closed) IPv6 literals."""
    with pytest.raises(PolicyError, match="allowed_hosts entry"):
        HostPolicy(allowed_hosts=[entry])


# --- URL parsing -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://allowed.com@evil.com/",
        "http://allowed.com:443@evil.com/",
        "http://user:allowed.com@evil.com/",
        "https://allowed.com:pw@evil.com:443/allowed.com",
        "http://evil.com/?next=http://allowed.com/",
        "http://evil.com#@allowed.com",
        "http://evil.com/@allowed.com",
    ],
)
def test_userinfo_and_path_do_not_confuse_host(url: str) -> None:
    """The host is urllib's hostname: userinfo, path, query and fragment never count."""
    with pytest.raises(PolicyError, match=r"'evil\.com'") as info:
        HostPolicy(allowed_hosts=["allowed.com"]).authorize_url(url)
    assert repr(url) in str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        "https://user:pw@allowed.com/x",
        "ssh://git@allowed.com/org/repo.git",
        "git://allowed.com/repo",
        "ftp://allowed.com/",
        "//allowed.com/scheme-relative",
    ],
)
def test_userinfo_and_any_scheme_with_allowed_host_pass(url: str) -> None:
    """Any scheme with a host passes when the host is allowed, userinfo or not."""
    HostPolicy(allowed_hosts=["allowed.com"]).authorize_url(url)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("file:///etc/passwd", "file URLs"),
        ("file://allowed.com/etc/passwd", "file URLs"),
        ("FILE://allowed.com/x", "file URLs"),
        ("/relative/path", "no host"),
        ("allowed.com/path", "no host"),
        ("mailto:me@allowed.com", "no host"),
        ("http:///path", "no host"),
        ("http://user@:80/", "no host"),
        ("", "no host"),
        ("http://allowed.com:notaport/", "Port"),
        ("http://allowed.com:99999/", "Port"),
        ("http://[::1/", "IPv6"),
        ("http://evil.com\\@allowed.com/", "ambiguous authority"),
        ("http://a@b@allowed.com/", "ambiguous authority"),
        ("http://allowed.com /", "whitespace or control"),
        ("http://allowed.\ncom/", "whitespace or control"),
        ("http://[127.0.0.1]/", "IPv4"),
        ("http://[v1.allowed.com]/", "invalid host"),
        ("http://allowed..com/", "invalid host"),
        ("http://evil%2ecom/", "invalid host"),
        ("http://straße.allowed.com/", "IDNA 2003"),
    ],
)
def test_urls_without_a_clear_host_are_refused(url: str, message: str) -> None:
    """file:, hostless, malformed and ambiguous URLs are refused when restricted."""
    policy = HostPolicy(allowed_hosts=["allowed.com", r"regex:.*"])
    with pytest.raises(PolicyError, match=message):
        policy.authorize_url(url)


def test_refusal_names_host_and_url() -> None:
    """The PolicyError of a refused host names the normalised host and the URL."""
    url = "https://Evil.COM./x"
    with pytest.raises(PolicyError) as info:
        RunConfiguration(allowed_hosts=["good.example"]).authorize_url(url)
    assert "'evil.com'" in str(info.value)
    assert repr(url) in str(info.value)


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://a.example/", True),
        ("https://b.example/", True),
        ("https://c.example/", False),
        ("http://[::1]/", True),
        ("http://sub.a.example/", True),
        ("http://sub.c.example/", False),
    ],
)
def test_mixed_entries(url: str, allowed: bool) -> None:
    """Exact entries and patterns combine: a host passes if any one allows it."""
    policy = HostPolicy(allowed_hosts=["a.example", "B.example.", "::1", r"regex:.+\.a\.example"])
    if allowed:
        policy.authorize_url(url)
    else:
        with pytest.raises(PolicyError, match="not in allowed_hosts"):
            policy.authorize_url(url)


# --- RunConfiguration --------------------------------------------------------------------


def test_configuration_delegates_to_host_policy() -> None:
    """host_policy is the HostPolicy of allowed_hosts and authorize_url delegates to it."""
    configuration = RunConfiguration(allowed_hosts={"api.example"})
    assert configuration.host_policy == HostPolicy(allowed_hosts=["api.example"])
    configuration.authorize_url("https://api.example/v1")
    with pytest.raises(PolicyError):
        configuration.authorize_url("https://other.example/")
    assert RunConfiguration().host_policy.unrestricted


def _generator() -> Iterator[str]:
    yield "gen.example"


@pytest.mark.parametrize(
    "hosts", [["gen.example"], ("gen.example",), {"gen.example"}, frozenset({"gen.example"})]
)
def test_allowed_hosts_accepts_any_iterable(hosts: Iterable[str]) -> None:
    """Lists, tuples, sets, frozensets and generators all give the same configuration."""
    assert RunConfiguration(allowed_hosts=hosts) == RunConfiguration(allowed_hosts=_generator())


@pytest.mark.parametrize(
    "key", ["acme", "acme.retries", "acme.http.timeout", "_private", "a-b.c_d", "x1.2y"]
)
def test_valid_extension_keys(key: str) -> None:
    """Lower-case namespaces, dotted or not, are valid extension keys."""
    assert RunConfiguration(extensions={key: 1}).extension(key) == 1


@pytest.mark.parametrize(
    "key", ["", "Acme", "acme.", ".acme", "acme..x", "-acme", "acme x", "acme/x", "acme.-x", 1]
)
def test_invalid_extension_keys(key: Any) -> None:
    """Keys that are not lower-case namespaces fail with PolicyError naming the key."""
    with pytest.raises(PolicyError, match="extension key"):
        RunConfiguration(extensions={key: 1})


@pytest.mark.parametrize(
    "value",
    [
        {1, 2},
        b"bytes",
        object(),
        float("nan"),
        float("inf"),
        {"nested": {1: "non-string key"}},
        {"nested": [1, {2, 3}]},
    ],
)
def test_extension_values_must_be_json(value: Any) -> None:
    """Sets, bytes, objects, non-finite floats and non-string keys are refused."""
    with pytest.raises(PolicyError, match="extension"):
        RunConfiguration(extensions={"acme": value})


def test_cyclic_extension_value_is_refused() -> None:
    """A value that contains itself is refused instead of recursing forever."""
    cyclic: list[Any] = [1]
    cyclic.append(cyclic)
    with pytest.raises(PolicyError, match="contains itself"):
        RunConfiguration(extensions={"acme": cyclic})


@pytest.mark.parametrize(
    "value",
    [None, True, 3, 2.5, "text", [1, "a", None], {"a": {"b": [1, 2, {"c": None}]}}, {}, []],
)
def test_extension_returns_equal_value(value: Any) -> None:
    """extension() gives back the stored JSON value (arrays as lists, objects as dicts)."""
    assert RunConfiguration(extensions={"acme": value}).extension("acme") == value


def test_extension_copies_are_independent() -> None:
    """Mutating one copy changes neither the configuration nor another consumer's copy."""
    source: dict[str, Any] = {"retries": 3, "hosts": ["a"], "nested": {"deep": [1, {"x": 1}]}}
    configuration = RunConfiguration(extensions={"acme": source})
    source["retries"] = 99
    source["hosts"].append("mutated-input")
    first = configuration.extension("acme")
    second = configuration.extension("acme")
    first["retries"] = 0
    first["hosts"].append("b")
    first["nested"]["deep"][1]["x"] = 2
    first["new"] = True
    expected = {"retries": 3, "hosts": ["a"], "nested": {"deep": [1, {"x": 1}]}}
    assert second == expected
    assert configuration.extension("acme") == expected
    assert first is not second
    assert first["nested"] is not second["nested"]


def test_missing_extension_gives_default() -> None:
    """An absent namespace gives None, or the default passed."""
    configuration = RunConfiguration(extensions={"acme": 1})
    assert configuration.extension("other") is None
    assert configuration.extension("other", {}) == {}


@pytest.mark.parametrize(
    "mutate",
    [
        lambda c: c.extensions.__setitem__("acme", 2),
        lambda c: c.extensions["acme"].__setitem__("k", 2),
        lambda c: c.extensions["acme"].update(k=2),
        lambda c: c.extensions["acme"].pop("k"),
        lambda c: c.extensions.clear(),
        lambda c: c.extensions["acme"]["list"].append(3),
    ],
)
def test_stored_extensions_are_read_only(mutate: Any) -> None:
    """The stored extensions cannot be mutated in place."""
    configuration = RunConfiguration(extensions={"acme": {"k": 1, "list": [1, 2]}})
    with pytest.raises((TypeError, AttributeError)):
        mutate(configuration)
    assert configuration.extension("acme") == {"k": 1, "list": [1, 2]}


@pytest.mark.parametrize(
    ("instance", "field", "value"),
    [
        (RunConfiguration(), "allowed_hosts", ("x.example",)),
        (RunConfiguration(allowed_hosts=[]), "allowed_hosts", None),
        (RunConfiguration(), "extensions", {"acme": 1}),
        (HostPolicy(allowed_hosts=[]), "allowed_hosts", None),
    ],
)
def test_frozen(instance: Any, field: str, value: Any) -> None:
    """Assigning a field of a HostPolicy or RunConfiguration raises."""
    with pytest.raises(ValidationError, match="frozen"):
        setattr(instance, field, value)


def test_unknown_field_is_refused() -> None:
    """Unknown fields are refused, never ignored."""
    with pytest.raises(ValidationError):
        RunConfiguration.model_validate({"allowed_host": ["typo.example"]})
    with pytest.raises(ValidationError):
        RunConfiguration(allowed_host=["typo.example"])
    with pytest.raises(ValidationError):
        HostPolicy.model_validate({"allowed_hosts": None, "extra": 1})


@pytest.mark.parametrize(
    "configuration",
    [
        RunConfiguration(),
        RunConfiguration(allowed_hosts=[]),
        RunConfiguration(
            allowed_hosts=["Bücher.example.", "[::0001]", r"regex:.*\.example\.org", "10.0.0.1"],
            extensions={
                "acme": {"retries": 3, "hosts": ["a", "b"], "ratio": 0.5, "off": None},
                "acme.flag": True,
                "other": [1, [2, [3]]],
            },
        ),
    ],
)
def test_json_round_trip(configuration: RunConfiguration) -> None:
    """model_dump_json / model_validate_json gives back an equal, equally behaving value."""
    restored = RunConfiguration.model_validate_json(configuration.model_dump_json())
    assert restored == configuration
    assert restored.host_policy == configuration.host_policy
    assert restored.model_dump_json() == configuration.model_dump_json()
    for name in configuration.extensions:
        assert restored.extension(name) == configuration.extension(name)
    policy = configuration.host_policy
    assert HostPolicy.model_validate_json(policy.model_dump_json()) == policy


def test_json_with_bad_rules_raises_policy_error() -> None:
    """Validating JSON with a rule violation raises PolicyError, as construction does."""
    with pytest.raises(PolicyError, match="not host rules"):
        RunConfiguration.model_validate_json('{"allowed_hosts": ["example.com:80"]}')
    with pytest.raises(PolicyError, match="extension key"):
        RunConfiguration.model_validate_json('{"extensions": {"Bad": 1}}')


def test_configuration_is_hashable_copyable_and_picklable() -> None:
    """A configuration hashes, copies and pickles to an equal value."""
    configuration = RunConfiguration(
        allowed_hosts=["a.example"], extensions={"acme": {"k": [1, {"x": 2}]}}
    )
    assert hash(configuration) == hash(RunConfiguration.model_validate(configuration.model_dump()))
    assert copy.deepcopy(configuration) == configuration
    assert configuration.model_copy(deep=True) == configuration
    restored = pickle.loads(pickle.dumps(configuration))
    assert restored == configuration
    restored.authorize_url("https://a.example/")


class _Governed:
    """An object that governs itself: with_configuration returns a copy marked governed."""

    def __init__(self, configuration: RunConfiguration | None = None) -> None:
        self.configuration = configuration

    def with_configuration(self, configuration: RunConfiguration) -> _Governed:
        return _Governed(configuration)


class _NotCallable:
    """An object whose with_configuration is a value, not a method."""

    with_configuration = "not a method"


@pytest.mark.parametrize("hosts", [None, [], ["example.org"]])
def test_governing_method_returns_the_objects_own_method(hosts: list[str] | None) -> None:
    """An object with with_configuration is handed to it under any allowed_hosts."""
    configuration = RunConfiguration(allowed_hosts=hosts)
    method = governing_method(_Governed(), configuration, "refused")
    assert method is not None
    assert method(configuration).configuration is configuration


@pytest.mark.parametrize("target", [object(), _NotCallable(), None, 42])
def test_governing_method_needs_none_when_every_host_is_allowed(target: object) -> None:
    """Without a callable with_configuration and no allowed_hosts, nothing governs it."""
    assert governing_method(target, RunConfiguration(), "refused") is None


@pytest.mark.parametrize("target", [object(), _NotCallable(), None, 42])
@pytest.mark.parametrize("hosts", [[], ["example.org"]])
def test_governing_method_fails_closed_under_restricted_hosts(
    target: object, hosts: list[str]
) -> None:
    """Without a callable with_configuration under allowed_hosts: PolicyError, the refusal."""
    with pytest.raises(PolicyError, match=r"^provider p cannot be governed$"):
        governing_method(
            target, RunConfiguration(allowed_hosts=hosts), "provider p cannot be governed"
        )

"""``regex:`` allow-list entries: RE2 syntax, linear-time matching, bounded host length."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest

from taskctx.errors import PolicyError
from taskctx.policy import HostPolicy, RunConfiguration

# Patterns that make a backtracking engine take exponential (or high-polynomial) time on
# a host that almost matches, each with hosts a redirect hop could name.
CATASTROPHIC = (
    r"(a+)+b",
    r"(a|aa)+b",
    r"(a|a?)+b",
    r"((a*)*)*b",
    r"(.*a){20}",
    r"(x+x+)+y",
    r"(\w+\.?)+\.example\.com",
    r"([a-z0-9-]+\.)*[a-z0-9-]+\.corp\.internal",
    r"((a|b|c|d|e|f){0,99}){9}z",
    r"(.?){999}(.?){999}b",
)
ADVERSARIAL_HOSTS = (
    "a" * 40,
    "x" * 40,
    "a" * 19 + "b" * 40,
    "a" * 63 + "." + "a" * 63 + "." + "a" * 63 + "." + "a" * 61,  # 253 characters
    ".".join(["a"] * 127),  # 253 characters of one-letter labels
    "a" * 60 + ".example.co",
)


def test_catastrophic_patterns_match_fast_on_adversarial_hosts() -> None:
    """Every classic catastrophic pattern decides every adversarial host in milliseconds.

    The checks run in a child process with a deadline: a backtracking engine would hang
    it (``(a+)+b`` on 40 a's alone takes hours), which then fails this test.
    """
    child = textwrap.dedent(
        f"""
        import json, time
        from taskctx.errors import PolicyError
        from taskctx.policy import RunConfiguration
        slowest = {{}}
        for pattern in {CATASTROPHIC!r}:
            config = RunConfiguration(allowed_hosts=["regex:" + pattern])
            for host in {ADVERSARIAL_HOSTS!r}:
                start = time.perf_counter()
                try:
                    config.authorize_url(f"https://{{host}}/repo.git")
                except PolicyError:
                    pass
                elapsed = time.perf_counter() - start
                slowest[pattern] = max(slowest.get(pattern, 0.0), elapsed)
        print(json.dumps(slowest))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    slowest = json.loads(done.stdout)
    assert set(slowest) == set(CATASTROPHIC)
    assert max(slowest.values()) < 0.5, slowest


@pytest.mark.parametrize(
    ("entry", "url"),
    [
        (r"regex:(a+)+b", "https://aaab/"),
        (r"regex:(a|aa)+b\.example", "https://aaaab.example/"),
        (r"regex:(?i)EXAMPLE\.com", "https://example.com/"),
        (r"regex:(?P<name>[a-z]+)\.example\.com", "https://bucket.example.com/"),
        (r"regex:^(api|www)\.example\.org$", "https://www.example.org/"),
        (r"regex:[[:alpha:]]+\.test", "https://abc.test/"),
        (r"regex:\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}", "http://192.168.1.20/"),
        (r"regex:([a-z0-9-]+\.)*corp\.internal", "https://a.b-2.corp.internal/"),
        (r"regex:fd00:.*", "http://[fd00::1]/"),
        (r"regex:.*\.example\.com\z", "https://deep.sub.example.com/"),
    ],
)
def test_re2_patterns_match_as_documented(entry: str, url: str) -> None:
    """Patterns in RE2 syntax, catastrophic-looking ones included, still allow their hosts."""
    RunConfiguration(allowed_hosts=[entry]).authorize_url(url)


@pytest.mark.parametrize(
    ("entry", "url"),
    [
        (r"regex:(a+)+b", "https://aaab.evil.net/"),
        (r"regex:.*\.example\.com\z", "https://example.com.evil.net/"),
        (r"regex:^(api|www)\.example\.org$", "https://api.example.org.evil/"),
        (r"regex:(?P<name>[a-z]+)\.example\.com", "https://a.b.example.com/"),
    ],
)
def test_re2_patterns_still_match_the_whole_host(entry: str, url: str) -> None:
    """An RE2 pattern allows only hosts it matches from the first to the last character."""
    with pytest.raises(PolicyError, match="not in allowed_hosts"):
        RunConfiguration(allowed_hosts=[entry]).authorize_url(url)


@pytest.mark.parametrize(
    "pattern",
    [
        r"(a)\1",  # backreference
        r"(?P<x>a)(?P=x)",  # named backreference
        r"(?=api\.)[a-z.]+",  # lookahead
        r"(?!evil)[a-z]+\.com",  # negative lookahead
        r"[a-z]+(?<=corp)\.com",  # lookbehind
        r"[a-z]+(?<!evil)\.com",  # negative lookbehind
        r"a++\.com",  # possessive quantifier
        r"(?>a+)\.com",  # atomic group
        r"(a)?(?(1)b|c)",  # conditional
        r"example\.com\Z",  # Python's \Z (RE2 spells it \z)
        r"a{1001}",  # repetition count over 1000
        r"(?#comment)example\.com",  # inline comment
    ],
)
def test_unsupported_syntax_is_refused_at_construction(
    pattern: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """Constructs RE2 cannot run in linear time are refused when the configuration is made,
    naming the entry and the dialect, and nothing is logged on stderr."""
    entry = "regex:" + pattern
    with pytest.raises(PolicyError, match="invalid regex") as info:
        RunConfiguration(allowed_hosts=["ok.example", entry])
    message = str(info.value)
    assert repr(entry) in message
    assert "RE2 syntax" in message
    with pytest.raises(PolicyError, match="RE2 syntax"):
        HostPolicy(allowed_hosts=[entry])
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize(
    "host",
    [
        ("a" * 50 + ".") * 5 + "a",  # 256 characters
        ("a" * 63 + ".") * 4 + "com",  # 259 characters
        "a" * 100_000,
        "a." * 50_000 + "com",
        "bücher." * 40 + "example",  # IDNA-encodes past 253
    ],
)
def test_hosts_longer_than_a_dns_name_are_refused_before_matching(host: str) -> None:
    """A URL host over 253 characters (254 with the root dot) is refused quickly by length."""
    policy = RunConfiguration(allowed_hosts=[r"regex:.*", "example.com"])
    start = time.perf_counter()
    with pytest.raises(PolicyError, match="longer than 253 characters"):
        policy.authorize_url(f"https://{host}/")
    assert time.perf_counter() - start < 0.5


def test_longest_dns_name_is_still_allowed() -> None:
    """A 253-character host, and the same with the root dot, still match a regex entry."""
    host = "a" * 63 + "." + "b" * 63 + "." + "c" * 63 + "." + "d" * 61
    assert len(host) == 253
    policy = RunConfiguration(allowed_hosts=[r"regex:([a-d]+\.)+d+"])
    policy.authorize_url(f"https://{host}/")
    policy.authorize_url(f"https://{host}./")


def test_overlong_exact_entry_is_refused() -> None:
    """An allow-list entry longer than a DNS name is refused at construction."""
    with pytest.raises(PolicyError, match="longer than 253 characters"):
        RunConfiguration(allowed_hosts=["a" * 300])

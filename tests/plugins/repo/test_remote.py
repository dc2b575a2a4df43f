"""Remote repositories: cloned over real smart HTTP only through authorised URLs and hops,
and governed by the configuration of every TaskContext they are attached to."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner
from taskctx_repo import PinnedRepository, RepoSource
from taskctx_repo.errors import GitError
from taskctx_repo.remote import MAX_REDIRECTS, is_remote

from taskctx import PluginHost, RunConfiguration, TaskContext
from taskctx.cli import main
from taskctx.errors import PolicyError
from tests.plugins.repo.conftest import FILES, Project, commit_all, git, write_files


@attrs.define
class Served:
    """One HTTP server on 127.0.0.1: its port and every request it received."""

    server: GitHttpServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        """The port the server listens on."""
        return int(self.server.server_address[1])

    @property
    def base(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[str]:
        """``METHOD path`` of every request so far."""
        with self.server.lock:
            return list(self.server.requests)


class GitHttpServer(ThreadingHTTPServer):
    """Serves ``git http-backend`` for the repositories under ``root``, or redirects."""

    daemon_threads = True

    def __init__(self, root: Path | None, redirect_to: str | None) -> None:
        super().__init__(("127.0.0.1", 0), GitHttpHandler)
        self.root = root
        self.redirect_to = redirect_to
        self.requests: list[str] = []
        self.lock = threading.Lock()


class GitHttpHandler(BaseHTTPRequestHandler):
    """A tiny CGI bridge to ``git http-backend`` (or a 302 when the server redirects)."""

    server: GitHttpServer

    def do_GET(self) -> None:
        """Serve or redirect a GET."""
        self._serve()

    def do_POST(self) -> None:
        """Serve or redirect a POST."""
        self._serve()

    def log_message(self, format: str, *args: object) -> None:
        """Keep the test output quiet."""

    def _serve(self) -> None:
        with self.server.lock:
            self.server.requests.append(f"{self.command} {self.path}")
        if self.server.redirect_to is not None:
            self.send_response(302)
            self.send_header("Location", self.server.redirect_to + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        assert self.server.root is not None
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path, _, query = self.path.partition("?")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.server.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            "REMOTE_ADDR": self.client_address[0],
        }
        done = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
        )
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


ServeFactory = Callable[..., Served]


@pytest.fixture
def serve() -> Iterator[ServeFactory]:
    """``serve(root=None, redirect_to=None)``: a server in a daemon thread, shut at teardown."""
    started: list[Served] = []

    def start(root: Path | None = None, redirect_to: str | None = None) -> Served:
        server = GitHttpServer(root, redirect_to)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        served = Served(server, thread)
        started.append(served)
        return served

    yield start
    for served in started:
        served.server.shutdown()
        served.server.server_close()
        served.thread.join(timeout=10)


@pytest.fixture
def published(project: Project, tmp_path: Path) -> Path:
    """A folder of served repositories holding a bare clone of the project as ``repo.git``."""
    root = tmp_path / "served"
    root.mkdir()
    git(root, "clone", "-q", "--bare", str(project.path), "repo.git")
    return root


@pytest.fixture
def host() -> PluginHost:
    """A host that loads no entry-point plugin."""
    return PluginHost(allow=[])


PinFactory = Callable[..., PinnedRepository]


@pytest.fixture
def pin(tmp_path: Path, host: PluginHost) -> PinFactory:
    """``pin(url, commit, *allowed_hosts)``: a PinnedRepository cached in ``tmp_path/cache``
    under a configuration allowing those hosts, on the ``host`` fixture."""

    def make(url: str, commit: str, *allowed_hosts: str) -> PinnedRepository:
        configuration = RunConfiguration(allowed_hosts=list(allowed_hosts))
        return PinnedRepository(
            url, commit, configuration=configuration, cache_dir=tmp_path / "cache", host=host
        )

    return make


def test_is_remote_only_for_http_urls() -> None:
    """http(s) URLs are remote; paths, file:, ssh and git URLs are not treated as remote."""
    assert is_remote("http://example.org/r.git")
    assert is_remote("HTTPS://example.org/r.git")
    for location in ("./checkout", "/srv/r.git", "file:///srv/r.git", "ssh://h/r", "git@h:r"):
        assert not is_remote(location)


def test_an_allowed_host_is_cloned_and_read(
    published: Path, project: Project, tmp_path: Path, serve: ServeFactory, pin: PinFactory
) -> None:
    """With 127.0.0.1 allowed the repository is cloned into cache_dir and its commit read."""
    server = serve(published)
    cache = tmp_path / "cache"
    url = f"{server.base}/repo.git"
    with pin(url, project.first, "127.0.0.1") as repo:
        assert repo.commit == project.first
        assert repo.list_files() == sorted(FILES)
        assert repo.read_text("docs/guide.md") == FILES["docs/guide.md"]
        assert repo.git_dir.parent == cache
        assert repo.location == url
    assert any(r.startswith("GET /repo.git/info/refs") for r in server.requests)


def test_a_denied_host_is_refused_before_any_request(
    published: Path, project: Project, tmp_path: Path, serve: ServeFactory, pin: PinFactory
) -> None:
    """With only example.org allowed, PolicyError is raised and the server sees no request."""
    server = serve(published)
    cache = tmp_path / "cache"
    with pytest.raises(PolicyError, match=r"127\.0\.0\.1"):
        pin(f"{server.base}/repo.git", project.first, "example.org")
    assert server.requests == []
    assert not cache.exists() or not any(cache.iterdir())


def test_the_factory_takes_allowed_hosts(
    published: Path, project: Project, tmp_path: Path, serve: ServeFactory
) -> None:
    """``host.source("pinned_repository", allowed_hosts=...)`` authorises like a configuration."""
    server = serve(published)
    host = PluginHost(allow=["taskctx-repo"])
    url = f"{server.base}/repo.git"
    with pytest.raises(PolicyError):
        host.source("pinned_repository", location=url, allowed_hosts="example.org+example.com")
    assert server.requests == []
    source = host.source(
        "pinned_repository",
        location=url,
        commit=project.first,
        paths="docs/**",
        cache_dir=str(tmp_path / "cache"),
        allowed_hosts="example.org+127.0.0.1",
    )
    assert isinstance(source, RepoSource)
    try:
        assert source.repository.list_files() == ["docs/api/reference.md", "docs/guide.md"]
    finally:
        source.repository.close()


def test_a_redirect_to_a_denied_host_is_refused(
    published: Path, project: Project, tmp_path: Path, serve: ServeFactory, pin: PinFactory
) -> None:
    """A 302 from an allowed host to a denied one raises PolicyError; the target gets nothing."""
    target = serve(published)
    hop = serve(redirect_to=f"http://localhost:{target.port}")
    with pytest.raises(PolicyError, match="localhost"):
        pin(f"{hop.base}/repo.git", project.first, "127.0.0.1")
    assert len(hop.requests) == 1
    assert target.requests == []


def test_a_redirect_to_an_allowed_host_is_followed(
    published: Path, project: Project, tmp_path: Path, serve: ServeFactory, pin: PinFactory
) -> None:
    """A 302 to an allowed host is authorised hop by hop; git then clones the final URL."""
    target = serve(published)
    hop = serve(redirect_to=target.base)
    with pin(f"{hop.base}/repo.git", project.first, "127.0.0.1") as repo:
        assert repo.read_text("notes.txt") == FILES["notes.txt"]
    assert hop.requests == ["GET /repo.git/info/refs?service=git-upload-pack"]
    assert target.requests, "git cloned from the redirect target"


def test_endless_redirects_are_refused(
    published: Path, project: Project, tmp_path: Path, serve: ServeFactory, pin: PinFactory
) -> None:
    """A server redirecting to itself is followed at most MAX_REDIRECTS times."""
    loop = serve()
    loop.server.redirect_to = loop.base
    with pytest.raises(PolicyError, match="redirected more than"):
        pin(f"{loop.base}/repo.git", project.first, "127.0.0.1")
    assert len(loop.requests) == MAX_REDIRECTS + 1


def test_a_later_commit_is_fetched_into_the_cached_clone(
    published: Path, project: Project, tmp_path: Path, serve: ServeFactory, pin: PinFactory
) -> None:
    """A commit pushed after the first clone is fetched into the same cache, by id."""
    server = serve(published)
    cache = tmp_path / "cache"
    url = f"{server.base}/repo.git"
    with pin(url, project.first, "127.0.0.1") as first:
        first_dir = first.git_dir
    write_files(project.path, {"notes.txt": "pushed later\n"})
    second = commit_all(project.path, "second")
    git(project.path, "push", "-q", str(published / "repo.git"), "main")
    with pin(url, second, "127.0.0.1") as repo:
        assert repo.git_dir == first_dir
        assert repo.commit == second
        assert repo.read_text("notes.txt") == "pushed later\n"
    assert [p.name for p in cache.iterdir()] == [first_dir.name]


def test_a_branch_name_resolves_to_the_remote_branch_now(
    published: Path, project: Project, tmp_path: Path, serve: ServeFactory, pin: PinFactory
) -> None:
    """Pinning ``main`` of a remote after a push pins the pushed commit, not the cached one."""
    server = serve(published)
    url = f"{server.base}/repo.git"
    with pin(url, "main", "127.0.0.1"):
        pass
    write_files(project.path, {"notes.txt": "pushed later\n"})
    second = commit_all(project.path, "second")
    git(project.path, "push", "-q", str(published / "repo.git"), "main")
    with pin(url, "main", "127.0.0.1") as repo:
        assert repo.commit == second


# -- the run configuration governs every pinned repository (issue 14 §5) --------------------


def restricted_context(tmp_path: Path, host: PluginHost, *hosts: str) -> TaskContext:
    """A TaskContext allowing only ``hosts``."""
    configuration = RunConfiguration(allowed_hosts=hosts)
    return TaskContext(
        "pinned", host=host, state_dir=tmp_path / "state", configuration=configuration
    )


def test_a_context_refuses_a_repository_cloned_from_another_host(
    published: Path, project: Project, tmp_path: Path, serve: ServeFactory, host: PluginHost
) -> None:
    """A repository cloned without configuration is refused by a context allowing example.org."""
    server = serve(published)
    url = f"{server.base}/repo.git"
    with PinnedRepository(url, project.first, cache_dir=tmp_path / "cache", host=host) as repo:
        ctx = restricted_context(tmp_path, host, "example.org")
        with pytest.raises(PolicyError) as caught:
            ctx.attach(repo.source(), binding_id="upstream")
        assert "binding 'upstream' (kind 'pinned_repository')" in str(caught.value)
        assert "127.0.0.1" in str(caught.value)
        assert ctx.bindings == {}
        allowed = restricted_context(tmp_path, host, "127.0.0.1")
        assert allowed.attach(repo.source(), binding_id="upstream") == "upstream"


def test_a_context_checks_every_redirect_the_repository_followed(
    published: Path,
    project: Project,
    tmp_path: Path,
    serve: ServeFactory,
    host: PluginHost,
    pin: PinFactory,
) -> None:
    """A repository redirected to localhost is refused by a context allowing only 127.0.0.1."""
    target = serve(published)
    hop = serve(redirect_to=f"http://localhost:{target.port}")
    with pin(f"{hop.base}/repo.git", project.first, "127.0.0.1", "localhost") as repo:
        assert repo.contacted == (
            f"{hop.base}/repo.git",
            f"http://localhost:{target.port}/repo.git",
        )
        ctx = restricted_context(tmp_path, host, "127.0.0.1")
        with pytest.raises(PolicyError, match=r"localhost.*a redirect of"):
            ctx.attach(repo.source())
        assert ctx.bindings == {}


def test_ctx_source_clones_only_from_hosts_the_context_allows(
    published: Path, project: Project, tmp_path: Path, serve: ServeFactory
) -> None:
    """ctx.source("pinned_repository", ...) fails closed before any request to a denied host."""
    server = serve(published)
    host = PluginHost(allow=["taskctx-repo"])
    url = f"{server.base}/repo.git"
    options = {"location": url, "commit": project.first, "cache_dir": str(tmp_path / "cache")}
    denied = restricted_context(tmp_path, host, "example.org")
    with pytest.raises(PolicyError, match=r"127\.0\.0\.1"):
        denied.source("pinned_repository", **options)
    with pytest.raises(PolicyError, match=r"127\.0\.0\.1"):
        host.source("pinned_repository", configuration=denied.configuration, **options)
    assert server.requests == []
    allowed = restricted_context(tmp_path, host, "127.0.0.1")
    source = allowed.source("pinned_repository", paths="docs/**", **options)
    assert isinstance(source, RepoSource)
    try:
        assert source.repository.configuration is allowed.configuration
        allowed.attach(source, binding_id="docs")
        assert source.repository.list_files() == ["docs/api/reference.md", "docs/guide.md"]
    finally:
        source.repository.close()


def test_allowed_hosts_narrow_but_never_meet_a_restricted_configuration(
    published: Path, project: Project, tmp_path: Path, serve: ServeFactory
) -> None:
    """allowed_hosts narrow an unrestricted context; with a restricted one they are refused."""
    server = serve(published)
    host = PluginHost(allow=["taskctx-repo"])
    url = f"{server.base}/repo.git"
    open_ctx = TaskContext("pinned", host=host, state_dir=tmp_path / "state")
    with pytest.raises(PolicyError, match=r"127\.0\.0\.1"):
        open_ctx.source("pinned_repository", location=url, allowed_hosts="example.org")
    restricted = restricted_context(tmp_path, host, "127.0.0.1")
    with pytest.raises(PolicyError, match="give the hosts once"):
        restricted.source("pinned_repository", location=url, allowed_hosts="127.0.0.1")
    assert server.requests == []


def test_local_paths_and_file_urls_contact_no_host(
    project: Project, tmp_path: Path, host: PluginHost
) -> None:
    """A local path or file: URL is read in place under any allowed_hosts, even none."""
    for hosts in (("example.org",), ()):
        ctx = restricted_context(tmp_path, host, *hosts)
        for location in (str(project.path), project.path.as_uri()):
            repo = PinnedRepository(location, project.first, host=host)
            try:
                assert repo.contacted == ()
                ctx.attach(repo.source(), binding_id="local")
                assert repo.read_text("notes.txt") == FILES["notes.txt"]
                ctx.remove("local")
            finally:
                repo.close()


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("file://fileserver/srv/repo.git", "must name a local path"),
        ("file:///srv/repo.git?x=1", "must name a local path"),
        ("ssh://git.example.org/repo.git", "http or https only, not 'ssh'"),
        ("git://git.example.org/repo.git", "http or https only, not 'git'"),
    ],
)
def test_other_transports_are_refused(
    location: str, message: str, tmp_path: Path, host: PluginHost
) -> None:
    """file: URLs of another host and ssh or git URLs raise PolicyError naming the location."""
    with pytest.raises(PolicyError, match=message) as caught:
        PinnedRepository(location, "HEAD", cache_dir=tmp_path / "cache", host=host)
    assert location in str(caught.value)


def test_a_local_partial_clone_never_fetches_lazily(
    published: Path, project: Project, tmp_path: Path, serve: ServeFactory, host: PluginHost
) -> None:
    """Reading a blob-less partial clone fails instead of fetching from its promisor remote."""
    git(published / "repo.git", "config", "uploadpack.allowFilter", "true")
    server = serve(published)
    partial = tmp_path / "partial.git"
    git(
        tmp_path,
        "clone",
        "-q",
        "--bare",
        "--filter=blob:none",
        f"{server.base}/repo.git",
        str(partial),
    )
    before = len(server.requests)
    ctx = restricted_context(tmp_path, host, "example.org")
    with PinnedRepository(partial, project.first, host=host) as repo:
        ctx.attach(repo.source())
        with pytest.raises(GitError):
            repo.read_text("notes.txt")
    assert len(server.requests) == before


def test_the_cli_allow_host_option_governs_pinned_repositories(
    published: Path,
    project: Project,
    tmp_path: Path,
    serve: ServeFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``taskctx read --allow-host example.org --source pinned_repository:...`` fails closed."""
    server = serve(published)
    monkeypatch.setenv("TASKCTX_LOAD_PLUGINS", "taskctx-repo")
    monkeypatch.setenv("TASKCTX_STATE_DIR", str(tmp_path / "state"))
    spec = f"pinned_repository:location={server.base}/repo.git,cache_dir={tmp_path / 'cache'}"
    runner = CliRunner()
    denied = runner.invoke(main, ["read", "--allow-host", "example.org", "--source", spec])
    assert denied.exit_code == 1
    assert "not in allowed_hosts" in denied.output
    assert server.requests == []
    allowed = runner.invoke(
        main, ["read", "--allow-host", "127.0.0.1", "--source", spec, "-q", "upload"]
    )
    assert allowed.exit_code == 0, allowed.output
    assert "pinned_repository" in allowed.output

"""Opening a PostgreSQL record store: the seam, errors that name what is wrong, identity."""

from __future__ import annotations

import socket
from pathlib import Path

import psycopg
import pytest
from taskctx_postgres.backend import PostgresBackend
from taskctx_postgres.schema import SCHEMA_VERSION
from taskctx_records import RecordStore, RecordStoreError, RecordStoreUnavailableError
from taskctx_records.backends import backend_openers

from taskctx import PluginHost
from taskctx.errors import CursorError, NotFoundError

pytestmark = pytest.mark.postgres


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _tables(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
        ).fetchall()
    return [row[0] for row in rows]


def test_a_url_opens_the_postgres_backend(pg_database: str) -> None:
    """RecordStore(url) is the same API on PostgreSQL; its location hides no secret and
    needs no local database file."""
    with RecordStore(pg_database) as store:
        assert isinstance(store.backend, PostgresBackend)
        ref = store.put({"status": "ok"}, collection="c", scope={"task": "t"})
        assert store.get(ref.id).content == {"status": "ok"}
        assert store.location == pg_database
        assert repr(store) == f"RecordStore({pg_database!r}, mode='read_write')"
        assert not (store.root / ".taskctx" / "records" / "records.db").exists()
        with pytest.raises(AttributeError, match="is not SQLite"):
            _ = store.path
    assert _tables(pg_database) == [
        "checkpoints", "events", "links", "record_scope", "records", "snapshots", "store_state",
    ]  # fmt: skip


def test_the_plugin_registers_both_libpq_schemes() -> None:
    """postgresql:// and postgres:// go to this backend, through the host's plugins."""
    openers = backend_openers(PluginHost(allow=["taskctx-records", "taskctx-postgres"]))
    assert {"postgresql", "postgres"} <= set(openers)


def test_a_host_that_does_not_allow_the_plugin_names_the_scheme(pg_database: str) -> None:
    """A URL with no allowed backend is a ValueError naming the scheme and the plugin."""
    with pytest.raises(ValueError, match=r"no record store backend for postgresql:// URLs"):
        RecordStore(pg_database, host=PluginHost(allow=["taskctx-records"]))
    with pytest.raises(ValueError, match=r"mysql:// URLs \(registered: postgres, postgresql\)"):
        RecordStore("mysql://u@h/db", host=PluginHost(allow=["taskctx-postgres"]))


def test_a_server_that_does_not_answer_is_named_without_the_password() -> None:
    """A DSN that does not connect raises RecordStoreUnavailableError naming host, port and
    database; the password appears nowhere, not in the message nor in its causes."""
    port = _closed_port()
    url = f"postgresql://ann:s3cret-pw@127.0.0.1:{port}/teamdb"
    with pytest.raises(RecordStoreUnavailableError) as caught:
        RecordStore(url)
    message = str(caught.value)
    assert f"127.0.0.1:{port}" in message
    assert "'teamdb'" in message
    assert "cannot connect" in message
    assert "s3cret" not in message
    assert "s3cret" not in repr(caught.value.__cause__) + repr(caught.value.__context__)
    assert isinstance(caught.value, RecordStoreError)


def test_a_password_in_the_query_string_is_scrubbed_too() -> None:
    """libpq also takes ``?password=``: it is kept out of messages and locations as well."""
    port = _closed_port()
    url = f"postgresql://ann@127.0.0.1:{port}/teamdb?password=s3cret-pw&connect_timeout=2"
    with pytest.raises(RecordStoreUnavailableError) as caught:
        RecordStore(url)
    assert "s3cret" not in str(caught.value)


def test_a_malformed_url_is_a_value_error_without_the_password() -> None:
    """A URL libpq cannot parse is a ValueError that says so (and hides the password)."""
    with pytest.raises(ValueError, match="not a PostgreSQL URL") as caught:
        RecordStore("postgresql://u:pw-secret@[::1/db")
    assert "pw-secret" not in str(caught.value)


def test_a_port_that_is_not_a_number_is_named() -> None:
    """libpq parses any port text; connecting names it, without the password."""
    with pytest.raises(RecordStoreUnavailableError, match=r"at 127\.0\.0\.1:notaport") as caught:
        RecordStore("postgresql://u:pw-secret@127.0.0.1:notaport/db")
    assert "pw-secret" not in str(caught.value)


def test_read_only_over_an_empty_database_creates_nothing(pg_database: str) -> None:
    """mode='read_only' on a database without a store is NotFoundError, and no table is made."""
    with pytest.raises(NotFoundError, match="read_only does not create one"):
        RecordStore(pg_database, mode="read_only")
    assert _tables(pg_database) == []


def test_a_newer_schema_is_refused(pg_database: str) -> None:
    """A database migrated by a newer taskctx-postgres is refused, naming both versions."""
    RecordStore(pg_database).close()
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("UPDATE store_state SET schema_version = %s", (SCHEMA_VERSION + 1,))
    with pytest.raises(RecordStoreError, match=rf"schema version {SCHEMA_VERSION + 1}, newer"):
        RecordStore(pg_database)


def test_concurrent_first_opens_make_one_store(pg_database: str) -> None:
    """Stores opened at once on an empty database agree on one store id."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(6) as pool:
        stores = list(pool.map(lambda _: RecordStore(pg_database), range(6)))
    assert len({store.store_id for store in stores}) == 1
    for store in stores:
        store.close()


def test_every_address_of_one_database_is_one_store(
    pg_database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another host name for the same server (another machine's view of it) opens the same
    store: same identity, and a cursor issued by one continues on the other, even with
    another state folder, because the cursor key lives in the database."""
    first = RecordStore(pg_database)
    first.put_many([{"content": f"r{n}", "collection": "c"} for n in range(30)])
    page = first.query(collection="c", page_size=10)
    assert page.cursor is not None
    monkeypatch.setenv("TASKCTX_STATE_DIR", str(tmp_path / "machine-b"))
    other = RecordStore(pg_database.replace("127.0.0.1", "localhost"), mode="read_only")
    assert other.backend.identity == first.backend.identity == f"postgresql:{first.store_id}"
    assert other.root != first.root
    second = other.query_continue(page.cursor)
    assert second.records[0].id > page.records[-1].id
    tampered = page.cursor[:-4] + ("AAAA" if not page.cursor.endswith("AAAA") else "BBBB")
    with pytest.raises(CursorError):
        other.query_continue(tampered)


def test_text_postgres_cannot_hold_is_refused_and_nothing_is_written(pg_database: str) -> None:
    """A NUL character in an id or collection (text PostgreSQL cannot store) is a
    RecordStoreError saying so; the store is unchanged and writes normally afterwards."""
    store = RecordStore(pg_database)
    store.put("first", collection="c")
    for arguments in ({"collection": "c\x00d"}, {"collection": "c", "record_id": "a\x00b"}):
        with pytest.raises(RecordStoreError, match="NUL"):
            store.put("x", **arguments)  # type: ignore[arg-type]
    assert store.revision == 1
    assert store.query(collection="c").coverage.considered == 1
    assert store.put("after", collection="c").revision == 2
    # content is bytes in the database: NUL inside text content is kept whole
    ref = store.put("a\x00b", collection="c")
    assert store.get(ref.id).content == "a\x00b"


def test_database_errors_do_not_leak(pg_database: str) -> None:
    """A closed store's operations are RecordStoreErrors, never raw psycopg errors."""
    store = RecordStore(pg_database)
    store.close()
    with pytest.raises(RecordStoreError) as caught:
        store.put("x", collection="c")
    assert not isinstance(caught.value, psycopg.Error)


def test_json_filters_skip_text_content_and_take_any_key(pg_database: str) -> None:
    """A content filter over a collection of text and JSON records matches the JSON ones
    (text content is never parsed as JSON), and a key may hold a backslash."""
    store = RecordStore(pg_database)
    store.put("plain text, not JSON {", collection="c")
    json_ref = store.put({"status": "failed", "back\\slash": 1}, collection="c")
    store.put({"status": "ok"}, collection="c")
    store.put(b"\xff\xfe bytes", collection="c")
    found = store.query(collection="c", filters={"content.status": "failed"}).records
    assert [record.id for record in found] == [json_ref.id]
    odd = store.query(collection="c", filters={"content.back\\slash": 1}).records
    assert [record.id for record in odd] == [json_ref.id]

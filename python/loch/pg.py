"""Catalogs behind ``loch serve --pg`` (docs/pg.md): the server checks who
may read what, and the bulk bytes come straight from storage.

:func:`loch.connect` with a ``postgresql://`` URL returns a
:class:`RemoteCatalog`. :meth:`RemoteCatalog.open_table` asks the server
for a table's storage URL and version (``loch_table_url``, refused unless
the user's role may read the table at that ref) and opens that version
with :func:`loch.open`, so loaders stream it from storage with the
client's own storage credentials; the server hands out no credentials.

    >>> import loch
    >>> cat = loch.connect("postgresql://bob@db.example:5433/lake")  # doctest: +SKIP
    >>> frames = cat.open_table("frames")  # doctest: +SKIP
    >>> loader = frames.pytorch(batch_size=64)  # doctest: +SKIP

The password comes from the URL, ``PGPASSWORD`` or ``~/.pgpass``, as libpq
reads them. Needs psycopg 3 (``pip install "psycopg[binary]"``).
"""

from __future__ import annotations

from typing import Any

from .dataset import Dataset
from .dataset import open as open_dataset
from .errors import InvalidArgument, NotFound, PermissionDenied

__all__ = ["RemoteCatalog", "is_postgres_url"]


def is_postgres_url(url: str) -> bool:
    """Whether ``url`` names a ``loch serve --pg`` server."""
    return url.startswith(("postgresql://", "postgres://"))


class RemoteCatalog:
    """A catalog served by ``loch serve --pg``, reached with psycopg 3.
    Not safe to share between threads (one connection); close it when
    done, or use it as a context manager."""

    def __init__(self, dsn: str, **connect_kwargs: Any) -> None:
        try:
            import psycopg
        except ImportError as e:  # pragma: no cover - psycopg is a test requirement
            raise InvalidArgument(f'loch.connect("{_redact(dsn)}") needs psycopg 3: pip install "psycopg[binary]"') from e
        self._psycopg = psycopg
        self._dsn = dsn
        connect_kwargs.setdefault("autocommit", True)
        self._conn = psycopg.connect(dsn, **connect_kwargs)

    @property
    def url(self) -> str:
        """The server's URL, without a password."""
        return _redact(self._dsn)

    def __repr__(self) -> str:
        return f"<loch.RemoteCatalog {self.url}>"

    def close(self) -> None:
        """Closes the connection to the server (opened tables stay usable)."""
        self._conn.close()

    def __enter__(self) -> RemoteCatalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def tables(self) -> list[str]:
        """The names of the catalog's tables, sorted."""
        rows = self.sql("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1")
        return [r[0] for r in rows]

    def table_url(self, name: str, ref: str | None = None) -> tuple[str, str]:
        """The storage URL of table ``name`` and the version its ``ref``
        (default ``main``) is at, as the server resolves them for this
        user. Raises :class:`loch.PermissionDenied` when the user's role
        may not read the table there, :class:`loch.NotFound` when there is
        no such table or ref."""
        args: tuple[str, ...] = (name,) if ref is None else (name, ref)
        call = "SELECT * FROM loch_table_url(%s)" if ref is None else "SELECT * FROM loch_table_url(%s, %s)"
        rows = self.sql(call, args)
        _table, url, _ref, version = rows[0]
        return url, version

    def open_table(self, name: str, ref: str | None = None, **open_kwargs: Any) -> Dataset:
        """Opens table ``name`` at the version the server resolved for
        ``ref`` (read-only), straight from storage, with the options of
        :func:`loch.open` (``storage_options``, ``cache_bytes``, ...)."""
        url, version = self.table_url(name, ref)
        return open_dataset(url, version, **open_kwargs)

    def sql(self, statement: str, params: tuple[Any, ...] | None = None) -> list[tuple[Any, ...]]:
        """Runs one statement on the server (a write is one commit) and
        returns its rows ([] for a write)."""
        errors = self._psycopg.errors
        try:
            cur = self._conn.execute(statement, params)
            return cur.fetchall() if cur.description is not None else []
        except errors.InsufficientPrivilege as e:
            raise PermissionDenied(str(e).strip()) from e
        except errors.UndefinedTable as e:
            raise NotFound(str(e).strip()) from e
        except self._psycopg.Error as e:
            if "no ref" in str(e):
                raise NotFound(str(e).strip()) from e
            raise


def _redact(dsn: str) -> str:
    """dsn without the password of its user info."""
    scheme, sep, rest = dsn.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return dsn
    userinfo, at, host = rest.partition("@")
    return f"{scheme}://{userinfo.split(':', 1)[0]}{at}{host}"

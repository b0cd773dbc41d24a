"""SQL over datasets, and the selections it makes (docs/query.md).

The SQL engine (DuckDB, in the Go package ``query``) runs in this process,
inside the shared library (:mod:`loch._sql`, C ABI 22), on one connection
per dataset or catalog handle that lives as long as the handle; a query's
result crosses as Arrow, without a copy per value. A library built without
DuckDB (python/setup.py says when) runs SQL in the ``loch`` command instead,
which this package ships (``_lib/loch``; ``LOCH_CLI`` names another, and
``loch`` on PATH is the last resort)::

    >>> sel = ds.query("SELECT image, label WHERE (meta->>'q') = 'high' ORDER BY random()", seed=7)  # doctest: +SKIP
    >>> len(sel), sel.version, sel.row_ids[:3]                                                       # doctest: +SKIP
    >>> for batch in sel.pytorch(batch_size=64, shuffle=True):                                       # doctest: +SKIP
    ...     ...
    >>> sel.save("curated"); ds.selection("curated")                                                 # doctest: +SKIP

A query runs on the handle's version (a branch that moves on does not
change the answer until the handle moves with it: a commit through it, a
checkout); in the ``loch`` command an in-memory (``mem://``) dataset,
which lives in this process only, cannot be queried.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from ._sql import SQL, pyarrow
from .dtypes import VARIABLE, numpy_dtype
from .errors import AlreadyExists, Error, InvalidArgument, NotFound
from .loader import keyword_signature


class Dataset(Protocol):
    """What this module uses of a :class:`loch.Dataset` (which imports this
    module: it cannot import it back)."""

    url: str
    version: str
    _storage_options: dict[str, str] | None

    def _sql_session(self) -> SQL | None: ...
    def positions(self, row_ids: Any) -> np.ndarray: ...
    def save_selection(self, name: str, selection: Selection) -> None: ...
    def __getitem__(self, key: Any) -> Any: ...
    def numpy(self, **kwargs: Any) -> Any: ...
    def pytorch(self, **kwargs: Any) -> Any: ...
    def jax(self, **kwargs: Any) -> Any: ...
    def tensorflow(self, **kwargs: Any) -> Any: ...


#: Opens a dataset's URL at a version id (loch.open(url, version=...)).
Opener = Callable[[str, str], Dataset]

__all__ = ["Selection", "LoaderBuilder", "cli"]


def cli() -> str:
    """The path of the ``loch`` command that runs queries: ``LOCH_CLI``,
    else the one shipped in the package, else ``loch`` on PATH."""
    env = os.environ.get("LOCH_CLI")
    if env:
        return env
    shipped = Path(__file__).resolve().parent / "_lib" / "loch"
    if shipped.exists():
        return str(shipped)
    found = shutil.which("loch")
    if found:
        return found
    raise Error("the loch command (which runs SQL) is not in this package nor on PATH: set LOCH_CLI to a built one")


#: Seconds the loch command has to stop after SIGTERM, on Ctrl-C, before
#: it is killed.
_STOP_GRACE = 0.5


def _run(args: Sequence[str], ds: Dataset | None = None) -> str:
    """Runs the loch command and returns its standard output; a failure
    raises the error class its one-line message names. The dataset ``ds``
    the command opens is reached with its own ``storage_options``, passed
    in the environment (``LOCH_STORAGE_OPTIONS``, docs/cli.md), never as
    arguments, which anyone may read in the process list. Ctrl-C (a
    KeyboardInterrupt while it runs) stops the command, with SIGTERM (on
    which it cancels its work and exits, having written nothing) and after
    :data:`_STOP_GRACE` seconds SIGKILL, waits for it to end and goes on,
    within a second."""
    env = None
    options = None if ds is None else ds._storage_options
    if options:
        env = dict(os.environ, LOCH_STORAGE_OPTIONS=json.dumps(options))
    with subprocess.Popen([cli(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as proc:
        try:
            stdout, stderr = proc.communicate()
        except BaseException:
            _stop(proc)
            raise
    if proc.returncode == 0:
        return stdout
    msg = stderr.strip().removeprefix("loch: ") or f"loch {args[0]} failed with status {proc.returncode}"
    if msg.endswith("not found") or ": not found" in msg:
        raise NotFound(msg)
    if msg.endswith("already exists"):
        raise AlreadyExists(msg)
    raise InvalidArgument(msg)


def _stop(proc: subprocess.Popen[str]) -> None:
    """Ends the loch command proc: SIGTERM, then SIGKILL if it is still
    running after :data:`_STOP_GRACE` seconds; waits for it."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=_STOP_GRACE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _url(ds: Dataset) -> str:
    if ds.url.startswith("mem://"):
        raise InvalidArgument(f"{ds.url} lives in this process only: store it at a path or an object store URL to query it")
    return ds.url


def joined_values(joined: dict[str, Any]) -> Any:
    """The values of a joined column (in the form of docs/format.md §2.7),
    one per row: a numpy array ``[rows, *shape]`` for numbers (a masked
    array when some are null), a list of ``str`` (or None) for text, of
    parsed values for json."""
    dtype = str(joined["dtype"])
    if dtype in VARIABLE:
        items = list(joined.get("items") or [])
        if dtype == "json":
            return [None if x is None else json.loads(x) for x in items]
        return items
    npdt = numpy_dtype(dtype)
    assert npdt is not None
    shape = tuple(int(d) for d in joined.get("shape") or ())
    values = np.frombuffer(base64.b64decode(joined.get("data") or ""), dtype=npdt.newbyteorder("<")).reshape(-1, *shape)
    if not joined.get("nulls"):
        return values
    bits = np.frombuffer(base64.b64decode(joined["nulls"]), dtype=np.uint8)
    null = np.unpackbits(bits, bitorder="little")[: len(values)].astype(bool)
    return np.ma.MaskedArray(values, mask=np.broadcast_to(null.reshape(-1, *([1] * len(shape))), values.shape))


def _slice_joined(joined: dict[str, Any], key: slice) -> dict[str, Any]:
    """A joined column of the rows ``key`` selects."""
    out = dict(joined)
    if str(joined["dtype"]) in VARIABLE:
        out["items"] = list(joined.get("items") or [])[key]
        return out
    values = joined_values(joined)
    part = np.ma.getdata(values)[key]
    out["data"] = base64.b64encode(np.ascontiguousarray(part).tobytes()).decode()
    out.pop("nulls", None)
    if isinstance(values, np.ma.MaskedArray):
        null = np.ma.getmaskarray(values).reshape(len(values), -1)[key].any(axis=1)
        if null.any():
            out["nulls"] = base64.b64encode(np.packbits(null, bitorder="little").tobytes()).decode()
    return out


class Selection:
    """The result of a query: the rows it kept, by stable row id, in
    result order, over one version. ``len(sel)``, ``sel[i]`` (row i of the
    result, as a dict), ``sel[a:b]`` (a selection of those rows), and the
    loaders of a dataset (``.numpy()``, ``.pytorch()``, ``.jax()``,
    ``.tensorflow()``, with the same arguments) over its rows, whose
    ``columns`` default to those the query's SELECT named. With
    ``shuffle=False`` the query's order is the delivery order.

    A query's columns that are not its dataset's own (another table's in
    a join, ``l.label``; an expression, ``score * 2 AS weight``) are its
    joined columns: their values, one per row, come with the selection
    (:attr:`joined`, :meth:`joined_values`), and every loader delivers
    them beside the dataset's columns, each row with its own value."""

    def __init__(self, dataset: Dataset, data: dict[str, Any], opener: Opener, name: str | None = None) -> None:
        self.version: str = data["version"]
        self.sql: str = data["sql"]
        self.seed: int | None = data.get("seed")
        self.columns: list[str] | None = data.get("columns")
        self.row_ids: np.ndarray = np.asarray(data.get("row_ids") or [], dtype=np.uint64)
        self.name = name or data.get("name")
        self._url = dataset.url
        #: The catalog table the selection is of (Catalog.query), else None.
        self.table: str | None = data.get("table")
        #: The joined columns, in the form of docs/format.md §2.7 (name,
        #: dtype, shape, and the values: base64 data and nulls, or items).
        self.joined: list[dict[str, Any]] = list(data.get("joined") or [])
        #: The root of the catalog of :attr:`table`.
        self.root: str | None = data.get("root")
        #: The catalog's SQL handle that made it (to_arrow), else None.
        self._catalog_sql: SQL | None = data.get("_session")
        self.dataset: Dataset = dataset if dataset.version == self.version else opener(dataset.url, self.version)
        self._positions: np.ndarray | None = None
        self._sliced = False

    def __len__(self) -> int:
        return len(self.row_ids)

    def __repr__(self) -> str:
        named = f" {self.name!r}" if self.name else ""
        return f"<loch.Selection{named} rows={len(self)} version={self.version[:12]} sql={self.sql!r}>"

    def positions(self) -> np.ndarray:
        """The rows' positions in the selection's version, in result order."""
        if self._positions is None:
            self._positions = self.dataset.positions(self.row_ids)
        return self._positions

    def __getitem__(self, key: int | slice) -> Any:
        if isinstance(key, slice):
            sub = Selection.__new__(Selection)
            sub.__dict__.update(self.__dict__)
            sub.row_ids = self.row_ids[key]
            sub.joined = [_slice_joined(j, key) for j in self.joined]
            sub._positions = None if self._positions is None else self._positions[key]
            sub.name, sub._sliced = None, True
            return sub
        n = len(self)
        i = int(key)
        if i < -n or i >= n:
            raise IndexError(f"row {key} out of range for a selection of {n} rows")
        row = self.dataset[int(self.positions()[i])]
        if self.columns is not None:
            row = {c: row[c] for c in self.columns}
        for name, values in self.joined_values().items():
            v = values[i]
            row[name] = None if v is np.ma.masked else v
        return row

    def joined_values(self) -> dict[str, Any]:
        """The joined columns' values by name, one per row in result
        order (see :func:`joined_values`)."""
        return {str(j["name"]): joined_values(j) for j in self.joined}

    def _kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        if "rows" in kwargs:
            raise InvalidArgument("a selection's loader reads the selection's rows: give no rows=")
        out = dict(kwargs, rows=[int(r) for r in self.row_ids], query=self.sql)
        joined = self.joined
        if out.get("columns") is not None:
            # Columns named by the caller may be joined ones.
            names = {str(j["name"]) for j in joined}
            asked = [out["columns"]] if isinstance(out["columns"], str) else list(out["columns"])
            out["columns"] = [c for c in asked if c not in names]
            joined = [j for j in joined if j["name"] in asked]
            if asked and not out["columns"]:
                # Only joined columns asked for: the Go loader reads at
                # least the dataset's columns (an empty list is all of them).
                del out["columns"]
        elif self.columns is not None:
            out["columns"] = list(self.columns)
        if joined:
            out["joined"] = joined
        return out

    @keyword_signature("numpy")
    def numpy(self, **kwargs: Any) -> Any:
        """:meth:`loch.Dataset.numpy` over the selection's rows."""
        return self.dataset.numpy(**self._kwargs(kwargs))

    @keyword_signature("pytorch")
    def pytorch(self, **kwargs: Any) -> Any:
        """:meth:`loch.Dataset.pytorch` over the selection's rows."""
        return self.dataset.pytorch(**self._kwargs(kwargs))

    @keyword_signature("jax")
    def jax(self, **kwargs: Any) -> Any:
        """:meth:`loch.Dataset.jax` over the selection's rows."""
        return self.dataset.jax(**self._kwargs(kwargs))

    @keyword_signature("tensorflow")
    def tensorflow(self, **kwargs: Any) -> Any:
        """:meth:`loch.Dataset.tensorflow` over the selection's rows."""
        return self.dataset.tensorflow(**self._kwargs(kwargs))

    def save(self, name: str) -> None:
        """Stores the selection in the dataset under ``name`` (like a tag:
        ``loch gc`` keeps it and its version); :meth:`loch.Dataset.selection`
        reads it back (a catalog table's: ``cat.open_table(table)``), with
        its joined columns. A slice of a selection, whose rows its SQL does
        not describe, cannot be saved."""
        if self._sliced:
            raise InvalidArgument(f"selection {name!r}: only a query's whole result can be saved, not a slice of it")
        self.dataset.save_selection(name, self)
        self.name = name

    def to_arrow(self) -> Any:
        """The query's result as a ``pyarrow.Table`` (needs pyarrow): the
        query run again over the selection's version. For a selection of a
        catalog table, that table is read at the selection's version and
        the other tables the query names at their heads."""
        if self._sliced:
            raise InvalidArgument("Selection.to_arrow: a slice of a selection is not the result of its SQL: convert the whole selection")
        if self.table is not None and self.root is not None:
            session = self._catalog_sql
            if session is not None and not session.closed:
                return session.run(self.sql, seed=self.seed, pins={self.table: self.version})[1]
            return _table(["sql", self.root, self.sql, "--pin", f"{self.table}={self.version}"], self.seed, None)
        return table(self.dataset, self.sql, self.seed)

    def to_pandas(self) -> Any:
        """The query's result as a ``pandas.DataFrame`` (needs pyarrow and pandas)."""
        return self.to_arrow().to_pandas()


def _table(args: list[str], seed: int | None, ds: Dataset | None) -> Any:
    """The result of the loch command ``args`` (loch query or loch sql
    over a version) as a ``pyarrow.Table``, through a Parquet file."""
    pyarrow()
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory(prefix="loch-query-") as tmp:
        out = os.path.join(tmp, "result.parquet")
        args = [*args, "--format", "parquet", "--out", out]
        if seed is not None:
            args += ["--seed", str(int(seed))]
        _run(args, ds)
        return pq.read_table(out)


def query(ds: Dataset, opener: Opener, sql: str, seed: int | None = None) -> Selection:
    """Runs ``sql`` over the handle's version (see :meth:`loch.Dataset.query`)."""
    session = ds._sql_session()
    if session is not None:
        return Selection(ds, session.select(sql, seed=seed), opener)
    args = ["query", _url(ds), sql, "--ref", ds.version, "--format", "selection"]
    if seed is not None:
        args += ["--seed", str(int(seed))]
    return Selection(ds, json.loads(_run(args, ds)), opener)


def table(ds: Dataset, sql: str, seed: int | None = None) -> Any:
    """Runs ``sql`` over the handle's version and returns its result (see
    :meth:`loch.Dataset.sql`)."""
    session = ds._sql_session()
    if session is not None:
        return session.run(sql, seed=seed)[1]
    return _table(["query", _url(ds), sql, "--ref", ds.version], seed, ds)


def catalog_query(
    root: str, open_table: TableOpener, sql: str, seed: int | None = None, branch: str | None = None,
    table: str | None = None, session: SQL | None = None,
) -> Selection:
    """Runs a SELECT over the catalog at ``root`` as a selection of one
    table (see :meth:`loch.Catalog.query`), through the catalog's SQL
    handle ``session`` when there is one."""
    if session is not None:
        data = session.select(sql, seed=seed, branch=branch, table=table)
        data["root"], data["_session"] = root, session
        name = data["table"]
        return Selection(open_table(name, data["version"]), data, lambda _url, version: open_table(name, version))
    if root.startswith("mem://"):
        raise InvalidArgument(f"{root} lives in this process only: store the catalog at a path or an object store URL to query it")
    args = ["sql", root, sql, "--format", "selection"]
    if seed is not None:
        args += ["--seed", str(int(seed))]
    if branch is not None:
        args += ["--branch", branch]
    if table is not None:
        args += ["--table", table]
    data = json.loads(_run(args))
    data["root"] = root
    name = data["table"]
    return Selection(open_table(name, data["version"]), data, lambda _url, version: open_table(name, version))


class LoaderBuilder:
    """Builds a loader over the rows of a SQL query, step by step
    (:meth:`loch.Catalog.dataloader`)::

        >>> loader = cat.dataloader("SELECT image, label FROM frames WHERE label = 'cat'") \\
        ...     .batch_size(64).shuffle(True).seed(1).to_torch()                       # doctest: +SKIP

    Each setter returns the builder. The query runs when a ``to_*`` method
    is called, on the table's version at that moment; the loader reads the
    selection's rows (``columns`` default to those the SELECT names).
    Without ``shuffle``, the query's order is the delivery order."""

    def __init__(self, run: Callable[[int | None], Selection], sql: str) -> None:
        self._run = run
        self.sql = sql
        self._kwargs: dict[str, Any] = {}
        self._query_seed: int | None = None

    def __repr__(self) -> str:
        return f"<loch.LoaderBuilder sql={self.sql!r} {self._kwargs}>"

    def batch_size(self, n: int) -> LoaderBuilder:
        """Rows per batch."""
        if int(n) <= 0:
            raise InvalidArgument(f"batch_size {n}: want at least 1")
        self._kwargs["batch_size"] = int(n)
        return self

    def shuffle(self, on: bool | str = True) -> LoaderBuilder:
        """Shuffle the selection's rows each epoch (True, False, or a mode:
        "block", "full")."""
        self._kwargs["shuffle"] = on
        return self

    def seed(self, seed: int) -> LoaderBuilder:
        """The seed of the loader's shuffle and of the query's ``random()``."""
        self._kwargs["seed"] = int(seed)
        self._query_seed = int(seed)
        return self

    def columns(self, *names: str) -> LoaderBuilder:
        """The columns to load (default: those the SELECT names)."""
        self._kwargs["columns"] = list(names)
        return self

    def drop_last(self, on: bool = True) -> LoaderBuilder:
        """Drop a last batch smaller than the batch size."""
        self._kwargs["drop_last"] = bool(on)
        return self

    def options(self, **kwargs: Any) -> LoaderBuilder:
        """Any other argument of :meth:`loch.Dataset.numpy` (epoch,
        world_size, rank, transforms, ...)."""
        self._kwargs.update(kwargs)
        return self

    def selection(self) -> Selection:
        """Runs the query: its :class:`loch.Selection`."""
        return self._run(self._query_seed)

    def to_numpy(self) -> Any:
        """The loader of NumPy batches (:meth:`loch.Selection.numpy`)."""
        return self.selection().numpy(**self._kwargs)

    def to_torch(self) -> Any:
        """The PyTorch loader (:meth:`loch.Selection.pytorch`)."""
        return self.selection().pytorch(**self._kwargs)

    def to_jax(self) -> Any:
        """The JAX loader (:meth:`loch.Selection.jax`)."""
        return self.selection().jax(**self._kwargs)

    def to_tensorflow(self) -> Any:
        """The tf.data loader (:meth:`loch.Selection.tensorflow`)."""
        return self.selection().tensorflow(**self._kwargs)


def catalog_sql(
    root: str, statement: str, message: str | None = None, branch: str | None = None, session: SQL | None = None
) -> dict[str, Any]:
    """Runs one SQL statement over the catalog at ``root`` (see
    :meth:`loch.Catalog.sql`), through the catalog's SQL handle
    ``session`` when there is one."""
    if session is not None:
        result, _ = session.run(statement, message=message, branch=branch, json=True)
        if result.get("statement") == "QUERY":
            result.setdefault("result", [])
        return dict(result)
    if root.startswith("mem://"):
        raise InvalidArgument(f"{root} lives in this process only: store the catalog at a path or an object store URL to run SQL on it")
    args = ["sql", root, statement, "--json"]
    if message is not None:
        args += ["--message", message]
    if branch is not None:
        args += ["--branch", branch]
    return dict(json.loads(_run(args)))


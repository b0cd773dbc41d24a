"""SQL in this process (C ABI 22, capi/sql.go): DuckDB runs inside the
library, on one connection that lives as long as the :class:`SQL` handle,
over a dataset handle's version (``ds.query``, ``ds.sql``) or a catalog's
tables (``loch.connect(root).sql``, ``.query``), and a query's result
crosses as Arrow (the Arrow C stream interface), imported by pyarrow
without a copy per value. A library built without DuckDB (see
python/setup.py) has no such handle: :func:`open_sql` returns None and
:mod:`loch.query` runs the ``loch`` command instead."""

from __future__ import annotations

import ctypes
import json
import threading
from ctypes import byref, c_void_p
from typing import Any

from ._handle import Handle
from ._library import c_uintptr
from ._snapshot import json_options
from .errors import Error


class ArrowArrayStream(ctypes.Structure):
    """struct ArrowArrayStream of the Arrow C stream interface."""

    _fields_ = [
        ("get_schema", c_void_p),
        ("get_next", c_void_p),
        ("get_last_error", c_void_p),
        ("release", c_void_p),
        ("private_data", c_void_p),
    ]


#: Whether the loaded library has SQL (None: not asked yet).
_available: bool | None = None
_available_lock = threading.Lock()


def open_sql(target: Handle) -> SQL | None:
    """A SQL handle over ``target`` (a dataset's or a catalog's handle),
    or None when the library was built without DuckDB or is the parent's
    (in a forked child): then SQL runs in the ``loch`` command."""
    global _available
    if _available is False or not target.lib.usable:
        return None
    out = c_uintptr()
    try:
        target.lib.call("loch_sql_open", target.value, None, byref(out))
    except NotImplementedError:
        with _available_lock:
            _available = False
        return None
    _available = True
    return SQL(target.lib, out.value)


def pyarrow() -> Any:
    """The pyarrow module, or an error that says it is needed."""
    try:
        import pyarrow as pa
    except ImportError as e:
        raise Error("a query's result as a table needs pyarrow (pip install pyarrow)") from e
    return pa


class SQL:
    """A SQL handle (loch_sql_open): one DuckDB connection over a dataset
    or a catalog; statements run one at a time. Closed by :meth:`close`,
    or when garbage collected."""

    def __init__(self, lib: Any, handle: int) -> None:
        self._h = Handle(self, lib, handle, "loch_sql_close", "SQL handle")
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        return self._h.closed

    def close(self) -> None:
        """Releases the connection (idempotent)."""
        self._h.close()

    def run(self, statement: str, **options: Any) -> tuple[dict[str, Any], Any]:
        """Runs one statement; returns what it did (``{"statement",
        "rows", ...}``) and, for a read, its result as a ``pyarrow.Table``
        (else None). ``options``: seed, branch, message, pins."""
        pa = pyarrow()
        stream = ArrowArrayStream()
        out = c_void_p()
        with self._lock:
            lib = self._h.lib
            try:
                lib.call("loch_sql_run", self._h.value, statement.encode(), json_options(**options),
                         byref(stream), byref(out), detail=out, interruptible=True)  # fmt: skip
            except BaseException:
                _release(stream)
                raise
        result = json.loads(lib.take_string(out))
        if not stream.release:
            return result, None
        reader = pa.RecordBatchReader._import_from_c(ctypes.addressof(stream))
        return result, as_parquet_typed(pa, reader.read_all())

    def select(self, sql: str, **options: Any) -> dict[str, Any]:
        """Runs a SELECT as a selection: its JSON (``version``, ``sql``,
        ``seed``, ``columns``, ``row_ids``, ``joined``; over a catalog
        ``table`` and ``url``). ``options``: seed, branch, table."""
        out = c_void_p()
        with self._lock:
            self._h.lib.call("loch_sql_select", self._h.value, sql.encode(), json_options(**options), byref(out),
                             detail=out, interruptible=True)  # fmt: skip
        return dict(json.loads(self._h.lib.take_string(out)))


def as_parquet_typed(pa: Any, table: Any) -> Any:
    """``table`` with the types the ``loch`` command's results have had
    (they crossed as Parquet): DuckDB's ENUMs (class labels), which Arrow
    carries as dictionaries, as their values; HUGEINT (``sum`` of
    integers), which Arrow carries as decimal128(38, 0), as float64. The
    other columns are not touched (no copy)."""
    fields = []
    changed = False
    for f in table.schema:
        t = f.type
        if pa.types.is_dictionary(t):
            t = t.value_type
        elif pa.types.is_decimal(t) and t.precision == 38 and t.scale == 0:
            t = pa.float64()
        changed = changed or t != f.type
        fields.append(f.with_type(t))
    if not changed:
        return table
    return table.cast(pa.schema(fields, metadata=table.schema.metadata))


#: The type of struct ArrowArrayStream's release callback.
_RELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowArrayStream))


def _release(stream: ArrowArrayStream) -> None:
    """Releases a stream that Go filled and Python did not import."""
    if stream.release:
        _RELEASE(stream.release)(ctypes.pointer(stream))

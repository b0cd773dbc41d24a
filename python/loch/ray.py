"""Ray Data read and write: many tasks write, the driver commits once.

:func:`write` writes a Ray Dataset into a loch dataset through a Ray
Datasink: each write task stages its blocks as fragments
(:meth:`loch.Dataset.stage`) and returns their small description; the
driver gathers the descriptions and publishes them all as one commit
(:meth:`loch.Dataset.commit_staged`, docs/format.md §7). A task that dies
and is retried by Ray writes its rows again under a new description; the
dead attempt's objects are never committed and ``loch gc`` deletes them
after its grace period. A retried driver commit adds nothing twice::

    >>> import ray, loch.ray                                          # doctest: +SKIP
    >>> ds = ray.data.read_images("s3://bucket/raw/").map(preprocess)  # doctest: +SKIP
    >>> loch.ray.write(ds, "s3://bucket/train", mode="create")         # doctest: +SKIP

:func:`read` returns a Ray Dataset over a loch version (a Ray Datasource
with one read task per group of consecutive fragments), optionally of some
columns and of the rows an SQL query selects::

    >>> rd = loch.ray.read("s3://bucket/train", ref="v1", columns=["image", "label"],
    ...                    query="SELECT * WHERE label = 'cat'")       # doctest: +SKIP

:func:`compact` compacts a loch dataset (:meth:`loch.Dataset.compact`)
with Ray: the driver plans, one task per group of fragments rewrites it,
and the driver commits once::

    >>> loch.ray.compact("s3://bucket/train", target_rows=1 << 20)     # doctest: +SKIP

::func:`create_index` builds a vector index with Ray: the driver trains
it on a sample, one task per range of rows assigns and encodes them, one
task per range of lists merges them, and the driver commits the index
once::

    >>> loch.ray.create_index("s3://bucket/train", column="embedding", kind="ivf-pq")  # doctest: +SKIP

Ray is imported when these are called, not when :mod:`loch` is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ._write import EncodedImage
from .dataset import Dataset, create, open
from .errors import AlreadyExists, InvalidArgument, NotFound
from .interchange import schema_from_arrow
from .schema import Column
from .vector import IndexInfo
from .versions import CompactReport

__all__ = ["write", "read", "compact", "create_index", "LochDatasink", "LochDatasource"]


def _ray_data() -> Any:
    try:
        import ray.data
    except ImportError as e:  # pragma: no cover (ray is a test dependency)
        raise ImportError("loch.ray needs Ray Data (pip install 'ray[data]')") from e
    return ray.data


class LochDatasink:
    """A Ray Datasink (``ray.data.Datasink``) writing into a loch dataset
    with one commit: :meth:`write` runs in each write task and returns the
    description of what it staged; :meth:`on_write_complete` runs on the
    driver and commits them all. After the write, :attr:`result` holds
    :meth:`loch.Dataset.commit_staged`'s answer.

    ``mode="create"`` creates the dataset (with ``schema``, or one derived
    from the first block's Arrow schema; :class:`loch.AlreadyExists` when
    there is one); ``"append"`` adds to an existing one (whose schema the
    blocks must fit)."""

    def __init__(
        self,
        url: str,
        schema: Mapping[str, Column] | None = None,
        mode: str = "append",
        *,
        message: str = "",
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        if mode not in ("append", "create"):
            raise InvalidArgument(f"mode {mode!r}: want 'append' or 'create'")
        self.url, self.schema, self.mode, self.message = url, schema, mode, message
        self.storage_options = dict(storage_options) if storage_options else None
        self.result: dict[str, Any] | None = None

    def _open(self) -> Dataset:
        return open(self.url, storage_options=self.storage_options)

    # ray.data.Datasink's interface (Ray 2.60).

    def on_write_start(self, schema: Any = None) -> None:
        """On the driver, before any task: creates the dataset when the
        schema is given, or checks that the dataset to append to exists.
        (Ray passes the schema of the first input bundle, which precedes
        the transforms fused into the write tasks: without ``schema=``,
        the first task to write creates the dataset from its block.)"""
        if self.mode == "create":
            if self.schema is not None:
                create(self.url, self.schema, storage_options=self.storage_options).close()
            return
        try:
            self._open().close()
        except NotFound as e:
            raise NotFound(f"{e} (mode='append' writes to an existing dataset; use mode='create')") from e

    def _open_for(self, block: Any) -> Dataset:
        """Opens the dataset; in create mode without a schema, the first
        task creates it from its block's Arrow schema (the others find it)."""
        if self.mode == "create" and self.schema is None:
            try:
                return create(self.url, schema_from_arrow(block.schema), storage_options=self.storage_options)
            except AlreadyExists:
                pass
        return self._open()

    def write(self, blocks: Iterable[Any], ctx: Any) -> dict[str, Any] | None:
        """In a write task: stages the blocks' rows and returns their
        description (nothing is committed here)."""
        from ray.data.block import BlockAccessor

        ds: Dataset | None = None
        try:
            for block in blocks:
                acc = BlockAccessor.for_block(block)
                if acc.num_rows() == 0:
                    continue
                if ds is None:
                    ds = self._open_for(acc.to_arrow())
                ds.extend(_columns(acc.to_numpy(), ds.schema))
            return None if ds is None else ds.stage()
        finally:
            if ds is not None:
                ds.close()

    def on_write_complete(self, write_result: Any) -> None:
        """On the driver, after every task: one commit of all descriptions."""
        descs = [d for d in write_result.write_returns if d is not None]
        if not descs and self.mode == "create" and self.schema is None:
            raise InvalidArgument(f"create {self.url}: the Ray dataset has no rows to take a schema from; give schema=")
        ds = self._open()
        try:
            self.result = ds.commit_staged(descs, self.message or f"ray write of {len(descs)} tasks")
        finally:
            ds.close()

    def on_write_failed(self, error: Exception) -> None:
        """Nothing to undo: staged rows stay uncommitted (``loch gc``)."""

    def get_name(self) -> str:
        return "Loch"

    @property
    def supports_distributed_writes(self) -> bool:
        return True

    @property
    def min_rows_per_write(self) -> int | None:
        return None

    @property
    def min_bytes_per_write(self) -> int | None:
        return None


def _columns(batch: Mapping[str, np.ndarray], schema: Mapping[str, Column]) -> dict[str, Any]:
    """A numpy batch of Ray's as columns for :meth:`loch.Dataset.extend`:
    object arrays (strings, bytes, ragged tensors) as lists, and bytes in
    an image column as encoded images (png or jpeg, stored as they are
    when the column's compression is theirs)."""
    out: dict[str, Any] = {}
    for k, v in batch.items():
        col = schema.get(k)
        if col is not None and col.kind == "image" and v.dtype == object:
            out[k] = [EncodedImage(bytes(x)) if isinstance(x, (bytes, bytearray)) else x for x in v]
        else:
            out[k] = list(v) if v.dtype == object else v
    return out


def write(
    dataset: Any,
    url: str,
    schema: Mapping[str, Column] | None = None,
    mode: str = "append",
    *,
    message: str = "",
    storage_options: Mapping[str, str] | None = None,
    concurrency: int | None = None,
) -> dict[str, Any]:
    """Writes a Ray Dataset into the loch dataset at ``url`` as one commit
    and returns ``{"version", "published", "skipped", "rows"}`` (see
    :class:`LochDatasink` for ``mode`` and ``schema``). Each Ray write
    task stages its rows; the driver commits once. Nothing is committed
    when a task fails for good (a block whose column has the wrong type:
    :class:`loch.InvalidArgument`, raised here)."""
    sink = LochDatasink(url, schema, mode, message=message, storage_options=storage_options)
    if mode == "create":
        try:
            open(url, storage_options=storage_options).close()
        except NotFound:
            pass
        else:
            raise AlreadyExists(f"create {url}: a dataset is already there (use mode='append')")
    sink_cls = _sink_class()
    dataset.write_datasink(sink_cls(sink), concurrency=concurrency)
    assert sink.result is not None
    return sink.result


def _sink_class() -> Any:
    """LochDatasink as a subclass of ray.data.Datasink (made on first use,
    so that importing loch.ray does not import Ray)."""
    rd = _ray_data()
    from ray.data.datasource import Datasink

    class _Sink(Datasink):  # type: ignore[misc]
        def __init__(self, inner: LochDatasink) -> None:
            self.inner = inner

        def on_write_start(self, schema: Any = None) -> None:
            self.inner.on_write_start(schema)

        def write(self, blocks: Iterable[Any], ctx: Any) -> Any:
            return self.inner.write(blocks, ctx)

        def on_write_complete(self, write_result: Any) -> None:
            self.inner.on_write_complete(write_result)

        def on_write_failed(self, error: Exception) -> None:
            self.inner.on_write_failed(error)

        def get_name(self) -> str:
            return self.inner.get_name()

    del rd
    return _Sink


class LochDatasource:
    """A Ray Datasource (``ray.data.Datasource``) over one loch version:
    one read task per group of consecutive fragments (about
    ``parallelism`` groups), each opening the version and reading its rows'
    ``columns``; with ``query``, only the rows the SQL selects, in the
    dataset's row order. Made by :func:`read`."""

    def __init__(
        self,
        url: str,
        ref: str | None = None,
        columns: Sequence[str] | None = None,
        query: str | None = None,
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        self.url = url
        self.storage_options = dict(storage_options) if storage_options else None
        ds = open(url, ref=ref, storage_options=self.storage_options)
        try:
            self.version = ds.version
            names = list(ds.schema)
            self.columns = list(columns) if columns is not None else names
            missing = [c for c in self.columns if c not in names]
            if missing:
                raise InvalidArgument(f"read {url}: no column {missing[0]!r} (have {names})")
            self.fragments = ds.fragment_rows()
            self.positions: np.ndarray | None = None
            if query is not None:
                self.positions = np.sort(ds.query(query).positions())
            self.row_bytes = _row_bytes(ds, self.columns)
        finally:
            ds.close()

    def _groups(self, parallelism: int) -> list[tuple[int, int]]:
        """Runs [start, end) of positions: consecutive fragments grouped
        into at most ``parallelism`` runs of about equal rows."""
        total = sum(self.fragments)
        if total == 0:
            return []
        target = max(1, -(-total // max(1, parallelism)))
        out: list[tuple[int, int]] = []
        start = pos = 0
        for n in self.fragments:
            pos += n
            if pos - start >= target:
                out.append((start, pos))
                start = pos
        if pos > start:
            out.append((start, pos))
        return out

    def estimate_inmemory_data_size(self) -> int | None:
        rows = sum(self.fragments) if self.positions is None else len(self.positions)
        return rows * self.row_bytes

    def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None, data_context: Any = None) -> list[Any]:
        from ray.data.block import BlockMetadata
        from ray.data.datasource import ReadTask

        tasks = []
        for lo, hi in self._groups(parallelism):
            if self.positions is not None:
                sel = self.positions[(self.positions >= lo) & (self.positions < hi)]
                if len(sel) == 0:
                    continue
                rows = len(sel)
                fn = _reader(self.url, self.version, self.columns, self.storage_options, None, sel)
            else:
                rows = hi - lo
                fn = _reader(self.url, self.version, self.columns, self.storage_options, (lo, hi), None)
            meta = BlockMetadata(num_rows=rows, size_bytes=rows * self.row_bytes, input_files=None, exec_stats=None)
            tasks.append(ReadTask(fn, meta, per_task_row_limit=per_task_row_limit))
        return tasks

    def get_name(self) -> str:
        return "Loch"

    @property
    def supports_distributed_reads(self) -> bool:
        return True


def _row_bytes(ds: Dataset, columns: Sequence[str]) -> int:
    """An estimate of a row's decoded bytes, for Ray's planning: the first
    row's samples (8 bytes a column for an empty dataset)."""
    if len(ds) == 0:
        return 8 * max(1, len(columns))
    row = ds[0]
    return max(1, sum(int(getattr(row[c], "nbytes", 8)) for c in columns))


def _reader(url: str, version: str, columns: Sequence[str], storage_options: Mapping[str, str] | None,
            span: tuple[int, int] | None, positions: np.ndarray | None) -> Any:  # fmt: skip
    """The read function of one task: blocks of at most 4096 rows."""

    def read() -> Iterable[Any]:
        from ray.data.block import BlockAccessor

        ds = open(url, version=version, storage_options=storage_options)
        try:
            step = 4096
            if span is not None:
                for a in range(span[0], span[1], step):
                    b = min(span[1], a + step)
                    yield BlockAccessor.batch_to_block({c: _column(ds[c][a:b]) for c in columns})
            else:
                assert positions is not None
                for a in range(0, len(positions), step):
                    pos = [int(p) for p in positions[a : a + step]]
                    rows = ds.__getitems__(pos)
                    yield BlockAccessor.batch_to_block({c: _column([r[c] for r in rows]) for c in columns})
        finally:
            ds.close()

    return read


def _column(values: Any) -> Any:
    """A column read from loch as Ray takes it: an ndarray stays one; a
    list of equal-shape arrays is stacked; other lists become object
    arrays."""
    if isinstance(values, np.ndarray):
        return values
    vals = list(values)
    if vals and all(isinstance(v, np.ndarray) for v in vals) and len({v.shape for v in vals}) == 1:
        return np.stack(vals)
    if vals and all(isinstance(v, np.generic) for v in vals):
        return np.array(vals)
    out = np.empty(len(vals), dtype=object)
    out[:] = vals
    return out


def read(
    url: str,
    ref: str | None = None,
    columns: Sequence[str] | None = None,
    query: str | None = None,
    *,
    storage_options: Mapping[str, str] | None = None,
    override_num_blocks: int | None = None,
) -> Any:
    """A Ray Dataset over the loch dataset at ``url``, at ``ref`` (a
    branch, tag or version; default main's head, pinned when this is
    called), of ``columns`` (default all) and, with ``query`` (SQL as
    :meth:`loch.Dataset.query` takes it), of the rows it selects, in the
    dataset's order. Fragments are read in parallel, one read task per
    group of consecutive fragments."""
    rd = _ray_data()
    from ray.data.datasource import Datasource

    src = LochDatasource(url, ref, columns, query, storage_options)

    class _Source(Datasource):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()

        def estimate_inmemory_data_size(self) -> int | None:
            return src.estimate_inmemory_data_size()

        def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None, data_context: Any = None) -> list[Any]:
            return src.get_read_tasks(parallelism, per_task_row_limit, data_context)

        def get_name(self) -> str:
            return src.get_name()

    return rd.read_datasource(_Source(), override_num_blocks=override_num_blocks)


def _compact_group_task(url: str, storage_options: Mapping[str, str] | None, plan: Mapping[str, Any],
                        index: int) -> dict[str, Any]:  # fmt: skip
    """The body of :func:`compact`'s Ray tasks: rewrite one group of the
    plan."""
    with open(url, version=plan["base"], storage_options=storage_options) as ds:
        return ds.compact_group(plan, index)


def compact(
    url: str,
    *,
    branch: str | None = None,
    target_rows: int | None = None,
    target_bytes: int | None = None,
    max_deleted: float | None = None,
    fanout: int | None = None,
    dry_run: bool = False,
    message: str | None = None,
    storage_options: Mapping[str, str] | None = None,
    num_cpus: float = 1,
) -> CompactReport:
    """Compacts the loch dataset at ``url`` on ``branch`` (default main)
    with Ray, as one commit, and returns its :class:`loch.CompactReport`;
    the options are those of :meth:`loch.Dataset.compact`. The driver plans
    (:meth:`loch.Dataset.plan_compaction`, which reads only metadata), one
    Ray task per group (``num_cpus`` each) rewrites its run of fragments
    into one fragment (:meth:`loch.Dataset.compact_group`), and the driver
    commits them all at once (:meth:`loch.Dataset.commit_compaction`),
    rebased onto whatever other writers committed meanwhile. ``dry_run``
    only plans.

    A task that dies is retried by Ray; what a dead attempt wrote is never
    committed and ``loch gc`` deletes it after its grace period. When a
    task fails for good, nothing is committed and its error is raised
    here::

        >>> rep = loch.ray.compact("s3://bucket/train", target_rows=1 << 20)   # doctest: +SKIP
        >>> rep.fragments_before, rep.fragments_after                         # doctest: +SKIP
        (6000, 12)
    """
    _ray_data()  # Ray, or an ImportError that says how to install it
    import ray as ray_core

    settings = dict(storage_options) if storage_options else None
    with open(url, ref=branch, storage_options=settings) as ds:
        plan = ds.plan_compaction(target_rows=target_rows, target_bytes=target_bytes, max_deleted=max_deleted,
                                  fanout=fanout, message=message)  # fmt: skip
        if dry_run or not plan["groups"]:
            return CompactReport.from_json({**plan["report"], "dry_run": dry_run})
        task = ray_core.remote(num_cpus=num_cpus)(_compact_group_task)
        refs = [task.remote(url, settings, plan, i) for i in range(len(plan["groups"]))]
        groups = ray_core.get(refs)
        return ds.commit_compaction(plan, groups)


def _encode_part_task(url: str, storage_options: Mapping[str, str] | None, trained: Mapping[str, Any],
                      start: int, stop: int) -> dict[str, Any]:  # fmt: skip
    """The body of :func:`create_index`'s encode tasks: one range of rows."""
    with open(url, version=trained["version"], storage_options=storage_options) as ds:
        return ds.encode_index_part(trained, start, stop)


def _merge_lists_task(url: str, storage_options: Mapping[str, str] | None, trained: Mapping[str, Any],
                      parts: Sequence[Mapping[str, Any]], lo: int, hi: int) -> list[dict[str, Any]]:  # fmt: skip
    """The body of :func:`create_index`'s merge tasks: one range of lists."""
    with open(url, version=trained["version"], storage_options=storage_options) as ds:
        return ds.merge_index_lists(trained, parts, lo, hi)


def _shares(parts: Sequence[Mapping[str, Any]], lo: int, hi: int) -> list[dict[str, Any]]:
    """The parts with only their shares of the lists [lo, hi): what one
    merge task needs."""
    return [{**p, "lists": [x for x in p["lists"] if lo <= x["list"] < hi]} for p in parts]


def create_index(
    ds_or_url: Dataset | str,
    column: str,
    metric: str = "cosine",
    *,
    kind: str = "ivf-flat",
    nlist: int | None = None,
    sample: int | None = None,
    iterations: int | None = None,
    seed: int = 0,
    m: int | None = None,
    part_rows: int | None = None,
    merge_tasks: int | None = None,
    ref: str | None = None,
    storage_options: Mapping[str, str] | None = None,
    num_cpus: float = 1,
    task_options: Mapping[str, Any] | None = None,
) -> IndexInfo:
    """Builds the vector index of ``column`` with Ray, as
    :meth:`loch.Dataset.create_index` does in one process (the same
    options and the same index), and returns its :class:`loch.IndexInfo`.
    ``ds_or_url`` is a dataset handle (its version is indexed; the tasks
    open its URL with ``storage_options``) or a URL (``ref``, default
    main's head, is indexed).

    The driver trains the centroids (and an ivf-pq codebook) on a sample
    (:meth:`loch.Dataset.train_index`); one Ray task (``num_cpus`` each,
    and any other ``task_options`` of ``ray.remote``) per ``part_rows``
    rows (default about 512 MiB of vectors) reads its rows from storage
    itself, assigns them to their lists and stores their shares
    (:meth:`loch.Dataset.encode_index_part`); ``merge_tasks`` tasks
    (default one per part) each store a range of lists as one object each
    (:meth:`loch.Dataset.merge_index_lists`); the driver then commits the
    index once (:meth:`loch.Dataset.commit_index`). A task retried by Ray
    writes the same objects again; when a task fails for good nothing is
    committed (what was written is deleted by ``loch gc`` after its grace
    period) and its error is raised here::

        >>> info = loch.ray.create_index("s3://bucket/train", "embedding", "l2", kind="ivf-pq",
        ...                              nlist=4000)                         # doctest: +SKIP
    """
    _ray_data()  # Ray, or an ImportError that says how to install it
    import ray as ray_core

    settings = dict(storage_options) if storage_options else None
    if isinstance(ds_or_url, Dataset):
        ds, url, own = ds_or_url, ds_or_url.url, False
    else:
        ds, url, own = open(ds_or_url, ref=ref, storage_options=settings), ds_or_url, True
    try:
        trained = ds.train_index(column, metric, nlist=nlist, sample=sample, iterations=iterations, seed=seed,
                                 kind=kind, m=m, part_rows=part_rows)  # fmt: skip
        opts = {"num_cpus": num_cpus, **(task_options or {})}
        encode = ray_core.remote(_encode_part_task).options(**opts)
        parts = ray_core.get([encode.remote(url, settings, trained, a, b) for a, b in trained["parts"]])
        nl = int(trained["nlist"])
        groups = max(1, min(nl, merge_tasks or len(parts)))
        bounds = [nl * i // groups for i in range(groups + 1)]
        merge = ray_core.remote(_merge_lists_task).options(**opts)
        refs = [merge.remote(url, settings, trained, _shares(parts, lo, hi), lo, hi)
                for lo, hi in zip(bounds, bounds[1:], strict=False)]  # fmt: skip
        lists = [x for got in ray_core.get(refs) for x in got]
        return ds.commit_index(trained, parts, lists)
    finally:
        if own:
            ds.close()

"""loch: a tensor-native, versioned dataset store with a streaming loader.

The Go core does the work (storage, versioning, the parallel loader); this
package is its Python face. The core is a shared library, loaded on first
use (never at import, so that importing loch before ``fork`` is safe)::

    >>> import numpy as np, loch
    >>> ds = loch.create("mem://pets", schema={"image": loch.Image(), "label": loch.ClassLabel(["cat", "dog"])})
    >>> ds.extend({"image": np.zeros((4, 8, 8, 3), np.uint8), "label": [0, 1, 1, 0]})
    >>> _ = ds.commit("four pets")
    >>> len(ds), ds["label"][1]
    (4, np.int64(1))
    >>> for batch in ds.numpy(batch_size=2):
    ...     print(batch["image"].shape, batch["index"])
    (2, 8, 8, 3) [0 1]
    (2, 8, 8, 3) [2 3]

Framework adapters: :meth:`Dataset.pytorch`, :meth:`Dataset.jax`,
:meth:`Dataset.tensorflow`. Several datasets mixed in given proportions:
:func:`loch.mix`. Version control (branches, tags, checkout, diff, merge,
revert, gc): :mod:`loch.versions`. Named tables under one root:
:func:`loch.connect` (:mod:`loch.catalog`).
"""

from __future__ import annotations

from pathlib import Path as _Path

from ._buffers import buffer_stats, trim_buffers
from ._write import EncodedImage
from .catalog import Catalog, CatalogGCReport, Table, TableDir, connect
from .dataset import ColumnReader, Commit, Dataset, UpsertReport, create, open
from .interchange import from_arrow, from_huggingface
from .errors import (
    AlreadyExists,
    Closed,
    Conflict,
    Corrupt,
    Error,
    ForkedProcess,
    InternalError,
    InvalidArgument,
    NewerFormat,
    NotFound,
    PermissionDenied,
    ReadOnly,
)
from .limits import max_decode_bytes, set_max_decode_bytes
from .links import LinkPolicy
from .loader import Loader
from .mixture import Mixture, mix
from .query import Selection
from .schema import (
    JSON,
    Audio,
    BBox,
    Bytes,
    ClassLabel,
    Column,
    Embedding,
    Image,
    Link,
    Mask,
    PointCloud,
    Schema,
    Tensor,
    Text,
    Video,
)
from .vector import IndexInfo, SearchResult
from .versions import ColumnChange, CompactReport, Diff, GCCount, GCReport, MergeConflict, MergeResult, Ref, RowChange

#: The package's version: loch's release version, written once in the
#: repository's version/VERSION (which ``loch version`` prints too).
__version__ = _Path(__file__).with_name("VERSION").read_text().strip()

__all__ = [
    "create", "open", "connect", "from_arrow", "from_huggingface", "Catalog", "Table", "TableDir", "CatalogGCReport", "Dataset", "ColumnReader", "Commit", "UpsertReport", "Loader", "EncodedImage", "buffer_stats", "trim_buffers",
    "max_decode_bytes", "set_max_decode_bytes",
    "mix", "Mixture", "Selection", "SearchResult", "IndexInfo", "LinkPolicy",
    "Ref", "Diff", "RowChange", "ColumnChange", "MergeResult", "MergeConflict", "GCReport", "GCCount", "CompactReport",
    "Schema", "Column", "Tensor", "Image", "Video", "Audio", "Mask", "ClassLabel", "BBox", "Embedding",
    "PointCloud", "Text", "JSON", "Bytes", "Link",
    "Error", "NotFound", "AlreadyExists", "Corrupt", "Conflict", "InvalidArgument", "ReadOnly",
    "PermissionDenied", "NewerFormat", "Closed", "ForkedProcess", "InternalError",
]  # fmt: skip

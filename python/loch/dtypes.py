"""loch's data types and their numpy equivalents.

The dtype names and codes come from the Go core (``schema.DTypes``); this
module only knows which numpy dtype holds each::

    >>> from loch.dtypes import numpy_dtype
    >>> numpy_dtype("float32")
    dtype('float32')
    >>> numpy_dtype("text") is None     # text, json and bytes are not arrays
    True
"""

from __future__ import annotations

from functools import cache

import numpy as np

from . import _library
from .errors import InvalidArgument

__all__ = ["DTYPES", "VARIABLE", "numpy_dtype", "from_numpy", "code", "name"]

#: Every loch dtype name.
DTYPES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "text", "json", "bytes",
)  # fmt: skip

#: The variable-size dtypes, whose samples are byte strings.
VARIABLE = frozenset({"text", "json", "bytes"})


def _bfloat16() -> np.dtype:
    """numpy's bfloat16 from ml_dtypes when installed, else uint16 (the
    same bits)."""
    try:
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    except ImportError:
        return np.dtype(np.uint16)


@cache
def numpy_dtype(dtype: str) -> np.dtype | None:
    """Returns the numpy dtype holding loch dtype ``dtype`` (None for text,
    json and bytes). bfloat16 needs the ml_dtypes package (installed with
    JAX); without it bfloat16 data comes as uint16."""
    if dtype in VARIABLE:
        return None
    if dtype == "bfloat16":
        return _bfloat16()
    if dtype not in DTYPES:
        raise InvalidArgument(f"unknown dtype {dtype!r} (want one of {', '.join(DTYPES)})")
    return np.dtype(dtype)


def from_numpy(dt: np.dtype) -> str:
    """Returns the loch dtype name of a numpy dtype."""
    dt = np.dtype(dt)
    if dt.name == "bfloat16":
        return "bfloat16"
    if dt.name in DTYPES and dt.name not in VARIABLE:
        return dt.name
    if dt.kind in "US":
        return "text"
    raise InvalidArgument(f"numpy dtype {dt} has no loch equivalent")


@cache
def _codes() -> tuple[dict[str, int], dict[int, str]]:
    table = _library.library().dtypes()
    return {d["name"]: d["code"] for d in table}, {d["code"]: d["name"] for d in table}


def code(dtype: str) -> int:
    """Returns the C ABI code of a dtype name."""
    try:
        return _codes()[0][dtype]
    except KeyError:
        raise InvalidArgument(f"unknown dtype {dtype!r}") from None


def name(code_: int) -> str:
    """Returns the dtype name of a C ABI code."""
    return _codes()[1][code_]

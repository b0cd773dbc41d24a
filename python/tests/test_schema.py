"""The column types and loch.create's schema argument: numpy dtypes and an
int shape are taken as numpy takes them; what cannot make a schema raises
loch.InvalidArgument when the column or dataset is made, naming it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import loch


@pytest.mark.parametrize("dtype", [np.float32, np.dtype("float32"), "float32"])
def test_tensor_takes_numpy_dtypes(dtype: Any) -> None:
    col = loch.Tensor(dtype, shape=(3,))
    assert col == loch.Tensor("float32", shape=(3,))
    ds = loch.create(f"mem://schema-dtype-{id(dtype)}", schema={"x": col})
    assert ds.schema["x"].dtype == "float32"
    ds.extend({"x": np.ones((2, 3), np.float32)})
    ds.commit()
    assert ds["x"][1].tolist() == [1.0, 1.0, 1.0]


def test_every_column_type_takes_numpy_dtypes() -> None:
    assert loch.Image(dtype=np.uint8).dtype == "uint8"
    assert loch.Audio(np.int16).dtype == "int16"
    assert loch.Mask(np.uint8, compression="png").sample_compression == "png"
    assert loch.ClassLabel(dtype=np.int32).dtype == "int32"
    assert loch.BBox(dtype=np.float64).dtype == "float64"
    assert loch.Embedding(4, dtype=np.int8).dtype == "int8"
    assert loch.PointCloud(dtype=np.float16).dtype == "float16"
    assert loch.Tensor(bool).dtype == "bool"


@pytest.mark.parametrize("dtype", [np.complex64, np.str_, object, np.dtype("datetime64[s]"), None, 3.5])
def test_a_numpy_dtype_loch_lacks_is_refused(dtype: Any) -> None:
    with pytest.raises(loch.InvalidArgument, match=re.escape(f"dtype {dtype!r}")):
        loch.Tensor(dtype)


def test_an_int_shape_is_one_dimension() -> None:
    assert loch.Tensor("float32", shape=7).shape == (7,)
    assert loch.Tensor("float32", shape=np.int64(7)).shape == (7,)
    assert loch.Tensor("float32", shape=[None, 4]).shape == (None, 4)


@pytest.mark.parametrize("shape", ["7", 7.0, (3, "4"), (True,), True])
def test_a_bad_shape_is_refused(shape: Any) -> None:
    with pytest.raises(loch.InvalidArgument, match=re.escape(f"shape={shape!r}")):
        loch.Tensor("float32", shape=shape)


def test_class_names_are_given_once() -> None:
    with pytest.raises(loch.InvalidArgument, match=re.escape("class names ['a'] are given more than once")):
        loch.ClassLabel(["a", "b", "a"])
    with pytest.raises(loch.InvalidArgument, match="want a list of class names, got a single str"):
        loch.ClassLabel("cat")
    assert loch.ClassLabel(("a", "b")).class_names == ("a", "b")


SCHEMA_JSON = '{"columns": [{"name": "x", "dtype": "int64", "shape": []}]}'


def test_a_schema_file_name_is_refused_with_how_to_pass_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "schema.json").write_text(SCHEMA_JSON)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(loch.InvalidArgument) as e:
        loch.create("mem://schema-file-name", schema="schema.json")
    assert "schema='schema.json' is not a schema's text: it names a file" in str(e.value)
    assert "open('schema.json').read()" in str(e.value)
    assert "unmarshal" not in str(e.value)
    with pytest.raises(loch.InvalidArgument, match="is not a schema's text: pass the schema's text"):
        loch.create("mem://schema-no-file", schema="missing.yaml")


def test_a_schema_as_text_or_path(tmp_path: Path) -> None:
    (tmp_path / "schema.json").write_text(SCHEMA_JSON)
    want = loch.Schema({"x": loch.Tensor("int64", shape=())})
    yaml = "columns: [{name: x, dtype: int64, shape: []}]"
    for i, schema in enumerate([SCHEMA_JSON, yaml, tmp_path / "schema.json"]):
        got = loch.create(f"mem://schema-text-{i}", schema=schema).schema
        assert {k: (c.kind, c.dtype, c.shape) for k, c in got.items()} == {
            k: (c.kind, c.dtype, c.shape) for k, c in want.items()
        }

"""ds.extend takes columns (a dict), rows (a list of dicts), a pandas
DataFrame or a pyarrow Table, and stages the same rows from each; a bad
value raises loch.InvalidArgument naming its column and stages nothing."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import loch

SCHEMA = {
    "angles": loch.Tensor("float32", shape=(3,)),
    "label": loch.ClassLabel(["cat", "dog"]),
    "caption": loch.Text(),
    "meta": loch.JSON(),
    "blob": loch.Bytes(),
}


def new(name: str) -> loch.Dataset:
    return loch.create(f"mem://extend-{name}", schema=SCHEMA)


def rows_of(ds: loch.Dataset) -> list[dict[str, Any]]:
    out = []
    for i in range(len(ds)):
        row = ds[i]
        row["angles"] = None if row["angles"] is None or np.size(row["angles"]) == 0 else row["angles"].tolist()
        out.append(row)
    return out


EXPECTED = [
    {"angles": [0.0, 1.0, 2.0], "label": 0, "caption": "a cat", "meta": {"run": 1}, "blob": b"\x00"},
    {"angles": [3.0, 4.0, 5.0], "label": 1, "caption": "a dog", "meta": {"run": 2}, "blob": b"\x01\x02"},
]


def committed(ds: loch.Dataset) -> list[dict[str, Any]]:
    ds.commit("rows")
    return rows_of(ds)


def test_extend_columns_is_the_reference() -> None:
    ds = new("columns")
    ds.extend({
        "angles": np.arange(6, dtype=np.float32).reshape(2, 3),
        "label": [0, 1],
        "caption": ["a cat", "a dog"],
        "meta": [{"run": 1}, {"run": 2}],
        "blob": [b"\x00", b"\x01\x02"],
    })  # fmt: skip
    assert committed(ds) == EXPECTED


def test_extend_class_names_are_their_labels() -> None:
    """A class label column takes its class names for labels (as Hugging
    Face's ClassLabel does), from each input form, and refuses a name it
    does not have, naming it, staging nothing."""
    import pandas as pd
    import pyarrow as pa

    ds = new("class-names")
    ds.extend({"label": ["dog", "cat", None]})
    ds.extend([{"label": "cat"}, {"label": 1}])
    ds.extend(pd.DataFrame({"label": ["dog"]}))
    ds.extend(pa.table({"label": ["cat"]}))
    ds.extend({"label": np.array(["dog"])})
    unknown = re.escape("column 'label': 'bird' is not one of its class names ['cat', 'dog']")
    with pytest.raises(loch.InvalidArgument, match=unknown):
        ds.extend({"label": ["cat", "bird"]})
    ds.commit()
    assert [ds["label"][i] for i in range(len(ds))] == [1, 0, None, 0, 1, 1, 0, 1]


def test_extend_a_column_not_in_the_schema_says_to_add_it() -> None:
    ds = new("unknown-column")
    message = r"column 'nope' is not in the dataset's committed schema: add it with add_column\(\) first"
    with pytest.raises(loch.InvalidArgument, match=message):
        ds.extend({"nope": ["a"]})


def test_extend_rows() -> None:
    ds = new("rows")
    ds.extend([dict(r, angles=np.asarray(r["angles"], np.float32)) for r in EXPECTED])
    assert committed(ds) == EXPECTED


def test_extend_rows_leaving_columns_out_stages_empty_samples() -> None:
    ds = new("rows-partial")
    ds.extend([{"caption": "only a caption"}, {"label": 1}])
    ds.commit()
    assert ds["caption"][0] == "only a caption" and ds["caption"][1] in (None, "")
    assert ds["label"][1] == 1
    assert len(ds) == 2


def test_extend_dataframe() -> None:
    pd = pytest.importorskip("pandas")
    ds = new("pandas")
    df = pd.DataFrame({
        "angles": [np.asarray(r["angles"], np.float32) for r in EXPECTED],
        "label": [0, 1],
        "caption": ["a cat", "a dog"],
        "meta": [{"run": 1}, {"run": 2}],
        "blob": [b"\x00", b"\x01\x02"],
    })  # fmt: skip
    ds.extend(df)
    assert committed(ds) == EXPECTED


def test_extend_dataframe_missing_values_are_empty_samples() -> None:
    pd = pytest.importorskip("pandas")
    ds = new("pandas-missing")
    ds.extend(pd.DataFrame({"caption": ["a cat", None, np.nan], "label": pd.array([0, None, 1], dtype="Int64")}))
    ds.commit()
    assert ds["caption"][0] == "a cat"
    assert [ds["caption"][i] in (None, "") for i in range(3)] == [False, True, True]
    assert ds["label"][2] == 1


def loaded(ds: loch.Dataset, column: str) -> tuple[list[Any], list[bool]]:
    """A column's values and null flags as ds.numpy() delivers them."""
    (b,) = list(ds.numpy(batch_size=len(ds), columns=[column]))
    return b[column].tolist(), b.get(column + ".null", np.zeros(len(ds), bool)).tolist()


def test_extend_dataframe_nan_is_an_empty_sample_as_in_arrow() -> None:
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    schema = {"f": loch.Tensor("float32", shape=())}
    from_pandas = loch.create("mem://extend-pandas-nan", schema=schema)
    from_pandas.extend(pd.DataFrame({"f": [1.0, np.nan, 2.0]}))
    from_pandas.commit()
    from_arrow = loch.create("mem://extend-arrow-null", schema=schema)
    from_arrow.extend(pa.table({"f": pa.array([1.0, None, 2.0], pa.float32())}))
    from_arrow.commit()
    assert loaded(from_pandas, "f") == ([1.0, 0.0, 2.0], [False, True, False])
    assert loaded(from_pandas, "f") == loaded(from_arrow, "f")


def test_extend_dataframe_integers_with_a_missing_value() -> None:
    pd = pytest.importorskip("pandas")
    ds = loch.create("mem://extend-pandas-int-nan", schema={"label": loch.Tensor("int64", shape=())})
    df = pd.DataFrame({"label": [1, 2**53, None]})
    assert df["label"].dtype == np.float64  # pandas' own doing: NaN for the None
    ds.extend(df)
    ds.extend(pd.DataFrame({"label": [-3.0, 4.0]}))  # whole floats, nothing missing
    ds.commit()
    assert loaded(ds, "label") == ([1, 2**53, 0, -3, 4], [False, False, True, False, False])


@pytest.mark.parametrize(
    ("values", "dtype", "bad"),
    [([1, 2.5, None], "int64", "2.5"), ([1.0, 2.0**63], "int64", "9.223372036854776e+18"),
     ([1.0, -1.0], "uint8", "-1.0"), ([300.0], "uint8", "300.0")],
)  # fmt: skip
def test_extend_dataframe_refuses_floats_an_integer_column_cannot_hold(
    values: list[Any], dtype: str, bad: str
) -> None:
    pd = pytest.importorskip("pandas")
    ds = loch.create(f"mem://extend-pandas-{dtype}-{bad}", schema={"n": loch.Tensor(dtype, shape=())})
    message = f"column 'n' holds {dtype}, got the float64 value {bad} "
    with pytest.raises(loch.InvalidArgument, match=re.escape(message)) as e:
        ds.extend(pd.DataFrame({"n": values}))
    assert "astype" not in str(e.value)
    ds.commit()
    assert len(ds) == 0


def test_extend_arrow_table() -> None:
    pa = pytest.importorskip("pyarrow")
    ds = new("arrow")
    table = pa.table({
        "angles": pa.array([r["angles"] for r in EXPECTED], type=pa.list_(pa.float32(), 3)),
        "label": pa.array([0, 1], type=pa.int64()),
        "caption": ["a cat", "a dog"],
        "meta": [{"run": 1}, {"run": 2}],
        "blob": pa.array([b"\x00", b"\x01\x02"], type=pa.binary()),
    })  # fmt: skip
    ds.extend(table)
    assert committed(ds) == EXPECTED
    ds.extend(table.to_batches()[0])  # a RecordBatch too
    ds.commit()
    assert rows_of(ds)[2:] == EXPECTED


def test_extend_arrow_nulls_and_chunks() -> None:
    pa = pytest.importorskip("pyarrow")
    ds = new("arrow-nulls")
    table = pa.concat_tables([pa.table({"caption": ["a", None]}), pa.table({"caption": ["c"]})])
    ds.extend(table)
    ds.commit()
    assert [ds["caption"][i] for i in (0, 2)] == ["a", "c"]
    assert ds["caption"][1] in (None, "")


@pytest.mark.parametrize(
    ("make", "column"),
    [
        (lambda pd, pa: [{"caption": "ok"}, {"caption": 3}], "caption"),
        (lambda pd, pa: [{"angles": ["x", "y", "z"]}], "angles"),
        (lambda pd, pa: pd.DataFrame({"angles": ["not", "numbers"]}), "angles"),
        (lambda pd, pa: pd.DataFrame({"meta": [{"ok": 1}, {"bad": object()}]}), "meta"),
        (lambda pd, pa: pa.table({"caption": [1, 2]}), "caption"),
        (lambda pd, pa: pa.table({"blob": ["text", "not bytes"]}), "blob"),
    ],
    ids=["rows-text", "rows-tensor", "pandas-tensor", "pandas-json", "arrow-text", "arrow-bytes"],
)
def test_extend_bad_value_names_the_column(make: Any, column: str) -> None:
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    ds = new(f"bad-{column}-{id(make)}")
    with pytest.raises(loch.InvalidArgument, match=repr(column)):
        ds.extend(make(pd, pa))
    ds.commit()
    assert len(ds) == 0, "a refused extend staged rows"


def test_extend_refuses_what_is_not_rows() -> None:
    ds = new("not-rows")
    with pytest.raises(loch.InvalidArgument, match="row 1 is a int"):
        ds.extend([{"label": 0}, 3])
    with pytest.raises(loch.InvalidArgument, match="got str"):
        ds.extend("label")  # type: ignore[arg-type]
    with pytest.raises(loch.InvalidArgument, match="got int"):
        ds.extend(7)  # type: ignore[arg-type]


def test_pandas_and_pyarrow_are_imported_only_when_given() -> None:
    import subprocess
    import sys

    code = (
        "import sys, numpy as np, loch\n"
        "ds = loch.create('mem://lazy', schema={'n': loch.Tensor('int64', shape=())})\n"
        "ds.extend({'n': np.arange(3)}); ds.extend([{'n': 3}]); ds.commit()\n"
        "print(sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"

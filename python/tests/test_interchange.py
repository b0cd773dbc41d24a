"""Arrow and Hugging Face in and out of loch (loch.interchange): the type
mapping both ways, streaming, bytes of images kept, and refusals."""

from __future__ import annotations

import io
from pathlib import Path

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image as PILImage

import loch


def _png(color: int, size: tuple[int, int] = (6, 4)) -> bytes:
    buf = io.BytesIO()
    PILImage.new("RGB", size, (color, 0, 0)).save(buf, format="PNG")
    return buf.getvalue()


def test_arrow_round_trip(tmp_path: Path) -> None:
    table = pa.table({
        "n": pa.array(np.arange(10_000, dtype=np.int64)),
        "x": pa.array(np.linspace(0, 1, 10_000, dtype=np.float32)),
        "ok": pa.array([i % 2 == 0 for i in range(10_000)]),
        "name": pa.array([f"row {i}" for i in range(10_000)]),
        "blob": pa.array([bytes([i % 256]) * 3 for i in range(10_000)], pa.binary()),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(30_000, dtype=np.float32)), 3),
        "ragged": pa.array([list(range(i % 4)) for i in range(10_000)], pa.list_(pa.int32())),
    })  # fmt: skip
    ds = loch.from_arrow(table.to_batches(max_chunksize=1000), str(tmp_path / "ds"))
    assert len(ds) == 10_000 and len(ds.log()) == 2, "one commit"
    assert ds.schema["vec"].shape == (3,) and ds.schema["name"].kind == "text" and ds.schema["ragged"].shape == (None,)
    reader = ds.to_arrow()
    assert isinstance(reader, pa.RecordBatchReader)
    batches = list(reader)
    assert len(batches) > 1, "streamed in batches"
    back = pa.Table.from_batches(batches)
    for c in ("n", "x", "ok", "name", "blob", "vec"):
        assert back[c].to_pylist() == table[c].to_pylist(), c
    assert [list(v) for v in back["ragged"].to_pylist()] == table["ragged"].to_pylist()
    only = ds.to_arrow(columns=["n"]).read_all()
    assert only.column_names == ["n"]
    # Parquet through Arrow.
    pq.write_table(back.select(["n", "name"]), tmp_path / "t.parquet")
    again = loch.from_arrow(pq.ParquetFile(tmp_path / "t.parquet").iter_batches(batch_size=3000), str(tmp_path / "pq"))
    assert len(again) == 10_000 and again["name"][7] == "row 7"


def test_to_arrow_at_ref(tmp_path: Path) -> None:
    ds = loch.from_arrow(pa.table({"n": [1, 2]}), str(tmp_path / "ds"))
    v1 = ds.version
    ds.extend(pa.table({"n": [3]}))
    ds.commit("third")
    assert ds.to_arrow(ref=v1).read_all()["n"].to_pylist() == [1, 2]
    assert ds.to_arrow().read_all()["n"].to_pylist() == [1, 2, 3]


def test_from_arrow_refuses(tmp_path: Path) -> None:
    with pytest.raises(loch.InvalidArgument, match="'when'.*no loch type"):
        loch.from_arrow(pa.table({"when": pa.array([1], pa.timestamp("s"))}), str(tmp_path / "a"))
    assert not (tmp_path / "a").exists(), "nothing created"
    good, bad = pa.record_batch({"n": [1, 2]}), pa.record_batch({"n": ["x"]})
    with pytest.raises(loch.InvalidArgument):
        loch.from_arrow([good, bad], str(tmp_path / "b"))
    assert len(loch.open(str(tmp_path / "b"))) == 0, "nothing committed"


def test_huggingface_round_trip(tmp_path: Path) -> None:
    pngs = [_png(i * 20) for i in range(12)]
    feats = datasets.Features({
        "image": datasets.Image(),
        "label": datasets.ClassLabel(names=["cat", "dog", "bird"]),
        "emb": datasets.List(datasets.Value("float32"), length=4),
        "grid": datasets.Array2D(shape=(2, 3), dtype="int16"),
        "caption": datasets.Value("string"),
        "score": datasets.Value("float64"),
    })  # fmt: skip
    hf = datasets.Dataset.from_dict({
        "image": [{"bytes": b, "path": None} for b in pngs],
        "label": [i % 3 for i in range(12)],
        "emb": [[float(i)] * 4 for i in range(12)],
        "grid": [np.full((2, 3), i, np.int16).tolist() for i in range(12)],
        "caption": [f"photo {i}" for i in range(12)],
        "score": [i / 4 for i in range(12)],
    }, features=feats)  # fmt: skip
    ds = loch.from_huggingface(hf, str(tmp_path / "ds"))
    assert len(ds) == 12
    s = ds.schema
    assert s["image"].kind == "image" and s["image"].sample_compression == "png"
    assert s["label"].kind == "class_label" and s["label"].class_names == ("cat", "dog", "bird")
    assert s["emb"].shape == (4,) and s["grid"].shape == (2, 3) and s["grid"].dtype == "int16"
    np.testing.assert_array_equal(ds["image"][3], np.asarray(PILImage.open(io.BytesIO(pngs[3]))))
    assert list(ds["label"][0:4]) == [0, 1, 2, 0]

    back = ds.to_huggingface()
    assert back.features["label"].names == ["cat", "dog", "bird"]
    assert isinstance(back.features["image"], datasets.Image)
    row = back[7]
    assert row["label"] == 1 and row["caption"] == "photo 7" and row["score"] == 7 / 4
    assert row["emb"] == [7.0] * 4 and np.asarray(row["grid"]).tolist() == np.full((2, 3), 7).tolist()
    np.testing.assert_array_equal(np.asarray(row["image"]), np.asarray(PILImage.open(io.BytesIO(pngs[7]))))


def test_from_huggingface_refuses(tmp_path: Path) -> None:
    hf = datasets.Dataset.from_dict({"t": [{"a": 1}]}, features=datasets.Features({"t": {"a": datasets.Value("int32")}}))
    with pytest.raises(loch.InvalidArgument, match="feature 't'"):
        loch.from_huggingface(hf, str(tmp_path / "ds"))
    assert not (tmp_path / "ds").exists()

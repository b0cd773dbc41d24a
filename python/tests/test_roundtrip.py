"""Every dtype and kind written from Python reads back equal: by sample, by
range, by positions, and through the loader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import loch
from loch import dtypes

NUMERIC = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "bfloat16", "float32", "float64"]  # fmt: skip


def numeric_values(dtype: str, n: int, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(len(dtype))
    npdt = dtypes.numpy_dtype(dtype)
    if dtype == "bool":
        return rng.integers(0, 2, (n, *shape)).astype(bool)
    if npdt.kind in "iu":
        info = np.iinfo(npdt)
        return rng.integers(info.min, info.max, (n, *shape), dtype=npdt, endpoint=True)
    return rng.standard_normal((n, *shape)).astype(npdt)


def assert_same(got: Any, want: Any) -> None:
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), f"got {type(got)}"
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))
    else:
        assert got == want


@pytest.mark.parametrize("dtype", NUMERIC)
def test_numeric_dtypes(tmp_path: Path, dtype: str) -> None:
    ds = loch.create(str(tmp_path / "ds"), schema={"fixed": loch.Tensor(dtype, shape=(2, 3)),
                                                   "scalar": loch.Tensor(dtype, shape=())})  # fmt: skip
    fixed, scalar = numeric_values(dtype, 10, (2, 3)), numeric_values(dtype, 10, ())
    ds.extend({"fixed": fixed, "scalar": scalar})
    ds.commit()
    for i in (0, 7, -1):
        assert_same(ds["fixed"][i], fixed[i])
        assert ds["scalar"][i].tobytes() == scalar[i].tobytes()
    assert_same(ds["fixed"][2:9], fixed[2:9])
    assert_same(ds["fixed"][[9, 0, 4]], fixed[[9, 0, 4]])
    assert_same(ds["scalar"][:], scalar)
    (batch,) = list(ds.numpy(batch_size=10))
    assert_same(batch["fixed"], fixed)
    assert_same(batch["scalar"], scalar)
    assert batch["index"].tolist() == list(range(10))


def test_variable_dtypes(tmp_path: Path) -> None:
    text = ["", "héllo", "日本語", None, "x" * 10000]
    values = [{"a": [1, 2]}, None, "str", 3.5, {"nested": {"k": None}}]
    blobs = [b"\x00\x01", b"", None, bytes(range(256)), b"z"]
    ds = loch.create(str(tmp_path / "ds"), schema={"t": loch.Text(), "j": loch.JSON(), "b": loch.Bytes(),
                                                   "link": loch.Link()})  # fmt: skip
    ds.extend({"t": text, "j": values, "b": blobs, "link": ["s3://b/k", None, "/p", "file:///q", "x"]})
    ds.commit()
    assert ds["t"][:] == text
    assert ds["j"][:] == values
    assert ds["b"][:] == blobs
    assert ds["link"][2] == "/p"
    (batch,) = list(ds.numpy(batch_size=5))
    assert batch["t"] == text and batch["j"] == values and batch["b"] == blobs
    assert batch["t.null"].tolist() == [False, False, False, True, False]


def test_ragged_and_null(tmp_path: Path) -> None:
    boxes = [np.arange(4 * k, dtype=np.float32).reshape(k, 4) for k in (0, 3, 1, 2)]
    ds = loch.create(str(tmp_path / "ds"), schema={"boxes": loch.BBox("xywh"), "emb": loch.Embedding(4)})
    ds.extend({"boxes": boxes, "emb": [np.ones(4, np.float32), None, np.zeros(4, np.float32), None]})
    ds.commit()
    for i, b in enumerate(boxes):
        assert_same(ds["boxes"][i], b)
    got = ds["boxes"][0:4]
    assert isinstance(got, list) and all(np.array_equal(g, b) for g, b in zip(got, boxes, strict=True))
    assert ds["emb"][1] is None
    assert ds.schema["boxes"].bbox_format == "xywh"
    assert ds.schema["boxes"].max_shape == (3, 4)
    (batch,) = list(ds.numpy(batch_size=4))
    assert batch["boxes"].shape == (4, 3, 4)
    assert batch["boxes.shapes"].tolist() == [[0, 4], [3, 4], [1, 4], [2, 4]]
    for i, b in enumerate(boxes):
        assert np.array_equal(batch["boxes"][i, : len(b)], b)
        assert not batch["boxes"][i, len(b) :].any()
    assert batch["emb.null"].tolist() == [False, True, False, True]
    assert not batch["emb"][1].any()


@pytest.mark.parametrize("compression", ["png", "jpeg", "lz4", "zstd", "none"])
def test_images(tmp_path: Path, compression: str) -> None:
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (h, 12, 3), dtype=np.uint8) for h in (8, 8, 16)]
    ds = loch.create(str(tmp_path / "ds"), schema={"image": loch.Image(compression)})
    ds.extend({"image": images})
    ds.commit()
    for i, img in enumerate(images):
        got = ds["image"][i]
        assert got.shape == img.shape and got.dtype == np.uint8
        if compression == "jpeg":
            assert np.abs(got.astype(int) - img).mean() < 80  # lossy
        else:
            assert np.array_equal(got, img)
    assert ds["image"][0:2].shape == (2, 8, 12, 3)


def test_encoded_images_are_stored_as_given(tmp_path: Path) -> None:
    src = loch.create("mem://encode-src", schema={"image": loch.Image("png")})
    img = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)
    src.append({"image": img})
    src.commit()
    # A png made by loch, read back encoded through a jpeg-free round trip:
    ds = loch.create(str(tmp_path / "ds"), schema={"png": loch.Image("png"), "raw": loch.Image("lz4")})
    png = _png(img)
    ds.extend({"png": [loch.EncodedImage(png)], "raw": [loch.EncodedImage(png)]})
    ds.commit()
    assert np.array_equal(ds["png"][0], img)
    assert np.array_equal(ds["raw"][0], img)


def _png(img: np.ndarray) -> bytes:
    import struct
    import zlib

    h, w, _ = img.shape
    raw = b"".join(b"\x00" + img[y].tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))  # fmt: skip


def test_kinds(tmp_path: Path) -> None:
    schema = {
        "video": loch.Video(shape=(2, None, None, 3)),
        "audio": loch.Audio(shape=(None, 2)),
        "mask": loch.Mask(),
        "label": loch.ClassLabel(["a", "b", "c"]),
        "labels": loch.ClassLabel(["a", "b", "c"], multi=True),
        "points": loch.PointCloud(4),
        "emb": loch.Embedding(8, dtype="float16"),
    }
    rng = np.random.default_rng(1)
    row = {
        "video": rng.integers(0, 256, (2, 4, 6, 3), dtype=np.uint8),
        "audio": rng.standard_normal((100, 2)).astype(np.float32),
        "mask": rng.integers(0, 2, (5, 7)).astype(bool),
        "label": np.int64(2),
        "labels": np.array([0, 2], dtype=np.int64),
        "points": rng.standard_normal((9, 4)).astype(np.float32),
        "emb": rng.standard_normal(8).astype(np.float16),
    }
    ds = loch.create(str(tmp_path / "ds"), schema=schema)
    ds.append(row)
    ds.append(row)
    ds.commit()
    assert {n: c.kind for n, c in ds.schema.items()} == {
        "video": "video", "audio": "audio", "mask": "mask", "label": "class_label",
        "labels": "class_label", "points": "point_cloud", "emb": "embedding",
    }  # fmt: skip
    assert ds.schema["label"].class_names == ("a", "b", "c")
    for name, value in row.items():
        assert np.array_equal(ds[name][1], value), name
    got = ds[1]
    assert set(got) == set(schema)


def test_schema_text_and_log(tmp_path: Path) -> None:
    ds = loch.create(str(tmp_path / "ds"), schema="columns:\n  - {name: a, dtype: int32, shape: [2]}\n")
    ds.extend({"a": np.zeros((3, 2), np.int32)})
    v1 = ds.commit("one")
    ds.extend({"a": np.ones((2, 2), np.int32)})
    v2 = ds.commit("two")
    assert [c.message for c in ds.log()] == ["two", "one", "create dataset"]
    assert [c.rows for c in ds.log()] == [5, 3, 0]
    old = loch.open(str(tmp_path / "ds"), version=v1)
    assert len(old) == 3 and old.version == v1 and old.pinned
    assert len(loch.open(str(tmp_path / "ds"))) == 5 and ds.version == v2


def test_update_delete_add_column(tmp_path: Path) -> None:
    ds = loch.create(str(tmp_path / "ds"), schema={"a": loch.Tensor("int64", shape=())})
    ds.extend({"a": np.arange(5)})
    ds.commit()
    ids = ds.row_ids()
    assert ids.tolist() == [0, 1, 2, 3, 4]
    ds.delete([ids[1]])
    ds.update(ids[3], {"a": np.int64(30)})
    ds.add_column("note", loch.Text())
    ds.commit()
    assert ds["a"][:].tolist() == [0, 2, 30, 4]  # an updated row keeps its place
    assert ds.row_ids().tolist() == [0, 2, 3, 4]
    assert ds["note"][:] == [None] * 4
    ds.extend({"a": np.array([5]), "note": ["five"]})
    ds.commit()
    assert ds["note"][4] == "five"


def test_json_values_round_trip_exactly(tmp_path: Path) -> None:
    values = [{"k": i, "l": list(range(i))} for i in range(50)]
    ds = loch.create(str(tmp_path / "ds"), schema={"j": loch.JSON()})
    ds.extend({"j": values})
    ds.commit()
    assert ds["j"][:] == values
    assert json.dumps(ds["j"][7]) == json.dumps(values[7])


def test_buffers_are_given_back(rows_ds: loch.Dataset) -> None:
    before = loch.buffer_stats()["live"]
    for batch in rows_ds.numpy(batch_size=100):
        assert batch["x"].shape[1] == 3
    del batch
    arr = rows_ds["x"][0:10]
    assert loch.buffer_stats()["live"] > before
    del arr
    assert loch.buffer_stats()["live"] == before


def test_link_fetch(tmp_path: Path) -> None:
    target = tmp_path / "original.bin"
    target.write_bytes(b"the original")
    ds = loch.create(str(tmp_path / "ds"), schema={"original": loch.Link()})
    ds.extend({"original": [str(target), None]})
    ds.commit()
    assert ds.fetch("original", 0) == b"the original"
    with pytest.raises(loch.NotFound):
        ds.fetch("original", 1)

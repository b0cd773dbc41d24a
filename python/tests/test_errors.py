"""Bad input raises the loch exception of its class, with the Go message,
and never crashes the interpreter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import loch


def test_hierarchy() -> None:
    for cls in (loch.NotFound, loch.AlreadyExists, loch.Corrupt, loch.Conflict, loch.InvalidArgument,
                loch.ReadOnly, loch.PermissionDenied, loch.NewerFormat, loch.Closed, loch.ForkedProcess,
                loch.InternalError):  # fmt: skip
        assert issubclass(cls, loch.Error)
    assert issubclass(loch.InvalidArgument, ValueError)
    assert issubclass(loch.NotFound, LookupError)
    assert issubclass(loch.ReadOnly, loch.InvalidArgument)


def test_not_found(tmp_path: Path) -> None:
    with pytest.raises(loch.NotFound, match="no loch dataset there"):
        loch.open(str(tmp_path / "missing"))
    ds = loch.create(str(tmp_path / "ds"), schema={"a": loch.Text()})
    with pytest.raises(loch.NotFound):
        loch.open(str(tmp_path / "ds"), version="0" * 32)
    with pytest.raises(KeyError):
        ds["nope"]


def test_already_exists(tmp_path: Path) -> None:
    loch.create(str(tmp_path / "ds"), schema={"a": loch.Text()})
    with pytest.raises(loch.AlreadyExists):
        loch.create(str(tmp_path / "ds"), schema={"a": loch.Text()})


@pytest.mark.parametrize(
    ("schema", "match"),
    [
        ({"a": loch.Tensor("float128")}, "unknown dtype"),
        ({"a": loch.Image(dtype="int8")}, "image"),
        ({"bad name!": loch.Text()}, "column name"),
        ({"a": loch.Image("png", dtype="float32")}, "png compression needs a uint8"),
        ("columns: [{name: a, dtype: int8, colour: red}]", "unknown field"),
    ],
)
def test_invalid_schema(tmp_path: Path, schema: object, match: str) -> None:
    with pytest.raises(loch.InvalidArgument, match=match):
        loch.create(str(tmp_path / "ds"), schema=schema)  # type: ignore[arg-type]


def test_invalid_values(tmp_path: Path) -> None:
    ds = loch.create(str(tmp_path / "ds"), schema={"a": loch.Tensor("float32", shape=(3,)), "t": loch.Text(),
                                                   "l": loch.ClassLabel(["x", "y"])})  # fmt: skip
    with pytest.raises(loch.InvalidArgument, match=r"shape \[4\], want \[3\]"):
        ds.extend({"a": np.zeros((2, 4), np.float32)})
    with pytest.raises(loch.InvalidArgument, match="cast it"):
        ds.extend({"a": np.zeros((2, 3), np.complex64)})
    with pytest.raises(loch.InvalidArgument, match="unknown column"):
        ds.extend({"b": np.zeros((2, 3), np.float32)})
    with pytest.raises(loch.InvalidArgument, match="holds text"):
        ds.extend({"t": [1, 2]})
    with pytest.raises(loch.InvalidArgument, match="out of range"):
        ds.extend({"l": [0, 5]})
    with pytest.raises(loch.InvalidArgument, match="rows"):
        ds.extend({"a": np.zeros((2, 3), np.float32), "t": ["one"]})
    with pytest.raises(loch.InvalidArgument, match="one per row"):
        ds.extend({"t": "abc"})
    ds.extend({"a": np.zeros((2, 3), np.float32)})  # nothing was staged by the failures
    ds.commit()
    assert len(ds) == 2
    with pytest.raises(IndexError):
        ds["a"][2]


def test_read_only(tmp_path: Path) -> None:
    ds = loch.create(str(tmp_path / "ds"), schema={"a": loch.Text()})
    pinned = loch.open(str(tmp_path / "ds"), version=ds.version)
    with pytest.raises(loch.ReadOnly):
        pinned.extend({"a": ["x"]})
        pinned.commit()


def test_closed(tmp_path: Path) -> None:
    ds = loch.create(str(tmp_path / "ds"), schema={"a": loch.Text()})
    ds.close()
    ds.close()  # idempotent
    with pytest.raises(loch.Closed):
        len(ds)


def test_bad_loader_config(rows_ds: loch.Dataset) -> None:
    # Go checks the settings (loader.Config.Validate, through the C ABI)
    # when the loader is made; its message names the setting.
    with pytest.raises(loch.InvalidArgument, match="rank 3: want 0 <= rank < world size 2"):
        rows_ds.numpy(rank=3, world_size=2)
    with pytest.raises(loch.InvalidArgument, match='shuffle "sideways": want none, block or full'):
        rows_ds.numpy(shuffle="sideways")
    with pytest.raises(loch.InvalidArgument, match="shuffle"):
        rows_ds.numpy(shuffle=3)  # type: ignore[arg-type]
    with pytest.raises(loch.InvalidArgument, match="batch size -1: want 1 to 2147483647"):
        rows_ds.numpy(batch_size=-1)
    with pytest.raises(loch.InvalidArgument, match="prefetch batches -2"):
        rows_ds.numpy(prefetch_batches=-2)
    # a transform's grammar, when the loader is made, not at its first batch
    with pytest.raises(loch.InvalidArgument, match='transform for column "y": step 1 "frobnicate": unknown step'):
        rows_ds.numpy(transform={"y": "frobnicate"})
    assert rows_ds.numpy(batch_size=0).batch_size == 32  # zero: Go's default
    # ... and again when an iteration starts, for settings changed since.
    changed = rows_ds.numpy()
    changed.set_rank(3, 2)
    with pytest.raises(loch.InvalidArgument, match="rank 3"):
        list(changed)
    with pytest.raises(loch.InvalidArgument, match="no column"):
        rows_ds.numpy(columns=["nope"])
    other = rows_ds.numpy(batch_size=10)
    with pytest.raises(loch.InvalidArgument):
        other.load_state_dict({"epoch": 0, "loader": {"version": "not-this-one", "seed": 0, "epoch": 0,
                                                      "stages": [{"world_size": 1, "batch_size": 10,
                                                                  "batches_done": 1}]}})  # fmt: skip
        list(other)


def test_go_transforms(rows_ds: loch.Dataset, tmp_path: Path) -> None:
    ds = loch.create(str(tmp_path / "img"), schema={"image": loch.Image(), "label": loch.ClassLabel()})
    ds.extend({"image": np.full((2, 8, 6, 3), 255, np.uint8), "label": [0, 1]})
    ds.commit()
    try:
        (b,) = list(ds.numpy(batch_size=2, transform={"image": "decode,resize=4x4,to_float,chw"}))
    except NotImplementedError as e:  # a Go loader without Config.Transforms
        pytest.skip(str(e))
    assert b["image"].shape == (2, 3, 4, 4) and b["image"].dtype == np.float32
    assert np.allclose(b["image"], 1.0)
    (b,) = list(ds.numpy(batch_size=2, transform="decode,center_crop=4"))  # every image column
    assert b["image"].shape == (2, 4, 4, 3)
    with pytest.raises(loch.InvalidArgument, match="sideways"):
        list(ds.numpy(transform={"image": "sideways"}))
    with pytest.raises(loch.InvalidArgument, match="image column"):
        rows_ds.numpy(transform="decode")


def test_corrupt(tmp_path: Path) -> None:
    ds = loch.create(str(tmp_path / "ds"), schema={"a": loch.Tensor("int32", shape=(100,))})
    ds.extend({"a": np.arange(1000, dtype=np.int32).reshape(10, 100)})
    ds.commit()
    chunk = next(p for p in (tmp_path / "ds" / "chunks").rglob("*") if p.is_file())
    data = bytearray(chunk.read_bytes())
    data[-10] ^= 0xFF
    chunk.write_bytes(bytes(data))
    fresh = loch.open(str(tmp_path / "ds"))
    key = chunk.relative_to(tmp_path / "ds").as_posix()
    # Each reader names the chunk once and says "corrupt" once (issue 35
    # item 13: "corrupt chunk: corrupt chunk: data checksum ...").
    for read in (lambda: fresh["a"][:], lambda: list(fresh.numpy())):
        with pytest.raises(loch.Corrupt) as e:
            read()
        message = str(e.value).replace(str(tmp_path), "")  # the test's folder is named test_corrupt...
        assert message.count("corrupt") == 1 and message.count(key) == 1, message


"""The TensorFlow adapter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from conftest import ROWS  # noqa: E402

import loch  # noqa: E402


def test_dataset(rows_ds: loch.Dataset) -> None:
    tfds = rows_ds.tensorflow(batch_size=100, shuffle=True, seed=2)
    assert isinstance(tfds, tf.data.Dataset)
    spec = tfds.element_spec
    assert spec["x"].shape.as_list() == [None, 3] and spec["x"].dtype == tf.float32
    assert spec["s"].dtype == tf.string
    seen = []
    for b in tfds:
        assert np.array_equal(b["y"].numpy(), b["index"].numpy())
        assert [s.decode() for s in b["s"].numpy()] == [f"row {i}" for i in b["index"].numpy()]
        seen += b["index"].numpy().tolist()
    assert sorted(seen) == list(range(ROWS))
    second = [i for b in tfds for i in b["index"].numpy().tolist()]
    assert sorted(second) == list(range(ROWS)) and second != seen, "each pass is a new epoch"


def test_each_pass_is_the_next_epoch(rows_ds: loch.Dataset) -> None:
    def order(epoch: int) -> list[int]:
        return [i for b in rows_ds.numpy(batch_size=100, shuffle=True, seed=2, epoch=epoch) for i in b["index"]]

    tfds = rows_ds.tensorflow(batch_size=100, shuffle=True, seed=2, columns=["y"], epoch=4)
    passes = [[i for b in tfds for i in b["index"].numpy().tolist()] for _ in range(2)]
    assert passes == [order(4), order(5)]


def test_ragged_json_and_fit(tmp_path: Path) -> None:
    schema = {"boxes": loch.BBox(), "meta": loch.JSON(), "x": loch.Tensor("float32", shape=(2,)),
              "y": loch.ClassLabel()}
    ds = loch.create(str(tmp_path / "ds"), schema=schema)
    n = 40
    ds.extend({"boxes": [np.ones((i % 3, 4), np.float32) for i in range(n)], "meta": [{"i": i} for i in range(n)],
               "x": np.random.default_rng(0).standard_normal((n, 2)), "y": np.arange(n) % 2})  # fmt: skip
    ds.commit()
    tfds = ds.tensorflow(batch_size=8)
    b = next(iter(tfds))
    assert b["boxes.shapes"].shape == (8, 2)
    assert b["meta"].numpy()[3] == b'{"i": 3}'
    model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(2)])
    model.compile(loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), optimizer="sgd")
    xy = ds.tensorflow(batch_size=8, columns=["x", "y"]).map(lambda b: (b["x"], b["y"]))
    model.fit(xy, epochs=1, verbose=0, shuffle=False)


def test_go_transforms_shape_the_spec(tmp_path: Path) -> None:
    ds = loch.create(str(tmp_path / "ds"), schema={"image": loch.Image()})
    ds.extend({"image": np.zeros((4, 8, 8, 3), np.uint8)})
    ds.commit()
    try:
        tfds = ds.tensorflow(batch_size=2, transform={"image": "to_float,chw"})
    except NotImplementedError as e:
        pytest.skip(str(e))
    assert tfds.element_spec["image"].dtype == tf.float32
    assert tfds.element_spec["image"].shape.as_list() == [None, 3, 8, 8]
    assert [b["image"].shape for b in tfds] == [(2, 3, 8, 8), (2, 3, 8, 8)]

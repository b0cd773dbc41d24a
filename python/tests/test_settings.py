"""The loader's options as one frozen value (loch.loader.LoaderSettings):
checked once, in the form they are kept in, with the messages the Loader
gave; the Loader and the adapters are made from it; and the modules that
loch.loader and loch.dataset were split into keep their names importable
from both."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import numpy as np
import pytest

import loch
from loch.loader import Loader, LoaderOptions, LoaderSettings


def test_settings_have_the_loaders_keywords() -> None:
    hints = {f.name: str(f.type) for f in dataclasses.fields(LoaderSettings)}
    options = {}
    for klass in reversed(LoaderOptions.__mro__):
        for name, ann in vars(klass).get("__annotations__", {}).items():
            options[name] = ann.__forward_arg__ if isinstance(ann, typing.ForwardRef) else str(ann)
    assert hints == options


def test_settings_are_frozen() -> None:
    s = LoaderSettings(batch_size=8)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.batch_size = 9  # type: ignore[misc]
    assert dataclasses.replace(s, rank=1, world_size=2) == LoaderSettings(batch_size=8, rank=1, world_size=2)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"batch_size": "8"}, "batch_size='8': want an int, got str"),
        ({"batch_size": True}, "batch_size=True: want an int, got bool"),
        ({"seed": -1}, r"seed=-1: want an int in \[0, 2\*\*64\)"),
        ({"epoch": 1.5}, "epoch=1.5: want an int, got float"),
        ({"world_size": 0}, "world_size=0: want an int >= 1"),
        ({"rank": "0"}, "rank='0': want an int, got str"),
        ({"drop_last": "no"}, "drop_last='no': want True or False, got str"),
        ({"allow_version_change": 1}, "allow_version_change=1: want True or False, got int"),
        ({"shuffle": 1}, r"shuffle=1: want True, False or a mode \('none', 'block', 'full'\), got int"),
        ({"columns": []}, r"columns=\[\]: name at least one column"),
        ({"columns": [1]}, r"columns=\[1\]: want column names \(str\), got int 1"),
        ({"columns": b"x"}, "columns=b'x': want a column name or a list of them, got bytes"),
        ({"sample_transform": 3}, "sample_transform=3: want a callable"),
        ({"workers": "4"}, "workers='4': want an int, got str"),
        ({"prefetch_bytes": 1 << 63}, r"prefetch_bytes=9223372036854775808: want an int in \[-2\*\*63, 2\*\*63\)"),
    ],
)
def test_settings_refuse_what_the_loader_refused(rows_ds: loch.Dataset, options: dict[str, Any], message: str) -> None:
    with pytest.raises(loch.InvalidArgument, match=message):
        LoaderSettings(**options)
    with pytest.raises(loch.InvalidArgument, match=message):  # the Loader's keywords, checked by the settings
        Loader(rows_ds, **options)


def test_settings_keep_the_checked_form() -> None:
    s = LoaderSettings(columns="y", batch_size=np.int64(8), shuffle=np.bool_(True), rows=[np.uint64(3), 1],
                       split=[0, 2], cache_dir=None)  # fmt: skip
    assert (s.columns, s.batch_size, s.shuffle, s.rows, s.split) == (("y",), 8, True, (3, 1), (0, 2))
    assert type(s.batch_size) is int and type(s.shuffle) is bool
    assert dataclasses.replace(s) == s  # checking again changes nothing


def test_go_config_leaves_unset_options_to_go() -> None:
    s = LoaderSettings(batch_size=4, workers=2, split=(1, 3))
    assert s.go_config(["y"], None) == {
        "columns": ["y"], "batch_size": 4, "shuffle": "none", "seed": 0, "world_size": 1, "rank": 0,
        "drop_last": False, "skip_bad_samples": False, "workers": 2, "split": {"index": 1, "count": 3},
    }  # fmt: skip


def test_a_loader_from_settings_is_the_loader_of_its_keywords(rows_ds: loch.Dataset) -> None:
    kw: dict[str, Any] = {"columns": ["y"], "batch_size": 100, "shuffle": True, "seed": 7, "rank": 1, "world_size": 2}
    a, b = Loader(rows_ds, **kw), Loader.from_settings(rows_ds, LoaderSettings(**kw))
    assert a.config() == b.config()
    assert [x["y"].tolist() for x in a] == [x["y"].tolist() for x in b]
    assert b.epoch == 1 and b.rank == 1 and b.world_size == 2


def test_the_columns_are_checked_against_the_dataset(rows_ds: loch.Dataset) -> None:
    LoaderSettings(columns=["nope"])  # the settings know no dataset
    with pytest.raises(loch.InvalidArgument, match=r"no column 'nope' \(have \['x', 'y', 's'\]\)"):
        Loader.from_settings(rows_ds, LoaderSettings(columns=["nope"]))


def test_torch_checks_the_options_before_using_them(rows_ds: loch.Dataset) -> None:
    pytest.importorskip("torch")
    with pytest.raises(loch.InvalidArgument, match="epoch='1': want an int, got str"):
        rows_ds.pytorch(epoch="1")  # type: ignore[arg-type]
    assert rows_ds.pytorch(epoch=np.int64(2), distributed=False).epoch == 2


def test_mixtures_share_the_loader_methods(rows_ds: loch.Dataset) -> None:
    m = loch.mix([rows_ds, rows_ds], [1, 1], epoch_rows=10)
    assert type(m).numpy is type(rows_ds).numpy
    with pytest.raises(TypeError, match=r"mixture\.numpy\(\) got an unexpected keyword argument 'batch_sise'"):
        m.numpy(batch_sise=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"ds\.numpy\(\) got an unexpected keyword argument 'batch_sise'"):
        rows_ds.numpy(batch_sise=2)  # type: ignore[call-arg]


# The public names of loch.loader and loch.dataset before they were split
# (and the private ones the tests use), still importable from them.
LOADER_NAMES = [
    "Loader", "LoaderOptions", "CommonLoaderOptions", "Source", "Batch", "Transform", "BATCH", "STREAM_RECORD",
    "STREAM_BATCH", "STREAM_END", "STREAM_DONE", "STREAM_FREED", "STREAM_RETURN", "STREAM_WAITING", "STREAM_DEPTH",
    "STREAM_READ", "STREAM_PIPE_BUF", "int_option", "check_keywords", "ADAPTER_KEYWORDS", "keyword_signature",
    "per_sample", "_GoLoader",
]  # fmt: skip
DATASET_NAMES = [
    "Dataset", "ColumnReader", "Commit", "UpsertReport", "create", "open", "start_mix_loader", "_storage_options",
]  # fmt: skip


@pytest.mark.parametrize(("module", "name"), [("loch.loader", n) for n in LOADER_NAMES]
                         + [("loch.dataset", n) for n in DATASET_NAMES])  # fmt: skip
def test_names_stay_importable(module: str, name: str) -> None:
    import importlib

    assert hasattr(importlib.import_module(module), name)

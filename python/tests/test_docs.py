"""The examples in the docstrings run (those not marked to skip)."""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest

import loch


@pytest.mark.parametrize("module", ["loch", "loch.schema", "loch.dtypes", "loch.dataset", "loch.errors",
                                    "loch.loader", "loch._write", "loch._buffers", "loch.torch",
                                    "loch.adapter", "loch._status", "loch.epochs", "loch.mixture", "loch.catalog"])  # fmt: skip
def test_docstring_examples(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), extraglobs={"loch": loch, "np": np},
                             optionflags=doctest.ELLIPSIS)  # fmt: skip
    assert result.failed == 0

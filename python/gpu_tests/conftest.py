"""Fixtures of the GPU tests (python/gpu_tests, run by ``make test-gpu`` or
run.sh, never by ``make test``): the device the tests move batches to and
a small committed dataset on local disk whose every value is a function of
its row id, so that any batch can be checked on its own.

The tests need a CUDA GPU: without one every test that needs it FAILS
with a message saying so (a missing component fails, never skips).
``LOCH_TEST_DEVICE=cpu`` is a dry run of the tests' logic on the CPU for
machines without a GPU (what needs CUDA itself, pinned memory or the side
stream, is then skipped with that reason); ``LOCH_TEST_DEVICE=cuda:1``
picks another GPU.
"""

from __future__ import annotations

import os

# JAX preallocates 75% of the GPU by default; the torch tests in the same
# process need some too.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import loch  # noqa: E402

ROWS = 1000  # not a multiple of the batch sizes: the last batch is short
BATCH = 64
IMAGE = (8, 8, 3)
DRY_RUN = os.environ.get("LOCH_TEST_DEVICE", "cuda") == "cpu"


def no_cuda_message(what: str) -> str:
    """The failure of a test that needs CUDA where there is none."""
    return (f"{what}: CUDA is not available (torch {torch.__version__}, built for CUDA {torch.version.cuda}, "
            f"torch.cuda.is_available() is False): the GPU tests need a CUDA GPU; "
            f"LOCH_TEST_DEVICE=cpu is a dry run of their logic without one")  # fmt: skip


def needs_cuda() -> None:
    """Skips the test in a dry run (LOCH_TEST_DEVICE=cpu): it tests what
    only CUDA has."""
    if DRY_RUN:
        pytest.skip("LOCH_TEST_DEVICE=cpu: a dry run, and this test is about CUDA itself")


def pytest_report_header() -> list[str]:
    """What the run had: the device asked for and the GPUs torch sees."""
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
    return [f"loch {loch.__version__} from {Path(loch.__file__).parent}; LOCH_TEST_DEVICE="
            f"{os.environ.get('LOCH_TEST_DEVICE', 'cuda')}; torch {torch.__version__} (CUDA {torch.version.cuda}) "
            f"sees {gpus or 'no GPU'}"]  # fmt: skip


@pytest.fixture(scope="session")
def device() -> torch.device:
    """The torch device batches go to: $LOCH_TEST_DEVICE, default cuda
    (the current CUDA device); fails without CUDA unless it is cpu."""
    name = os.environ.get("LOCH_TEST_DEVICE", "cuda")
    if name == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        pytest.fail(no_cuda_message(f"LOCH_TEST_DEVICE={name}"), pytrace=False)
    dev = torch.device(name)
    return torch.device("cuda", torch.cuda.current_device() if dev.index is None else dev.index)


def image(i: int) -> np.ndarray:
    """The image of row i."""
    return ((np.arange(int(np.prod(IMAGE))) + 7 * i) % 256).astype(np.uint8).reshape(IMAGE)


def expected(index: np.ndarray) -> dict[str, Any]:
    """Every column's values for the rows `index` (numpy, lists for text
    and json)."""
    i = np.asarray(index, dtype=np.int64)
    return {
        "x": np.stack([i, 2 * i, 3 * i], axis=1).astype(np.float32),
        "img": np.stack([image(int(k)) for k in i]) if len(i) else np.zeros((0, *IMAGE), np.uint8),
        "y": 3 * i + 1,
        "h": np.repeat((i % 256).astype(np.float32)[:, None], 4, axis=1),  # exact in bfloat16
        "s": [f"row {k}" for k in i],
        "j": [{"i": int(k)} for k in i],
    }


def make_dataset(path: Path, rows: int = ROWS) -> None:
    """Creates and commits the test dataset at path: float32, an lz4 uint8
    image, int64 labels, bfloat16, text and json, in small chunks (many
    shuffle blocks)."""
    ds = loch.create(str(path), schema={
        "x": loch.Tensor("float32", shape=(3,), chunk_bytes=2048),
        "img": loch.Image("lz4", shape=IMAGE, chunk_bytes=16384),
        "y": loch.Tensor("int64", shape=(), chunk_bytes=2048),
        "h": loch.Tensor("bfloat16", shape=(4,), chunk_bytes=2048),
        "s": loch.Text(),
        "j": loch.JSON(),
    })  # fmt: skip
    want = expected(np.arange(rows))
    want["h"] = want["h"].astype(loch.dtypes.numpy_dtype("bfloat16"))
    ds.extend(want)
    ds.commit(f"{rows} rows")
    ds.close()


@pytest.fixture(scope="session")
def data_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The path of the committed test dataset (shared: do not write)."""
    path = tmp_path_factory.mktemp("gpu") / "ds"
    make_dataset(path)
    return str(path)


@pytest.fixture
def ds(data_path: str) -> Any:
    d = loch.open(data_path)
    yield d
    d.close()

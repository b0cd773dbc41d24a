"""The decode limit (issue 35 item 2): a process-wide setting that every
decoder checks from the header before it decodes; a sample past it is
loch.InvalidArgument naming the row, its size and the limit."""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import pytest

import loch


def _png(w: int, h: int) -> bytes:
    """A black RGB png of w x h pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    idat = zlib.compress(bytes((3 * w + 1) * h))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


@pytest.fixture
def restore_limit(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("LOCH_MAX_DECODE_BYTES", raising=False)
    old = loch.max_decode_bytes()
    yield old
    loch.set_max_decode_bytes(old)
    os.environ.pop("LOCH_MAX_DECODE_BYTES", None)


def test_decode_limit(tmp_path: Path, restore_limit: int) -> None:
    ds = loch.create(str(tmp_path / "ds"), schema={"image": loch.Image("png")})
    ds.extend({"image": [loch.EncodedImage(_png(200, 100)), loch.EncodedImage(_png(20, 10))]})
    ds.commit("two images")

    assert loch.set_max_decode_bytes(10_000) == restore_limit
    assert loch.max_decode_bytes() == 10_000
    assert os.environ["LOCH_MAX_DECODE_BYTES"] == "10000", "processes started later inherit it"
    with pytest.raises(loch.InvalidArgument, match=r'column "image" row 0: png image sample of shape \[100 200 3\]: 60000 bytes, more than the decode limit of 10000 bytes'):
        ds["image"][0]
    assert ds["image"][1].shape == (10, 20, 3)
    with pytest.raises(loch.InvalidArgument, match="more than the decode limit of 10000 bytes"):
        for _ in ds.numpy(batch_size=2):
            pass
    batches = list(ds.numpy(batch_size=2, skip_bad_samples=True))
    assert [b["index"].tolist() for b in batches] == [[1]]
    # Stored as they are, the bytes are still served.
    assert loch.set_max_decode_bytes(0) == 10_000  # no limit
    assert ds["image"][0].shape == (100, 200, 3)


def test_decode_limit_bad_values(restore_limit: int) -> None:
    with pytest.raises(loch.InvalidArgument, match="want 0"):
        loch.set_max_decode_bytes(-1)
    with pytest.raises(loch.InvalidArgument, match="at most"):
        loch.set_max_decode_bytes(2**63)
    with pytest.raises(TypeError):
        loch.set_max_decode_bytes(1.5)  # type: ignore[arg-type]
    assert loch.max_decode_bytes() == restore_limit

"""Storage outages: the storage layer retries a failing store for 60 s by
default, so ``ds.numpy()`` and a write (``extend`` and ``commit``) ride
out a MinIO server killed for 2 s and started again on the same port, and
the loader's statistics show the stall. (With the former bound of six
attempts, about 1.5 s, both failed.)"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pytest

import loch

ACCESS, SECRET = "outageaccess", "outage-secret-Q1z9"


def _outage(server: Any, seconds: float) -> threading.Thread:
    """Kills server now and starts it again after seconds, from a thread
    the caller joins."""
    server.kill()

    def back() -> None:
        time.sleep(seconds)
        server.restart()

    t = threading.Thread(target=back)
    t.start()
    return t


@pytest.mark.slow
def test_numpy_and_a_commit_ride_out_a_2s_outage(start_minio: Any) -> None:
    server = start_minio(ACCESS, SECRET)
    server.create_bucket("outage")
    opts = {"endpoint": server.endpoint, "region": "us-east-1", "access_key_id": ACCESS, "secret_access_key": SECRET}
    ds = loch.create("s3://outage/ds", schema={"n": loch.Tensor("int64", shape=())}, storage_options=opts)
    ds.extend({"n": np.arange(1000)})
    ds.commit("rows")

    t = _outage(server, 2)
    loader = ds.numpy(batch_size=100, columns=["n"], shuffle=False)
    got = [x for batch in loader for x in batch["n"].tolist()]
    t.join()
    assert got == list(range(1000)), "every row once"
    stats = loader.stats()
    assert stats["retries"] > 0 and stats["retry_wait_ns"] > 0, "the stall is reported"

    t = _outage(server, 2)
    ds.extend({"n": np.arange(1000, 1100)})
    ds.commit("more")
    t.join()
    again = loch.open("s3://outage/ds", storage_options=opts)
    assert again["n"][:].tolist() == list(range(1100))
    assert [c.message for c in again.log()].count("more") == 1, "the commit landed once"

"""The loader's batch stream (C ABI 13, loch_loader_stream): the pipe that
every Python loader reads its batches from."""

from __future__ import annotations

import ctypes
import gc
import json
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import loch
from loch._status import Status
from loch.loader import STREAM_DEPTH, Loader

from conftest import run_script


def test_records_end_state_and_refusals(rows_ds: loch.Dataset) -> None:
    # One record per batch, then the end; a streaming loader refuses
    # loch_loader_next_batch and a state ahead of what it delivered.
    loader = Loader(rows_ds, batch_size=100, shuffle="full", seed=7, columns=["y"])
    go = loader._start(None, 0)
    try:
        n = len(go)
        rows = []
        while (addr := go.next()) is not None:
            rows.append(loader._convert(go, addr)["y"].copy())
        assert go._end == Status.EOF
        assert go.next() is None  # the end stays the end
        assert len(rows) == n == 11
        assert sorted(np.concatenate(rows).tolist()) == list(range(1001))
        lib, h = go.lib, go._h.value
        out, err = ctypes.c_void_p(), ctypes.c_void_p()
        status = lib.cdll.loch_loader_next_batch(h, 0, None, None, 0, ctypes.byref(out), ctypes.byref(err))
        assert status == Status.INVALID_ARGUMENT
        assert "read them from its pipe" in (lib.take_string(err) or "")
        with pytest.raises(loch.InvalidArgument, match="12 batches: 11 delivered"):
            lib.call_json("loch_loader_state_at", h, 12)
    finally:
        go.close()
    # Mid-epoch, the loader's state is after the batches the loop got,
    # however many Go has taken ahead, and resumes there.
    for k in (1, 4, 10):
        loader = Loader(rows_ds, batch_size=100, shuffle="full", seed=7, columns=["y"])
        it = iter(loader)
        for _ in range(k):
            next(it)
        threading.Event().wait(0.1)  # let Go take batches ahead
        state = loader.state_dict()
        it.close()
        again = Loader(rows_ds, batch_size=100, shuffle="full", seed=7, columns=["y"])
        again.load_state_dict(state)
        got = [b["y"] for b in again]
        assert len(got) == 11 - k
        for a, b in zip(got, rows[k:]):
            assert np.array_equal(a, b)


def test_a_break_takes_back_what_was_streamed(rows_ds: loch.Dataset) -> None:
    # Stopping after one batch while Go has streamed more (read into
    # Python's queue, or still in the pipe): every buffer comes back.
    before = loch.buffer_stats()["live"]
    for prefetch in (1, 16):
        loader = rows_ds.numpy(batch_size=10, prefetch_batches=prefetch)
        it = iter(loader)
        first = next(it)
        go = loader._active
        assert go is not None
        threading.Event().wait(0.2)  # let Go fill the stream
        it.close()
        assert len(first["index"]) == 10
        del first
        assert loch.buffer_stats()["live"] == before


def test_one_batch_at_a_time_under_a_small_byte_budget(rows_ds: loch.Dataset) -> None:
    # A prefetch_bytes smaller than a batch lets one batch at a time wait
    # in the stream: Go asks for the consumer's reports (a
    # LOCH_STREAM_WAITING record), or both sides would wait for ever.
    result: dict[str, Any] = {}

    def run() -> None:
        loader = rows_ds.numpy(batch_size=50, prefetch_bytes=64)
        result["rows"] = sum(len(b["index"]) for b in loader)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(120)
    assert not t.is_alive(), "the stream stalled"
    assert result["rows"] == 1001


# Reads one epoch of a dataset's batches (loader options as JSON in argv[2])
# and prints their row ids and how many batches each read of the pipe
# returned.
_GROUPS_SCRIPT = """
import json, os, sys
import loch
from loch import _library, loader as L

reads = []
real = os.read

def counting_read(fd, n):
    data = real(fd, n)
    service = _library._current._service if _library._current else None
    if service is None or fd != service[1]:  # a batch pipe's, not the loader service's
        reads.append(sum(1 for kind, _ in L.STREAM_RECORD.iter_unpack(data) if kind == L.STREAM_BATCH))
    return data

os.read = counting_read
ds = loch.open(sys.argv[1])
ids = [int(i) for b in ds.numpy(**json.loads(sys.argv[2])) for i in b["index"]]
print(json.dumps({"ids": ids, "reads": reads}))
"""


def _stream_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: Path, group: int,
                   **options: Any) -> dict[str, Any]:  # fmt: skip
    monkeypatch.setenv("LOCH_STREAM_GROUP", str(group))
    monkeypatch.setenv("LOCH_STREAM_HOLD", "1h")  # groups are made whatever the machine's speed
    return json.loads(run_script(tmp_path, _GROUPS_SCRIPT, str(path), json.dumps(options)).stdout)


def test_a_waiting_consumer_gets_batches_in_groups(
    rows_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A consumer faster than the loader (here one worker decoding a large
    # JPEG per batch) finds the pipe empty: Go holds batches back and
    # writes them four at a time, so that the consumer wakes once for
    # several (capi/stream.go, hold). The batches and their order are the
    # same as without groups.
    images = tmp_path / "images"
    ds = loch.create(str(images), schema={"image": loch.Image("jpeg", shape=(384, 384, 3))})
    ds.extend({"image": np.random.default_rng(5).integers(0, 256, (48, 384, 384, 3), dtype=np.uint8)})
    ds.commit("noise")
    ds.close()
    slow = {"batch_size": 1, "workers": 1, "transform": {"image": "decode"}, "columns": ["image"]}
    plain = _stream_groups(tmp_path, monkeypatch, images, 1, **slow)
    grouped = _stream_groups(tmp_path, monkeypatch, images, 4, **slow)
    assert sorted(plain["ids"]) == list(range(48))
    assert grouped["ids"] == plain["ids"]
    assert sum(grouped["reads"]) == sum(plain["reads"]) == 48
    # One read per batch or close to it without groups (the consumer
    # waits), about one per group with them (the first four batches come
    # one by one, so that the first is not held back). Reads that got no
    # batch (Go asking for reports) are not counted.
    plain_reads = [n for n in plain["reads"] if n]
    grouped_reads = [n for n in grouped["reads"] if n]
    assert len(plain_reads) > 48 // 2, plain["reads"]
    assert len(grouped_reads) <= 48 // 2, grouped["reads"]
    # No group waits for a batch that cannot come: not at the end of the
    # epoch (201 batches of 5 rows), nor when the byte budget lets only one
    # batch at a time wait (prefetch_bytes=64).
    for budget in (256 << 20, 64):
        got = _stream_groups(tmp_path, monkeypatch, rows_path, 4, batch_size=5, columns=["y"], prefetch_bytes=budget)
        assert sorted(got["ids"]) == list(range(1001))
        assert sum(got["reads"]) == 201


def test_depth_bounds_what_go_takes_ahead(rows_ds: loch.Dataset) -> None:
    # However slow the consumer, Go takes at most STREAM_DEPTH batches
    # ahead of the batches reported read.
    loader = Loader(rows_ds, batch_size=10, prefetch_batches=32, columns=["y"])
    go = loader._start(None, 0)
    try:
        assert go.next() is not None
        threading.Event().wait(0.5)
        # loch_loader_state_at accepts the batches Go has taken, no more.
        go.lib.call_json("loch_loader_state_at", go._h.value, STREAM_DEPTH)
        with pytest.raises(loch.InvalidArgument, match=f"{STREAM_DEPTH} delivered"):
            go.lib.call_json("loch_loader_state_at", go._h.value, STREAM_DEPTH + 1)
    finally:
        go.close()


def test_next_batch_serves_callers_that_do_not_stream(rows_ds: loch.Dataset) -> None:
    # loch_loader_next_batch (ABI 11), for C callers that poll: one call per
    # batch, freeing the previous description and the buffers given back.
    from loch._buffers import TENSOR
    from loch.loader import BATCH, _GoLoader

    before = loch.buffer_stats()["live"]
    go = _GoLoader(rows_ds, Loader(rows_ds, batch_size=100, columns=["y"])._go_config(0))  # not streaming
    lib, h = go.lib, go._h.value
    prev, freed, ys = None, (ctypes.c_void_p * 1)(), []
    out, err = ctypes.c_void_p(), ctypes.c_void_p()
    try:
        while True:
            n = 1 if freed[0] else 0
            status = lib.cdll.loch_loader_next_batch(h, 0, prev, freed, n, ctypes.byref(out), ctypes.byref(err))
            freed[0] = None
            if status == Status.EOF:
                break
            assert status == Status.OK, lib.take_string(err)
            prev = out.value
            _, _, rows, _, _, ncols, _, cols, _ = BATCH.unpack(ctypes.string_at(prev, BATCH.size))
            assert ncols == 1
            f = TENSOR.unpack(ctypes.string_at(cols, TENSOR.size))
            ys.append(np.frombuffer(ctypes.string_at(f[7], f[8]), dtype=np.int64)[:rows].copy())
            freed[0] = f[7]
    finally:
        go.close()
    assert sorted(np.concatenate(ys).tolist()) == list(range(1001))
    assert loch.buffer_stats()["live"] == before


def test_an_interrupted_close_loses_no_buffer(rows_ds: loch.Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    # Ctrl-C during close's last report, with batches read ahead that the
    # loop never got: their buffers still come back.
    import select
    import time

    import loch.loader
    from loch.loader import STREAM_RECORD

    before = loch.buffer_stats()["live"]
    loader = rows_ds.numpy(batch_size=10, prefetch_batches=16)
    it = iter(loader)
    first = next(it)
    go = loader._active
    assert go is not None and go._fds is not None
    # Go streams more: read what is in the pipe, without waiting for more
    # (Go waits for reports once it has streamed as far as it may, and the
    # loop's own read may have taken all of it already).
    deadline = time.monotonic() + 30
    while not go._records and time.monotonic() < deadline:
        if select.select([go._fds[0]], [], [], 0.1)[0]:
            go._records.extend(STREAM_RECORD.iter_unpack(os.read(go._fds[0], 16 * STREAM_RECORD.size)))
    assert go._records, "nothing read ahead"

    def interrupted(fd: int, data: bytes) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(loch.loader.os, "write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        it.close()
    monkeypatch.undo()
    assert go._h.closed
    del first
    assert loch.buffer_stats()["live"] == before


def test_a_close_from_another_thread(rows_path: Any) -> None:
    # Closing the dataset while another thread iterates its loader, at
    # different moments: the loop ends (Closed, or the epoch's end), and
    # every buffer comes back, read ahead or not.
    import time

    for trial in range(12):
        ds = loch.open(str(rows_path))
        before = loch.buffer_stats()["live"]
        seen: list[int] = []
        ended: list[str] = []

        def consume() -> None:
            try:
                for b in ds.numpy(batch_size=10, prefetch_batches=16):
                    seen.append(int(b["index"].sum()))
                ended.append("epoch")
            except loch.Closed:
                ended.append("closed")

        t = threading.Thread(target=consume)
        t.start()
        time.sleep(0.001 * trial)
        ds.close()
        t.join(60)
        assert not t.is_alive()
        assert len(ended) == 1, f"trial {trial}"
        # The last batch can still be held by the Closed exception's
        # traceback (a reference cycle through the generator's frame): it
        # comes back when the cycle is collected.
        gc.collect()
        assert loch.buffer_stats()["live"] == before, f"trial {trial}: {ended}, {len(seen)} batches"


def test_an_epoch_makes_no_call_into_go_from_the_consuming_thread(
    rows_ds: loch.Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each call into Go leaves the calling thread holding a Go processor
    # for up to 20 ms after it returns, which the loader's workers lack
    # (capi/service.go): an epoch's loader is opened, streamed, asked for
    # its statistics and closed through the loader service instead, and so
    # is what making a loader object asks of Go.
    from loch import _library

    lib = _library.library()
    loader = rows_ds.numpy(batch_size=100, columns=["y"])
    assert sum(len(b["index"]) for b in loader) == 1001  # the service runs from here on
    calls: list[str] = []
    real_call = _library.Library.call

    def recording(self: Any, name: str, *args: Any, **kwargs: Any) -> int:
        calls.append(name)
        return int(real_call(self, name, *args, **kwargs))

    monkeypatch.setattr(_library.Library, "call", recording)
    for_go = []
    real_request = lib.request

    def requesting(op: str, **fields: Any) -> Any:
        for_go.append(op)
        return real_request(op, **fields)

    monkeypatch.setattr(lib, "request", requesting)
    assert sum(len(b["index"]) for b in loader) == 1001
    assert loader.stats()["batches"] == 11
    assert calls == []
    # The loader is opened and streamed in one request (C ABI 15).
    assert for_go == ["loader_new", "loader_stats", "loader_close"]
    # Nor does a loader object made for the epoch (its settings checked,
    # the snapshot it reads pinned), for a dataset or a mixture.
    for_go.clear()
    assert sum(len(b["index"]) for b in rows_ds.numpy(batch_size=100, columns=["y"])) == 1001
    assert for_go == ["dataset_version", "loader_config", "loader_new", "loader_stats", "loader_close"]
    assert calls == []
    mixture = loch.mix([rows_ds, rows_ds], weights=[1.0, 1.0], epoch_rows=200)  # reads the schemas
    for_go.clear()
    calls.clear()
    assert sum(len(b["index"]) for b in mixture.numpy(batch_size=50, columns=["y"])) == 200
    assert for_go == [
        "dataset_version", "dataset_version", "loader_config", "loader_new_mix", "loader_stats", "loader_close"
    ]  # fmt: skip
    assert calls == []


def _interrupt_next_response(monkeypatch: pytest.MonkeyPatch) -> None:
    """Makes the next wait for a loader service response raise
    KeyboardInterrupt, as Ctrl-C there would (the waits after it go on)."""
    from loch import _library

    real_line = _library.Library._service_line
    calls = [0]

    def interrupted(self: Any) -> dict[str, Any]:
        calls[0] += 1
        if calls[0] == 1:
            raise KeyboardInterrupt
        return dict(real_line(self))

    monkeypatch.setattr(_library.Library, "_service_line", interrupted)


def test_a_request_cut_short_by_ctrl_c_leaves_the_service_usable(
    rows_ds: loch.Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C while the response is awaited: the request took effect in Go
    # all the same; its response is skipped by the next request, and a
    # loader it opened is closed then, with the caller's ends of the pipes
    # of the stream it started (no buffer, loader or pipe left behind).
    from loch import _library

    lib = _library.library()
    before = loch.buffer_stats()["live"]
    list(rows_ds.numpy(batch_size=100, columns=["y"]))  # the service runs
    fds = len(os.listdir("/proc/self/fd"))
    loader = rows_ds.numpy(batch_size=100, columns=["y"])
    _interrupt_next_response(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        next(iter(loader))  # loader_new (streaming) cut short
    assert list(lib._service_ops.values()) == ["loader_new"]
    got = [int(i) for b in rows_ds.numpy(batch_size=100, columns=["y"]) for i in b["index"]]
    assert sorted(got) == list(range(1001))
    assert lib._service_ops == {}
    assert loch.buffer_stats()["live"] == before
    assert len(os.listdir("/proc/self/fd")) == fds
    # A request that Go cannot serve fails as the call would have.
    with pytest.raises(loch.Closed):
        lib.request("loader_len", loader=0)
    with pytest.raises(loch.InvalidArgument, match="loader_flush"):
        lib.request("loader_flush")
    # A request Go cannot read is answered (without its id) in its turn:
    # the caller gets the error, not a wait for an answer that never comes.
    with pytest.raises(loch.InvalidArgument, match="not a JSON object"):
        lib.request("loader_len", loader="seven")
    with pytest.raises(loch.InvalidArgument, match="weight 0 is nan"):
        list(loch.mix([rows_ds, rows_ds], weights=[float("nan"), 1.0], epoch_rows=10).numpy(batch_size=5))
    assert len(list(rows_ds.numpy(batch_size=100, columns=["y"]))) == 11


def test_a_mixture_request_cut_short_closes_its_loader(rows_ds: loch.Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    # As a loader_new cut short: the mixture's loader, opened in Go all the
    # same, is closed when the next request skips its response.
    from loch import _library

    lib = _library.library()
    mixture = loch.mix([rows_ds, rows_ds], weights=[1.0, 1.0], epoch_rows=200)
    list(mixture.numpy(batch_size=50, columns=["y"]))  # the service runs
    closed: list[int] = []
    real_call = _library.Library.call

    def call(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "loch_loader_close":
            closed.append(int(args[0].value))
        return real_call(self, name, *args, **kwargs)

    monkeypatch.setattr(_library.Library, "call", call)
    loader = mixture.numpy(batch_size=50, columns=["y"])
    _interrupt_next_response(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        next(iter(loader))  # loader_new_mix cut short
    assert list(lib._service_ops.values()) == ["loader_new_mix"]
    assert len(list(mixture.numpy(batch_size=50, columns=["y"]))) == 4
    assert lib._service_ops == {}
    assert len(closed) == 1, "the skipped response's loader is closed"


def test_a_streaming_open_that_cannot_stream_closes_its_loader(rows_ds: loch.Dataset) -> None:
    # loader_new with a depth the stream refuses: the request fails with the
    # stream's error, and the loader it opened is closed (no batches made
    # ahead stay in use; none to close).
    from loch import _library

    lib = _library.library()
    before = loch.buffer_stats()["live"]
    config = Loader(rows_ds, batch_size=10, columns=["y"])._go_config(0)
    with pytest.raises(loch.InvalidArgument, match="stream depth -1: want at least 1"):
        lib.request("loader_new", dataset=rows_ds._h.value.value, config=config, depth=-1)
    threading.Event().wait(0.2)  # an open loader's workers would be making batches by now
    assert loch.buffer_stats()["live"] == before
    opened = lib.request("loader_new", dataset=rows_ds._h.value.value, config=config, depth=2)
    assert set(opened) == {"loader", "batch_fd", "report_fd"}
    lib.request("loader_close", loader=opened["loader"])
    for fd in (opened["batch_fd"], opened["report_fd"]):
        os.close(fd)
    assert loch.buffer_stats()["live"] == before


def test_a_stream_request_cut_short_leaves_no_pipe_open(rows_ds: loch.Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    # A loader opened without streaming (for its length or state) streams
    # when it is read: Ctrl-C while that loader_stream's answer is awaited
    # leaves no pipe open either.
    from loch import _library
    from loch.loader import _GoLoader

    list(rows_ds.numpy(batch_size=100, columns=["y"]))  # the service runs
    fds = len(os.listdir("/proc/self/fd"))
    go = _GoLoader(rows_ds, Loader(rows_ds, batch_size=100, columns=["y"])._go_config(0))
    _interrupt_next_response(monkeypatch)  # loader_stream cut short
    with pytest.raises(KeyboardInterrupt):
        go.next()
    go.close()  # its close request skipped the cut one's answer
    assert _library.library()._service_ops == {}
    assert len(os.listdir("/proc/self/fd")) == fds
    assert len(list(rows_ds.numpy(batch_size=100, columns=["y"]))) == 11
    assert _library.library()._service_ops == {}
    assert len(os.listdir("/proc/self/fd")) == fds


# A script that ends with an iterator alive: at exit the stream's pipes are
# closed by their finalizer (an atexit hook) before the generator is
# finalized, whose close must then skip the report it can no longer write.
LEFT_OPEN = """
    import sys
    import loch

    ds = loch.open(sys.argv[1])
    it = iter(getattr(ds, sys.argv[2])(batch_size=2))
    next(it)
    print("read one batch")
"""


@pytest.mark.parametrize("method", ["numpy", "pytorch"])
def test_an_iterator_left_open_at_exit_is_silent(tmp_path: Path, rows_path: Path, method: str) -> None:
    if method == "pytorch":
        pytest.importorskip("torch")
    proc = run_script(tmp_path, LEFT_OPEN, str(rows_path), method)
    assert proc.stdout == "read one batch\n"
    assert proc.stderr == "", f"exit printed:\n{proc.stderr}"

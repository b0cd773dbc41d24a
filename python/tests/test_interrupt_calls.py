"""Ctrl-C during a long call (open, extend, commit, merge, gc, ...)
raises KeyboardInterrupt within a second and leaves the dataset as it
was: the call runs on a thread of its own while the main thread waits in
slices, and the main thread cancels it (loch_interrupt) on SIGINT."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import loch

SCRIPT_HEAD = """
    import json, sys, time
    import numpy as np
    import loch

    url = sys.argv[1]
    opts = json.loads(sys.argv[2]) or None
    ds = loch.open(url, storage_options=opts)
    before = ds.version
"""

EXTEND = SCRIPT_HEAD + """
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (160, 512, 512, 3), dtype=np.uint8)  # png-encoding them takes seconds
    print("started", flush=True)
    try:
        ds.extend({"image": images})
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", time.monotonic(), flush=True)
    ds.commit("after the interrupt")  # the handle is still usable; nothing of the extend was staged
    print(json.dumps({"before": before, "len": len(ds)}), flush=True)
"""

# A call against a slow store, by name; "before" is the version main had.
SLOW_CALL = """
    import json, sys, time
    import numpy as np
    import loch

    url, opts, call = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    ds = loch.open(url, storage_options=opts) if call != "open" else None
    before = ds.version if ds is not None else None
    if call == "commit":
        ds.extend({"image": np.zeros((4, 8, 8, 3), np.uint8)})
    print("started", flush=True)
    try:
        if call == "open":
            loch.open(url, storage_options=opts)
        elif call == "commit":
            ds.commit("interrupted commit")
        elif call == "merge":
            ds.merge("side", message="interrupted merge")
        elif call == "gc":
            ds.gc(grace=0)
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", time.monotonic(), flush=True)
    print(json.dumps({"before": before, "len": None if ds is None else len(ds)}), flush=True)
"""


def interrupt(tmp_path: Path, code: str, url: str, storage_options: dict[str, str] | None = None,
              delay: float = 0.3, *args: str) -> tuple[str, float, dict[str, Any]]:  # fmt: skip
    """Runs code in a new process, sends it SIGINT `delay` seconds after it
    prints "started", and returns what it printed then ("interrupted" or
    "finished"), the seconds from the signal to the KeyboardInterrupt, and
    its final JSON line."""
    script = tmp_path / "interrupted.py"
    script.write_text(textwrap.dedent(code))
    proc = subprocess.Popen([sys.executable, str(script), url, json.dumps(storage_options), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line == "started", line + proc.stderr.read() if proc.stderr else line
        time.sleep(delay)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, f"stdout: {out}\nstderr: {err}"
    lines = out.split("\n")
    what = lines[0].split()
    took = float(what[1]) - sent if what[0] == "interrupted" else float("nan")
    return what[0], took, json.loads(lines[1])


def image_dataset(url: str, **kw: Any) -> str:
    ds = loch.create(url, schema={"image": loch.Image("png")}, **kw)
    ds.extend({"image": np.zeros((10, 8, 8, 3), np.uint8)})
    version = ds.commit("ten rows")
    ds.close()
    return version


def test_ctrl_c_interrupts_extend(tmp_path: Path) -> None:
    url = str(tmp_path / "ds")
    version = image_dataset(url)
    what, took, after = interrupt(tmp_path, EXTEND, url)
    assert what == "interrupted", "the extend finished before the signal: make it longer"
    assert took < 1.0, f"KeyboardInterrupt {took:.2f} s after SIGINT"
    assert after == {"before": version, "len": 10}
    assert len(loch.open(url)) == 10


class SlowProxy:
    """A TCP proxy on 127.0.0.1 to `target` (host, port) that holds each
    chunk of a request for `delay` seconds: a slow object store."""

    def __init__(self, target: tuple[str, int], delay: float) -> None:
        self.target, self.delay = target, delay
        self.server = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            threading.Thread(target=self._pipe, args=(client, upstream, self.delay), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, 0.0), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket, delay: float) -> None:
        try:
            while data := src.recv(65536):
                time.sleep(delay)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.server.close()


@pytest.mark.slow
@pytest.mark.parametrize("call", ["open", "commit", "merge", "gc"])
def test_ctrl_c_interrupts_a_call_to_a_slow_store(tmp_path: Path, start_minio: Any, call: str) -> None:
    minio = start_minio("interruptaccess", "interrupt-secret-1")
    minio.create_bucket("slow")
    host, port = minio.endpoint.removeprefix("http://").split(":")
    proxy = SlowProxy((host, int(port)), delay=0.4)
    try:
        fast = {"endpoint": minio.endpoint, "access_key_id": "interruptaccess", "secret_access_key": "interrupt-secret-1"}
        slow = dict(fast, endpoint=proxy.endpoint)
        version = image_dataset("s3://slow/ds", storage_options=fast)
        if call in ("merge", "gc"):
            ds = loch.open("s3://slow/ds", storage_options=fast)
            ds.branch("side")
            ds.checkout("side")
            ds.extend({"image": np.ones((3, 8, 8, 3), np.uint8)})
            ds.commit("three on side")
            ds.checkout("main")
            if call == "gc":
                ds.delete_branch("side")  # its commit and chunks become garbage
        what, took, after = interrupt(tmp_path, SLOW_CALL, "s3://slow/ds", slow, 0.5, call)
        assert what == "interrupted", f"the {call} finished before the signal: make the store slower"
        assert took < 1.0, f"KeyboardInterrupt {took:.2f} s after SIGINT"
        assert after["before"] in (None, version)
        ds = loch.open("s3://slow/ds", storage_options=fast)
        assert ds.version == version and len(ds) == 10, f"the interrupted {call} changed the dataset"
        assert ds.log()[0].message == "ten rows"
        assert ds["image"][0:10].shape == (10, 8, 8, 3)
        ds.extend({"image": np.zeros((1, 8, 8, 3), np.uint8)})
        ds.commit("after")  # and it takes commits
        assert len(loch.open("s3://slow/ds", storage_options=fast)) == 11
    finally:
        proxy.close()


# A query that runs for seconds in the loch command, watched by a thread
# that notes the child processes it sees.
QUERY = """
    import json, os, sys, threading, time
    import loch

    def children():
        out = []
        for pid in os.listdir("/proc"):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == os.getpid():
                out.append(int(pid))
        return out

    seen = set()
    def watch():
        while True:
            seen.update(children())
            time.sleep(0.02)
    threading.Thread(target=watch, daemon=True).start()

    ds = loch.open(sys.argv[1])
    before = ds.version
    print("started", flush=True)
    try:
        ds.query("SELECT n FROM ds WHERE n < (SELECT sum(hash(range) % 7) FROM range(4000000000))")
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", time.monotonic(), flush=True)
    alive = [p for p in seen if os.path.exists(f"/proc/{p}")]
    print(json.dumps({"before": before, "len": len(ds), "seen": sorted(seen), "alive": alive}), flush=True)
"""


def tree(path: Path) -> dict[str, tuple[int, int]]:
    """Every file under path: its size and modification time."""
    return {str(p.relative_to(path)): (p.stat().st_size, p.stat().st_mtime_ns) for p in path.rglob("*") if p.is_file()}


def test_ctrl_c_interrupts_a_query(tmp_path: Path) -> None:
    url = tmp_path / "ds"
    ds = loch.create(str(url), schema={"n": loch.Tensor("int64", shape=())})
    ds.extend({"n": np.arange(100)})
    version = ds.commit("a hundred")
    ds.close()
    files = tree(url)
    what, took, after = interrupt(tmp_path, QUERY, str(url), None, 0.8)
    assert what == "interrupted", "the query finished before the signal: make it longer"
    assert took < 1.0, f"KeyboardInterrupt {took:.2f} s after SIGINT"
    assert after["before"] == version and after["len"] == 100
    # The query runs in this process (loch._sql): no loch command to stop.
    assert after["seen"] == [] and after["alive"] == [], "a query started a process"
    assert tree(url) == files, "the interrupted query wrote to the dataset"

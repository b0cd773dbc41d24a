"""Ctrl-C stops a long iteration within a second: the wait for a batch is
a read of the loader's pipe (C ABI 13), which the signal interrupts, and
Python raises KeyboardInterrupt."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

import loch

SLOW = """
    import sys, time
    import loch

    ds = loch.open(sys.argv[1])
    # One decoding goroutine and large noisy png images: each batch takes seconds.
    loader = ds.numpy(batch_size=32, workers=1, prefetch_batches=1)
    try:
        print("iterating", flush=True)
        for batch in loader:
            print("batch", flush=True)
    except KeyboardInterrupt:
        print("interrupted", time.monotonic(), flush=True)
        sys.exit(3)
"""


def test_ctrl_c_interrupts_a_waiting_iteration(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    ds = loch.create(str(tmp_path / "ds"), schema={"image": loch.Image("png")})
    for _ in range(4):
        ds.extend({"image": rng.integers(0, 256, (8, 768, 768, 3), dtype=np.uint8)})
    ds.commit()
    script = tmp_path / "slow.py"
    script.write_text(textwrap.dedent(SLOW))
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "ds")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "iterating"
        time.sleep(0.1)  # now waiting on the pipe for the first batch (about 0.7 s)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        exited = time.monotonic()
    finally:
        proc.kill()
    assert proc.returncode == 3, f"stdout: {out}\nstderr: {err}"
    assert "batch" not in out, "the test needs a batch slower than the wait before the signal"
    handled = float(out.split()[-1])
    assert handled - sent < 1.0, f"KeyboardInterrupt {handled - sent:.2f} s after SIGINT"
    assert exited - sent < 2.0, f"exited {exited - sent:.2f} s after SIGINT"

"""Epoch counters: the in-memory one of a Loader and the shared one of the
PyTorch adapter and its DataLoader workers' copies."""

from __future__ import annotations

import gc
import json
import os
import pickle
from pathlib import Path

from conftest import run_script

from loch.epochs import Epochs, SharedEpochs


def test_take_set_peek() -> None:
    for epochs in (Epochs(2), SharedEpochs(2)):
        assert epochs.peek() == 2
        assert [epochs.take(), epochs.take()] == [2, 3]
        epochs.set(9)
        assert (epochs.peek(), epochs.take(), epochs.peek()) == (9, 9, 10)


def test_copies_share_the_counter() -> None:
    epochs = SharedEpochs(0)
    copy = pickle.loads(pickle.dumps(epochs))
    assert not os.path.exists(epochs.path), "the file is made when first written"
    assert copy.take() == 0
    assert epochs.take() == 1
    epochs.set(5)
    assert copy.peek() == 5


def test_claim_names_passes() -> None:
    epochs = SharedEpochs(0)
    # Two workers of a pass, in either order, get its epoch.
    assert [epochs.claim((11, 0), 1), epochs.claim((11, 0), 0)] == [0, 0]
    # A persistent worker set's next pass: same base seed, next count.
    assert [epochs.claim((11, 1), 0), epochs.claim((11, 1), 1)] == [1, 1]
    # A pass whose key repeats (a generator seeded alike): a member that
    # claimed the key before starts a new pass, which the others join.
    assert [epochs.claim((11, 1), 1), epochs.claim((11, 1), 0)] == [2, 2]
    # A pass of which one worker never started: the next pass (another key) is whole.
    assert epochs.claim((12, 0), 0) == 3
    assert [epochs.claim((13, 0), 1), epochs.claim((13, 0), 0)] == [4, 4]
    # The main process's own iterations take from the same counter.
    assert epochs.take() == 5
    # A pass that one worker never joined, then one with the same key that
    # this worker claims first: it joins the open pass, unless set closed it.
    assert epochs.claim((15, 0), 0) == 6
    assert [epochs.claim((15, 0), 1), epochs.claim((15, 0), 0)] == [6, 7], "the case loch.torch documents"
    assert epochs.claim((16, 0), 0) == 8
    epochs.set(0)
    assert [epochs.claim((16, 0), 1), epochs.claim((16, 0), 0)] == [0, 0]


def test_the_original_removes_the_file_copies_do_not() -> None:
    epochs = SharedEpochs(0)
    epochs.take()
    path = epochs.path
    copy = pickle.loads(pickle.dumps(epochs))
    del copy
    gc.collect()
    assert os.path.exists(path)
    del epochs
    gc.collect()
    assert not os.path.exists(path)


def test_processes_claim_under_the_lock(tmp_path: Path) -> None:
    # Four processes, the members of ten passes, claim them at once: each
    # pass gets one epoch, and the epochs are 0..9.
    proc = run_script(tmp_path, """
        import json, multiprocessing as mp, pickle
        from loch.epochs import SharedEpochs

        def work(blob, member, q):
            epochs = pickle.loads(blob)
            q.put([epochs.claim((k, 0), member) for k in range(10)])

        if __name__ == "__main__":
            ctx = mp.get_context("spawn")
            blob = pickle.dumps(epochs := SharedEpochs(0))
            q = ctx.Queue()
            procs = [ctx.Process(target=work, args=(blob, m, q)) for m in range(4)]
            for p in procs:
                p.start()
            got = [q.get() for _ in procs]
            for p in procs:
                p.join()
            print(json.dumps(got))
    """, timeout=120)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got == [list(range(10))] * 4, "every member of a pass got its epoch"

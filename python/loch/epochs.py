"""Epoch counters: which epoch a loader's next iteration delivers.

Every loader (:class:`loch.Loader` and the framework adapters over it)
follows one rule:

- iterating again advances the epoch: each iteration delivers the epoch
  after the previous iteration's (one more than the last started, whether
  it ran to its end or not);
- ``set_epoch(e)`` makes the next iteration deliver exactly epoch ``e``
  (so the DistributedSampler pattern, ``loader.set_epoch(e)`` before each
  epoch, gives epoch ``e``);
- ``load_state_dict(state)`` makes the next iteration resume the saved
  epoch where it stopped.

A Loader keeps its counter in memory (:class:`Epochs`). The PyTorch
adapter's iterations may run in DataLoader worker processes, on copies of
the adapter, while the main process never iterates it: its counter is a
small file shared by the adapter and all its copies (:class:`SharedEpochs`),
in which the workers of one pass over a DataLoader agree on that pass's
epoch (:meth:`SharedEpochs.claim`)::

    >>> epochs = Epochs(3)
    >>> epochs.take(), epochs.take(), epochs.peek()
    (3, 4, 5)
    >>> epochs.set(0); epochs.take()
    0
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import uuid
import weakref
from collections.abc import Iterator
from typing import Any

__all__ = ["Epochs", "SharedEpochs"]


class Epochs:
    """The epoch of a loader's next iteration, in this process's memory. A
    copy pickled into another process counts on its own there."""

    def __init__(self, epoch: int = 0) -> None:
        self._next = int(epoch)

    def peek(self) -> int:
        """The epoch the next iteration delivers."""
        return self._next

    def set(self, epoch: int) -> None:
        """Makes the next iteration deliver ``epoch``."""
        self._next = int(epoch)

    def take(self) -> int:
        """The epoch of an iteration that starts now; the next one
        delivers the epoch after it."""
        epoch = self._next
        self._next = epoch + 1
        return epoch


# The passes a SharedEpochs file remembers: enough for the DataLoaders
# that can be running over one adapter at a time.
_PASSES = 16


class SharedEpochs(Epochs):
    """An epoch counter shared by an object and its copies in other
    processes of the machine (forked, spawned or pickled by any means): a
    small JSON file in the temporary directory, read and written under an
    exclusive ``flock``. It is made when first written (until then the
    counter is the ``epoch`` given) and removed when the original is
    garbage collected; copies never remove it.

    Besides the counter, the file remembers the last passes over a
    PyTorch DataLoader: each worker of a pass :meth:`claim` s the epoch of
    the pass it belongs to, so that all the workers of a pass deliver the
    same epoch, whether they are new processes (``persistent_workers=False``)
    or the same ones as the last pass; and each worker :meth:`record` s its
    Go loader's statistics when its part of the pass ends, for the process
    that made the DataLoader to read (:meth:`last_pass`).
    """

    def __init__(self, epoch: int = 0) -> None:
        super().__init__(epoch)
        self.path = os.path.join(tempfile.gettempdir(), f"loch-epochs-{uuid.uuid4().hex}.json")
        weakref.finalize(self, _remove, self.path, os.getpid())

    def _blank(self) -> dict[str, Any]:
        return {"next": self._next, "passes": []}

    @contextlib.contextmanager
    def _state(self) -> Iterator[dict[str, Any]]:
        """The shared state, locked, for the block to change: it is written
        back when the block ends without an exception."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            raw = os.pread(fd, 1 << 20, 0)
            state = json.loads(raw) if raw else self._blank()
            yield state
            data = json.dumps(state).encode()
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)
        finally:
            os.close(fd)  # releases the lock

    def peek(self) -> int:
        try:
            with open(self.path, "rb") as f:
                fcntl.flock(f.fileno(), fcntl.LOCK_SH)
                raw = f.read()
        except FileNotFoundError:
            raw = b""
        return int(json.loads(raw)["next"]) if raw else self._next

    def set(self, epoch: int) -> None:
        """Makes the next iteration deliver ``epoch``, and closes the passes
        claimed so far: a member that claims one of their keys again starts
        a new pass."""
        with self._state() as state:
            state["next"] = int(epoch)
            for p in state["passes"]:
                p["closed"] = True

    def take(self) -> int:
        with self._state() as state:
            epoch = int(state["next"])
            state["next"] = epoch + 1
        return epoch

    def claim(self, key: tuple[int, int], member: int) -> int:
        """The epoch of the pass ``key`` names, for its ``member`` (a
        DataLoader worker's id). The first member of a pass to claim it
        takes the next epoch (as :meth:`take`); the others get the same.
        A member that claims a key it has claimed before starts a new pass
        (a DataLoader whose pass keys repeat: see :mod:`loch.torch`).

        The pass of a member that never claims (a worker stopped before it
        started) stays open until :meth:`set` closes it: a later pass with
        the same key whose first member to claim is that one joins it."""
        k = [int(key[0]), int(key[1])]
        with self._state() as state:
            for p in reversed(state["passes"]):
                if p["key"] == k and member not in p["members"] and not p.get("closed"):
                    p["members"].append(member)
                    return int(p["epoch"])
            epoch = int(state["next"])
            state["next"] = epoch + 1
            new = {"key": k, "epoch": epoch, "members": [member], "stats": {}}
            state["passes"] = [*state["passes"][-(_PASSES - 1) :], new]
        return epoch

    def record(self, key: tuple[int, int], member: int, stats: dict[str, Any]) -> None:
        """Records the statistics of ``member`` 's part of the pass ``key``
        names (the newest such pass it claimed)."""
        k = [int(key[0]), int(key[1])]
        with self._state() as state:
            for p in reversed(state["passes"]):
                if p["key"] == k and member in p["members"]:
                    p["stats"][str(member)] = stats
                    return

    def last_pass(self) -> dict[str, Any] | None:
        """The newest pass claimed: ``{"epoch": e, "stats": {member:
        statistics}}`` with the statistics its members recorded so far (by
        member, in order), or None before any."""
        with self._state() as state:
            if not state["passes"]:
                return None
            p = state["passes"][-1]
        stats = {int(m): s for m, s in p["stats"].items()}
        return {"epoch": int(p["epoch"]), "stats": dict(sorted(stats.items()))}


def _remove(path: str, pid: int) -> None:
    """Removes a SharedEpochs file, in the process that made it only (a
    forked child inherits the finalizer)."""
    if os.getpid() == pid:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)

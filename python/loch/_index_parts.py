"""A vector index built in steps that several processes share (the part of
:class:`loch.Dataset` behind :func:`loch.ray.create_index`): train once,
encode row ranges anywhere, merge lists anywhere, commit once
(vector/parts.go has the contract). Every handle must be at the trained
version; what passes between the steps is JSON-serialisable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._snapshot import Snapshot, enc

if TYPE_CHECKING:
    from .vector import IndexInfo

__all__ = ["IndexParts"]


def _dumps(v: Any) -> bytes:
    return json.dumps(v).encode()


class IndexParts(Snapshot):
    """The distributed index build of :class:`loch.Dataset` (see there)."""

    def train_index(self, column: str, metric: str = "cosine", *, nlist: int | None = None, sample: int | None = None,
                    iterations: int | None = None, seed: int = 0, kind: str = "ivf-flat", m: int | None = None,
                    part_rows: int | None = None) -> dict[str, Any]:  # fmt: skip
        """Trains the index of an embedding ``column`` at this handle's
        version as :meth:`create_index` would (the same options), stores
        its centroids (and an ivf-pq codebook) and returns the trained
        index: a dict whose ``"parts"`` are the planned row ranges
        ``[start, stop)`` of ``part_rows`` rows (default: about 512 MiB of
        vectors). Nothing is committed: each part is then encoded with
        :meth:`encode_index_part`, the lists merged with
        :meth:`merge_index_lists` and the index committed with
        :meth:`commit_index`, in any processes::

            >>> t = ds.train_index("embedding", metric="l2", kind="ivf-pq")             # doctest: +SKIP
            >>> parts = [ds.encode_index_part(t, a, b) for a, b in t["parts"]]          # doctest: +SKIP
            >>> lists = ds.merge_index_lists(t, parts, 0, t["nlist"])                   # doctest: +SKIP
            >>> ds.commit_index(t, parts, lists).rows                                   # doctest: +SKIP
            1000000
        """
        from .vector import check_metric

        opts = {"metric": check_metric(metric), "nlist": nlist or 0, "sample": sample or 0, "iterations": iterations or 0,
                "seed": int(seed), "kind": "ivf-flat" if kind == "vector" else kind, "m": m or 0,
                "part_rows": part_rows or 0}  # fmt: skip
        out: dict[str, Any] = json.loads(self._read_str("loch_vector_train", enc(column), _dumps(opts), interruptible=True))
        return out

    def encode_index_part(self, trained: Mapping[str, Any], start: int, stop: int) -> dict[str, Any]:
        """Assigns the rows at positions ``[start, stop)`` to the trained
        index's lists, encodes them and stores each list's share; returns
        the part's description. Running it again (a retried task) writes
        the same objects and returns the same description."""
        out: dict[str, Any] = json.loads(self._read_str("loch_vector_encode_part", _dumps(dict(trained)), int(start),
                                                        int(stop), interruptible=True))  # fmt: skip
        return out

    def merge_index_lists(self, trained: Mapping[str, Any], parts: Sequence[Mapping[str, Any]], lo: int,
                          hi: int) -> list[dict[str, Any]]:  # fmt: skip
        """Stores each list ``lo <= l < hi`` of the parts as one object and
        returns their descriptions (the parts' shares of other lists may be
        left out of ``parts``)."""
        out: list[dict[str, Any]] = json.loads(self._read_str(
            "loch_vector_merge_lists", _dumps(dict(trained)), _dumps([dict(p) for p in parts]), int(lo), int(hi),
            interruptible=True))  # fmt: skip
        return out

    def commit_index(self, trained: Mapping[str, Any], parts: Sequence[Mapping[str, Any]],
                     lists: Sequence[Mapping[str, Any]]) -> IndexInfo:  # fmt: skip
        """Commits the index from every part and every merged list, once:
        raises :class:`loch.InvalidArgument` (committing nothing) when the
        parts do not cover every row exactly once or disagree with the
        lists. Returns its :class:`loch.IndexInfo`."""
        from .vector import index_info

        return index_info(json.loads(self._read_str(
            "loch_vector_commit", _dumps(dict(trained)), _dumps([dict(p) for p in parts]),
            _dumps([dict(x) for x in lists]), interruptible=True)))  # fmt: skip

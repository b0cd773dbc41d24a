"""The link policy: which objects the links of a dataset may make
:meth:`loch.Dataset.fetch` read, so that a dataset from elsewhere cannot
make its reader open arbitrary files, reach the machine's own services or
its network, or read other buckets with its credentials (Go's
``loch.LinkPolicy``; docs/cli.md, "Links").

    >>> import loch
    >>> policy = loch.LinkPolicy(schemes=["https"], hosts=["images.example.com"], local_roots=[])
    >>> ds = loch.open("s3://bucket/pets", links=policy)   # doctest: +SKIP
    >>> ds = loch.open("./pets", links=loch.LinkPolicy(allow=["127.0.0.1:8000", "s3://images"]))   # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InvalidArgument

__all__ = ["LinkPolicy"]


def _names(field: str, value: Sequence[str | os.PathLike[str]] | None, paths: bool = False) -> tuple[str, ...] | None:
    """A list field as a tuple of strings (None stays None: the default)."""
    if value is None:
        return None
    if isinstance(value, (str, bytes, os.PathLike)):
        raise InvalidArgument(f"LinkPolicy.{field}: want a list, got the single value {value!r}")
    out = []
    for v in value:
        if paths and isinstance(v, os.PathLike):
            v = os.fspath(v)
        if not isinstance(v, str):
            raise InvalidArgument(f"LinkPolicy.{field}: want strings, got {type(v).__name__}")
        out.append(v)
    return tuple(out)


@dataclass(frozen=True)
class LinkPolicy:
    """Which links :meth:`loch.Dataset.fetch` follows; give it to
    :func:`loch.open` or :func:`loch.create` as ``links=``. ``None`` in a
    field takes the default; an empty list allows nothing.

    - ``schemes``: URL schemes links may use: ``http``, ``https``, ``s3``,
      ``gs``, ``az`` (the default, all five) and ``mem``. Local files are
      governed by ``local_roots``, not by a scheme.
    - ``hosts``: the hosts http(s) links, and every redirect they lead to,
      may reach: a name or IP address (any port) or ``host:port``. Default:
      any host. A redirect to a scheme or host the policy refuses is not
      followed.
    - ``allow``: what links may reach besides public addresses and the
      dataset's own bucket. By default (``None``: the entries of
      ``$LOCH_LINK_ALLOW``, comma-separated) an http(s) link, or a
      redirect, that connects to a loopback, private, link-local,
      multicast, shared (100.64/10) or cloud metadata address is refused,
      checked on the address each connection is made to after DNS, and an
      ``s3://``, ``gs://`` or ``az://`` link to another bucket is refused.
      Entries: ``"*"`` (every address), an IP address or CIDR prefix
      (``"10.0.0.0/8"``), a host name (``"minio.internal"``), each but a
      prefix optionally with ``:port`` (``"127.0.0.1:8000"``); a bucket
      (``"s3://images"``, ``"s3://*"``).
    - ``local_roots``: directories whose files links may name (a path or a
      ``file://`` link, checked after resolving symbolic links). Default:
      the directory that holds a local dataset; none for a dataset on
      object storage.
    - ``max_bytes``: the largest object read (default 256 MiB; -1: no
      limit).
    - ``timeout``: seconds for each attempt, and ``max_attempts`` attempts
      (defaults: 30 s and 6, with backoff between them).

    A refused link raises :class:`loch.PermissionDenied` naming the rule,
    having read nothing.

        >>> loch.LinkPolicy(local_roots=["/data/images"])
        LinkPolicy(schemes=None, hosts=None, local_roots=('/data/images',), max_bytes=None, timeout=None, max_attempts=None, allow=None)
    """

    schemes: Sequence[str] | None = None
    hosts: Sequence[str] | None = None
    local_roots: Sequence[str | os.PathLike[str]] | None = None
    max_bytes: int | None = None
    timeout: float | None = None
    max_attempts: int | None = None
    allow: Sequence[str] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "schemes", _names("schemes", self.schemes))
        object.__setattr__(self, "hosts", _names("hosts", self.hosts))
        object.__setattr__(self, "allow", _names("allow", self.allow))
        object.__setattr__(self, "local_roots", _names("local_roots", self.local_roots, paths=True))
        for name in ("max_bytes", "max_attempts"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise InvalidArgument(f"LinkPolicy.{name}: want an int, got {type(v).__name__}")
        if self.max_bytes is not None and (self.max_bytes == 0 or self.max_bytes < -1):
            raise InvalidArgument(
                f"LinkPolicy.max_bytes: want bytes > 0, -1 for no limit or None, got {self.max_bytes}"
            )
        if self.max_attempts is not None and self.max_attempts < 1:
            raise InvalidArgument(f"LinkPolicy.max_attempts: want 1 or more, got {self.max_attempts}")
        if self.timeout is not None:
            if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) or self.timeout <= 0:
                raise InvalidArgument(f"LinkPolicy.timeout: want seconds > 0, got {self.timeout!r}")

    def to_dict(self) -> dict[str, Any]:
        """The policy as a dict: the C ABI's "links" open option (fields
        left to their defaults are absent)."""
        out: dict[str, Any] = {}
        for key, value in (
            ("schemes", self.schemes),
            ("hosts", self.hosts),
            ("allow", self.allow),
            ("local_roots", self.local_roots),
        ):
            if value is not None:
                out[key] = list(value)
        if self.max_bytes is not None:
            out["max_bytes"] = self.max_bytes
        if self.timeout is not None:
            out["timeout_seconds"] = float(self.timeout)
        if self.max_attempts is not None:
            out["max_attempts"] = self.max_attempts
        return out

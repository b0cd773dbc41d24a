"""Where a loader's JPEG columns are decoded: the ``decode`` option of the
torch and jax adapters (``"cpu"``, ``"gpu"``, ``"auto"``), planned here
without importing a framework.

With ``decode="cpu"`` (the default) the Go loader decodes and transforms
every image column. With ``"gpu"`` the columns stored as JPEG (sample
compression ``jpeg``) are delivered as their stored bytes (the loader's
``encoded`` option) and their transform specs are run by
:mod:`loch._gpu_transform` on the adapter's device: nvJPEG through
torchvision on a CUDA device, torchvision's CPU decoder elsewhere. The
other columns keep Go's path. ``"auto"`` is ``"gpu"`` where the device is
a GPU and a loaded column keeps JPEG, else ``"cpu"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ._loader_options import LoaderSettings
from .errors import InvalidArgument

__all__ = ["DECODE_MODES", "DecodePlan", "decode_option", "plan_decode"]

#: The values of the ``decode`` option.
DECODE_MODES = ("cpu", "gpu", "auto")


@dataclass(frozen=True)
class DecodePlan:
    """What an adapter decodes itself: the transform spec of each JPEG
    column (``decode`` first), their declared channels (1 for a column of
    shape ``(h, w, 1)``, else 3), and the loader settings with those
    columns encoded and their specs left out of the Go transforms."""

    specs: Mapping[str, str]
    channels: Mapping[str, int]
    settings: LoaderSettings
    #: The columns whose samples may differ in shape: their batches carry
    #: ``"<column>.shapes"``, as the Go loader's do.
    ragged: frozenset[str] = frozenset()


def decode_option(decode: Any) -> str:
    """The ``decode`` option checked: one of :data:`DECODE_MODES`::

        >>> decode_option("gpu")
        'gpu'
        >>> decode_option("nvjpeg")
        Traceback (most recent call last):
        loch.errors.InvalidArgument: decode='nvjpeg': want 'cpu', 'gpu' or 'auto'
    """
    if not isinstance(decode, str) or decode not in DECODE_MODES:
        raise InvalidArgument(f"decode={decode!r}: want 'cpu', 'gpu' or 'auto'")
    return decode


def plan_decode(decode: Any, schema: Any, settings: LoaderSettings, accelerated: bool) -> DecodePlan | None:
    """The plan of ``decode`` (the adapter's option) over the dataset's
    ``schema`` with these ``settings``, or None when Go decodes everything;
    ``accelerated`` says whether the adapter's device is a GPU (for
    ``"auto"``). ``"gpu"`` raises :class:`loch.InvalidArgument` when no
    loaded column keeps JPEG, or when ``transform`` is a Python callable
    (which runs before the decode)."""
    mode = decode_option(decode)
    if mode == "cpu" or (mode == "auto" and not accelerated):
        return None
    from .loader import _columns, _go_transforms  # the loader's own resolution of both

    columns = _columns(settings.columns, schema)
    jpeg = [c for c in columns if schema[c].sample_compression == "jpeg"]
    transform = settings.transform
    if mode == "auto" and (not jpeg or callable(transform)):
        return None
    if not jpeg:
        kept = {c: schema[c].sample_compression for c in columns}
        raise InvalidArgument(
            f"decode='gpu': none of the loaded columns keeps JPEG (sample compressions {kept}); "
            "use decode='cpu' (or 'auto')"
        )
    if callable(transform):
        raise InvalidArgument(
            "decode='gpu' with a callable transform: the callable would see the JPEG bytes; give the transform "
            "as a spec string (or {column: spec}) for the decoder to run, and apply the callable in the loop"
        )
    go = dict(_go_transforms(transform, schema, columns) or {})
    specs = {c: _with_decode(go.pop(c, "")) for c in jpeg}
    channels = {c: 1 if schema[c].shape is not None and tuple(schema[c].shape)[-1:] == (1,) else 3 for c in jpeg}
    encoded = tuple(dict.fromkeys((*(settings.encoded or ()), *jpeg)))
    ragged = frozenset(c for c in jpeg if schema[c].ragged)
    return DecodePlan(specs, channels, replace(settings, transform=go or None, encoded=encoded), ragged)


def _with_decode(spec: str) -> str:
    """A JPEG column's spec with ``decode`` first, as the Go loader makes it."""
    if spec.strip().startswith("decode"):
        return spec
    return "decode," + spec if spec.strip() else "decode"

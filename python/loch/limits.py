"""The decode limit: the most bytes that one decode of an image, of video
frames or of audio may produce, for the whole process, as Pillow's
``Image.MAX_IMAGE_PIXELS`` is.

Every decoder of loch (png, jpeg, video frames, audio, the transforms'
decode and the loader) reads the size a file declares (a png's IHDR, a
jpeg's SOF, a video stream's frame size times the frames asked for, an
audio stream's samples) before it decodes, and refuses a larger one with
:class:`loch.InvalidArgument` naming the sample, its size and the limit,
so that a small file declaring a huge image (a decompression bomb) costs
no memory. The sizes compared: height x width x channels for an image,
frames x height x width x 3 for video, samples x channels x 4 for audio.

The default is ``$LOCH_MAX_DECODE_BYTES`` (a size such as ``2GiB``; ``0``
for no limit) when the library loads, else 512 MiB: Pillow's own bomb
threshold for RGB images::

    >>> import loch
    >>> loch.max_decode_bytes()
    536870912
    >>> old = loch.set_max_decode_bytes(2 << 30)   # 2 GiB: larger scans
    >>> _ = loch.set_max_decode_bytes(old)
"""

from __future__ import annotations

import ctypes
import os

from . import _library
from .errors import InvalidArgument

__all__ = ["max_decode_bytes", "set_max_decode_bytes"]

_ENV = "LOCH_MAX_DECODE_BYTES"


def max_decode_bytes() -> int:
    """The decode limit in force, in bytes (0: no limit)."""
    return int(_library.library().cdll.loch_max_decode_bytes())


def set_max_decode_bytes(n: int) -> int:
    """Sets the decode limit to ``n`` bytes (0: no limit) for this process,
    and for the processes it starts afterwards (DataLoader workers, Ray
    tasks: it is written to ``$LOCH_MAX_DECODE_BYTES`` too), and returns
    the limit it replaces.

    Raises:
        InvalidArgument: ``n`` is negative or more than 2**63 - 1.
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"set_max_decode_bytes: want an int number of bytes, got {type(n).__name__}")
    if n > 2**63 - 1:
        raise InvalidArgument(f"decode limit {n}: want at most 2**63 - 1 bytes (0: no limit)")
    lib = _library.library()
    old = ctypes.c_int64()
    lib.call("loch_set_max_decode_bytes", ctypes.c_int64(n), ctypes.byref(old))
    os.environ[_ENV] = str(n)
    return int(old.value)

"""The ``loch`` command of a pip installation: runs the Go CLI that the
package carries (loch/_lib/loch, built with the library; see setup.py),
so that Python users need no Go toolchain."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def executable() -> Path:
    """The path of the packaged CLI."""
    return Path(__file__).with_name("_lib") / "loch"


def main() -> None:
    """Replaces this process with the CLI, passing the arguments on."""
    exe = executable()
    if not os.access(exe, os.X_OK):
        sys.exit(f"loch: the CLI {exe} is missing from this installation: reinstall the loch package")
    os.execv(exe, [str(exe), *sys.argv[1:]])

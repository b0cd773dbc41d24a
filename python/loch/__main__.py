"""``python -m loch ...``: the ``loch`` command (:mod:`loch._cli`), for
when the environment's scripts directory is not on ``PATH``."""

from ._cli import main

main()

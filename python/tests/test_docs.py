"""The examples in the docstrings run (those not marked to skip), and the
relative links of the repository's Markdown pages resolve."""

from __future__ import annotations

import doctest
import importlib
import os
import re
from pathlib import Path

import numpy as np
import pytest

import loch


@pytest.mark.parametrize("module", ["loch", "loch.schema", "loch.dtypes", "loch.dataset", "loch.errors",
                                    "loch.loader", "loch._write", "loch._buffers", "loch.torch",
                                    "loch.adapter", "loch._status", "loch.epochs", "loch.mixture", "loch.catalog",
                                    "loch._snapshot", "loch._reads", "loch._writes", "loch._versioning",
                                    "loch._search", "loch._loader_methods", "loch._loader_options", "loch._stream",
                                    "loch._collate", "loch._decode", "loch._gpu_transform"])  # fmt: skip
def test_docstring_examples(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), extraglobs={"loch": loch, "np": np},
                             optionflags=doctest.ELLIPSIS)  # fmt: skip
    assert result.failed == 0


REPO = Path(__file__).resolve().parents[2]
SKIP_DIRS = {".git", ".venv", "node_modules", "dist", "build", ".demo", ".screens"}


def _markdown_files() -> list[Path]:
    """The repository's Markdown files, outside virtual environments and build outputs."""
    found = []
    for dirpath, dirnames, filenames in os.walk(REPO):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        found += [Path(dirpath) / f for f in filenames if f.endswith(".md")]
    return sorted(found)


def _anchors(path: Path) -> set[str]:
    """The #anchors GitHub makes of a Markdown file's headings (code blocks skipped)."""
    out, in_code = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        m = None if in_code else re.match(r"#+\s+(.*)", line)
        if m:
            out.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return out


def test_relative_links_resolve() -> None:
    """Every relative link of the README, docs/, bench/ and python/ pages names
    a file that exists, and a heading of it where the link has a #fragment."""
    broken = []
    for md in _markdown_files():
        text = re.sub(r"```.*?```", "", md.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, frag = target.partition("#")
            full = (md.parent / path).resolve() if path else md
            if not full.exists():
                broken.append(f"{md.relative_to(REPO)}: {target}: no such file")
            elif frag and full.suffix == ".md" and frag not in _anchors(full):
                broken.append(f"{md.relative_to(REPO)}: {target}: no heading #{frag}")
    assert not broken, "\n".join(broken)

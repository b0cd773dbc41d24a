"""The package's structure: its modules import each other without cycles,
and none reaches into another module's private members except through the
documented seam (loch.loader.Source, which loch.Dataset implements).

Both are read from the source with ast, so every import counts: those at
the top, those inside functions (the lazy imports of the framework
adapters) and those under ``if TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "loch"

# Private members that one module may use on objects defined in another:
# the seam through which loch.loader, and loch._stream for the loader, reach
# a dataset (loch.loader.Source, documented on loch.Dataset).
SEAMS: dict[str, set[str]] = {"loch.loader": {"_start_loader", "_loader_view"}, "loch._stream": {"_start_loader"}}

# Private members of third-party packages that a module may use: pyarrow's
# RecordBatchReader._import_from_c, the Arrow C data interface import that
# pyarrow documents (pyarrow 26 has no public import from a raw address).
THIRD_PARTY: dict[str, set[str]] = {"loch._sql": {"_import_from_c"}}


def module_name(path: Path) -> str:
    return "loch" if path.name == "__init__.py" else f"loch.{path.stem}"


MODULES = {module_name(p): p for p in sorted(PACKAGE.glob("*.py"))}
TREES = {name: ast.parse(path.read_text(), str(path)) for name, path in MODULES.items()}


def imported_modules(name: str) -> set[str]:
    """The loch modules that module `name` imports, anywhere in it."""
    out: set[str] = set()
    for node in ast.walk(TREES[name]):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name == "loch" or a.name.startswith("loch.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level > 1:
                pytest.fail(f"{name}: relative import beyond the package ({ast.unparse(node)})")
            if node.level == 1:
                base = "loch" if not node.module else f"loch.{node.module}"
            elif node.module == "loch" or (node.module or "").startswith("loch."):
                base = node.module or ""
            else:
                continue
            if base == "loch":  # from . import x: a module, or a name of the package's __init__
                out |= {f"loch.{a.name}" if f"loch.{a.name}" in MODULES else "loch" for a in node.names}
            else:
                out.add(base)
    out.discard(name)
    return out


GRAPH = {name: imported_modules(name) for name in MODULES}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the graph as a path (first node repeated last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_module_list_is_read() -> None:
    assert {"loch", "loch.dataset", "loch.loader", "loch.errors", "loch.torch"} <= set(MODULES)
    assert "loch.dataset" in GRAPH["loch.torch"] or "loch.loader" in GRAPH["loch.torch"]


def test_find_cycle_finds_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_cycles() -> None:
    cycle = find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_modules_import_nothing_above_them() -> None:
    # The package's __init__ imports every public module: no module may
    # import the package itself (`from . import name` of an __init__ name).
    for name, deps in GRAPH.items():
        if name != "loch":
            assert "loch" not in deps, f"{name} imports the package loch (its __init__)"


def private_members_defined(tree: ast.Module) -> set[str]:
    """The underscored names a module defines: functions, methods, classes,
    class attributes and attributes assigned to self."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        out.add(n.id)
                    elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self":
                        out.add(n.attr)
    return {n for n in out if n.startswith("_")}


def module_aliases(tree: ast.Module) -> set[str]:
    """The names a module binds to imported modules (`import ctypes`,
    `from . import _library`)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 1 and not node.module:
            out |= {a.asname or a.name for a in node.names}
    return out


def foreign_private_uses(name: str) -> set[str]:
    """The underscored attributes that module `name` reads on objects other
    than self and cls and that it does not define itself (dunders and
    ctypes' `_type_`-style names aside)."""
    tree = TREES[name]
    own = private_members_defined(tree)
    aliases = module_aliases(tree)
    out: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        attr = node.attr
        if not attr.startswith("_") or attr.endswith("_") or attr in own:
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ({"self", "cls"} | aliases):
            continue
        out.add(attr)
    return out


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_private_reach_through(name: str) -> None:
    uses = foreign_private_uses(name)
    allowed = SEAMS.get(name, set()) | THIRD_PARTY.get(name, set())
    assert uses <= allowed, f"{name} reaches into private members of other modules' objects: {sorted(uses - allowed)}"


def test_the_seam_is_documented() -> None:
    dataset = next(n for n in TREES["loch.dataset"].body if isinstance(n, ast.ClassDef) and n.name == "Dataset")
    methods = {n.name: n for n in dataset.body if isinstance(n, ast.FunctionDef)}
    source = next(n for n in TREES["loch.loader"].body if isinstance(n, ast.ClassDef) and n.name == "Source")
    protocol = {n.name for n in source.body if isinstance(n, ast.FunctionDef)}
    for member in set().union(*SEAMS.values()):
        assert member in protocol, f"the seam member {member} is not in loch.loader.Source"
        assert member in methods and ast.get_docstring(methods[member]), f"Dataset.{member} has no docstring"

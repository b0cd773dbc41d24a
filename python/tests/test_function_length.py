"""Functions stay short: none in the loch package is over LIMIT lines unless
it is on ALLOWED, and ALLOWED only shrinks (the Go side is
internal/funclen). A function is measured from its first decorator (or its
``def``) to its last line, so the figure matches what an editor shows.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "loch"
LIMIT = 80

# "module.py:qualified.name" -> the most lines it may keep. Split a
# function, then remove its entry (issue 36).
ALLOWED: dict[str, int] = {}


def long_functions(source: str, limit: int) -> dict[str, int]:
    """Qualified names of the functions in `source` over `limit` lines."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                lines = (child.end_lineno or child.lineno) - start + 1
                if lines > limit:
                    out[prefix + child.name] = lines
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return out


def test_no_new_long_functions() -> None:
    found: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for name, lines in long_functions(path.read_text(), LIMIT).items():
            found[f"{rel}:{name}"] = lines
    problems = []
    for key, lines in found.items():
        if key not in ALLOWED:
            problems.append(f"{key} is {lines} lines, over {LIMIT}: split it")
        elif lines > ALLOWED[key]:
            problems.append(f"{key} grew to {lines} lines (allowed {ALLOWED[key]}): split it")
    problems += [f"ALLOWED lists {k}, no longer over {LIMIT}: remove it" for k in ALLOWED if k not in found]
    assert not problems, "\n".join(problems)


def test_long_functions_measures_methods_and_decorators() -> None:
    body = "".join("    x = 1\n" for _ in range(5))
    source = f"class C:\n    @staticmethod\n    def m():\n{body.replace('    ', '        ')}\n\ndef f():\n{body}"
    assert long_functions(source, 6) == {"C.m": 7}
    assert long_functions(source, 5) == {"C.m": 7, "f": 6}
    assert long_functions(source, 7) == {}

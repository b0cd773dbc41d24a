"""The ctypes declarations of loch._library agree with the functions capi/
exports: every exported function is declared, with as many arguments of
matching C types and the same kind of result, and Python declares nothing
the library lacks. The Go sources are the specification (cgo writes the C
header from them), so a changed export fails here instead of corrupting
memory at run time."""

from __future__ import annotations

import ctypes
import re
from pathlib import Path
from typing import Any

from loch import _library
from loch._library import BatchOut, ColumnIn, TensorOut, c_uintptr

CAPI = Path(__file__).resolve().parents[2] / "capi"

EXPORT = re.compile(r"^//export (\w+)\nfunc (\w+)\(([^)]*)\)\s*([^{]*)\{", re.M)

# What a Go parameter type of an export may be declared as in ctypes. A
# pointer to numbers or to a struct may also be a plain c_void_p (Python
# passes buffers and addresses).
SCALARS: dict[str, Any] = {
    "C.int": ctypes.c_int,
    "C.int32_t": ctypes.c_int32,
    "C.int64_t": ctypes.c_int64,
    "C.uint64_t": ctypes.c_uint64,
    "C.uintptr_t": c_uintptr,
    "C.double": ctypes.c_double,
    "C.float": ctypes.c_float,
    "C.uint": ctypes.c_uint,
    # Function pointers (ABI 26's host allocator), passed as addresses.
    "C.loch_host_alloc_fn": ctypes.c_void_p,
    "C.loch_host_free_fn": ctypes.c_void_p,
    "C.loch_host_select_fn": ctypes.c_void_p,
}
STRUCTS: dict[str, Any] = {"C.loch_column_in": ColumnIn, "C.loch_tensor": TensorOut, "C.loch_batch": BatchOut}


def accepted(go_type: str) -> list[Any]:
    """The ctypes types that may declare a parameter of this Go type."""
    go_type = go_type.strip()
    if go_type == "unsafe.Pointer":
        return [ctypes.c_void_p]
    if go_type == "*C.char":  # a string Go returned is held as a void *
        return [ctypes.c_char_p, ctypes.c_void_p]
    if go_type == "**C.char":  # strings Go allocates: void ** so Python frees them
        return [ctypes.POINTER(ctypes.c_void_p)]
    if go_type in SCALARS:
        return [SCALARS[go_type]]
    if go_type == "*unsafe.Pointer":  # an array of pointers, passed as a buffer
        return [ctypes.c_void_p]
    # A struct may also be handled by its address (Python reads it with
    # struct.unpack): void * and void **.
    if go_type.startswith("**") and go_type[2:] in STRUCTS:
        return [ctypes.POINTER(ctypes.POINTER(STRUCTS[go_type[2:]])), ctypes.POINTER(ctypes.c_void_p)]
    if go_type.startswith("*") and go_type[1:] in STRUCTS:
        return [ctypes.POINTER(STRUCTS[go_type[1:]]), ctypes.c_void_p]
    if go_type.startswith("*") and go_type[1:] in SCALARS:
        return [ctypes.POINTER(SCALARS[go_type[1:]]), ctypes.c_void_p]
    raise AssertionError(f"test_abi.py does not know the Go type {go_type!r}: add it")


def parameters(text: str) -> list[str]:
    """Expands Go parameters ("h C.uintptr_t, start, end C.int64_t") into
    one type per parameter."""
    out: list[str] = []
    pending = 0
    for part in (p.strip() for p in text.split(",") if p.strip()):
        fields = part.split(None, 1)
        if len(fields) == 1:  # a name whose type comes later
            pending += 1
            continue
        out += [fields[1]] * (pending + 1)
        pending = 0
    assert pending == 0, f"parameters without a type: {text!r}"
    return out


def exports() -> dict[str, tuple[list[str], str]]:
    """Every exported function: its parameter types and its results."""
    found: dict[str, tuple[list[str], str]] = {}
    for path in sorted(CAPI.glob("*.go")):
        if path.name.endswith("_test.go"):
            continue
        for name, fname, params, results in EXPORT.findall(path.read_text()):
            assert name == fname, f"{path.name}: //export {name} above func {fname}"
            found[name] = (parameters(params), results.strip())
    assert found, f"no //export in {CAPI}"
    return found


def test_every_export_is_declared_alike() -> None:
    declared = set(_library._STATUS_FUNCS) | set(_library._PLAIN_FUNCS)
    exported = exports()
    assert declared == set(exported), (
        f"declared in _library.py only: {sorted(declared - set(exported))}; "
        f"exported by capi only: {sorted(set(exported) - declared)}"
    )
    for name, (params, results) in exported.items():
        if name in _library._STATUS_FUNCS:
            assert results == "(st C.int)", f"{name} returns {results!r}, _library.py expects a status"
            assert params[-1] == "**C.char", f"{name}: the last parameter is {params[-1]!r}, want errOut **C.char"
            params, argtypes = params[:-1], _library._STATUS_FUNCS[name]
        else:
            argtypes, restype = _library._PLAIN_FUNCS[name]
            want = {"": None, "C.int": ctypes.c_int, "C.int64_t": ctypes.c_int64}.get(results, results)
            assert restype == want, f"{name} returns {results!r}, _library.py declares {restype}"
        assert len(argtypes) == len(params), f"{name}: Go takes {params}, _library.py declares {argtypes}"
        for i, (go_type, ct) in enumerate(zip(params, argtypes, strict=True)):
            assert ct in accepted(go_type), f"{name} argument {i}: Go {go_type!r}, _library.py {ct}"


def test_parameters() -> None:
    assert parameters("h C.uintptr_t, start, end C.int64_t, out *C.uint64_t") == [
        "C.uintptr_t",
        "C.int64_t",
        "C.int64_t",
        "*C.uint64_t",
    ]
    assert parameters("") == []

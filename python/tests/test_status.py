"""The C ABI's constants as Python spells them agree with capi/loch.h, the
header the Go library is built with: every status code maps to its
exception class, and Python knows no code that loch.h lacks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import loch
from loch import _library
from loch._status import NOT_ERRORS, Status
from loch.errors import _BY_STATUS, exception_class, from_status

HEADER = Path(__file__).resolve().parents[2] / "capi" / "loch.h"

# What each status of loch.h raises in Python: the specification that
# errors.py implements. A status added to loch.h fails
# test_every_status_has_a_class until it is given one here and there.
RAISES: dict[str, type[BaseException]] = {
    "LOCH_ERR": loch.Error,
    "LOCH_NOT_FOUND": loch.NotFound,
    "LOCH_EXISTS": loch.AlreadyExists,
    "LOCH_CORRUPT": loch.Corrupt,
    "LOCH_CONFLICT": loch.Conflict,
    "LOCH_INVALID_ARGUMENT": loch.InvalidArgument,
    "LOCH_NEWER_FORMAT": loch.NewerFormat,
    "LOCH_READ_ONLY": loch.ReadOnly,
    "LOCH_PERMISSION": loch.PermissionDenied,
    "LOCH_CLOSED": loch.Closed,
    "LOCH_NOT_IMPLEMENTED": NotImplementedError,
    "LOCH_INTERNAL": loch.InternalError,
    "LOCH_CANCELED": KeyboardInterrupt,
}
# The statuses that are results, not errors: Library.call returns them.
RESULTS = {"LOCH_OK", "LOCH_EOF", "LOCH_TIMEOUT"}


def header_enums() -> list[dict[str, int]]:
    """The anonymous enums of loch.h, in order, each as {name: value}
    (comments stripped; every member has an explicit value)."""
    text = re.sub(r"/\*.*?\*/", "", HEADER.read_text(), flags=re.S)
    enums = []
    for body in re.findall(r"\benum\s*\{(.*?)\}", text, flags=re.S):
        members = {}
        for item in body.split(","):
            if not item.strip():
                continue
            m = re.fullmatch(r"\s*(LOCH_[A-Z0-9_]+)\s*=\s*(\d+)\s*", item)
            assert m, f"loch.h: an enum member this test cannot read: {item.strip()!r}"
            members[m.group(1)] = int(m.group(2))
        enums.append(members)
    return enums


def header_statuses() -> dict[str, int]:
    """The status codes of loch.h: the enum that holds LOCH_OK."""
    (statuses,) = [e for e in header_enums() if "LOCH_OK" in e]
    return statuses


def test_the_header_is_read() -> None:
    assert HEADER.is_file(), f"{HEADER} is missing: the tests run from a checkout of the repository"
    statuses = header_statuses()
    assert statuses["LOCH_OK"] == 0 and statuses["LOCH_NOT_FOUND"] == 2
    assert len(statuses) >= 16


def test_status_enum_matches_the_header() -> None:
    header = {name.removeprefix("LOCH_"): code for name, code in header_statuses().items()}
    python = {s.name: int(s) for s in Status}
    assert python == header


def test_every_status_has_a_class() -> None:
    names = set(header_statuses())
    assert names == set(RAISES) | RESULTS, (
        f"loch.h has statuses this test does not classify: {sorted(names - set(RAISES) - RESULTS)}; "
        f"the test classifies statuses loch.h lacks: {sorted((set(RAISES) | RESULTS) - names)}"
    )


@pytest.mark.parametrize("name", sorted(RAISES))
def test_error_status_raises_its_class(name: str) -> None:
    code = header_statuses()[name]
    exc = from_status(code, f"status {name}")
    assert type(exc) is RAISES[name]
    assert exception_class(code) is RAISES[name]
    assert str(exc) == f"status {name}"
    assert code not in NOT_ERRORS


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_result_status_is_not_an_error(name: str) -> None:
    code = header_statuses()[name]
    assert code in NOT_ERRORS
    assert code not in _BY_STATUS


def test_python_knows_no_code_the_header_lacks() -> None:
    codes = set(header_statuses().values())
    assert {int(s) for s in _BY_STATUS} <= codes
    assert {int(s) for s in NOT_ERRORS} <= codes
    assert {int(s) for s in Status} <= codes


def test_unknown_code_is_a_plain_error() -> None:
    unknown = max(header_statuses().values()) + 1
    exc = from_status(unknown, "from a newer library")
    assert type(exc) is loch.Error


def test_conflict_detail_becomes_records() -> None:
    detail = '{"conflicts": [{"id": 7, "ours": "modified", "theirs": "deleted", "ours_columns": ["a"]}]}'
    exc = from_status(header_statuses()["LOCH_CONFLICT"], "merge: conflicts", detail)
    assert isinstance(exc, loch.Conflict)
    assert exc.conflicts == [loch.MergeConflict(7, "modified", "deleted", ("a",), ())]


def test_other_constants_match_the_header() -> None:
    text = HEADER.read_text()
    (abi,) = re.findall(r"#define\s+LOCH_ABI_VERSION\s+(\d+)", text)
    assert int(abi) == _library.ABI_VERSION
    constants = {name: code for e in header_enums() for name, code in e.items()}
    for name in ("DENSE", "PACKED", "NULLS", "ENCODING_NONE", "ENCODING_PNG", "ENCODING_JPEG"):
        assert getattr(_library, name) == constants[f"LOCH_{name}"], name

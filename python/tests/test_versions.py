"""Version control from Python: branches, tags, checkout, read-only
handles, time travel, log, diff, merge, revert, gc and loader resume across
versions."""

from __future__ import annotations

import doctest
import pickle
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

import loch
import loch.versions


def make(path: Path, n: int = 5) -> loch.Dataset:
    """A dataset whose column "n" holds 0..n-1, committed on main."""
    ds = loch.create(str(path), schema={"n": loch.Tensor("int64", shape=())})
    ds.extend({"n": np.arange(n)})
    ds.commit(f"{n} rows")
    return ds


def by_id(ds: loch.Dataset) -> dict[int, int]:
    """Row id to the value of "n", for every row."""
    return dict(zip(ds.row_ids().tolist(), ds["n"][:].tolist(), strict=True))


def test_branch_tag_checkout(tmp_path: Path) -> None:
    ds = make(tmp_path / "ds")
    v1 = ds.version
    assert (ds.current_branch, ds.read_only, ds.pinned) == ("main", False, False)
    assert ds.tag("v1") == v1
    assert ds.branch("dev") == v1
    assert ds.current_branch == "main", "branch() does not move the handle"
    assert ds.refs() == [loch.Ref("dev", "branch", v1), loch.Ref("main", "branch", v1), loch.Ref("v1", "tag", v1)]
    assert ds.resolve("v1") == ds.resolve("dev") == ds.resolve(v1[:8]) == v1

    ds.checkout("dev")
    assert ds.current_branch == "dev" and not ds.read_only
    ds.extend({"n": [5]})
    with pytest.raises(loch.InvalidArgument, match="staged"):
        ds.checkout("main")
    v2 = ds.commit("one more on dev")
    assert ds.resolve("dev") == v2 and ds.resolve("main") == v1 and len(ds) == 6

    ds.checkout("v1")
    assert ds.read_only and ds.pinned and ds.current_branch is None
    assert ds.version == v1 and len(ds) == 5
    with pytest.raises(loch.ReadOnly, match="read-only"):
        ds.extend({"n": [9]})
    with pytest.raises(loch.ReadOnly):
        ds.commit("nothing")
    with pytest.raises(loch.ReadOnly):
        ds.refresh()
    assert isinstance(ds.read_only, bool)

    ds.checkout("main")
    assert ds.current_branch == "main" and ds.version == v1
    ds.extend({"n": [7]})
    ds.commit("on main")
    assert ds.resolve("main") != v1 and ds.resolve("v1") == v1, "tags never move"

    with pytest.raises(loch.AlreadyExists):
        ds.branch("v1")
    with pytest.raises(loch.AlreadyExists):
        ds.tag("dev")
    with pytest.raises(loch.InvalidArgument, match="name"):
        ds.branch("no spaces")
    with pytest.raises(loch.NotFound):
        ds.checkout("nope")
    with pytest.raises(loch.NotFound):
        ds.resolve("nope")
    assert ds.branch("from-tag", from_="v1") == v1


def test_open_at_ref(tmp_path: Path) -> None:
    ds = make(tmp_path / "ds", 3)
    ds.tag("v1")
    ds.extend({"n": [3, 4]})
    ds.commit("main moves on")
    ds.branch("dev")

    at_tag = loch.open(str(tmp_path / "ds"), ref="v1")
    assert at_tag.read_only and at_tag.current_branch is None
    assert len(at_tag) == 3 and at_tag["n"][:].tolist() == [0, 1, 2]
    with pytest.raises(loch.ReadOnly, match='tag "v1"'):
        at_tag.append({"n": 9})

    at_prefix = loch.open(str(tmp_path / "ds"), ref=at_tag.version[:10])
    assert at_prefix.version == at_tag.version and at_prefix.read_only

    dev = loch.open(str(tmp_path / "ds"), ref="dev")
    assert dev.current_branch == "dev" and not dev.read_only and len(dev) == 5
    dev.append({"n": 5})
    dev.commit("on dev")
    assert len(loch.open(str(tmp_path / "ds"))) == 5, "main did not move"

    pinned = loch.open(str(tmp_path / "ds"), at_tag.version)  # version=, positional as before
    assert pinned.read_only and len(pinned) == 3
    with pytest.raises(loch.InvalidArgument, match="not both"):
        loch.open(str(tmp_path / "ds"), version=at_tag.version, ref="dev")
    with pytest.raises(loch.NotFound, match="no branch, tag or version"):
        loch.open(str(tmp_path / "ds"), ref="v2")


def test_as_of(tmp_path: Path) -> None:
    ds = make(tmp_path / "ds", 3)
    v1 = ds.version
    time.sleep(0.05)
    between = datetime.now(timezone.utc)
    time.sleep(0.05)
    ds.extend({"n": [3]})
    ds.commit("later")
    url = str(tmp_path / "ds")

    old = loch.open(url, as_of=between)
    assert old.version == v1 and len(old) == 3 and old.read_only
    with pytest.raises(loch.ReadOnly):
        old.append({"n": 1})
    assert loch.open(url, as_of=between.isoformat()).version == v1
    assert loch.open(url, as_of=between.strftime("%Y-%m-%dT%H:%M:%S.%fZ")).version == v1
    naive_local = between.astimezone().replace(tzinfo=None)  # naive datetimes are local time
    assert loch.open(url, as_of=naive_local).version == v1
    assert loch.open(url, as_of=datetime.now(timezone.utc)).version == ds.version
    assert loch.open(url, ref="main", as_of=between).version == v1

    with pytest.raises(loch.NotFound, match="created"):
        loch.open(url, as_of=between - timedelta(days=1))
    with pytest.raises(loch.InvalidArgument, match="as_of"):
        loch.open(url, as_of="last tuesday")


def test_as_of_date_is_utc_midnight(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A date string means 00:00 UTC, as in the CLI and SQL (Go's ParseTime
    # reads it), not local midnight: here local time is 9 hours ahead.
    make(tmp_path / "ds", 1)
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        with pytest.raises(loch.NotFound, match=r"after 2024-05-01T00:00:00Z"):
            loch.open(str(tmp_path / "ds"), as_of="2024-05-01")
        with pytest.raises(loch.NotFound, match=r"after 2024-05-01T12:30:00Z"):
            loch.open(str(tmp_path / "ds"), as_of="2024-05-01 12:30:00")
    finally:
        monkeypatch.undo()
        time.tzset()


def test_log_shows_merge_commit(tmp_path: Path) -> None:
    ds = make(tmp_path / "ds", 2)
    ds.branch("dev")
    ds.append({"n": 10})
    on_main = ds.commit("append on main")
    dev = loch.open(str(tmp_path / "ds"), ref="dev")
    dev.append({"n": 20})
    on_dev = dev.commit("append on dev")

    result = ds.merge("dev", message="bring in dev")
    assert isinstance(result, loch.MergeResult)
    assert not result.fast_forward and not result.up_to_date and result.added == 1
    assert ds.version == result.commit

    log = ds.log()
    head = log[0]
    assert isinstance(head, loch.Commit)
    assert head.id == result.commit and head.message == "bring in dev" and head.branch == "main"
    assert set(head.parents) == {on_main, on_dev} and len(head.parents) == 2
    ids = [c.id for c in log]
    assert on_main in ids and on_dev in ids, "the log follows both parents"
    assert next(c for c in log if c.id == on_dev).branch == "dev"
    assert log[-1].parents == () and log[-1].message == "create dataset"
    assert all(c.time.tzinfo is not None for c in log)


def test_diff(tmp_path: Path) -> None:
    ds = make(tmp_path / "ds", 5)
    base = ds.version
    ids = ds.row_ids().tolist()
    ds.branch("edit")
    ds.checkout("edit")
    ds.extend({"n": [100, 101]})
    ds.update(ids[1], {"n": -1})
    ds.delete([ids[3]])
    ds.commit("append, update, delete")
    added = sorted(set(ds.row_ids().tolist()) - set(ids))

    d = ds.diff("main")  # main against the handle's version (edit)
    assert isinstance(d, loch.Diff)
    assert (d.from_, d.to) == (base, ds.version)
    assert (d.added, d.deleted, d.modified) == (2, 1, 1)
    assert d.modified_by_column == {"n": 1}
    assert d.schema == [] and d.next is None
    assert [(r.id, r.change) for r in d.rows] == sorted(
        [(ids[1], "modified"), (ids[3], "deleted")] + [(i, "added") for i in added]
    )
    assert next(r for r in d.rows if r.id == ids[1]).columns == ("n",)

    assert ds.diff("main", "edit") == d
    back = ds.diff("edit", "main")
    assert (back.added, back.deleted, back.modified) == (1, 2, 1)

    counts = ds.diff("main", limit=0)
    assert counts.rows == [] and (counts.added, counts.deleted, counts.modified) == (2, 1, 1)
    pages, start = [], 0
    while True:
        page = ds.diff("main", start=start, limit=1)
        pages += page.rows
        if page.next is None:
            break
        assert len(page.rows) == 1
        start = page.next
    assert pages == d.rows

    ds.add_column("caption", loch.Text())
    ds.commit("a column")
    d = ds.diff("main")
    assert [(c.name, c.change) for c in d.schema] == [("caption", "added")]
    assert d.schema[0].from_ is None and d.schema[0].to is not None and d.schema[0].to.kind == "text"
    assert ds.diff("main", "main").added == 0


def test_merge_appends_on_both_sides(tmp_path: Path) -> None:
    ds = make(tmp_path / "ds", 3)
    ds.branch("dev")
    ds.extend({"n": [10, 11]})
    ds.commit("main appends")
    dev = loch.open(str(tmp_path / "ds"), ref="dev")
    dev.extend({"n": [20, 21, 22]})
    dev.commit("dev appends")

    result = ds.merge("dev")
    assert result.added == 3 and result.deleted == 0 and result.modified == 0 and result.conflicts == []
    assert len(ds) == 8 and sorted(ds["n"][:].tolist()) == [0, 1, 2, 10, 11, 20, 21, 22]
    assert loch.open(str(tmp_path / "ds")).version == result.commit
    assert ds.merge("dev").up_to_date

    dev.refresh()
    ff = dev.merge("main")
    assert ff.fast_forward and dev.version == result.commit


def conflicting(path: Path) -> tuple[loch.Dataset, int]:
    """main and dev both modify row 1 (main: 10, dev: 20); dev also
    appends a row. Returns main's handle and the row's id."""
    ds = make(path, 3)
    rid = int(ds.row_ids()[1])
    ds.branch("dev")
    ds.update(rid, {"n": 10})
    ds.commit("main sets 10")
    dev = loch.open(str(path), ref="dev")
    dev.update(rid, {"n": 20})
    dev.append({"n": 99})
    dev.commit("dev sets 20")
    dev.close()
    return ds, rid


def test_merge_conflict(tmp_path: Path) -> None:
    ds, rid = conflicting(tmp_path / "ds")
    before = ds.version
    with pytest.raises(loch.Conflict, match="changed on both sides") as info:
        ds.merge("dev")
    conflicts = info.value.conflicts
    assert [c.id for c in conflicts] == [rid]
    assert isinstance(conflicts[0], loch.MergeConflict)
    assert (conflicts[0].ours, conflicts[0].theirs) == ("modified", "modified")
    assert conflicts[0].ours_columns == ("n",) and conflicts[0].theirs_columns == ("n",)
    assert ds.version == before and ds.resolve("main") == before, "a failed merge changes nothing"

    again = pickle.loads(pickle.dumps(info.value))
    assert isinstance(again, loch.Conflict) and again.conflicts == conflicts and str(again) == str(info.value)
    assert loch.Conflict("a concurrent commit").conflicts == []


@pytest.mark.parametrize(("strategy", "want"), [("ours", 10), ("theirs", 20)])
def test_merge_strategies(tmp_path: Path, strategy: str, want: int) -> None:
    ds, rid = conflicting(tmp_path / "ds")
    result = ds.merge("dev", strategy=strategy)
    assert [c.id for c in result.conflicts] == [rid]
    values = by_id(ds)
    assert values[rid] == want
    assert sorted(values.values()) == sorted([0, 2, 99, want]), "dev's append is merged either way"
    assert len(ds.log()[0].parents) == 2


def test_merge_bad_input(tmp_path: Path) -> None:
    ds, _ = conflicting(tmp_path / "ds")
    with pytest.raises(loch.InvalidArgument, match="sideways"):
        ds.merge("dev", strategy="sideways")
    with pytest.raises(loch.NotFound):
        ds.merge("nope")
    at_tag = loch.open(str(tmp_path / "ds"), ref=ds.version)
    with pytest.raises(loch.ReadOnly):
        at_tag.merge("dev")


def test_revert(tmp_path: Path) -> None:
    ds = make(tmp_path / "ds", 3)
    v1 = ds.tag("v1")
    ds.extend({"n": [3, 4]})
    ds.delete([int(ds.row_ids()[0])])
    v2 = ds.commit("grow and shrink")
    assert ds["n"][:].tolist() == [1, 2, 3, 4]

    v3 = ds.revert("v1")
    assert v3 not in (v1, v2) and ds.version == v3 and ds.current_branch == "main"
    assert ds["n"][:].tolist() == [0, 1, 2]
    head = ds.log()[0]
    assert head.id == v3 and head.parents == (v2,) and "revert" in head.message
    assert [c.id for c in ds.log()[1:3]] == [v2, v1], "history is kept"
    assert ds.diff(v1).added == 0 and ds.diff(v1).deleted == 0

    assert ds.log()[0].message != "custom"
    ds.revert(v2, message="custom")
    assert ds.log()[0].message == "custom" and len(ds) == 4
    with pytest.raises(loch.ReadOnly):
        loch.open(str(tmp_path / "ds"), ref="v1").revert("main")


def test_delete_refs(tmp_path: Path) -> None:
    ds = make(tmp_path / "ds", 2)
    ds.branch("dev")
    ds.tag("v1")
    ds.delete_branch("dev")
    ds.delete_tag("v1")
    assert [r.name for r in ds.refs()] == ["main"]
    with pytest.raises(loch.NotFound):
        loch.open(str(tmp_path / "ds"), ref="dev")
    with pytest.raises(loch.NotFound):
        ds.delete_branch("dev")
    with pytest.raises(loch.NotFound):
        ds.delete_tag("v1")
    with pytest.raises(loch.InvalidArgument, match="main"):
        ds.delete_branch("main")


def test_gc(tmp_path: Path) -> None:
    ds = make(tmp_path / "ds", 2)
    ds.branch("scratch")
    scratch = loch.open(str(tmp_path / "ds"), ref="scratch")
    scratch.extend({"n": np.arange(1000)})
    gone = scratch.commit("only on scratch")
    scratch.close()
    ds.delete_branch("scratch")

    # The default grace (an hour) keeps what a reference named within it.
    kept = ds.gc(dry_run=True)
    assert isinstance(kept, loch.GCReport)
    assert kept.dry_run and kept.deleted == loch.GCCount(0, 0) and kept.reachable.objects > 0

    dry = ds.gc(grace=0, dry_run=True)
    assert dry.dry_run and dry.deleted.objects > 0 and dry.deleted.bytes > 0
    assert dry.by_kind["commits"].objects == 1 and dry.by_kind["chunks"].objects >= 1
    assert sum(k.objects for k in dry.by_kind.values()) == dry.deleted.objects
    assert len(loch.open(str(tmp_path / "ds"), version=gone)) == 1002, "a dry run deletes nothing"

    done = ds.gc(grace=0)
    assert not done.dry_run and done.deleted == dry.deleted
    with pytest.raises(loch.NotFound):
        loch.open(str(tmp_path / "ds"), version=gone)
    assert ds["n"][:].tolist() == [0, 1] and ds.gc(grace=0).deleted.objects == 0
    with pytest.raises(loch.InvalidArgument, match="grace"):
        ds.gc(grace=-1)


@pytest.mark.parametrize("kind", ["numpy", "pytorch"])
def test_loader_resume_across_versions(tmp_path: Path, kind: str) -> None:
    if kind == "pytorch":
        pytest.importorskip("torch")
    ds = make(tmp_path / "ds", 40)
    old = ds.version

    def loader(d: loch.Dataset, **kw: object) -> object:
        if kind == "pytorch":
            return d.pytorch(batch_size=4, shuffle=True, seed=3, distributed=False, **kw)
        return d.numpy(batch_size=4, shuffle=True, seed=3, **kw)

    first = loader(loch.open(str(tmp_path / "ds"), version=old))
    it = iter(first)
    next(it)
    next(it)
    state = first.state_dict()
    del it

    ds.extend({"n": np.arange(40, 48)})
    ds.commit("more rows")
    assert ds.version != old

    refused = loader(ds)
    refused.load_state_dict(state)
    with pytest.raises(loch.InvalidArgument, match="version"):
        list(refused)

    allowed = loader(ds, allow_version_change=True)
    allowed.load_state_dict(state)
    rest = [b["n"] for b in allowed]
    assert len(rest) == 48 // 4 - 2, "the epoch goes on after the two batches delivered"

    same = loader(loch.open(str(tmp_path / "ds"), version=old))
    same.load_state_dict(state)
    assert len(list(same)) == 40 // 4 - 2, "the saved version resumes without the flag"


def test_docstring_examples() -> None:
    result = doctest.testmod(loch.versions, extraglobs={"loch": loch, "np": np}, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0

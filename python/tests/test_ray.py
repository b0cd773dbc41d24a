"""loch.ray on a real local Ray cluster: 100,000 rows written by 8 tasks
(one killed mid-write once, retried by Ray) committed once, read back with
a filter, on local disk and on MinIO; and the staged-write protocol from
Python (stage, commit, retried commit, refusals)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import ray

import loch
import loch.ray as lray

ROWS, TASKS = 100_000, 8


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


def _kill_once(marker: str) -> Any:
    """A batch function that adds the columns, and kills its worker process
    (os._exit) once, on a batch in the middle of the 5th block, after the
    write task has staged the batches before it."""

    def fn(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        ids = batch["id"].astype(np.int64)
        if len(ids) and ids[0] == 5 * ROWS // TASKS + 5000:
            try:
                fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.close(fd)
                os._exit(1)
        return {"id": ids, "label": ids % 10, "vec": np.repeat(ids.astype(np.float32)[:, None], 4, axis=1)}

    return fn


def _check_write_read(url: str, tmp_path: Path, opts: dict[str, str] | None) -> None:
    marker = str(tmp_path / "killed")
    rds = ray.data.range(ROWS, override_num_blocks=TASKS).map_batches(_kill_once(marker), batch_size=2500)
    res = lray.write(rds, url, mode="create", storage_options=opts)
    assert os.path.exists(marker), "a write task was killed once"
    assert res["rows"] == ROWS
    ds = loch.open(url, storage_options=opts)
    assert len(ds) == ROWS
    ids = np.sort(ds["id"][0:ROWS])
    np.testing.assert_array_equal(ids, np.arange(ROWS))  # every row once: none lost, none twice
    log = ds.log()
    assert [c.message for c in log][:1] == [f"ray write of {len(res['published'])} tasks"]
    assert len(log) == 2, "create, then one commit"

    # Read back in parallel, all rows and then with a filter.
    whole = lray.read(url, columns=["id", "vec"], storage_options=opts)
    assert whole.count() == ROWS
    df = whole.to_pandas()
    assert sorted(df["id"]) == list(range(ROWS))
    cats = lray.read(url, columns=["id", "label"], query="SELECT * WHERE label = 3", storage_options=opts)
    got = cats.to_pandas()
    assert len(got) == ROWS // 10 and set(got["label"]) == {3}
    assert sorted(got["id"]) == list(range(3, ROWS, 10))
    # Transform with Ray and write back: append mode.
    again = lray.write(cats.map_batches(lambda b: {"id": b["id"] + ROWS, "label": b["label"],
                                                   "vec": np.zeros((len(b["id"]), 4), np.float32)}),
                       url, storage_options=opts)  # fmt: skip
    assert again["rows"] == ROWS // 10
    ds.refresh()
    assert len(ds) == ROWS + ROWS // 10


@pytest.mark.slow
def test_write_read_local(cluster: None, tmp_path: Path) -> None:
    _check_write_read(str(tmp_path / "ds"), tmp_path, None)


@pytest.mark.slow
def test_write_read_minio(cluster: None, tmp_path: Path, start_minio: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    server = start_minio("rayaccess", "raysecret123")
    server.create_bucket("ray")
    # query= runs SQL in the loch command, which takes the store's settings
    # from the environment only (storage_options do not reach it yet).
    for k, v in {"AWS_ENDPOINT_URL_S3": server.endpoint, "AWS_REGION": "us-east-1",
                 "AWS_ACCESS_KEY_ID": "rayaccess", "AWS_SECRET_ACCESS_KEY": "raysecret123"}.items():  # fmt: skip
        monkeypatch.setenv(k, v)
    opts = {"endpoint": server.endpoint, "access_key_id": "rayaccess", "secret_access_key": "raysecret123", "region": "us-east-1"}
    _check_write_read("s3://ray/ds", tmp_path, opts)


def test_bad_block_commits_nothing(cluster: None, tmp_path: Path) -> None:
    url = str(tmp_path / "ds")
    lray.write(ray.data.from_items([{"id": i} for i in range(10)]), url, mode="create")
    bad = ray.data.from_items([{"id": "eleven"}])
    with pytest.raises(Exception, match="id"):
        lray.write(bad, url)
    assert len(loch.open(url)) == 10
    with pytest.raises(loch.AlreadyExists):
        lray.write(bad, url, mode="create")
    with pytest.raises(loch.NotFound):
        lray.write(bad, str(tmp_path / "none"))


def test_stage_commit_python(tmp_path: Path) -> None:
    url = str(tmp_path / "ds")
    loch.create(url, {"n": loch.Tensor("int64")}).close()
    descs = []
    for w in range(3):
        writer = loch.open(url)
        writer.extend({"n": np.arange(w * 10, w * 10 + 10)})
        descs.append(json.loads(json.dumps(writer.stage())))  # travels as JSON
        writer.close()
    ds = loch.open(url)
    assert len(ds) == 0
    first = ds.commit_staged(descs, "three writers")
    assert first["rows"] == 30 and len(first["published"]) == 3
    again = ds.commit_staged([json.dumps(d) for d in descs])
    assert again["version"] == first["version"] and again["rows"] == 0 and len(again["skipped"]) == 3
    assert len(ds) == 30 and sorted(ds["n"][0:30]) == list(range(30))

    other = str(tmp_path / "other")
    o = loch.create(other, {"n": loch.Tensor("int64")})
    o.extend({"n": np.arange(3)})
    foreign = o.stage()
    with pytest.raises(loch.InvalidArgument, match="is of dataset"):
        ds.commit_staged([foreign])
    edited = dict(descs[0], rows=999)
    with pytest.raises(loch.Corrupt, match="altered"):
        ds.commit_staged([edited])
    newer = dict(descs[0], format="1.99")
    with pytest.raises(loch.NewerFormat):
        ds.commit_staged([newer])
    assert len(ds) == 30
    assert sum(ds.fragment_rows()) == 30 and len(ds.fragment_rows()) == 3


def test_compact(cluster: None, tmp_path: Path) -> None:
    url = str(tmp_path / "compact")
    ds = loch.create(url, schema={"n": loch.Tensor("int64", shape=()), "s": loch.Text()})
    for c in range(6):
        ds.extend({"n": np.arange(c * 4, c * 4 + 4), "s": [f"r{i}" for i in range(c * 4, c * 4 + 4)]})
        ds.commit(f"batch {c}")
    ds.delete([5])
    ds.commit("delete 5")
    ids, rows = ds.row_ids().tolist(), ds.to_arrow().read_all().to_pylist()
    plan = lray.compact(url, dry_run=True)
    assert plan.dry_run and (plan.fragments_before, plan.fragments_after, plan.rows, plan.dropped) == (6, 1, 23, 1)
    assert loch.open(url).version == ds.version

    # 3 groups of two fragments (weights 0.4 and 0.3 of 10 rows): 3 tasks, one commit
    rep = lray.compact(url, target_rows=10, message="ray compaction")
    assert not rep.dry_run and (rep.groups, rep.rewritten, rep.fragments_after, rep.rows, rep.dropped) == (3, 6, 3, 23, 1)
    after = loch.open(url)
    assert after.version == rep.version and after.fragment_rows() == [7, 8, 8]
    assert after.row_ids().tolist() == ids and after.to_arrow().read_all().to_pylist() == rows
    log = after.log()
    assert log[0].message == "ray compaction" and log[1].message == "delete 5"

    rep = lray.compact(url)
    assert (rep.groups, rep.fragments_after) == (1, 1)
    assert loch.open(url).row_ids().tolist() == ids
    assert lray.compact(url).groups == 0
    with pytest.raises(loch.InvalidArgument, match="fanout 1"):
        lray.compact(url, fanout=1)


def test_compact_group_refusals(tmp_path: Path) -> None:
    """The plan and group descriptions from Python: a read-only handle
    rewrites, a description of another plan is refused."""
    url = str(tmp_path / "groups")
    ds = loch.create(url, schema={"n": loch.Tensor("int64", shape=())})
    for c in range(4):
        ds.extend({"n": np.arange(c * 5, c * 5 + 5)})
        ds.commit(f"batch {c}")
    plan = ds.plan_compaction(target_rows=20)
    assert [list(g) for g in plan["groups"]] == [[0, 4]] and plan["report"]["rows"] == 20
    group = loch.open(url, version=plan["base"]).compact_group(plan, 0)
    assert group["rows"] == 20 and group["key"].startswith("fragments/")
    with pytest.raises(loch.InvalidArgument, match="is not of the plan"):
        ds.commit_compaction(plan, [{**group, "group": [0, 2]}])
    with pytest.raises(loch.Corrupt, match="live rows"):
        ds.commit_compaction(plan, [{**group, "rows": 19}])
    rep = ds.commit_compaction(plan, [group])
    assert rep.fragments_after == 1 and ds.version == rep.version and ds.fragment_rows() == [20]

"""fork and the Go runtime: importing loch loads nothing; in a process
forked after loading, the parent's datasets and loaders read their
snapshots again, writes through them raise ForkedProcess instead of
hanging, and loch.open works."""

from __future__ import annotations

from pathlib import Path

from conftest import run_script


def test_import_loads_nothing(tmp_path: Path) -> None:
    proc = run_script(tmp_path, """
        import loch, loch.loader, loch.dataset, loch.schema
        assert not loch._library.loaded()
        loch.Image(), loch.Tensor("float32", shape=(3,))
        assert not loch._library.loaded()
        print("ok")
    """)
    assert proc.stdout.strip() == "ok"


def test_forked_child_reads_the_parents_dataset_but_cannot_write_through_it(tmp_path: Path, rows_path: Path) -> None:
    proc = run_script(tmp_path, """
        import os, sys
        import numpy as np
        import loch

        ds = loch.open(sys.argv[1])
        version = ds.version
        assert len(ds) > 0
        pid = os.fork()
        if pid == 0:
            # Reads go to the same snapshot, opened again here.
            assert len(ds) == 1001 and ds.version == version and ds.read_only
            assert ds["y"][7] == 7 and ds[3]["s"] == "row 3"
            assert sum(len(b["index"]) for b in ds.numpy(batch_size=100)) == 1001
            # Writes through the parent's handle raise, naming the way out.
            for call in (lambda: ds.extend({"y": [1]}), lambda: ds.commit("x"), lambda: ds.tag("t")):
                try:
                    call()
                    os._exit(1)
                except loch.ForkedProcess as e:
                    assert "was forked" in str(e) and "loch.open(url)" in str(e), e
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert len(ds) > 0  # the parent is unaffected
        print("ok")
    """, str(rows_path), timeout=60)
    assert proc.stdout.strip() == "ok"


def test_forked_child_follows_the_errors_advice(tmp_path: Path, rows_path: Path) -> None:
    # ForkedProcess says: open datasets again in this process, loch.open(url)
    # works here. A plain os.fork() child does just that.
    proc = run_script(tmp_path, """
        import os, sys
        import numpy as np
        import loch

        ds = loch.open(sys.argv[1])
        assert len(ds) == 1001
        pid = os.fork()
        if pid == 0:
            try:
                ds.commit("from the child")
                os._exit(1)
            except loch.ForkedProcess:
                pass
            mine = loch.open(sys.argv[1])
            assert not mine.read_only and len(mine) == 1001
            assert np.array_equal(mine["y"][0:1001], np.arange(1001))
            ids = [i for b in mine.numpy(batch_size=128, shuffle=True) for i in b["index"].tolist()]
            assert sorted(ids) == list(range(1001))
            mine.close()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        print("ok")
    """, str(rows_path), timeout=60)
    assert proc.stdout.strip() == "ok"


def test_fork_before_load_is_fine(tmp_path: Path, rows_path: Path) -> None:
    proc = run_script(tmp_path, """
        import os, sys
        import loch

        pid = os.fork()
        if pid == 0:
            os._exit(0 if len(loch.open(sys.argv[1])) == 1001 else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert len(loch.open(sys.argv[1])) == 1001
        print("ok")
    """, str(rows_path), timeout=60)
    assert proc.stdout.strip() == "ok"


def test_a_forked_loader_reads_its_snapshot(tmp_path: Path) -> None:
    proc = run_script(tmp_path, """
        import os, sys
        import numpy as np
        import loch

        ds = loch.create(sys.argv[1], schema={"n": loch.Tensor("int64", shape=())})
        ds.extend({"n": np.arange(100)})
        ds.commit("100 rows")
        loader = ds.numpy(batch_size=30)
        assert len(loader) == 4
        pid = os.fork()
        if pid == 0:
            n = sum(len(b["index"]) for b in loader)
            os._exit(0 if n == 100 else 2)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert sum(len(b["index"]) for b in loader) == 100  # the parent's loader is unaffected
        print("ok")
    """, str(tmp_path / "ds"), timeout=60)
    assert proc.stdout.strip() == "ok"

"""fork and the Go runtime: importing loch loads nothing; a call in a
process forked after loading raises ForkedProcess instead of hanging."""

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


def test_call_after_fork_raises(tmp_path: Path, rows_path: Path) -> None:
    proc = run_script(tmp_path, """
        import os, sys
        import loch

        ds = loch.open(sys.argv[1])
        assert len(ds) > 0
        pid = os.fork()
        if pid == 0:
            code = 0
            for call in (lambda: len(ds), lambda: loch.open(sys.argv[1]), lambda: list(ds.numpy())):
                try:
                    call()
                    code = 1
                except loch.ForkedProcess as e:
                    assert "was forked" in str(e), e
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert len(ds) > 0  # the parent is unaffected
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


def test_a_forked_loader_reopens_only_when_asked(tmp_path: Path, rows_path: Path) -> None:
    proc = run_script(tmp_path, """
        import os, sys
        import loch

        ds = loch.open(sys.argv[1])
        loader = ds.numpy(batch_size=100)
        assert len(loader) == 11
        pid = os.fork()
        if pid == 0:
            try:
                list(loader)
                os._exit(1)
            except loch.ForkedProcess:
                pass
            loader.reopen_if_forked()
            n = sum(len(b["index"]) for b in loader)
            os._exit(0 if n == 1001 else 2)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert sum(len(b["index"]) for b in loader) == 1001  # the parent's loader is unaffected
        print("ok")
    """, str(rows_path), timeout=60)
    assert proc.stdout.strip() == "ok"

"""Shared fixtures: small datasets on local disk and a runner for scripts
that must run in their own process (fork, spawn, torchrun, signals)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import loch

ROWS = 1001  # not a multiple of 2, 3 or 4: sharding pads or drops


def make_rows_dataset(path: Path, rows: int = ROWS) -> loch.Dataset:
    """A dataset of `rows` rows whose columns encode the row number, in
    small chunks so that shuffles have many blocks."""
    ds = loch.create(str(path), schema={
        "x": loch.Tensor("float32", shape=(3,), chunk_bytes=1024),
        "y": loch.ClassLabel(),
        "s": loch.Text(),
    })  # fmt: skip
    i = np.arange(rows)
    ds.extend({"x": np.stack([i, 2 * i, 3 * i], axis=1).astype(np.float32), "y": i, "s": [f"row {k}" for k in i]})
    ds.commit(f"{rows} rows")
    return ds


@pytest.fixture(scope="session")
def rows_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The path of a committed dataset of ROWS rows (shared; do not write)."""
    path = tmp_path_factory.mktemp("rows") / "ds"
    make_rows_dataset(path).close()
    return path


@pytest.fixture
def rows_ds(rows_path: Path) -> loch.Dataset:
    ds = loch.open(str(rows_path))
    yield ds
    ds.close()


def run_script(tmp_path: Path, code: str, *args: str, timeout: float = 120, check: bool = True,
               launcher: list[str] | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """Runs code as a script in a new Python process (with `launcher`, e.g.
    torchrun, in front), failing the test if it runs longer than timeout
    seconds or, with check, exits nonzero."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code))
    cmd = [*(launcher or [sys.executable]), str(script), *args]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=tmp_path)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(cmd)} ran past {timeout} s (a hang?)\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
    if check and proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc



def run_torchrun(tmp_path: Path, code: str, *args: str, nproc: int, timeout: float = 240) -> Any:
    """Runs code as run_script does under torchrun --standalone with nproc
    processes, and returns the JSON object of the last output line that
    starts with "{" (what rank 0 printed)."""
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"]
    proc = run_script(tmp_path, code, *args, timeout=timeout, launcher=launcher)
    return json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])

# DDP_CATALOG_ROWS trains on a catalog query under torchrun: argv is the
# catalog root, the query (a selection of table frames) and its columns
# (comma-separated); rank 0 prints {"shards": each rank's rows, each row
# its columns' values}.
DDP_CATALOG_ROWS = """
    import json, sys
    import torch.distributed as dist
    import loch

    dist.init_process_group("gloo")
    cat = loch.connect(sys.argv[1], create=False)
    loader = cat.dataloader(sys.argv[2], table="frames").batch_size(4).shuffle(True).seed(5).to_torch()
    columns = sys.argv[3].split(",")
    rows = []
    for batch in loader:
        values = [batch[c].tolist() if hasattr(batch[c], "tolist") else list(batch[c]) for c in columns]
        rows += [list(r) for r in zip(*values)]
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, rows)
    if dist.get_rank() == 0:
        print(json.dumps({"shards": out}))
    dist.destroy_process_group()
"""


def resume_run(make: Any, got: int | None, when: str) -> tuple[list[list[int]], list[list[int]], Any, Any]:
    """(whole, head + rest, loader, resumed): the row ids of a fresh
    loader's batches; those of ``got`` batches (None: all of them) taken
    from ``loader`` followed by the batches of ``resumed``, a third loader
    given its state_dict, taken ``when`` ("while iterating": before the
    iterator is dropped; "after a break" or "holding the last batch":
    after). ``make`` makes the loaders; the two lists are equal when the
    loader resumes where the loop stopped."""
    whole = [b["index"].tolist() for b in make()]
    loader = make()
    it = iter(loader)
    head = [next(it)["index"].tolist() for _ in range(len(whole) if got is None else got)]
    if when == "while iterating":
        state = loader.state_dict()
        del it
    else:
        del it
        state = loader.state_dict()
    resumed = make()
    resumed.load_state_dict(json.loads(json.dumps(state)))
    rest = [] if when == "holding the last batch" else [b["index"].tolist() for b in resumed]
    return whole, head + rest, loader, resumed


def catalog_ddp_rows(tmp_path: Path, root: Path, query: str, columns: str) -> list[list[list[Any]]]:
    """Each of two torchrun ranks' rows (DDP_CATALOG_ROWS) of query over
    the catalog at root."""
    return run_torchrun(tmp_path, DDP_CATALOG_ROWS, str(root), query, columns, nproc=2)["shards"]


def minio_binary() -> str | None:
    """The pinned MinIO server (`make tools`): $LOCH_MINIO, else the link
    under the tools cache; None when neither exists."""
    for candidate in (os.environ.get("LOCH_MINIO"), str(Path.home() / ".cache/loch/tools/bin/minio")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MinIO:
    """A MinIO server of its own, on 127.0.0.1, with its own root
    credentials (`access_key`, `secret_key`), started by the `start_minio`
    fixture."""

    def __init__(self, binary: str, root: Path, access_key: str, secret_key: str) -> None:
        self.access_key, self.secret_key = access_key, secret_key
        self._binary, self._data, self._port = binary, root / "data", _free_port()
        self.endpoint = f"http://127.0.0.1:{self._port}"
        self._launch()

    def kill(self) -> None:
        """Kills the server at once, as a crash would (connections are
        refused until :meth:`restart`); its data stays."""
        self.proc.kill()
        self.proc.wait()

    def restart(self) -> None:
        """Starts the killed server again, on the same port and data."""
        self._launch()

    def _launch(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MINIO_"))}
        env.update(MINIO_ROOT_USER=self.access_key, MINIO_ROOT_PASSWORD=self.secret_key, MINIO_BROWSER="off",
                   MINIO_UPDATE="off", MINIO_CI_CD="1")  # fmt: skip
        self.proc = subprocess.Popen(
            [self._binary, "server", "--quiet", "--address", f"127.0.0.1:{self._port}",
             "--console-address", f"127.0.0.1:{_free_port()}", str(self._data)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        import time
        import urllib.request

        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(self.endpoint + "/minio/health/ready", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"MinIO at {self.endpoint} did not start")
            time.sleep(0.2)

    def create_bucket(self, name: str) -> None:
        """Creates bucket `name` with a PUT signed (AWS Signature V4) with
        the root credentials. A MinIO that reports itself ready can still
        answer 503 for a moment (its storage not yet initialised, or
        slowing down under load): 503s are tried again for up to 30 s."""
        import time
        import urllib.error

        deadline = time.monotonic() + 30
        while True:
            try:
                self._put_bucket(name)
                return
            except urllib.error.HTTPError as e:
                body = e.read().decode(errors="replace")
                if e.code != 503 or time.monotonic() > deadline:
                    pytest.fail(f"MinIO at {self.endpoint}: create bucket {name!r}: HTTP {e.code}: {body}")
            time.sleep(0.2)

    def _put_bucket(self, name: str) -> None:
        import datetime
        import hashlib
        import hmac
        import urllib.request

        host = self.endpoint.removeprefix("http://")
        now = datetime.datetime.now(datetime.timezone.utc)
        amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        payload = hashlib.sha256(b"").hexdigest()
        headers = f"host:{host}\nx-amz-content-sha256:{payload}\nx-amz-date:{amz_date}\n"
        signed = "host;x-amz-content-sha256;x-amz-date"
        canonical = f"PUT\n/{name}\n\n{headers}\n{signed}\n{payload}"
        scope = f"{day}/us-east-1/s3/aws4_request"
        to_sign = f"AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
        key = ("AWS4" + self.secret_key).encode()
        for part in (day, "us-east-1", "s3", "aws4_request"):
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        req = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT", headers={
            "x-amz-date": amz_date, "x-amz-content-sha256": payload,
            "Authorization": f"AWS4-HMAC-SHA256 Credential={self.access_key}/{scope}, SignedHeaders={signed}, "
                             f"Signature={signature}",
        })  # fmt: skip
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200

    def stop(self) -> None:
        _stop(self.proc)


@pytest.fixture
def start_minio(tmp_path: Path) -> Any:
    """A function (access_key, secret_key) -> MinIO that starts a MinIO
    server with those root credentials, stopped after the test; fails the
    test when there is no MinIO binary (`make tools` installs it)."""
    binary = minio_binary()
    if binary is None:
        pytest.fail("no MinIO server: run `make tools` or set LOCH_MINIO")
    servers: list[MinIO] = []

    def start(access_key: str, secret_key: str) -> MinIO:
        server = MinIO(binary, tmp_path / f"minio{len(servers)}", access_key, secret_key)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def _tool(env: str, name: str) -> str:
    """The pinned server `name` (`make tools`): $env, else the link under
    the tools cache; fails the test when there is neither."""
    for candidate in (os.environ.get(env), str(Path.home() / ".cache/loch/tools/bin" / name)):
        if candidate and Path(candidate).exists():
            return candidate
    pytest.fail(f"no {name}: run `make tools` or set {env}")


def _wait_ready(proc: subprocess.Popen[bytes], what: str, ready: Any) -> None:
    """Waits up to 90 s for ready() to be true while proc runs."""
    import time

    deadline = time.monotonic() + 90
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"{what} did not start")
        time.sleep(0.2)


def _status(url: str) -> int:
    """The HTTP status of a GET of url; 0 when nothing answers."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=1) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)
    except OSError:
        return 0


class FakeGCS:
    """A fake-gcs-server of its own on 127.0.0.1 (no authentication),
    started by the `fake_gcs` fixture; `endpoint` is its base URL."""

    def __init__(self, binary: str, root: Path) -> None:
        port = _free_port()
        self.endpoint = f"http://127.0.0.1:{port}"
        root.mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("STORAGE_EMULATOR", "GOOGLE_"))}
        self.proc = subprocess.Popen(
            [binary, "-scheme", "http", "-host", "127.0.0.1", "-port", str(port), "-backend", "filesystem",
             "-filesystem-root", str(root), "-public-host", f"127.0.0.1:{port}", "-external-url", self.endpoint,
             "-log-level", "warn"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        _wait_ready(self.proc, f"fake-gcs-server at {self.endpoint}", lambda: _status(self.endpoint + "/storage/v1/b") == 200)

    def create_bucket(self, name: str) -> None:
        import urllib.request

        req = urllib.request.Request(f"{self.endpoint}/storage/v1/b?project=loch-test", method="POST",
                                     data=json.dumps({"name": name}).encode(),
                                     headers={"Content-Type": "application/json"})  # fmt: skip
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200


#: Azurite's well-known development account.
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


class Azurite:
    """An Azurite blob server of its own on 127.0.0.1, started by the
    `azurite` fixture; `endpoint` is the account's blob service URL
    (http://127.0.0.1:PORT/devstoreaccount1)."""

    def __init__(self, binary: str, root: Path) -> None:
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        self.endpoint = f"{base}/{AZURITE_ACCOUNT}"
        root.mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AZURE_")}
        self.proc = subprocess.Popen(
            [binary, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", str(root),
             "--skipApiVersionCheck", "--disableTelemetry", "--silent"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        _wait_ready(self.proc, f"Azurite at {base}", lambda: _status(f"{self.endpoint}?comp=list") != 0)

    def create_container(self, name: str) -> None:
        """Creates container `name` with a PUT signed with the account's
        shared key."""
        import base64
        import email.utils
        import hashlib
        import hmac
        import urllib.request

        date, version = email.utils.formatdate(usegmt=True), "2021-08-06"
        headers = f"x-ms-date:{date}\nx-ms-version:{version}\n"
        resource = f"/{AZURITE_ACCOUNT}/{AZURITE_ACCOUNT}/{name}\nrestype:container"
        # VERB, then Content-Encoding, -Language, -Length (empty for 0),
        # -MD5, -Type, Date, If-Modified-Since, If-Match, If-None-Match,
        # If-Unmodified-Since and Range, a line each.
        ctype = "application/octet-stream"
        to_sign = "PUT\n" + "\n" * 4 + ctype + "\n" + "\n" * 6 + headers + resource
        sig = base64.b64encode(hmac.new(base64.b64decode(AZURITE_KEY), to_sign.encode(), hashlib.sha256).digest())
        req = urllib.request.Request(f"{self.endpoint}/{name}?restype=container", method="PUT", data=b"", headers={
            "Content-Type": ctype, "x-ms-date": date, "x-ms-version": version, "Authorization": f"SharedKey {AZURITE_ACCOUNT}:{sig.decode()}",
        })  # fmt: skip
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 201


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def _serving(server: Any) -> Any:
    """Yields server, a fixture's, and stops its process after the test."""
    yield server
    _stop(server.proc)


@pytest.fixture
def fake_gcs(tmp_path: Path) -> Any:
    """A fake-gcs-server started for the test and stopped after it; fails
    the test when there is no binary (`make tools` installs it)."""
    yield from _serving(FakeGCS(_tool("LOCH_FAKE_GCS", "fake-gcs-server"), tmp_path / "fake-gcs"))


@pytest.fixture
def azurite(tmp_path: Path) -> Any:
    """An Azurite blob server started for the test and stopped after it;
    fails the test when there is none (`make tools` installs it)."""
    yield from _serving(Azurite(_tool("LOCH_AZURITE", "azurite-blob"), tmp_path / "azurite"))

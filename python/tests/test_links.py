"""loch.LinkPolicy: which links ds.fetch follows, given to loch.open as
links=, against an http server on 127.0.0.1 that the test starts (links
may reach loopback addresses only when the policy allows them: LOOPBACK)."""

from __future__ import annotations

import http.server
import pickle
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import loch

BODY = b"bytes over http"

# Allows the test's server: links reach no loopback address by default.
LOOPBACK = ["127.0.0.1", "::1"]


@pytest.fixture(autouse=True)
def _no_allow_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCH_LINK_ALLOW", raising=False)


@pytest.fixture
def server() -> Iterator[str]:
    """An http server on 127.0.0.1 serving /img, and /away: a redirect to
    /img under the name localhost (another host)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            port = self.server.server_address[1]
            if self.path.split("?")[0] == "/img":
                self.send_response(200)
                self.send_header("Content-Length", str(len(BODY)))
                self.end_headers()
                self.wfile.write(BODY)
            elif self.path == "/away":
                self.send_response(302)
                self.send_header("Location", f"http://localhost:{port}/img?sig=s3cr3t")
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self.send_error(404)

        def log_message(self, *args: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def url(tmp_path: Path, server: str) -> str:
    """A dataset at tmp/data/ds whose link column "ref" holds: the server's
    /img, a local file beside the dataset, a local file outside its
    directory, and the server's redirect."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "beside.txt").write_bytes(b"a local file")
    (tmp_path / "outside.txt").write_bytes(b"not for links")
    url = str(data / "ds")
    ds = loch.create(url, schema={"ref": loch.Link()})
    ds.extend({"ref": [f"{server}/img", str(data / "beside.txt"), str(tmp_path / "outside.txt"), f"{server}/away"]})
    ds.commit("links")
    ds.close()
    return url


def test_default_policy(url: str, server: str) -> None:
    ds = loch.open(url)
    with pytest.raises(loch.PermissionDenied) as e:
        ds.fetch("ref", 0)
    port = server.rsplit(":", 1)[1]
    message = str(e.value)
    assert f'column "ref" row 0: follow link "{server}/img"' in message
    assert "127.0.0.1 is a loopback address, which links may not reach by default" in message
    assert f"allow it with LOCH_LINK_ALLOW=127.0.0.1:{port}" in message
    assert "Traceback" not in message
    assert ds.fetch("ref", 1) == b"a local file", "beside the dataset is allowed"
    with pytest.raises(loch.PermissionDenied, match="outside the allowed roots"):
        ds.fetch("ref", 2)

    loopback = loch.open(url, links=loch.LinkPolicy(allow=LOOPBACK))
    assert loopback.fetch("ref", 0) == BODY
    assert loopback.fetch("ref", 3) == BODY, "a redirect to any host the policy allows"


def test_allow_from_the_environment(url: str, server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCH_LINK_ALLOW", server.removeprefix("http://"))
    assert loch.open(url).fetch("ref", 0) == BODY
    with pytest.raises(loch.PermissionDenied, match="loopback"):
        loch.open(url, links=loch.LinkPolicy(allow=[])).fetch("ref", 0)
    monkeypatch.setenv("LOCH_LINK_ALLOW", "http://10.0.0.1")
    with pytest.raises(loch.InvalidArgument, match=r"LOCH_LINK_ALLOW: allow: .*give an http\(s\) host as host"):
        loch.open(url)


def test_internal_addresses_refused(tmp_path: Path) -> None:
    """By default ds.fetch reaches no internal address: each refusal is
    loch.PermissionDenied naming the address and its kind, nothing is
    connected to (no server listens at most of these)."""
    links = {
        "http://[::1]:9/": "::1 is a loopback address",
        "http://localhost:9/": "is a loopback address",
        "http://10.0.0.1/": "10.0.0.1 is a private address",
        "http://169.254.169.254/latest/meta-data/": "169.254.169.254 is a cloud metadata address",
        "http://metadata.google.internal/": "cloud metadata service",
    }
    url = str(tmp_path / "ds")
    ds = loch.create(url, schema={"ref": loch.Link()})
    ds.extend({"ref": list(links)})
    ds.commit("internal links")
    ds = loch.open(url, links=loch.LinkPolicy(max_attempts=1))
    for row, want in enumerate(links.values()):
        with pytest.raises(loch.PermissionDenied, match=want):
            ds.fetch("ref", row)


def test_other_buckets_need_naming(tmp_path: Path) -> None:
    """A dataset's links read its own bucket; another one only when allow
    names it (here memory buckets, which the policy also has to allow)."""
    own, other = f"mem://links-own-{tmp_path.name}", f"mem://links-other-{tmp_path.name}"
    ds = loch.create(f"{own}/ds", schema={"ref": loch.Link()})
    ds.extend({"ref": [f"{own}/ds/_loch/dataset", f"{other}/x"]})
    ds.commit("two buckets")
    ds = loch.open(f"{own}/ds", links=loch.LinkPolicy(schemes=["mem"]))
    assert ds.fetch("ref", 0)
    with pytest.raises(loch.PermissionDenied, match=f"bucket {other} is not the dataset's own"):
        ds.fetch("ref", 1)
    named = loch.open(f"{own}/ds", links=loch.LinkPolicy(schemes=["mem"], allow=[other]))
    with pytest.raises(loch.NotFound):
        named.fetch("ref", 1)


def test_policy_from_python(url: str) -> None:
    only_local = loch.open(url, links=loch.LinkPolicy(schemes=[], local_roots=[str(Path(url).parent)]))
    with pytest.raises(loch.PermissionDenied, match=r"http:// links are not allowed \(allowed: none"):
        only_local.fetch("ref", 0)
    assert only_local.fetch("ref", 1) == b"a local file"

    no_local = loch.open(url, links=loch.LinkPolicy(local_roots=[], allow=LOOPBACK))
    with pytest.raises(loch.PermissionDenied, match="links to local files are not allowed"):
        no_local.fetch("ref", 1)
    assert no_local.fetch("ref", 0) == BODY

    wider = loch.open(url, links=loch.LinkPolicy(local_roots=[Path(url).parents[1]]))
    assert wider.fetch("ref", 2) == b"not for links", "a root given as a Path"

    small = loch.open(url, links=loch.LinkPolicy(max_bytes=4, allow=LOOPBACK))
    with pytest.raises(loch.InvalidArgument, match="over the limit of 4"):
        small.fetch("ref", 0)


def test_redirect_checked_against_hosts(url: str) -> None:
    ds = loch.open(url, links=loch.LinkPolicy(hosts=["127.0.0.1"], allow=LOOPBACK, max_attempts=1, timeout=5))
    assert ds.fetch("ref", 0) == BODY
    with pytest.raises(loch.PermissionDenied, match='redirect refused: host "localhost:') as e:
        ds.fetch("ref", 3)
    assert "s3cr3t" not in str(e.value)


def test_policy_travels_with_a_pickled_dataset(url: str) -> None:
    ds = loch.open(url, links=loch.LinkPolicy(local_roots=[]))
    copy = pickle.loads(pickle.dumps(ds))
    assert copy._loader_view()[1].links == loch.LinkPolicy(local_roots=[])
    with pytest.raises(loch.PermissionDenied):
        copy.fetch("ref", 1)


def test_create_takes_a_policy(tmp_path: Path, server: str) -> None:
    ds = loch.create(str(tmp_path / "c"), schema={"ref": loch.Link()}, links=loch.LinkPolicy(schemes=["https"]))
    ds.extend({"ref": [f"{server}/img"]})
    ds.commit()
    with pytest.raises(loch.PermissionDenied):
        ds.fetch("ref", 0)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: loch.LinkPolicy(schemes="https"), "want a list"),  # type: ignore[arg-type]
        (lambda: loch.LinkPolicy(hosts=[1]), "want strings"),  # type: ignore[list-item]
        (lambda: loch.LinkPolicy(allow="127.0.0.1"), "want a list"),  # type: ignore[arg-type]
        (lambda: loch.open("mem://links-bad", links=loch.LinkPolicy(allow=["s3://b/key"])), "want a bucket, not an object"),
        (lambda: loch.LinkPolicy(max_bytes=1.5), "want an int"),  # type: ignore[arg-type]
        (lambda: loch.LinkPolicy(timeout=0), "seconds > 0"),
        (lambda: loch.LinkPolicy(max_attempts=0), "1 or more"),
        (lambda: loch.LinkPolicy(max_bytes=0), "want bytes > 0, -1 for no limit"),
        (lambda: loch.open("mem://links-bad", links={"schemes": []}), "want a loch.LinkPolicy"),  # type: ignore[arg-type]
    ],
)
def test_bad_policies(make: object, match: str) -> None:
    with pytest.raises(loch.InvalidArgument, match=match):
        make()  # type: ignore[operator]


def test_a_link_that_never_answers_is_an_error(tmp_path: Path) -> None:
    """A server that takes the connection and never answers: after the
    policy's timeout and attempts, ds.fetch raises loch.Error naming the
    link (a deadline once came back as a status the SDK took for success,
    and fetch failed on a NULL pointer)."""
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepted by the kernel, never answered
    try:
        link = f"http://127.0.0.1:{silent.getsockname()[1]}/never"
        url = str(tmp_path / "ds")
        ds = loch.create(url, schema={"ref": loch.Link()})
        ds.extend({"ref": [link]})
        ds.commit("a silent link")
        ds = loch.open(url, links=loch.LinkPolicy(timeout=0.5, max_attempts=1, allow=LOOPBACK))
        with pytest.raises(loch.Error, match="/never") as e:
            ds.fetch("ref", 0)
        assert type(e.value) is not loch.Closed
    finally:
        silent.close()

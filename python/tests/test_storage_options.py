"""storage_options: each dataset's own endpoint, region and credentials,
so that one process reaches several object stores or accounts; never
shown in a repr or an error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import loch

SECRET_A = "alpha-secret-Zq81kP"
SECRET_B = "beta-secret-Wx27mN"

TWO_ACCOUNTS = """
    import json, pickle, sys
    import numpy as np
    import loch

    a, b = json.loads(sys.argv[1])
    schema = {"n": loch.Tensor("int64", shape=())}
    da = loch.create("s3://alpha/ds", schema=schema, storage_options=a)
    db = loch.create("s3://beta/ds", schema=schema, storage_options=b)
    da.extend({"n": np.arange(10)}); da.commit("ten")
    db.extend({"n": np.arange(100, 105)}); db.commit("five")
    ra = loch.open("s3://alpha/ds", storage_options=a)
    rb = loch.open("s3://beta/ds", storage_options=b)
    out = {
        "a": ra["n"][:].tolist(),
        "b": rb["n"][:].tolist(),
        "a_loader": [x for batch in ra.numpy(batch_size=4, columns=["n"]) for x in batch["n"].tolist()],
        "a_pickled": pickle.loads(pickle.dumps(ra))["n"][:].tolist(),
        "reprs": repr(ra) + repr(rb) + repr(ra._loader_view()[1]),
    }
    errors = {}
    for name, opts in {
        "a_with_b_secret": dict(a, secret_access_key=b["aws_secret_access_key"]),
        "a_without_options": None,
    }.items():
        try:
            loch.open("s3://alpha/ds", storage_options=opts)
            errors[name] = "opened"
        except loch.Error as e:
            errors[name] = type(e).__name__ + ": " + str(e)
    out["errors"] = errors
    print(json.dumps(out))
"""


def clean_env(tmp_path: Path) -> dict[str, str]:
    """The environment without AWS credentials or settings of any kind."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    none = str(tmp_path / "none")
    env.update(AWS_CONFIG_FILE=none, AWS_SHARED_CREDENTIALS_FILE=none, AWS_EC2_METADATA_DISABLED="true",
               PYTHONUNBUFFERED="1")  # fmt: skip
    return env


@pytest.mark.slow
def test_two_accounts_in_one_process(tmp_path: Path, start_minio: Any) -> None:
    alpha = start_minio("alphaaccess", SECRET_A)
    beta = start_minio("betaaccess", SECRET_B)
    alpha.create_bucket("alpha")
    beta.create_bucket("beta")
    a = {"endpoint": alpha.endpoint, "access_key_id": "alphaaccess", "secret_access_key": SECRET_A}
    # The object_store spellings (Lance, Delta Lake, Polars) work too.
    b = {"aws_endpoint": beta.endpoint, "aws_region": "us-east-1", "aws_access_key_id": "betaaccess",
         "aws_secret_access_key": SECRET_B}  # fmt: skip
    script = tmp_path / "two_accounts.py"
    script.write_text(textwrap.dedent(TWO_ACCOUNTS))
    proc = subprocess.run([sys.executable, str(script), json.dumps([a, b])], capture_output=True, text=True,
                          timeout=120, env=clean_env(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["a"] == list(range(10)) and out["a_loader"] == list(range(10)) and out["a_pickled"] == list(range(10))
    assert out["b"] == list(range(100, 105))
    assert out["errors"]["a_with_b_secret"].startswith("PermissionDenied"), out["errors"]
    assert out["errors"]["a_without_options"] != "opened", out["errors"]
    shown = out["reprs"] + json.dumps(out["errors"]) + proc.stderr
    assert SECRET_A not in shown and SECRET_B not in shown


QUERY = """
    import json, sys
    import numpy as np
    import loch

    opts = json.loads(sys.argv[1])
    ds = loch.create("s3://qbucket/ds", schema={"n": loch.Tensor("int64", shape=())}, storage_options=opts)
    ds.extend({"n": np.arange(10)}); ds.commit("ten")
    sel = ds.query("SELECT n FROM ds WHERE n % 2 = 0 ORDER BY n DESC")
    out = {
        "rows": sel.row_ids.tolist(),
        "loaded": [x for b in sel.numpy(batch_size=8) for x in b["n"].tolist()],
        "arrow": sel.to_arrow().column("n").to_pylist(),
        "sql": ds.sql("SELECT count(*) AS c, sum(n) AS s FROM ds").to_pylist(),
    }
    try:
        loch.open("s3://qbucket/ds").query("SELECT n FROM ds")
        out["without"] = "ran"
    except loch.Error as e:
        out["without"] = type(e).__name__ + ": " + str(e)
    print(json.dumps(out))
"""


@pytest.mark.slow
def test_query_uses_the_datasets_storage_options(tmp_path: Path, start_minio: Any) -> None:
    """ds.query, Selection.to_arrow and ds.sql run in the loch command with
    the dataset's own storage_options, no AWS_* variable set (ds.query ran
    it without them: "no AWS region")."""
    server = start_minio("queryaccess", SECRET_A)
    server.create_bucket("qbucket")
    opts = {"endpoint": server.endpoint, "region": "us-east-1", "access_key_id": "queryaccess", "secret_access_key": SECRET_A}
    script = tmp_path / "query.py"
    script.write_text(textwrap.dedent(QUERY))
    proc = subprocess.run([sys.executable, str(script), json.dumps(opts)], capture_output=True, text=True,
                          timeout=120, env=clean_env(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["rows"] == [8, 6, 4, 2, 0]
    assert out["loaded"] == [8, 6, 4, 2, 0] and out["arrow"] == [8, 6, 4, 2, 0]
    assert out["sql"] == [{"c": 10, "s": 45}]
    assert out["without"] != "ran", "without the options the store is not reached"
    assert SECRET_A not in proc.stdout + proc.stderr


def test_unknown_option_names_the_option_not_the_value() -> None:
    with pytest.raises(loch.InvalidArgument, match='unknown option "secret_key"') as e:
        loch.create("mem://so-unknown", schema={"n": loch.Text()}, storage_options={"secret_key": SECRET_A})
    assert SECRET_A not in str(e.value)


@pytest.mark.parametrize("url", ["mem://so-local", "LOCAL"])
def test_options_for_a_store_without_them_are_refused(tmp_path: Path, url: str) -> None:
    url = str(tmp_path / "ds") if url == "LOCAL" else url
    with pytest.raises(loch.InvalidArgument, match="does not apply") as e:
        loch.create(url, schema={"n": loch.Text()}, storage_options={"secret_access_key": SECRET_A,
                                                                      "access_key_id": "x"})  # fmt: skip
    assert SECRET_A not in str(e.value)


def test_options_must_be_strings() -> None:
    with pytest.raises(loch.InvalidArgument, match="storage_options"):
        loch.open("mem://so-types", storage_options={"region": 3})  # type: ignore[dict-item]


def test_a_bool_option_is_written_as_a_string() -> None:
    from loch.dataset import _storage_options

    assert _storage_options({"anonymous": True, "region": "eu-west-1"}) == {"anonymous": "true", "region": "eu-west-1"}
    assert _storage_options({"anonymous": False}) == {"anonymous": "false"}


GCS_AND_AZURE = """
    import json, pickle, sys
    import numpy as np
    import loch

    gs, az, gs_url, az_url = json.loads(sys.argv[1])
    schema = {"n": loch.Tensor("int64", shape=())}
    dg = loch.create(gs_url, schema=schema, storage_options=gs)
    da = loch.create(az_url, schema=schema, storage_options=az)
    dg.extend({"n": np.arange(7)}); dg.commit("seven")
    da.extend({"n": np.arange(200, 203)}); da.commit("three")
    rg = loch.open(gs_url, storage_options=gs)
    ra = loch.open(az_url, storage_options=az)
    out = {
        "gs": rg["n"][:].tolist(),
        "az": ra["n"][:].tolist(),
        "gs_loader": [x for b in rg.numpy(batch_size=3, columns=["n"]) for x in b["n"].tolist()],
        "az_pickled": pickle.loads(pickle.dumps(ra))["n"][:].tolist(),
        "reprs": repr(rg) + repr(ra) + repr(ra._loader_view()[1]),
    }
    errors = {}
    for name, url, opts in [
        ("az_wrong_key", az_url, dict(az, account_key="d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmc=")),
        ("az_without_options", az_url, None),
        ("gs_bad_service_account_key", gs_url, {"endpoint": gs["endpoint"], "google_service_account_key": "{not json SECRETKEY"}),
        ("gs_with_an_azure_option", gs_url, dict(gs, account_name="x")),
    ]:
        try:
            loch.open(url, storage_options=opts)
            errors[name] = "opened"
        except loch.Error as e:
            errors[name] = type(e).__name__ + ": " + str(e)
    out["errors"] = errors
    print(json.dumps(out))
"""


@pytest.mark.slow
def test_gcs_and_azure_options_per_dataset(tmp_path: Path, fake_gcs: Any, azurite: Any) -> None:
    from conftest import AZURITE_ACCOUNT, AZURITE_KEY

    fake_gcs.create_bucket("gbucket")
    azurite.create_container("acontainer")
    gs = {"endpoint": fake_gcs.endpoint, "anonymous": True}  # a bool is written "true"
    # The object_store spellings work too.
    az = {"azure_storage_endpoint": azurite.endpoint, "azure_storage_account_name": AZURITE_ACCOUNT,
          "account_key": AZURITE_KEY}  # fmt: skip
    script = tmp_path / "gcs_and_azure.py"
    script.write_text(textwrap.dedent(GCS_AND_AZURE))
    env = {k: v for k, v in clean_env(tmp_path).items() if not k.startswith(("AZURE_", "STORAGE_EMULATOR", "GOOGLE_"))}
    args = json.dumps([gs, az, "gs://gbucket/ds", "az://acontainer/ds"])
    proc = subprocess.run([sys.executable, str(script), args], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["gs"] == list(range(7)) and out["gs_loader"] == list(range(7))
    assert out["az"] == [200, 201, 202] and out["az_pickled"] == [200, 201, 202]
    errors = out["errors"]
    assert errors["az_wrong_key"].startswith("PermissionDenied"), errors
    assert errors["az_without_options"].startswith("PermissionDenied"), errors
    assert errors["gs_bad_service_account_key"].startswith("PermissionDenied"), errors
    assert errors["gs_with_an_azure_option"].startswith("InvalidArgument") and "account_name" in errors["gs_with_an_azure_option"]
    shown = out["reprs"] + json.dumps(errors) + proc.stderr
    assert AZURITE_KEY not in shown and "SECRETKEY" not in shown and "d3Jvbmcta2V5" not in shown


def test_retry_budget_applies_to_every_store(tmp_path: Path) -> None:
    for url in [str(tmp_path / "ds"), "mem://so-budget"]:
        ds = loch.create(url, schema={"n": loch.Text()}, storage_options={"retry_budget": "90s"})
        ds.close()
    with pytest.raises(loch.InvalidArgument, match="retry_budget"):
        loch.create("mem://so-budget-bad", schema={"n": loch.Text()}, storage_options={"retry_budget": "soon"})


PICKLED = """
    import json, pickle, sys
    import numpy as np
    import loch

    opts, secret = json.loads(sys.argv[1])
    ds = loch.create("s3://alpha/ds", schema={"n": loch.Tensor("int64", shape=())}, storage_options=opts)
    ds.extend({"n": np.arange(4)}); ds.commit("four")
    with_options = loch.open("s3://alpha/ds", storage_options=opts)
    from_env = loch.open("s3://alpha/ds")  # the same credentials, from the environment
    out = {}
    for name, d in {"with_options": with_options, "from_env": from_env}.items():
        blobs = [pickle.dumps(d), pickle.dumps(d.numpy(batch_size=2))]
        out[name] = {"secret_in_pickle": any(secret.encode() in b for b in blobs),
                     "reads": pickle.loads(blobs[0])["n"][:].tolist()}
    print(json.dumps(out))
"""


@pytest.mark.slow
def test_pickles_carry_storage_options_not_the_environment(tmp_path: Path, start_minio: Any) -> None:
    """What python/README.md says of pickles (issue 35 item 13): a dataset
    or loader opened with ``storage_options`` pickles them, secret
    included and in clear (so that DataLoader workers under spawn reopen
    it); one whose credentials come from the environment pickles none, and
    reads, unpickled, with the environment of the process it is in."""
    alpha = start_minio("alphaaccess", SECRET_A)
    alpha.create_bucket("alpha")
    opts = {"endpoint": alpha.endpoint, "access_key_id": "alphaaccess", "secret_access_key": SECRET_A}
    script = tmp_path / "pickled.py"
    script.write_text(textwrap.dedent(PICKLED))
    env = clean_env(tmp_path) | {"AWS_ENDPOINT_URL": alpha.endpoint, "AWS_ACCESS_KEY_ID": "alphaaccess",
                                 "AWS_SECRET_ACCESS_KEY": SECRET_A, "AWS_REGION": "us-east-1"}  # fmt: skip
    proc = subprocess.run([sys.executable, str(script), json.dumps([opts, SECRET_A])], capture_output=True, text=True,
                          timeout=120, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["with_options"] == {"secret_in_pickle": True, "reads": [0, 1, 2, 3]}
    assert out["from_env"] == {"secret_in_pickle": False, "reads": [0, 1, 2, 3]}

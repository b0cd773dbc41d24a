"""examples/train_resnet.py and python/gpu_tests/bench_resnet.py run on a
CPU in a smoke mode (resnet18, tiny images, 2 steps): DDP over two gloo
ranks under torchrun, a dataset on MinIO through the AWS_* variables, and
the GPU script's path (prepare's JPEG folder and dataset, the CPU decode
contenders), each checked through the JSON report it writes. The same
code on a GPU machine is python/gpu_tests/run.sh's."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import loch

pytest.importorskip("torchvision")
pytestmark = pytest.mark.slow  # a process (or two) importing torch and torchvision each

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "train_resnet.py"
BENCH = ROOT / "python" / "gpu_tests" / "bench_resnet.py"
SMOKE = ["--device", "cpu", "--model", "resnet18", "--image-size", "32", "--batch-size", "4", "--steps", "2"]
CLASSES = ["cat", "dog", "fox"]


def make_jpegs(url: str, rows: int = 24, **storage: Any) -> None:
    """A dataset of `rows` small JPEGs (kept as JPEG) and their labels."""
    rng = np.random.default_rng(7)
    opts = {"storage_options": storage} if storage else {}
    ds = loch.create(url, schema={"image": loch.Image("jpeg", shape=(40, 48, 3)), "label": loch.ClassLabel(CLASSES)},
                     **opts)  # fmt: skip
    ds.extend({"image": rng.integers(0, 255, (rows, 40, 48, 3), dtype=np.uint8), "label": np.arange(rows) % 3})
    ds.commit("tiny jpegs")
    ds.close()


def run(args: list[str], tmp_path: Path, env: dict[str, str] | None = None, timeout: float = 300,
        check: bool = True) -> subprocess.CompletedProcess[str]:  # fmt: skip
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=tmp_path,
                          env=dict(env or os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1"))  # fmt: skip
    if check:
        assert proc.returncode == 0, f"{' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def check_report(report: dict[str, Any], world: int, epochs: int, decode: str = "cpu") -> None:
    """The report has every field, with values a CPU smoke run (batches of
    4, 2 steps an epoch) can have."""
    batch, steps = 4, 2
    assert report["loader"] == "loch" and report["model"] == "resnet18" and report["device"] == "cpu"
    assert report["world_size"] == world and report["decode"] == decode and report["amp"] == "bf16"
    crop = "decode,random_resized_crop=32,flip"
    assert report["transform"] == (crop if decode == "cpu" else crop + ",to_float,normalize=imagenet,chw")
    assert report["machine"]["world_size"] == world and report["machine"]["gpus"] == []
    assert len(report["epochs"]) == epochs
    for e in report["epochs"]:
        assert e["steps"] == steps and e["samples"] == steps * batch * world
        assert e["seconds"] > 0
        rate = e["samples"] / e["seconds"]  # seconds rounded to ms, samples/s to 0.1
        assert abs(e["samples_per_s"] - rate) <= 0.06 + 0.01 * rate
        assert 0 <= e["data_wait_share"] <= e["data_wait_share_max"] <= 1
        assert e["gpu_utilisation"] is None
        assert math.isfinite(e["loss"]) and e["loss"] > 0


def test_train_resnet_ddp_two_ranks(tmp_path: Path) -> None:
    make_jpegs(str(tmp_path / "ds"))
    out = tmp_path / "report.json"
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    proc = run([*torchrun, str(EXAMPLE), str(tmp_path / "ds"), *SMOKE, "--epochs", "2", "--json", str(out)], tmp_path)
    check_report(json.loads(out.read_text()), world=2, epochs=2)
    assert proc.stdout.count("GPU utilisation n/a") == 2, proc.stdout  # rank 0's line per epoch, no other rank's
    assert "24 rows, 3 classes" in proc.stdout


def test_train_resnet_from_minio(tmp_path: Path, start_minio: Any) -> None:
    server = start_minio("resnetaccess", "resnet-secret-key-0123")
    server.create_bucket("imgs")
    make_jpegs("s3://imgs/tiny", endpoint=server.endpoint, region="us-east-1", access_key_id="resnetaccess",
               secret_access_key="resnet-secret-key-0123")  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ENDPOINT_URL=server.endpoint, AWS_REGION="us-east-1", AWS_ACCESS_KEY_ID="resnetaccess",
               AWS_SECRET_ACCESS_KEY="resnet-secret-key-0123")  # fmt: skip
    out = tmp_path / "report.json"
    run([sys.executable, str(EXAMPLE), "s3://imgs/tiny", *SMOKE, "--json", str(out)], tmp_path, env)
    report = json.loads(out.read_text())
    check_report(report, world=1, epochs=1)
    assert report["dataset"].startswith("s3://imgs/tiny")


def test_decode_option(tmp_path: Path) -> None:
    """--decode gpu runs ds.pytorch(decode="gpu") (the spec's whole
    pipeline in torch, on the CPU here) where this loch has decode=, and is
    refused with a clear message where it has not; --decode auto then
    decodes on the CPU, saying so."""
    from loch.torch import TorchOptions

    make_jpegs(str(tmp_path / "ds"), rows=8)
    out = tmp_path / "report.json"
    gpu = [sys.executable, str(EXAMPLE), str(tmp_path / "ds"), *SMOKE, "--decode", "gpu", "--json", str(out)]
    if "decode" in TorchOptions.__optional_keys__:
        run(gpu, tmp_path)
        check_report(json.loads(out.read_text()), world=1, epochs=1, decode="gpu")
        return
    proc = run(gpu, tmp_path, check=False)
    assert proc.returncode != 0
    assert "--decode gpu: this loch's ds.pytorch() has no decode= option" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = run([sys.executable, str(EXAMPLE), str(tmp_path / "ds"), *SMOKE, "--decode", "auto", "--json", str(out)],
               tmp_path)  # fmt: skip
    assert "decoding on the CPU" in proc.stdout
    check_report(json.loads(out.read_text()), world=1, epochs=1)


def test_gpu_script_path_on_cpu(tmp_path: Path) -> None:
    """bench_resnet.py prepare makes the JPEG folder and its loch dataset
    (with the loch command), which train_resnet.py trains on; decode times
    the CPU contenders; dali feeds the loop from DALI's CPU pipeline, or
    without DALI says so loudly (exit status 3)."""
    from loch.query import cli

    d = tmp_path / "rn"
    prep = [sys.executable, str(BENCH), "prepare", "--dir", str(d), "--images", "40", "--classes", "4",
            "--min-side", "40", "--max-side", "64", "--loch", cli()]  # fmt: skip
    run(prep, tmp_path)
    files = sorted(d.glob("jpeg/*/*.jpg"))
    assert len(files) == 40 and {f.parent.name for f in files} == {f"class{c:03d}" for c in range(4)}
    ds = loch.open(str(d / "loch"))
    assert len(ds) == 40 and ds.schema["image"].sample_compression == "jpeg"
    assert "reusing" in run(prep, tmp_path).stdout

    out = tmp_path / "decode.json"
    run([sys.executable, str(BENCH), "decode", "--dir", str(d), "--dataset", str(d / "loch"), "--crop", "32",
         "--batch", "8", "--json", str(out)], tmp_path)  # fmt: skip
    decode = json.loads(out.read_text())
    assert decode["images"] == 40 and decode["cuda"] is None
    names = [r["name"] for r in decode["results"]]
    assert any(n.startswith("PIL") for n in names) and any(n.startswith("loch loader CPU") for n in names)
    for r in decode["results"]:
        assert "error" not in r and r["images_per_s"] > 0, r

    report = tmp_path / "train.json"
    run([sys.executable, str(EXAMPLE), str(d / "loch"), *SMOKE, "--json", str(report)], tmp_path)
    assert json.loads(report.read_text())["rows"] == 40

    dali = [sys.executable, str(BENCH), "dali", "--dir", str(d), *SMOKE, "--json", str(tmp_path / "dali.json")]
    try:
        import nvidia.dali  # noqa: F401
    except ImportError:
        proc = run(dali, tmp_path, check=False)
        assert proc.returncode == 3 and "DALI IS NOT INSTALLED" in proc.stdout, proc.stdout + proc.stderr
        return
    run(dali, tmp_path)  # DALI's CPU decoder feeding the same loop
    report = json.loads((tmp_path / "dali.json").read_text())
    assert report["loader"] == "dali" and report["decode"] == "cpu (DALI)"
    assert [e["samples"] for e in report["epochs"]] == [8] and report["epochs"][0]["gpu_utilisation"] is None

"""Issue 16: a video column read by frame range from Python. Media files are
made by Debian's ffmpeg (installed by ``make sysdeps``) and ingested with
the package's loch command; frames are checked against ffmpeg's own decode."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import loch
from loch.query import cli


def ffmpeg(*args: str) -> bytes:
    exe = shutil.which("ffmpeg")
    assert exe, "ffmpeg is not installed (make sysdeps installs it)"
    return subprocess.run([exe, "-y", "-hide_banner", "-loglevel", "error", *args], check=True,
                          capture_output=True).stdout  # fmt: skip


def test_read_frames(tmp_path: Path) -> None:
    (tmp_path / "clips" / "walk").mkdir(parents=True)
    video = tmp_path / "clips" / "walk" / "a.mp4"
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25:duration=2", "-c:v", "libx264", "-preset", "ultrafast",
           "-g", "10", str(video))  # fmt: skip
    subprocess.run([cli(), "ingest", "video", str(tmp_path / "clips"), str(tmp_path / "ds")], check=True,
                   capture_output=True)  # fmt: skip
    ds = loch.open(str(tmp_path / "ds"))
    clip = ds["video"].read(0, frames=slice(13, 21, 3))
    assert clip.shape == (3, 48, 64, 3) and clip.dtype == np.uint8
    for k, n in enumerate(range(13, 21, 3)):
        want = ffmpeg("-i", str(video), "-vf", f"select=eq(n\\,{n}),scale=flags=bilinear+accurate_rnd+full_chroma_int,format=rgb24",
                      "-vsync", "0", "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-")  # fmt: skip
        assert clip[k].tobytes() == want, f"frame {n}"
    small = ds["video"].read(0, frames=slice(40, None), size=(32, 24))
    assert small.shape == (10, 24, 32, 3)
    with pytest.raises(loch.InvalidArgument):
        ds["video"].read(0, frames=slice(60, 70))

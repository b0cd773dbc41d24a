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


def clips_by_row(loader: object, stop: int | None = None) -> dict[int, bytes]:
    """Each row's clip bytes by row id, from the first ``stop`` batches (all by default)."""
    out: dict[int, bytes] = {}
    it = iter(loader)  # type: ignore[call-overload]
    for k, batch in enumerate(it):
        for i, row in enumerate(batch["index"].tolist()):
            out[int(row)] = batch["video"][i].numpy().tobytes()
        if stop is not None and k + 1 == stop:
            break
    if stop is not None:
        it.close()
    return out


def test_seeded_clips_resume(tmp_path: Path) -> None:
    """Random clip starts and crops drawn per row and epoch through
    ``ds.pytorch(transform=...)``: the same with 1 and 4 Go workers, and after
    a mid-epoch ``state_dict``/``load_state_dict`` (the chunk's videos average
    over 256 KiB: the Go loader reads them by range)."""
    (tmp_path / "clips" / "walk").mkdir(parents=True)
    for i, (size, seconds) in enumerate([("64x48", 2), ("64x48", 3), ("64x48", 4), ("320x240", 12), ("320x240", 14)]):
        ffmpeg("-f", "lavfi", "-i", f"testsrc2=size={size}:rate=25:duration={seconds}", "-c:v", "libx264",
               "-preset", "ultrafast", "-g", "25", str(tmp_path / "clips" / "walk" / f"{i}.mp4"))  # fmt: skip
    subprocess.run([cli(), "ingest", "video", str(tmp_path / "clips"), str(tmp_path / "ds")], check=True,
                   capture_output=True)  # fmt: skip
    ds = loch.open(str(tmp_path / "ds"))
    spec = {"video": "clip=3:stride=2:random_crop=40x24"}

    def loader(workers: int) -> object:
        return ds.pytorch(columns=["video"], batch_size=1, shuffle="full", seed=3, epoch=1, workers=workers, transform=spec)

    first = loader(1)
    want = clips_by_row(first)
    assert len(want) == 5 and all(len(c) == 3 * 24 * 40 * 3 for c in want.values())
    stored = sum(p.stat().st_size for p in (tmp_path / "clips" / "walk").iterdir())
    fetched = first.stats()["bytes_fetched"]  # type: ignore[attr-defined]
    assert 0 < fetched < stored / 3, f"clips read by range: {fetched} of {stored} bytes"
    assert clips_by_row(loader(4)) == want, "the same clips with 4 workers"
    first = loader(1)
    head = clips_by_row(first, stop=2)
    saved = first.state_dict()  # type: ignore[attr-defined]
    again = loader(4)
    again.load_state_dict(saved)  # type: ignore[attr-defined]
    rest = clips_by_row(again)
    assert len(head) == 2 and len(rest) == 3 and head | rest == want, "resumed mid-epoch: the same clips"
    assert clips_by_row(loader(1)) != clips_by_row(ds.pytorch(columns=["video"], batch_size=1, shuffle="full", seed=3, epoch=2,
                                                              workers=1, transform=spec)), "another epoch draws other clips"  # fmt: skip


def test_read_audio_segment(tmp_path: Path) -> None:
    """``read(i, segment=(start, n), rate=...)`` of an audio column: the
    samples of ffmpeg's own decode of the file (wav and flac), resampled
    ones those of the whole decode at that rate, the end shorter; bad
    arguments are InvalidArgument."""
    (tmp_path / "tones" / "a").mkdir(parents=True)
    files = [tmp_path / "tones" / "a" / "0.wav", tmp_path / "tones" / "a" / "1.flac"]
    for f, seconds in zip(files, (20, 12)):
        ffmpeg("-f", "lavfi", "-i", f"sine=frequency=440:sample_rate=44100:duration={seconds}",
               "-f", "lavfi", "-i", f"sine=frequency=660:sample_rate=44100:duration={seconds}",
               "-filter_complex", "[0:a][1:a]join=inputs=2:channel_layout=stereo", str(f))  # fmt: skip
    subprocess.run([cli(), "ingest", "audio", str(tmp_path / "tones"), str(tmp_path / "ds")], check=True,
                   capture_output=True)  # fmt: skip
    ds = loch.open(str(tmp_path / "ds"))
    col = "audio"
    for row, f in enumerate(files):
        want = np.frombuffer(ffmpeg("-i", str(f), "-f", "f32le", "-"), dtype="<f4").reshape(-1, 2)
        seg = ds[col].read(row, segment=(300_000, 16_000))
        assert seg.shape == (16_000, 2) and seg.dtype == np.float32
        assert seg.tobytes() == want[300_000:316_000].tobytes(), f"{f.name}: ffmpeg's samples"
        tail = ds[col].read(row, segment=(len(want) - 10, 100))
        assert tail.shape == (10, 2) and tail.tobytes() == want[-10:].tobytes(), f"{f.name}: the end"
        everything = ds[col].read(row, segment=(0, 1 << 40))  # n past the end: no buffer for 2^40 samples
        assert everything.tobytes() == want.tobytes(), f"{f.name}: a segment past the end is the rest"
        whole16k = ds[col].read(row, rate=16000)
        assert abs(len(whole16k) - len(want) * 16000 // 44100) <= 1
        seg16k = ds[col].read(row, segment=(40_000, 8_000), rate=16000)
        assert seg16k.tobytes() == whole16k[40_000:48_000].tobytes(), f"{f.name}: resampled, the whole decode's samples"
    with pytest.raises(loch.InvalidArgument):
        ds[col].read(0, segment=(-1, 10))
    with pytest.raises(loch.InvalidArgument):
        ds[col].read(0, frames=slice(0, 2), segment=(0, 10))
    with pytest.raises(loch.InvalidArgument):
        ds[col].read(0, frames=slice(0, 2))  # an audio column has no frames


def test_audio_segments_by_range_in_loader(tmp_path: Path) -> None:
    """``ds.pytorch(transform={"audio": "segment=N"})`` over long wav files
    (3.5 MB each, over the 256 KiB rule): the Go loader reads each segment
    by range, a fraction of the stored bytes, and gives the same segments
    with 1 and 2 workers, each that of ``read(i, segment=...)`` nowhere
    else: a row's segment is a run of its whole decode."""
    (tmp_path / "tones" / "a").mkdir(parents=True)
    for i in range(3):
        ffmpeg("-f", "lavfi", "-i", f"sine=frequency={300 + 100 * i}:sample_rate=44100:duration=20",
               "-ac", "2", str(tmp_path / "tones" / "a" / f"{i}.wav"))  # fmt: skip
    subprocess.run([cli(), "ingest", "audio", str(tmp_path / "tones"), str(tmp_path / "ds")], check=True,
                   capture_output=True)  # fmt: skip
    ds = loch.open(str(tmp_path / "ds"))
    stored = sum(p.stat().st_size for p in (tmp_path / "tones" / "a").iterdir())

    def segments(workers: int) -> tuple[dict[int, np.ndarray], int]:
        loader = ds.pytorch(columns=["audio"], batch_size=1, shuffle="full", seed=5, workers=workers,
                            transform={"audio": "segment=16000"})  # fmt: skip
        out = {int(b["index"][0]): b["audio"][0].numpy().copy() for b in loader}
        return out, loader.stats()["bytes_fetched"]  # type: ignore[attr-defined]

    one, fetched = segments(1)
    assert len(one) == 3 and all(s.shape == (16000, 2) for s in one.values())
    assert 0 < fetched < stored / 10, f"segments read by range: {fetched} of {stored} bytes"
    two, _ = segments(2)
    assert all(np.array_equal(one[k], two[k]) for k in one), "the same segments with 2 workers"
    for row, seg in one.items():
        whole = ds["audio"].read(row)
        starts = np.flatnonzero((whole[: len(whole) - 16000 + 1] == seg[0]).all(axis=1))
        assert any(np.array_equal(whole[s : s + 16000], seg) for s in starts), f"row {row}: a run of the whole decode"

"""Issue 16's media benchmarks, each beside its baselines in the same run:

1. clips/s: 16-frame 112x112 RGB clips (stride 2, random starts) from
   10-second 640x360 25 fps H.264 mp4 files, through loch's loader
   (``clip=16:stride=2:size=112x112``, decoded in its Go workers) against
   PyAV and torchcodec decoding the same kind of clips in a torch
   DataLoader with ``num_workers=2``;
2. audio segments/s: 16,000-sample segments (random starts) of 10-second
   44.1 kHz stereo wav, flac and mp3 files, through loch's loader
   (``segment=16000``) against soundfile (libsndfile) and torchcodec in a
   DataLoader with 2 workers;
3. bytes fetched per clip and per segment by loch's loader (its
   ``bytes_fetched`` statistic) against the file's size.

loch's datasets hold each file several times (``--video-copies``,
``--audio-copies``) so that an epoch has many batches (the loader restarts
per epoch, as a training loop's); the baselines read the distinct files.

    .venv/bin/python python/bench/bench_media.py --loch bin/loch

The test files are made with ffmpeg (``make sysdeps``), never downloaded.
Each case runs ``--rounds`` times, alternating, and the median is reported
with the range; the first batch of each run (worker start-up, the first
opens) is not timed. Prints a compact table (and ``--json FILE`` writes
every figure) with the load average before and after. torchaudio is not
measured: no release on PyPI imports with torch 2.15 (see
python/requirements-bench.txt); its ``load()`` decodes through torchcodec.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

import loch

FRAMES, STRIDE, SIZE = 16, 2, 112  # the clip
SEGMENT = 16000  # audio samples per segment
FPS, SECONDS, RATE = 25, 10, 44100


def ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-y", "-hide_banner", "-loglevel", "error", *args], check=True)


def make_videos(root: Path, n: int) -> list[Path]:
    """n 10 s 640x360 25 fps H.264 mp4 files (testsrc2 with a different
    start each), keyframe every 2 s, no B-frames: as media/bench_test.go."""
    out = []
    d = root / "videos" / "v"
    d.mkdir(parents=True)
    for i in range(n):
        p = d / f"{i:03d}.mp4"
        ffmpeg("-f", "lavfi", "-i", f"testsrc2=size=640x360:rate={FPS}:duration={SECONDS}",
               "-vf", f"hue=h={i * 37 % 360}", "-c:v", "libx264", "-preset", "ultrafast", "-g", "50", "-bf", "0",
               "-pix_fmt", "yuv420p", "-movflags", "+faststart", str(p))
        out.append(p)
    return out


def make_audio(root: Path, n: int, ext: str) -> list[Path]:
    """n 10 s 44.1 kHz stereo files of two tones each."""
    out = []
    d = root / f"audio-{ext}" / "a"
    d.mkdir(parents=True)
    for i in range(n):
        p = d / f"{i:03d}.{ext}"
        f1, f2 = 220 + 40 * i, 330 + 50 * i
        ffmpeg("-f", "lavfi", "-i", f"sine=frequency={f1}:sample_rate={RATE}:duration={SECONDS}",
               "-f", "lavfi", "-i", f"sine=frequency={f2}:sample_rate={RATE}:duration={SECONDS}",
               "-filter_complex", "[0:a][1:a]join=inputs=2:channel_layout=stereo", str(p))
        out.append(p)
    return out


def ingest(cli: str, kind: str, files: list[Path], copies: int, work: Path, url: str) -> None:
    """Ingests each file copies times (hard links in a class folder), so
    that an epoch of the loader holds many batches, as a real dataset's."""
    d = work / "c"
    d.mkdir(parents=True)
    for f in files:
        for k in range(copies):
            os.link(f, d / f"{k:03d}-{f.name}")
    subprocess.run([cli, "ingest", kind, str(work), url], check=True, stdout=subprocess.DEVNULL)


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class Timer:
    """Counts items after the first batch, and the time they took."""

    def __init__(self) -> None:
        self.items = 0
        self.start = 0.0

    def run(self, batches: Iterable[Any], size: Callable[[Any], int], want: int) -> float:
        first = True
        for b in batches:
            if first:
                first = False
                self.start = time.perf_counter()
                continue
            self.items += size(b)
            if self.items >= want:
                break
        return self.items / (time.perf_counter() - self.start)


def bytes_per_sample(loader: Any) -> float:
    """The bytes the loader fetches per sample over one whole epoch (the
    timed runs stop mid-epoch, with batches prefetched)."""
    for _ in loader:
        pass
    st = loader.stats()
    return float(st["bytes_fetched"]) / max(int(st["samples"]), 1)


class Items(Dataset):  # type: ignore[type-arg]
    """A map-style Dataset over (path, start) items: item k decodes the clip
    or segment of items[k] (subclasses' __getitem__)."""

    def __init__(self, items: list[tuple[str, int]]) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)


# ---- clips


class PyAVClips(Items):
    """The clip of item k: PyAV seeks backward to the keyframe before the
    start, decodes, and converts the wanted frames to 112x112 RGB
    (swscale, bilinear), one decoding thread."""

    def __getitem__(self, k: int) -> torch.Tensor:
        import av

        path, start = self.items[k]
        want = [start + STRIDE * j for j in range(FRAMES)]
        out: list[np.ndarray] = []
        with av.open(path) as c:
            s = c.streams.video[0]
            s.thread_type = "SLICE"
            s.codec_context.thread_count = 1
            tb, fps = s.time_base, s.average_rate
            t0 = s.start_time or 0
            c.seek(t0 + int(start / fps / tb), stream=s, backward=True)
            for f in c.decode(s):
                idx = round((f.pts - t0) * tb * fps)
                while out and len(out) < FRAMES and idx > want[len(out)]:
                    out.append(out[-1])  # a gap: as loch, repeat
                if len(out) < FRAMES and idx == want[len(out)]:
                    out.append(f.reformat(width=SIZE, height=SIZE, format="rgb24", interpolation="BILINEAR").to_ndarray())
                if len(out) == FRAMES:
                    break
        return torch.from_numpy(np.stack(out))


class TorchCodecClips(Items):
    """The clip of item k: torchcodec's VideoDecoder (one FFmpeg thread,
    approximate seek mode: no scan of the file at open) with its
    decoder-side Resize, frames as NHWC uint8."""

    def __getitem__(self, k: int) -> torch.Tensor:
        from torchcodec.decoders import VideoDecoder
        from torchcodec.transforms import Resize

        path, start = self.items[k]
        d = VideoDecoder(path, num_ffmpeg_threads=1, seek_mode="approximate", dimension_order="NHWC",
                         transforms=[Resize((SIZE, SIZE))])
        return d.get_frames_at([start + STRIDE * j for j in range(FRAMES)]).data


def clip_items(videos: list[Path], n: int, seed: int) -> list[tuple[str, int]]:
    rng = np.random.default_rng(seed)
    span = (FRAMES - 1) * STRIDE + 1
    return [(str(videos[k % len(videos)]), int(rng.integers(0, FPS * SECONDS - span + 1))) for k in range(n)]


def bench_clips(url: str, videos: list[Path], clips: int, batch: int, seed: int) -> dict[str, float]:
    out: dict[str, float] = {}
    ds = loch.open(url)
    spec = f"clip={FRAMES}:stride={STRIDE}:size={SIZE}x{SIZE}"
    loader = ds.pytorch(batch_size=batch, columns=["video"], shuffle="full", seed=seed, workers=2,
                        transform={"video": spec})
    t = Timer()

    def epochs() -> Iterable[Any]:
        while True:
            yield from loader

    out["loch"] = t.run(epochs(), lambda b: int(b["video"].shape[0]), clips)
    loader.close()
    out["loch_bytes_per_clip"] = bytes_per_sample(loader)
    items = clip_items(videos, clips + batch, seed)
    for name, cls in (("pyav", PyAVClips), ("torchcodec", TorchCodecClips)):
        dl = DataLoader(cls(items), batch_size=batch, num_workers=2)
        out[name] = Timer().run(dl, lambda b: int(b.shape[0]), clips)
    return out


# ---- audio


class SoundfileSegments(Items):
    """soundfile.read of just the segment (libsndfile seeks)."""

    def __getitem__(self, k: int) -> torch.Tensor:
        import soundfile

        path, start = self.items[k]
        a, _ = soundfile.read(path, start=start, frames=SEGMENT, dtype="float32", always_2d=True)
        return torch.from_numpy(a)


class TorchCodecSegments(Items):
    """torchcodec's AudioDecoder, the samples played in the segment's time
    range, as [samples, channels]."""

    def __getitem__(self, k: int) -> torch.Tensor:
        from torchcodec.decoders import AudioDecoder

        path, start = self.items[k]
        s = AudioDecoder(path).get_samples_played_in_range(start / RATE, (start + SEGMENT) / RATE).data
        s = s[:, :SEGMENT]
        if s.shape[1] < SEGMENT:  # a rounding short: pad, as loch pads
            s = torch.nn.functional.pad(s, (0, SEGMENT - s.shape[1]))
        return s.T.contiguous()


def bench_audio(url: str, files: list[Path], segments: int, batch: int, seed: int) -> dict[str, float]:
    out: dict[str, float] = {}
    ds = loch.open(url)
    loader = ds.pytorch(batch_size=batch, columns=["audio"], shuffle="full", seed=seed, workers=2,
                        transform={"audio": f"segment={SEGMENT}"})

    def epochs() -> Iterable[Any]:
        while True:
            yield from loader

    out["loch"] = Timer().run(epochs(), lambda b: int(b["audio"].shape[0]), segments)
    loader.close()
    out["loch_bytes_per_segment"] = bytes_per_sample(loader)
    rng = np.random.default_rng(seed)
    items = [(str(files[k % len(files)]), int(rng.integers(0, RATE * SECONDS - SEGMENT + 1)))
             for k in range(segments + batch)]
    for name, cls in (("soundfile", SoundfileSegments), ("torchcodec", TorchCodecSegments)):
        dl = DataLoader(cls(items), batch_size=batch, num_workers=2)
        out[name] = Timer().run(dl, lambda b: int(b.shape[0]), segments)
    return out


def spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):,.1f} ({min(xs):,.1f}-{max(xs):,.1f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loch", default="bin/loch", help="the loch command (ingests the test files)")
    ap.add_argument("--dir", help="work directory (default: a temporary one, removed)")
    ap.add_argument("--videos", type=int, default=8, help="distinct video files")
    ap.add_argument("--video-copies", type=int, default=8, help="rows of the video dataset per file")
    ap.add_argument("--clips", type=int, default=96, help="timed clips per run")
    ap.add_argument("--audio-files", type=int, default=8, help="distinct audio files per format")
    ap.add_argument("--audio-copies", type=int, default=16, help="rows of each audio dataset per file")
    ap.add_argument("--segments", type=int, default=512, help="timed segments per run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write every figure to this file")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        load_before = load_average()
        videos = make_videos(root, args.videos)
        ingest(args.loch, "video", videos, args.video_copies, root / "ingest-video", str(root / "vds"))
        audio: dict[str, list[Path]] = {}
        for ext in ("wav", "flac", "mp3"):
            audio[ext] = make_audio(root, args.audio_files, ext)
            ingest(args.loch, "audio", audio[ext], args.audio_copies, root / f"ingest-{ext}", str(root / f"ads-{ext}"))
        sizes = {"mp4": statistics.mean(p.stat().st_size for p in videos)}
        sizes.update({ext: statistics.mean(p.stat().st_size for p in fs) for ext, fs in audio.items()})

        runs: dict[str, list[dict[str, float]]] = {"clips": []}
        runs.update({f"audio-{ext}": [] for ext in audio})
        for r in range(args.rounds):
            runs["clips"].append(bench_clips(str(root / "vds"), videos, args.clips, 8, args.seed + r))
            for ext, fs in audio.items():
                runs[f"audio-{ext}"].append(bench_audio(str(root / f"ads-{ext}"), fs, args.segments, 32, args.seed + r))
        load_after = load_average()

    def col(case: str, key: str) -> list[float]:
        return [run[key] for run in runs[case]]

    def ratio(case: str, a: str, b: str) -> float:
        """The median of the rounds' a/b (the load drifts between rounds)."""
        return statistics.median(run[a] / run[b] for run in runs[case])

    print(f"load average before: {load_before}; after: {load_after}; {os.cpu_count()} CPUs; "
          f"median (range) of {args.rounds} rounds")
    print(f"clips/s, {FRAMES}x{SIZE}x{SIZE} stride {STRIDE}, 10 s 640x360 H.264 ({sizes['mp4']:,.0f} bytes/file):")
    print("| reader | clips/s | / loch (median of rounds) |")
    print("|---|---|---|")
    for name in ("loch", "pyav", "torchcodec"):
        print(f"| {name} | {spread(col('clips', name))} | {ratio('clips', name, 'loch'):.2f} |")
    bpc = statistics.median(col("clips", "loch_bytes_per_clip"))
    print(f"loch bytes fetched per clip: {bpc:,.0f} ({bpc / sizes['mp4']:.0%} of the file)")
    print(f"audio segments/s, {SEGMENT} samples of 10 s 44.1 kHz stereo:")
    print("| format | file bytes | loch | soundfile | torchcodec | loch / soundfile | loch / torchcodec | loch bytes/segment |")
    print("|---|---|---|---|---|---|---|---|")
    for ext in audio:
        case = f"audio-{ext}"
        bps = statistics.median(col(case, "loch_bytes_per_segment"))
        print(f"| {ext} | {sizes[ext]:,.0f} | {spread(col(case, 'loch'))} | {spread(col(case, 'soundfile'))} | "
              f"{spread(col(case, 'torchcodec'))} | {ratio(case, 'loch', 'soundfile'):.2f} | "
              f"{ratio(case, 'loch', 'torchcodec'):.2f} | {bps:,.0f} ({bps / sizes[ext]:.0%}) |")
    if args.json:
        Path(args.json).write_text(json.dumps({"load_before": load_before, "load_after": load_after,
                                               "file_bytes": sizes, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()

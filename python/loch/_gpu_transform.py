"""The Go loader's image transforms (transform/doc.go) on torch tensors, on
any device: what ``ds.pytorch(decode="gpu")`` and ``ds.jax(decode="gpu")``
run on a batch of JPEG bytes (see :mod:`loch._decode`).

A spec is read in the same grammar as the Go loader's, which checks it
first (so a bad spec raises Go's own :class:`loch.InvalidArgument`); the
video and audio steps are refused. The batch is decoded in one call of
:func:`torchvision.io.decode_jpeg` (nvJPEG on a CUDA device, libjpeg-turbo
on the CPU), and each step runs on the device: per image while the images
differ in size, on the stacked batch once they agree (crops, resizes to a
fixed size). Random steps draw from a :class:`torch.Generator` per sample
seeded from (seed, epoch, row id): a run is reproducible, and a row gets
the same draws on every device, although not Go's (its generator is
another).

Pixels match the Go loader's within the tolerance that docs/loader.md
("Decoding on the GPU") records, measured by python/tests/test_gpu_decode.py:
the decoders differ by a level or two, resizing is torch's antialiased
bilinear filter in float32 against Go's fixed-point one, and
``decode`` before a shrinking ``resize`` decodes at full size here where Go
shrinks in the DCT domain.

Bad samples follow the loader's rule: a sample that neither the device's
decoder nor the CPU's decodes (corrupt or truncated data; on the CPU,
libjpeg's warnings count as errors, as in Go) stops the iteration with :class:`loch.Corrupt`
naming its row and column, or with ``skip_bad_samples`` its row is left
out of the batch. A sample the device's decoder refuses but the CPU's
takes (nvJPEG refuses some CMYK and unusual JPEGs) is decoded on the CPU
and moved to the device. Grayscale JPEGs are expanded to 3 channels (and
colour ones reduced to luma for a column declared with 1 channel), CMYK
ones converted to RGB.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torchvision.io import ImageReadMode, decode_jpeg

from .errors import Corrupt, InvalidArgument

__all__ = ["Step", "parse", "Pipeline", "BatchDecoder", "sample_seed", "rrc_region", "decode_jpegs"]

_PRESETS = {
    "imagenet": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    "clip": ((0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)),
}
_MEDIA = ("clip", "resample", "segment", "mono")
_M64 = (1 << 64) - 1


@dataclass(frozen=True)
class Step:
    """One parsed step: its name (``hflip`` is ``flip`` with ``p=1``) and
    arguments. ``size`` is (width, height); ``shorter`` the shorter side
    of ``resize=S``."""

    name: str
    size: tuple[int, int] | None = None
    shorter: int | None = None
    p: float = 1.0
    scale: tuple[float, float] = (0.08, 1.0)
    ratio: tuple[float, float] = (3 / 4, 4 / 3)
    mean: tuple[float, ...] = ()
    std: tuple[float, ...] = ()

    @property
    def random(self) -> bool:
        """Whether the step draws from the sample's generator."""
        return self.name in ("random_crop", "random_resized_crop") or (self.name == "flip" and self.p not in (0, 1))


def parse(spec: str, check: bool = True) -> list[Step]:
    """The steps of a spec in the Go loader's grammar, checked by Go first
    (``check``), so that a bad spec raises :class:`loch.InvalidArgument`
    with Go's message; video and audio steps are refused::

        >>> [s.name for s in parse("decode,resize=256,center_crop=224,to_float,chw", check=False)]
        ['decode', 'resize', 'center_crop', 'to_float', 'chw']
        >>> parse("flip=0.25", check=False)[0].p
        0.25
    """
    if check:
        from ._loader_options import go_checked

        go_checked({"transforms": {"image": spec}})
    steps = []
    for text in spec.split(","):
        name, has, arg = (part.strip() for part in text.partition("="))
        if not name and not has and not spec.strip():
            continue
        if name in _MEDIA:
            raise InvalidArgument(
                f"transform {spec!r}: {name!r} is a video or audio step; decode='gpu' runs image steps only "
                "(decode='cpu' runs it in Go)"
            )
        steps.append(_step(name, arg))
    return steps


def _step(name: str, arg: str) -> Step:
    """One step of a spec that Go has checked."""
    if name in ("resize", "center_crop", "random_crop"):
        w, x, h = arg.partition("x")
        if not x and name == "resize":
            return Step(name, shorter=int(w))
        return Step(name, size=(int(w), int(h or w)))
    if name == "random_resized_crop":
        size, *opts = arg.split(":")
        w, _, h = size.partition("x")
        kw: dict[str, tuple[float, float]] = {}
        for opt in opts:
            key, _, val = opt.partition("=")
            lo, _, hi = val.partition("-")
            kw[key.strip()] = (float(lo), float(hi))
        return Step(name, size=(int(w), int(h or w)), **kw)
    if name in ("flip", "hflip"):
        return Step("flip", p=float(arg) if arg else 0.5 if name == "flip" else 1.0)
    if name == "normalize":
        if arg in _PRESETS:
            mean, std = _PRESETS[arg]
        else:
            m, _, s = arg.partition("/")
            mean, std = tuple(float(v) for v in m.split(":")), tuple(float(v) for v in s.split(":"))
        return Step(name, mean=mean, std=std)
    return Step(name)  # decode, decode=full, to_float, chw, grayscale, rgb


def sample_seed(seed: int, epoch: int, row: int) -> int:
    """The seed of a sample's generator: (seed, epoch, row id) mixed by
    splitmix64 into 64 bits, as the Go loader keys its per-sample rng by
    the same three (with another generator)::

        >>> sample_seed(0, 0, 1) != sample_seed(0, 1, 0) != sample_seed(1, 0, 0)
        True
    """
    x = (seed ^ (epoch * 0x9E3779B97F4A7C15)) & _M64
    for v in (row, 0x632BE59BD9B4E019):
        x = (x + 0x9E3779B97F4A7C15 + v) & _M64
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
        x ^= x >> 31
    return x


def _uniform(g: torch.Generator) -> float:
    """One float64 in [0, 1) from g."""
    return float(torch.rand((), generator=g, dtype=torch.float64))


def _below(g: torch.Generator, n: int) -> int:
    """One int in [0, n) from g."""
    return int(torch.randint(n, (), generator=g))


def rrc_region(
    h: int, w: int, scale: tuple[float, float], ratio: tuple[float, float], g: torch.Generator
) -> tuple[int, int, int, int]:
    """random_resized_crop's region (top, left, height, width) in an h x w
    image, by Go's algorithm (transform/geometry.go, torchvision's): ten
    draws of an area fraction uniform in ``scale`` and an aspect ratio
    (width / height) log-uniform in ``ratio``, the first that fits placed
    at a uniform offset; else the whole image clamped to the ratio range,
    centred::

        >>> rrc_region(30, 40, (1, 1), (4 / 3, 4 / 3), torch.Generator().manual_seed(0))
        (0, 0, 30, 40)
    """
    area = float(h * w)
    lo, hi = math.log(ratio[0]), math.log(ratio[1])
    for _ in range(10):
        target = area * (scale[0] + _uniform(g) * (scale[1] - scale[0]))
        aspect = math.exp(lo + _uniform(g) * (hi - lo))
        cw, ch = round(math.sqrt(target * aspect)), round(math.sqrt(target / aspect))  # round half to even, as Go
        if 0 < cw <= w and 0 < ch <= h:
            top = _below(g, h - ch + 1)
            return top, _below(g, w - cw + 1), ch, cw
    cw, ch = w, h
    if w / h < ratio[0]:
        ch = round(cw / ratio[0])
    elif w / h > ratio[1]:
        cw = round(ch * ratio[1])
    ch, cw = max(min(ch, h), 1), max(min(cw, w), 1)
    return (h - ch) // 2, (w - cw) // 2, ch, cw


def _resize_target(step: Step, h: int, w: int) -> tuple[int, int]:
    """resize's output (height, width) for an h x w image: the shorter
    side to S with the longer rounded down, or W x H."""
    if step.shorter is None:
        assert step.size is not None
        return step.size[1], step.size[0]
    s = step.shorter
    return (s, s * w // h) if h <= w else (s * h // w, s)


def _resize(x: torch.Tensor, th: int, tw: int) -> torch.Tensor:
    """uint8 [..., C, H, W] resized to th x tw: bilinear, antialiased when
    shrinking, computed in float32 and rounded (the same on every device)."""
    if x.shape[-2:] == (th, tw):
        return x
    batch = x if x.dim() == 4 else x.unsqueeze(0)
    out = F.interpolate(batch.float(), size=(th, tw), mode="bilinear", antialias=True, align_corners=False)
    out = out.round_().clamp_(0, 255).to(torch.uint8)
    return out if x.dim() == 4 else out.squeeze(0)


class _Images:
    """A batch on its way through the steps: per-image [C, H, W] tensors
    while their sizes differ, one [N, C, H, W] tensor once they agree;
    ``chw`` records whether the spec has transposed it (the Go loader's
    layout: HWC until ``chw``), ``float`` whether it is float32 yet."""

    def __init__(self, images: list[torch.Tensor]) -> None:
        self.items: list[torch.Tensor] | None = images
        self.batch: torch.Tensor | None = None
        self.chw = False
        self.float = False
        self.settle()

    def settle(self) -> None:
        """Stacks the images once they have one shape."""
        if self.items is not None and self.items and all(t.shape == self.items[0].shape for t in self.items):
            self.batch, self.items = torch.stack(self.items), None

    def each(self) -> list[torch.Tensor]:
        """The images, one by one."""
        return list(self.batch.unbind(0)) if self.batch is not None else list(self.items or [])

    def set_each(self, images: list[torch.Tensor]) -> None:
        """Replaces the images, stacking them if they agree."""
        self.items, self.batch = images, None
        self.settle()

    def map(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
        """Applies fn to the stacked batch, or to each image."""
        if self.batch is not None:
            self.batch = fn(self.batch)
        else:
            self.set_each([fn(t) for t in self.items or []])

    def channels(self) -> int:
        """The images' channel count."""
        if self.batch is not None:
            return int(self.batch.shape[1])
        return int(self.items[0].shape[0]) if self.items else 3


def _luma(x: torch.Tensor) -> torch.Tensor:
    """[..., C, H, W] (C 1, 3 or 4; alpha ignored) to 1-channel BT.601
    luma, as imaging.ConvertChannels: for uint8 (299 R + 587 G + 114 B +
    500) / 1000 in integers."""
    if x.shape[-3] == 1:
        return x
    r, g, b = x.narrow(-3, 0, 1), x.narrow(-3, 1, 1), x.narrow(-3, 2, 1)
    if x.dtype == torch.uint8:
        return ((299 * r.int() + 587 * g.int() + 114 * b.int() + 500) // 1000).to(torch.uint8)
    return 0.299 * r + 0.587 * g + 0.114 * b


def _rgb(x: torch.Tensor) -> torch.Tensor:
    """[..., C, H, W] to 3 channels: gray repeated, alpha dropped."""
    c = x.shape[-3]
    if c == 1:
        return torch.cat([x, x, x], dim=-3)
    return x.narrow(-3, 0, 3) if c == 4 else x


class Pipeline:
    """A parsed spec run on a batch of decoded images on their device."""

    def __init__(self, spec: str, check: bool = True) -> None:
        self.spec = spec
        self.steps = parse(spec, check=check)
        self.random = any(s.random for s in self.steps)

    def __call__(
        self, images: list[torch.Tensor], gens: Sequence[torch.Generator] | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The images ([C, H, W] uint8, as decoded) through the steps, as
        one tensor in the spec's layout ([N, H, W, C] unless ``chw``),
        zero-padded to the largest when their shapes differ, with each
        one's shape (int64 [N, 3], in layout order) then; else None.
        ``gens``: one generator per image when the pipeline is random."""
        x = _Images(images)
        for step in self.steps:
            self._apply(step, x, gens)
        return _finish(x)

    def _apply(self, step: Step, x: _Images, gens: Sequence[torch.Generator] | None) -> None:
        """Runs one step on x, refusing an input the Go step refuses."""
        name = step.name
        if name in ("resize", "random_resized_crop", "grayscale", "rgb") and x.chw:
            raise InvalidArgument(f"transform {self.spec!r}: {name} needs HWC pixels, got CHW (put chw last)")
        if name in ("resize", "random_resized_crop", "to_float") and x.float:
            raise InvalidArgument(f"transform {self.spec!r}: {name} needs uint8 pixels, got float32")
        if name == "normalize" and not x.float:
            raise InvalidArgument(
                f"transform {self.spec!r}: normalize wants float32 pixels, got uint8: put to_float before normalize"
            )
        if name == "resize" and x.batch is not None:
            x.batch = _resize(x.batch, *_resize_target(step, x.batch.shape[2], x.batch.shape[3]))
        elif name == "resize":
            x.set_each([_resize(t, *_resize_target(step, t.shape[1], t.shape[2])) for t in x.each()])
        elif name in ("center_crop", "random_crop"):
            _crop(step, x, gens)
        elif name == "random_resized_crop":
            _random_resized_crop(step, x, gens)
        elif name == "flip":
            _flip(step, x, gens)
        elif name == "to_float":
            x.map(lambda t: t.float().div_(255))
            x.float = True
        elif name == "normalize":
            _normalize(self.spec, step, x)
        elif name == "chw":
            if x.chw:
                raise InvalidArgument(f"transform {self.spec!r}: chw needs HWC pixels, got CHW")
            x.chw = True
        elif name == "grayscale":
            x.map(_luma)
        elif name == "rgb":
            x.map(_rgb)


def _crop(step: Step, x: _Images, gens: Sequence[torch.Generator] | None) -> None:
    """center_crop (offsets rounded half to even, as Go and torchvision)
    or random_crop (top drawn before left)."""
    assert step.size is not None
    cw, ch = step.size
    out = []
    for i, t in enumerate(x.each()):
        h, w = t.shape[-2:]
        if h < ch or w < cw:
            raise InvalidArgument(f"the image ({w}x{h}) is smaller than the {cw}x{ch} crop")
        if step.name == "random_crop":
            assert gens is not None
            top = _below(gens[i], h - ch + 1)
            left = _below(gens[i], w - cw + 1)
        else:
            top, left = round((h - ch) / 2), round((w - cw) / 2)
        out.append(t[..., top : top + ch, left : left + cw])
    x.set_each(out)


def _random_resized_crop(step: Step, x: _Images, gens: Sequence[torch.Generator] | None) -> None:
    """Each image's region (:func:`rrc_region`) resized to the step's size."""
    assert step.size is not None and gens is not None
    w, h = step.size
    out = []
    for i, t in enumerate(x.each()):
        top, left, ch, cw = rrc_region(t.shape[-2], t.shape[-1], step.scale, step.ratio, gens[i])
        out.append(_resize(t[..., top : top + ch, left : left + cw], h, w))
    x.set_each(out)


def _flip(step: Step, x: _Images, gens: Sequence[torch.Generator] | None) -> None:
    """A horizontal mirror of each image with probability p (one uniform
    draw per image, mirrored when below p), or of all (hflip)."""
    if step.p >= 1 and not step.random:
        x.map(lambda t: t.flip(-1))
        return
    if step.p <= 0:
        return
    assert gens is not None
    flips = [_uniform(g) < step.p for g in gens]
    if x.batch is not None:  # one select over the stacked batch
        mask = torch.tensor(flips, device=x.batch.device).view(-1, *([1] * (x.batch.dim() - 1)))
        x.batch = torch.where(mask, x.batch.flip(-1), x.batch)
        return
    x.set_each([t.flip(-1) if f else t for t, f in zip(x.each(), flips)])


def _normalize(spec: str, step: Step, x: _Images) -> None:
    """(v - mean) / std per channel."""
    c = x.channels()
    if len(step.mean) not in (1, c):
        raise InvalidArgument(f"transform {spec!r}: {len(step.mean)} mean and std values for {c} channels")

    def norm(t: torch.Tensor) -> torch.Tensor:
        shape = (-1, 1, 1)
        mean = torch.tensor(step.mean, dtype=torch.float32, device=t.device).view(shape)
        std = torch.tensor(step.std, dtype=torch.float32, device=t.device).view(shape)
        return (t - mean) / std

    x.map(norm)


def _finish(x: _Images) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The batch in its layout, padded with its shapes when ragged."""
    images = x.each() if x.batch is None else None
    if images is None:
        assert x.batch is not None
        out = x.batch if x.chw else x.batch.permute(0, 2, 3, 1)
        return out.contiguous(), None
    laid = [t if x.chw else t.permute(1, 2, 0) for t in images]
    shapes = torch.tensor([list(t.shape) for t in laid], dtype=torch.int64)
    top = shapes.max(0).values.tolist() if laid else [0, 0, 0]
    out = laid[0].new_zeros((len(laid), *top)) if laid else torch.zeros(0, *top)
    for i, t in enumerate(laid):
        out[i, : t.shape[0], : t.shape[1], : t.shape[2]] = t
    return out, shapes


def _decode(tensors: list[torch.Tensor], mode: ImageReadMode, device: torch.device) -> list[torch.Tensor]:
    """decode_jpeg of a list; on the CPU libjpeg's warnings (truncated or
    corrupt data) are raised as errors, as the Go decoder counts them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torchvision 0.29 points to TorchCodec: not for us to say
        if device.type == "cpu":
            warnings.simplefilter("error", UserWarning)
        out = decode_jpeg(tensors, mode=mode, device=device)
    return list(out)


# What a decoder raises for a sample it cannot decode (a libjpeg warning
# on the CPU is a UserWarning, raised by _decode).
_DECODE_ERRORS = (RuntimeError, ValueError, UserWarning)


def _bytes_tensor(data: Any) -> torch.Tensor:
    """A sample's bytes as a uint8 CPU tensor over the same memory
    (decode_jpeg only reads it)."""
    if isinstance(data, torch.Tensor):
        return data
    if len(data) == 0:
        raise ValueError("empty JPEG sample")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "not writable": the decoder only reads
        return torch.frombuffer(data, dtype=torch.uint8)


def decode_jpegs(
    data: Sequence[Any], device: torch.device, channels: int = 3
) -> tuple[list[torch.Tensor | None], dict[int, str]]:
    """Decodes JPEG samples (bytes, or uint8 tensors; None for a null one)
    on ``device`` in one batched call, to [C, H, W] uint8 tensors with C =
    ``channels`` (1: luma; 3: RGB, gray repeated, CMYK converted). Returns
    the images (None where null or bad) and, for each sample that did not
    decode, its position and the decoder's message. When the batched call
    fails each sample is decoded alone; on a CUDA device a sample that
    nvJPEG refuses is decoded on the CPU and moved to the device."""
    mode = ImageReadMode.GRAY if channels == 1 else ImageReadMode.RGB
    out: list[torch.Tensor | None] = [None] * len(data)
    errors: dict[int, str] = {}
    tensors: dict[int, torch.Tensor] = {}
    for i, d in enumerate(data):
        if d is not None:
            try:
                tensors[i] = _bytes_tensor(d)
            except ValueError as e:
                errors[i] = str(e)
    if not tensors:
        return out, errors
    if not errors:
        try:
            for i, t in zip(tensors, _decode(list(tensors.values()), mode, device)):
                out[i] = t
            return out, errors
        except _DECODE_ERRORS:
            pass  # one of them is bad, or refused by the device: one by one
    for i, t in tensors.items():
        try:
            out[i] = _decode([t], mode, device)[0]
        except _DECODE_ERRORS as e:
            if device.type == "cpu":
                errors[i] = _first_line(e)
                continue
            try:
                out[i] = _decode([t], mode, torch.device("cpu"))[0].to(device)
            except _DECODE_ERRORS as e2:
                errors[i] = _first_line(e2)
    return out, errors


def _first_line(e: BaseException) -> str:
    """An exception's message, its first line."""
    text = re.sub(r"^.*?\.(?:cpp|cu|h):\d+, ", "", str(e).strip())  # torchvision's source location
    return text.splitlines()[0] if text else type(e).__name__


class BatchDecoder:
    """Decodes and transforms the encoded JPEG columns of a batch (lists of
    bytes, as the loader's ``encoded`` option delivers them) on ``device``:
    each column's spec (``specs``, ``decode`` first) run by a
    :class:`Pipeline`, its images decoded to ``channels[column]``
    channels; a column in ``ragged`` gets its samples' shapes under
    ``"<column>.shapes"`` (int64 [N, 3], in layout order) as from the Go
    loader. Random steps draw from a generator per sample and column
    seeded by :func:`sample_seed` (seed, epoch, row id). A row that does not
    decode stops the iteration (:class:`loch.Corrupt`, naming the row and
    the column) or, with ``skip_bad``, is left out of the batch (every key
    of the batch that has a value per row), its row id recorded in
    :attr:`skipped`; a batch left with no rows is None."""

    def __init__(
        self,
        specs: Mapping[str, str],
        channels: Mapping[str, int],
        device: torch.device | str | None,
        seed: int = 0,
        skip_bad: bool = False,
        check: bool = True,
        ragged: Collection[str] = (),
    ) -> None:
        self.pipelines = {c: Pipeline(spec, check=check) for c, spec in specs.items()}
        self.channels = dict(channels)
        self.device = torch.device(device if device is not None else "cpu")
        self.seed = seed
        self.skip_bad = skip_bad
        self.ragged = frozenset(ragged)
        #: Row ids of the rows left out because a sample did not decode,
        #: in this epoch (the adapters clear it when an epoch starts).
        self.skipped: list[int] = []

    def with_skipped(self, stats: Mapping[str, Any]) -> dict[str, Any]:
        """The loader's statistics (``stats()``) with the rows this decoder
        skipped added to ``skipped`` and ``skipped_rows``."""
        if not self.skipped:
            return dict(stats)
        rows = [*(stats.get("skipped_rows") or ()), *self.skipped]
        return {**stats, "skipped": int(stats.get("skipped", 0)) + len(self.skipped), "skipped_rows": rows}

    def __call__(self, batch: Mapping[str, Any], epoch: int) -> dict[str, Any] | None:
        """The batch with its encoded columns decoded and transformed."""
        rows = [int(r) for r in _host_list(batch["index"])]
        decoded, bad = {}, {}
        for col in self.pipelines:
            images, errors = decode_jpegs(batch[col], self.device, self.channels.get(col, 3))
            decoded[col] = images
            for i, msg in errors.items():
                bad.setdefault(i, f'column "{col}": decode jpeg: {msg}')
        if bad and not self.skip_bad:
            i = min(bad)
            raise Corrupt(f"loader: row id {rows[i]}, {bad[i]} (skip_bad_samples=True skips such rows)")
        keep = [i for i in range(len(rows)) if i not in bad]
        out = _take_rows(batch, keep, len(rows)) if bad else dict(batch)
        self.skipped.extend(rows[i] for i in sorted(bad))
        if not keep:
            return None
        for col, pipe in self.pipelines.items():
            gens = None
            if pipe.random:
                gens = [torch.Generator().manual_seed(sample_seed(self.seed, epoch, rows[i])) for i in keep]
            self._column(out, col, pipe, [decoded[col][i] for i in keep], gens)
        return out

    def _column(
        self, out: dict[str, Any], col: str, pipe: Pipeline, images: list[torch.Tensor | None],
        gens: list[torch.Generator] | None,
    ) -> None:
        """Puts one column's transformed images into out: null samples as
        zeros (their flags stay under ``"<col>.null"``)."""
        present = [k for k, t in enumerate(images) if t is not None]
        if not present:
            return  # all null: the list of None stays
        value, shapes = pipe([images[k] for k in present], None if gens is None else [gens[k] for k in present])
        if len(present) < len(images):
            full = value.new_zeros((len(images), *value.shape[1:]))
            full[torch.tensor(present, device=value.device)] = value
            value = full
            if shapes is not None:
                all_shapes = torch.zeros((len(images), shapes.shape[1]), dtype=torch.int64)
                all_shapes[torch.tensor(present)] = shapes
                shapes = all_shapes
        out[col] = value
        if shapes is None and col in self.ragged:  # as the Go loader: a ragged column's batches carry shapes
            shapes = torch.tensor(list(value.shape[1:]), dtype=torch.int64).repeat(len(images), 1)
        if shapes is not None:
            out[col + ".shapes"] = shapes.to(value.device)  # where the transfer put the Go loader's


def _host_list(v: Any) -> list[Any]:
    """A per-row value (tensor, array or list) as a Python list."""
    return v.tolist() if hasattr(v, "tolist") else list(v)


def _take_rows(batch: Mapping[str, Any], keep: list[int], n: int) -> dict[str, Any]:
    """The batch with only the rows ``keep`` (of n): every value that has
    one entry per row (tensors, arrays, lists) is cut; others stay."""
    out: dict[str, Any] = {}
    for k, v in batch.items():
        if isinstance(v, torch.Tensor) and v.dim() > 0 and v.shape[0] == n:
            out[k] = v[torch.tensor(keep, dtype=torch.long, device=v.device)]
        elif hasattr(v, "shape") and getattr(v, "ndim", 0) > 0 and v.shape[0] == n:
            out[k] = v[keep]
        elif isinstance(v, list) and len(v) == n:
            out[k] = [v[i] for i in keep]
        else:
            out[k] = v
    return out

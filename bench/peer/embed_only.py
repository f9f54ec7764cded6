"""Embedding alone, the Python peer's numpy MiniLM (OpenBLAS) against kgfuse's.

    python bench/peer/embed_only.py --texts OUT.json FILES...   # the peer's row texts
    python bench/peer/embed_only.py --time TEXTS.json [--vectors V.f32] [--runs N]

The first form loads FILES into pyoxigraph as the peer does and writes each node's
text (the rows both sides embed) as a JSON list. The second embeds them in batches
of 32 by length, as both sides do, prints rows/s per run, and with --vectors
compares against float32 vectors another implementation wrote for the same texts
(row-major, 384 per text): the smallest cosine and the mean.
"""
import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--texts")
    ap.add_argument("--time")
    ap.add_argument("--vectors")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    if args.texts:
        store = peer.ox.Store()
        peer.load_graph(store, [Path(f) for f in args.files])
        texts = list(peer.node_texts(store).values())
        Path(args.texts).write_text(json.dumps(texts))
        print(f"{len(texts)} texts -> {args.texts}")
        return
    texts = json.loads(Path(args.time).read_text())
    model = peer.MiniLM(peer.find_model_dir(None))
    vectors = None
    for run in range(args.runs):
        start = time.perf_counter()
        vectors = model.embed_in_batches(texts)
        took = time.perf_counter() - start
        print(f"numpy run {run + 1}: {len(texts)} texts in {took:.2f} s, {len(texts) / took:.1f} rows/s")
    if args.vectors and vectors is not None:
        other = np.fromfile(args.vectors, dtype=np.float32).reshape(len(texts), -1)
        cos = (other * vectors).sum(axis=1) / (
            np.linalg.norm(other, axis=1) * np.linalg.norm(vectors, axis=1)
        )
        print(f"cosine against {args.vectors}: min {cos.min():.6f}, mean {cos.mean():.6f}")


if __name__ == "__main__":
    main()

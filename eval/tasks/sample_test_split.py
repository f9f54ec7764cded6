#!/usr/bin/env python3
"""Fixes DS-1000's test split for the task-success evaluation: a sample of the
perturbed problems (Surface, Semantic, Difficult-Rewrite) of the five libraries,
stratified by library in proportion to each library's share, drawn with a fixed
seed from the problems' metadata only (id, library, perturbation type). Writes
eval/tasks/ds1000-test-ids.txt, one problem id per line.

    python3 eval/tasks/sample_test_split.py [--size 120] [--seed 46]
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ds1000 import DATA, LIBRARIES, TEST_IDS  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=120)
    parser.add_argument("--seed", type=int, default=46)
    args = parser.parse_args()
    by_library: dict[str, list[int]] = collections.defaultdict(list)
    for line in gzip.open(DATA, "rt"):
        meta = json.loads(line)["metadata"]
        if meta["library"] in LIBRARIES and meta["perturbation_type"] != "Origin":
            by_library[meta["library"]].append(meta["problem_id"])
    total = sum(len(ids) for ids in by_library.values())
    rng = random.Random(args.seed)
    chosen: list[int] = []
    for library in LIBRARIES:
        ids = sorted(by_library[library])
        share = round(args.size * len(ids) / total)
        chosen.extend(rng.sample(ids, share))
        print(f"{library}: {share} of {len(ids)}")
    chosen.sort()
    TEST_IDS.write_text("".join(f"{i}\n" for i in chosen))
    print(f"{len(chosen)} ids in {TEST_IDS}")


if __name__ == "__main__":
    main()

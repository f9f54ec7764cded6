#!/usr/bin/env python3
"""Rewrites every file loaded into a store as N-Triples, its lines shuffled, in
place: the same triples in another syntax and order, to time a reload that must
compare fingerprints rather than byte hashes.

usage: kgfuse --data STORE dump > DUMP.nq
       python3 bench/rewrite_as_ntriples.py DUMP.nq [SEED]

Each quad of a file's own graph <file:///PATH> goes to PATH without its graph
name, except kgfuse's metadata about the file (its type kgfuse:SourceFile, path,
content hash and fingerprint). Blank nodes keep the dump's labels (RDFC-1.0 does
not care which).
"""

import random
import sys
from collections import defaultdict
from urllib.parse import unquote


KGFUSE = "https://w3id.org/kgfuse/ontology#"
METADATA = (
    f"<http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{KGFUSE}SourceFile>",
    f"<{KGFUSE}sourceFile> ",
    f"<{KGFUSE}contentHash> ",
    f"<{KGFUSE}canonicalHash> ",
)


def is_metadata(triple: str, graph: str) -> bool:
    """Whether a triple of a file's graph is kgfuse's record of the file."""
    rest = triple[len(graph) + 1 :] if triple.startswith(graph + " ") else None
    return rest is not None and rest.startswith(METADATA)


def main() -> None:
    dump, seed = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0
    files: dict[str, list[str]] = defaultdict(list)
    with open(dump, encoding="utf-8") as lines:
        for line in lines:
            line = line.rstrip("\n")
            if not line.endswith(" ."):
                continue
            triple, graph, _ = line.rsplit(" ", 2)
            if not graph.startswith("<file://") or is_metadata(triple, graph):
                continue
            files[unquote(graph[len("<file://") : -1])].append(triple + " .\n")
    rng = random.Random(seed)
    for path, triples in sorted(files.items()):
        rng.shuffle(triples)
        with open(path, "w", encoding="utf-8") as out:
            out.writelines(triples)
    print(f"{len(files)} files rewritten")


if __name__ == "__main__":
    main()

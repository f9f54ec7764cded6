#!/usr/bin/env python3
"""Writes the LUBM-1 question set for `kgfuse eval` from questions.jsonl.

Each line of questions.jsonl has an id, a natural-language question and the SPARQL
query whose rows are its gold: `?gold` binds the answer nodes (IRIs) and an optional
`?answer` binds literal answers (an e-mail address, a research interest), which
become `gold_answers`. The queries run with rdflib over the LUBM-1 archive, an engine
independent of kgfuse, on the raw data (no inference), the same data kgfuse loads.

    python3 eval/lubm/make_set.py ../shared/data/lubm/lubm1.tar.gz > eval/lubm/lubm1.jsonl

Needs rdflib (see eval/README.md). Fails when a query has no rows.
"""

import json
import pathlib
import sys
import tarfile

import rdflib

PREFIXES = (
    "PREFIX ub: <http://swat.cse.lehigh.edu/onto/univ-bench.owl#>\n"
    "PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>\n"
)


def load(archive):
    graph = rdflib.Graph()
    with tarfile.open(archive) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if member.isfile() and member.name.endswith(".owl"):
                data = tar.extractfile(member).read()
                graph.parse(data=data, format="xml", publicID="file:///" + member.name)
    return graph


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    graph = load(sys.argv[1])
    here = pathlib.Path(__file__).parent
    for line in (here / "questions.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        question = json.loads(line)
        rows = list(graph.query(PREFIXES + question["sparql"]))
        if not rows:
            sys.exit(f"{question['id']}: the gold query has no rows")
        gold = sorted({str(row[0]) for row in rows})
        item = {"id": question["id"], "query": question["query"], "gold": gold}
        answers = sorted({str(row[1]) for row in rows if len(row) > 1 and row[1] is not None})
        if answers:
            item["gold_answers"] = answers
        print(json.dumps(item))


if __name__ == "__main__":
    main()

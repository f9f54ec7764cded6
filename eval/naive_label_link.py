#!/usr/bin/env python3
"""The naive label-link baseline: link a question to every node whose name occurs
in it word for word (case-insensitive), and dump each linked node's whole one-hop
neighbourhood (both directions), with no budget. Reports the share of questions
whose dump holds every gold node, and the average number of facts dumped.

    python3 eval/naive_label_link.py SET.jsonl FILE... [--names IRI,...]

Names are the literals of rdfs:label, skos:prefLabel/altLabel and any predicate
whose local name ends in "name" (LUBM's ub:name). Needs rdflib (eval/README.md).
"""

import json
import re
import sys

import rdflib

LABELS = {
    "http://www.w3.org/2000/01/rdf-schema#label",
    "http://www.w3.org/2004/02/skos/core#prefLabel",
    "http://www.w3.org/2004/02/skos/core#altLabel",
}


def is_name(predicate):
    local = re.split(r"[#/]", str(predicate))[-1].lower()
    return str(predicate) in LABELS or local.endswith("name")


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    graph = rdflib.Graph()
    for path in args[1:]:
        fmt = "xml" if path.endswith((".owl", ".rdf", ".xml")) else "turtle"
        graph.parse(path, format=fmt, publicID="file://" + path)
    names = {}
    for s, p, o in graph:
        if isinstance(o, rdflib.Literal) and isinstance(s, rdflib.URIRef) and is_name(p):
            names.setdefault(str(o).lower(), set()).add(s)
    found, facts = 0, 0
    items = [json.loads(line) for line in open(args[0]) if line.strip()]
    for item in items:
        question = item["query"].lower()
        linked = set()
        for name, nodes in names.items():
            if re.search(r"(?<!\w)" + re.escape(name) + r"(?!\w)", question):
                linked |= nodes
        dump = set()
        for node in linked:
            dump |= set(graph.triples((node, None, None)))
            dump |= set(graph.triples((None, None, node)))
        mentioned = {str(x) for t in dump for x in (t[0], t[2])}
        gold = item["gold"]
        ok = all(
            any(g in mentioned for g in (alt if isinstance(alt, list) else [alt]))
            for alt in gold
        )
        found += ok
        facts += len(dump)
    print(
        f"naive label-link: all gold in context {found / len(items):.3f} "
        f"({found}/{len(items)}), facts {facts / len(items):.1f} per question"
    )


if __name__ == "__main__":
    main()

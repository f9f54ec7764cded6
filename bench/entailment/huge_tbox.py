#!/usr/bin/env python3
"""Writes a large synthetic ontology and ABox as N-Triples, for the entailment
memory and time measurement of BENCHMARKS.md ("A huge TBox").

TBox: CLASSES classes in a tree (each class's parent is drawn among the earlier
ones, so depth grows like log n), one subclass cycle of CYCLE classes, PROPERTIES
properties (one in ten under a random earlier one, three in ten with a domain and
three in ten with a range among the classes), and
BNODES OWL restrictions (blank-node classes, as OWL ontologies are full of).
ABox: INSTANCES nodes typed by random classes and linked by random properties,
EDGES triples in all. Deterministic (seeded).

    python3 bench/entailment/huge_tbox.py OUT_DIR [--classes N] [--edges N] ...
"""
import argparse
import os
import random

EX = "http://example.org/huge#"
RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
SUB_CLASS = "<http://www.w3.org/2000/01/rdf-schema#subClassOf>"
SUB_PROP = "<http://www.w3.org/2000/01/rdf-schema#subPropertyOf>"
DOMAIN = "<http://www.w3.org/2000/01/rdf-schema#domain>"
RANGE = "<http://www.w3.org/2000/01/rdf-schema#range>"
OWL = "http://www.w3.org/2002/07/owl#"


def iri(kind, n):
    return f"<{EX}{kind}{n}>"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--classes", type=int, default=20_000)
    parser.add_argument("--cycle", type=int, default=50)
    parser.add_argument("--properties", type=int, default=1_000)
    parser.add_argument("--bnodes", type=int, default=5_000)
    parser.add_argument("--instances", type=int, default=20_000)
    parser.add_argument("--edges", type=int, default=100_000)
    args = parser.parse_args()
    rng = random.Random(15)
    os.makedirs(args.out, exist_ok=True)
    tbox_triples = 0
    with open(os.path.join(args.out, "tbox.nt"), "w") as tbox:
        for c in range(1, args.classes):
            tbox.write(f"{iri('C', c)} {SUB_CLASS} {iri('C', rng.randrange(c))} .\n")
            tbox_triples += 1
        for c in range(args.cycle):
            tbox.write(f"{iri('Cycle', c)} {SUB_CLASS} {iri('Cycle', (c + 1) % args.cycle)} .\n")
        tbox.write(f"{iri('Cycle', 0)} {SUB_CLASS} {iri('Cycle', 0)} .\n")
        tbox_triples += args.cycle + 1
        for p in range(args.properties):
            if p and rng.random() < 0.1:
                tbox.write(f"{iri('p', p)} {SUB_PROP} {iri('p', rng.randrange(p))} .\n")
                tbox_triples += 1
            if rng.random() < 0.3:
                tbox.write(f"{iri('p', p)} {DOMAIN} {iri('C', rng.randrange(args.classes))} .\n")
                tbox_triples += 1
            if rng.random() < 0.3:
                tbox.write(f"{iri('p', p)} {RANGE} {iri('C', rng.randrange(args.classes))} .\n")
                tbox_triples += 1
        for b in range(args.bnodes):
            c = iri("C", rng.randrange(args.classes))
            tbox.write(f"{c} {SUB_CLASS} _:r{b} .\n")
            tbox.write(f"_:r{b} {RDF_TYPE} <{OWL}Restriction> .\n")
            tbox.write(f"_:r{b} <{OWL}onProperty> {iri('p', rng.randrange(args.properties))} .\n")
            tbox.write(f"_:r{b} <{OWL}someValuesFrom> {iri('C', rng.randrange(args.classes))} .\n")
            tbox_triples += 4
    with open(os.path.join(args.out, "abox.nt"), "w") as abox:
        typed = args.instances
        for i in range(typed):
            abox.write(f"{iri('i', i)} {RDF_TYPE} {iri('C', rng.randrange(args.classes))} .\n")
        for _ in range(args.edges - typed):
            s, o = rng.randrange(args.instances), rng.randrange(args.instances)
            abox.write(f"{iri('i', s)} {iri('p', rng.randrange(args.properties))} {iri('i', o)} .\n")
    print(f"tbox {tbox_triples} triples, abox {args.edges} triples in {args.out}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Checks a hand-written `kgfuse eval` question set against the RDF it is about.

    python eval/check_sets.py eval/policy.jsonl fixtures/policy/policy.ttl
    python eval/check_sets.py eval/support.jsonl fixtures/support/support.ttl

Several Turtle files may follow the question set; they are parsed into one graph.
Needs rdflib (e.g. /tmp/fx-venv/bin/python).

For every line of the set it checks:

- the line is a JSON object with only the fields `id`, `query`, `gold` and optionally
  `gold_answers` (the fields `kgfuse eval` reads for these sets), `id` is unique, and
  `query` and `gold` are non-empty lists/strings of the right types;
- every gold entry is a full IRI (http(s)://...) that occurs as a subject in the
  graph;
- every `gold_answers` string occurs, case-insensitively, in some literal (object
  of any triple) of at least one gold node.

It also prints notes (not errors) when a query contains a gold node's
`rdfs:label` verbatim, because questions should paraphrase rather than copy labels.

Exit status 0 when every question passes, 1 otherwise.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rdflib import Graph, Literal, URIRef
from rdflib.namespace import RDFS

ALLOWED = {"id", "query", "gold", "gold_answers"}
REQUIRED = {"id", "query", "gold"}


def load_graph(paths: list[str]) -> Graph:
    graph = Graph()
    for path in paths:
        graph.parse(path, format="turtle")
    return graph


def literals_of(graph: Graph, node: URIRef) -> list[str]:
    return [str(o) for o in graph.objects(node, None) if isinstance(o, Literal)]


def check(set_path: str, graph: Graph) -> tuple[int, int, list[str], list[str]]:
    errors: list[str] = []
    notes: list[str] = []
    ids: set[str] = set()
    questions = 0
    gold_total = 0
    subjects = set(s for s in graph.subjects() if isinstance(s, URIRef))

    lines = Path(set_path).read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{set_path}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            errors.append(f"{where}: invalid JSON: {error}")
            continue
        if not isinstance(item, dict):
            errors.append(f"{where}: not a JSON object")
            continue
        questions += 1
        qid = item.get("id", "?")
        where = f"{where} [{qid}]"
        extra = set(item) - ALLOWED
        missing = REQUIRED - set(item)
        if extra:
            errors.append(f"{where}: unexpected fields {sorted(extra)}")
        if missing:
            errors.append(f"{where}: missing fields {sorted(missing)}")
            continue
        if not isinstance(qid, str) or not qid:
            errors.append(f"{where}: id must be a non-empty string")
        elif qid in ids:
            errors.append(f"{where}: duplicate id")
        ids.add(qid)
        query = item["query"]
        if not isinstance(query, str) or not query.strip():
            errors.append(f"{where}: empty query")
            query = ""
        gold = item["gold"]
        answers = item.get("gold_answers", [])
        if not isinstance(gold, list) or not gold or not all(isinstance(g, str) for g in gold):
            errors.append(f"{where}: gold must be a non-empty list of strings")
            continue
        if not isinstance(answers, list) or not all(isinstance(a, str) and a for a in answers):
            errors.append(f"{where}: gold_answers must be a list of non-empty strings")
            answers = []
        if len(set(gold)) != len(gold):
            errors.append(f"{where}: repeated gold entry")

        gold_literals: list[str] = []
        for entry in gold:
            gold_total += 1
            if not entry.startswith(("http://", "https://")):
                errors.append(f"{where}: gold {entry!r} is not a full IRI")
                continue
            node = URIRef(entry)
            if node not in subjects:
                errors.append(f"{where}: gold {entry} is not a subject in the graph")
                continue
            gold_literals.extend(literals_of(graph, node))
            for label in graph.objects(node, RDFS.label):
                if query and str(label).lower() in query.lower():
                    notes.append(f"{where}: query contains the label {str(label)!r} of {entry}")

        for answer in answers:
            if not any(answer.lower() in text.lower() for text in gold_literals):
                errors.append(
                    f"{where}: gold answer {answer!r} occurs in no literal of a gold node"
                )
    return questions, gold_total, errors, notes


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print(f"usage: {argv[0]} SET.jsonl DATA.ttl [MORE.ttl ...]", file=sys.stderr)
        return 2
    set_path, ttl_paths = argv[1], argv[2:]
    graph = load_graph(ttl_paths)
    questions, gold_total, errors, notes = check(set_path, graph)
    for note in notes:
        print(f"note: {note}")
    for error in errors:
        print(f"error: {error}")
    status = "FAIL" if errors or questions == 0 else "OK"
    print(
        f"{status}: {set_path}: {questions} questions, {gold_total} gold IRIs, "
        f"{len(errors)} errors, {len(notes)} notes "
        f"({len(graph)} triples from {', '.join(ttl_paths)})"
    )
    return 1 if errors or questions == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

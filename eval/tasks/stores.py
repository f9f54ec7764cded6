"""What the task sets share about their kgfuse stores: building one with a few
kgfuse commands, and reading rows from it with SPARQL."""

from __future__ import annotations

import collections
import json
import subprocess
import sys

KGFUSE = "https://w3id.org/kgfuse/ontology#"


def build(kgfuse: str, data: str, embedder: str, steps: list[list[str]]) -> None:
    """`kgfuse init` (the hash embedder at 384 dimensions) and then `steps`,
    each printed on stderr before it runs."""
    init = ["init", "--embedder", embedder] + (["--dimension", "384"] if embedder == "hash" else [])
    for step in [init, *steps]:
        print("kgfuse", " ".join(step), file=sys.stderr, flush=True)
        subprocess.run([kgfuse, "--data", data, *step], check=True)


def select(kgfuse: str, data: str, query: str) -> list[dict[str, str]]:
    """The rows of a SELECT query as {variable: value}."""
    done = subprocess.run([kgfuse, "--data", data, "sparql", query, "--format", "json"],
                          capture_output=True, text=True, check=True)
    return [{name: cell["value"] for name, cell in row.items()}
            for row in json.loads(done.stdout)["results"]["bindings"]]


def example_nodes(kgfuse: str, data: str, prefix: str) -> dict[str, list[str]]:
    """Worked-example module (`examples.q_x`) -> the IRIs of its case, module and
    functions, for the example modules whose name starts with `prefix`."""
    query = (f"SELECT ?node ?name WHERE {{ ?node <{KGFUSE}qualifiedName> ?name . "
             f"FILTER(STRSTARTS(?name, {json.dumps(prefix)})) }}")
    nodes: dict[str, list[str]] = collections.defaultdict(list)
    for row in select(kgfuse, data, query):
        nodes[".".join(row["name"].split(".")[:2])].append(row["node"])
    return dict(nodes)

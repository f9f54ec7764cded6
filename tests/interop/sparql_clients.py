"""Talks to a running `kgfuse serve` with SPARQL clients from PyPI that nobody on the
kgfuse team wrote: SPARQLWrapper (every results format, GET and POST, an update with
a bearer token) and rdflib (its SPARQLStore, and parsing CONSTRUCT results).

    python3 tests/interop/sparql_clients.py http://127.0.0.1:7878 TOKEN

Prints one line per check and exits 1 when any fails. Run by tests/e2e/http.rs
(`make test` installs the two libraries into ~/.cache/kgfuse/python-test).
"""

import csv
import io
import sys

import rdflib
from rdflib.plugins.stores.sparqlstore import SPARQLStore
from SPARQLWrapper import CSV, JSON, N3, POST, POSTDIRECTLY, TSV, TURTLE, XML, SPARQLWrapper

FAILED = []

CLASSES = """
SELECT ?class ?label WHERE { ?class a owl:Class ; rdfs:label ?label }
ORDER BY ?class LIMIT 5
"""


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        FAILED.append(what)


def wrapper(endpoint, query, fmt, method=None):
    client = SPARQLWrapper(endpoint)
    client.setQuery(query)
    client.setReturnFormat(fmt)
    if method:
        client.setMethod(method)
    return client.query()


def main(base, token):
    endpoint = base + "/sparql"

    # SELECT in the four results formats, by GET and by POST.
    rows = wrapper(endpoint, CLASSES, JSON).convert()["results"]["bindings"]
    check(len(rows) == 5 and rows[0]["class"]["type"] == "uri", "SPARQLWrapper JSON (GET): 5 classes")
    rows = wrapper(endpoint, CLASSES, JSON, POST).convert()["results"]["bindings"]
    check(len(rows) == 5, "SPARQLWrapper JSON (POST form): 5 classes")
    document = wrapper(endpoint, CLASSES, XML).convert()
    results = document.getElementsByTagName("result")
    check(len(results) == 5, "SPARQLWrapper XML: 5 results in the DOM")
    table = list(csv.reader(io.StringIO(wrapper(endpoint, CLASSES, CSV).convert().decode())))
    check(table[0] == ["class", "label"] and len(table) == 6, "SPARQLWrapper CSV: header + 5 rows")
    lines = wrapper(endpoint, CLASSES, TSV).convert().decode().splitlines()
    check(lines[0] == "?class\t?label" and len(lines) == 6, "SPARQLWrapper TSV: header + 5 rows")

    # ASK, and CONSTRUCT parsed by rdflib as Turtle.
    ask = wrapper(endpoint, "ASK { ?c a owl:Class }", JSON).convert()
    check(ask.get("boolean") is True, "SPARQLWrapper ASK: true")
    construct = "CONSTRUCT { ?c rdfs:label ?l } WHERE { ?c a owl:Class ; rdfs:label ?l } LIMIT 7"
    graph = wrapper(endpoint, construct, TURTLE).convert()
    if isinstance(graph, bytes):
        graph = rdflib.Graph().parse(data=graph, format="turtle")
    check(len(graph) == 7, f"SPARQLWrapper CONSTRUCT as Turtle: 7 triples in rdflib ({len(graph)})")
    graph = wrapper(endpoint, construct, N3).convert()
    if isinstance(graph, bytes):
        graph = rdflib.Graph().parse(data=graph, format="turtle")
    check(len(graph) == 7, "SPARQLWrapper CONSTRUCT as N3/Turtle: 7 triples")

    # A bad query: SPARQLWrapper raises its own exception for a 400.
    try:
        wrapper(endpoint, "SELECT ?x WHERE { ?x ", JSON).convert()
        check(False, "a syntax error is refused")
    except Exception as error:  # SPARQLWrapper.SPARQLExceptions.QueryBadFormed
        check("QueryBadFormed" in type(error).__name__, f"a syntax error is a 400 ({type(error).__name__})")

    # rdflib's SPARQLStore: the endpoint as a read-only rdflib Graph.
    store = rdflib.Graph(store=SPARQLStore(endpoint, returnFormat="json"))
    prefixed = """
    PREFIX owl: <http://www.w3.org/2002/07/owl#>
    PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
    """ + CLASSES
    rows = list(store.query(prefixed))
    check(len(rows) == 5 and isinstance(rows[0][0], rdflib.URIRef), "rdflib SPARQLStore: 5 rows of URIRefs")

    # An update with the bearer token, then read back through the same client.
    update = SPARQLWrapper(endpoint)
    update.setMethod(POST)
    update.setRequestMethod(POSTDIRECTLY)
    update.addCustomHttpHeader("Authorization", "Bearer " + token)
    update.setQuery(
        'INSERT DATA { GRAPH <urn:interop:g> { <urn:interop:x> rdfs:label "Interop marker" } }'
    )
    response = update.query()
    check(response.response.status == 200, "SPARQLWrapper update with a bearer token: 200")
    rows = wrapper(
        endpoint, 'SELECT ?x WHERE { ?x rdfs:label "Interop marker" }', JSON
    ).convert()["results"]["bindings"]
    check([r["x"]["value"] for r in rows] == ["urn:interop:x"], "the update is visible")

    print(f"{len(FAILED)} failed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1].rstrip("/"), sys.argv[2]))

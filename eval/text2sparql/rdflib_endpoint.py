#!/usr/bin/env python3
"""A read-only SPARQL endpoint over one development set's graph, answered by rdflib,
plus a gold "oracle" TEXT2SPARQL endpoint for the same set.

    $PY eval/text2sparql/rdflib_endpoint.py SET [--port 8890] [--lubm ARCHIVE]

- http://127.0.0.1:PORT/sparql serves the SPARQL 1.1 protocol (GET ?query=..., POST
  form-encoded or application/sparql-query) with SPARQL JSON results, in the same form
  as make_gold.py (canonical decimals). `text2sparql query` runs the gold queries (true
  result set) or a system's answered queries (`-a answers.json`, predicted result set)
  against it, so both come from the same engine, independent of kgfuse.
- http://127.0.0.1:PORT/ answers the TEXT2SPARQL API (GET ?dataset=ID&question=TEXT ->
  {"dataset", "question", "query"}) with the gold query of the question in
  SET/questions.yaml: a perfect system, for `text2sparql ask` (self_check.sh). Unknown
  dataset or question: 404.

Prints "ready http://127.0.0.1:PORT/sparql" on stdout once the graph is loaded.
Listens on 127.0.0.1 only; one request at a time.
"""

import argparse
import json
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

import make_gold


def serve(graph, port, dataset_id, gold_queries):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def answer(self, query):
            if not query:
                self.send_error(400, "no query")
                return
            try:
                doc = make_gold.run_query(graph, query)
            except Exception as error:  # a malformed or unsupported query
                body = str(error).encode()
                self.send_response(400)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            body = json.dumps(doc).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/sparql-results+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def oracle(self, params):
            dataset = (params.get("dataset") or [""])[0]
            question = (params.get("question") or [""])[0]
            if dataset != dataset_id or question not in gold_queries:
                self.send_error(404, "unknown dataset or question")
                return
            body = json.dumps(
                {"dataset": dataset, "question": question, "query": gold_queries[question]}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            if url.path == "/":
                self.oracle(urllib.parse.parse_qs(url.query))
                return
            if url.path != "/sparql":
                self.send_error(404)
                return
            params = urllib.parse.parse_qs(url.query)
            self.answer((params.get("query") or [""])[0])

        def do_POST(self):
            url = urllib.parse.urlsplit(self.path)
            if url.path != "/sparql":
                self.send_error(404)
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode("utf-8")
            kind = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            if kind == "application/sparql-query":
                self.answer(body)
            else:
                params = urllib.parse.parse_qs(body)
                self.answer((params.get("query") or [""])[0])

    server = HTTPServer(("127.0.0.1", port), Handler)
    print(f"ready http://127.0.0.1:{server.server_address[1]}/sparql", flush=True)
    server.serve_forever()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("set", choices=make_gold.SETS)
    parser.add_argument("--port", type=int, default=8890, help="0 picks a free port")
    parser.add_argument("--lubm", help="the LUBM-1 archive")
    args = parser.parse_args()
    graph = make_gold.load_graph(args.set, args.lubm)
    data, _ = make_gold.read_set(args.set)
    gold_queries = {
        text: question["query"]["sparql"]
        for question in data["questions"]
        for text in question["question"].values()
    }
    try:
        serve(graph, args.port, data["dataset"]["id"], gold_queries)
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()

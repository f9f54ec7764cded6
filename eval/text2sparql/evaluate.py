#!/usr/bin/env python3
"""kgfuse on the text-to-SPARQL development sets, scored as TEXT2SPARQL'25 scored
its teams: per question the set of every value of every row (an ASK as "true" or
"false") against the true result set (SET/gold.json, made with rdflib), set
precision, recall and F; mean F over the questions, and per shape.

For each set it builds a store (hash embedder, RDFS entailment), starts
`kgfuse serve --dataset ID` on 127.0.0.1, and per question:

- `planner`: the query `GET /text2sparql` returns (the answer set's query: a
  plan's, or a lookup's best query graph), run on kgfuse's `/sparql`;
- `query graphs`: the baseline, what kgfuse answered before plans (issue 43):
  the answer column `?x` of the best query graph in the `unified` trace.

With `--model`, the server uses the language model that KGFUSE_LLM_BASE_URL
and KGFUSE_LLM_MODEL name (`eval "$(make -s llm-serve)"`), and the one system
is `model planner` (the model fills the plan; the offline answer is the
fallback); replies are cached per prompt in KGFUSE_LLM_CACHE_DIR (default
~/.cache/kgfuse/llm-cache), so a run stopped halfway resumes where it was.

Then, with `--client`, the official client's own pipeline on the planner
(`text2sparql ask`, `query`, `evaluate`; install it with install_client.sh).

    python3 eval/text2sparql/evaluate.py [--sets lubm1,payments] [--model] [--client] [--out DIR]

KGFUSE names the binary (default: kgfuse on PATH); LUBM the LUBM-1 archive.
Prints one JSON summary line per set and system, and writes per-question lines
to DIR/SET-SYSTEM.jsonl.
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
KGFUSE = os.environ.get("KGFUSE", "kgfuse")
LUBM = os.environ.get("LUBM", str(ROOT.parent / "shared/data/lubm/lubm1.tar.gz"))
VENV = pathlib.Path(os.environ.get("TEXT2SPARQL_VENV", pathlib.Path.home() / ".cache/kgfuse/text2sparql-venv"))


def questions(set_name):
    """(id, text, shape) of each question, in file order."""
    text = (HERE / set_name / "questions.yaml").read_text()
    shapes = dict(
        line.split("\t")[:2]
        for line in (HERE / set_name / "shapes.tsv").read_text().splitlines()
        if line and not line.startswith("#") and "\t" in line
    )
    found = re.findall(r"- id: (\d+)\n\s+question:\n\s+en: \"(.*)\"", text)
    return [(int(i), q, shapes.get(i, "?").strip()) for i, q in found]


def dataset_of(set_name):
    text = (HERE / set_name / "questions.yaml").read_text()
    ident = re.search(r"^\s+id: (\S+)$", text, re.M).group(1)
    prefix = re.search(r"^\s+prefix: (\S+)$", text, re.M).group(1)
    return ident, prefix


def data_files(set_name, scratch):
    if set_name == "payments":
        return [str(HERE / "payments/payments.ttl")]
    out = scratch / "lubm1-files"
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(LUBM) as tar:
        members = [m for m in tar.getmembers() if m.name.endswith(".owl")]
        tar.extractall(out, members=members)
    return sorted(str(p) for p in out.rglob("*.owl"))


def kgfuse(data, *args):
    out = subprocess.run([KGFUSE, "--data", str(data), *args], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"kgfuse {' '.join(args[:2])} failed: {out.stderr[-800:]}")
    return out.stdout


def build_store(set_name, scratch):
    data = scratch / f"{set_name}-store"
    if data.exists():
        shutil.rmtree(data)
    kgfuse(data, "init", "--embedder", "hash")
    kgfuse(data, "load", *data_files(set_name, scratch))
    return data


def serve(data, dataset, model=False):
    command = [KGFUSE, "--data", str(data), "serve", "--bind", "127.0.0.1:0", "--dataset", dataset,
               "--request-timeout", "600"]
    env = dict(os.environ)
    if model:
        if not env.get("KGFUSE_LLM_BASE_URL") or not env.get("KGFUSE_LLM_MODEL"):
            sys.exit("--model needs KGFUSE_LLM_BASE_URL and KGFUSE_LLM_MODEL (eval \"$(make -s llm-serve)\")")
        env.setdefault("KGFUSE_LLM_CACHE_DIR", str(pathlib.Path.home() / ".cache/kgfuse/llm-cache"))
    else:
        command.append("--offline")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    line = process.stdout.readline()
    match = re.search(r"http://\S+", line)
    if not match:
        process.kill()
        sys.exit(f"kgfuse serve did not start: {line!r}")
    return process, match.group(0)


def get_json(url, data=None):
    headers = {"Accept": "application/sparql-results+json, application/json"}
    if data is not None:
        headers["Content-Type"] = "application/json"
        data = json.dumps(data).encode()
    request = urllib.request.Request(url, data=data, headers=headers)
    with urllib.request.urlopen(request, timeout=900) as response:
        return json.load(response)


def result_values(base, query):
    """The set of every value the query returns on kgfuse's /sparql, as the
    client builds it (ASK: {"true"} or {"false"})."""
    try:
        results = get_json(f"{base}/sparql?" + urllib.parse.urlencode({"query": query}))
    except Exception as error:  # a refused or failing query answers nothing
        return set(), str(error)[:200]
    if "boolean" in results:
        return {"true" if results["boolean"] else "false"}, None
    values = set()
    for row in results["results"]["bindings"]:
        for cell in row.values():
            values.add(cell["value"])
    return values, None


def shown(values, most=20):
    """The answer's values for the per-question lines: how many, and the first
    `most` in sorted order (enough to see a change, short enough to read)."""
    return {"count": len(values), "first": sorted(values)[:most]}


def set_f(predicted, gold):
    relevant = {k for k, v in gold.items() if v > 0}
    if not relevant or not predicted:
        return 0.0, 0.0, 0.0
    hit = len(predicted & relevant)
    precision, recall = hit / len(predicted), hit / len(relevant)
    f = 2 * precision * recall / (precision + recall) if hit else 0.0
    return precision, recall, f


def baseline_query(context):
    """The best query graph's query, as the `unified` trace keeps it."""
    stage = next((s for s in context["trace"] if s["stage"] == "query graphs"), None)
    for kept in (stage or {}).get("kept", []):
        match = re.search(r"rows(?:, [^:]*)?: (SELECT .*)$", kept)
        if match:
            return match.group(1)
    return None


def answer_column(base, query):
    if not query:
        return set(), "no query graph answered"
    try:
        results = get_json(f"{base}/sparql?" + urllib.parse.urlencode({"query": query}))
    except Exception as error:
        return set(), str(error)[:200]
    return {row["x"]["value"] for row in results["results"]["bindings"] if "x" in row}, None


def evaluate_set(set_name, scratch, out_dir, model=False):
    dataset, prefix = dataset_of(set_name)
    gold = json.loads((HERE / set_name / "gold.json").read_text())
    data = build_store(set_name, scratch)
    process, base = serve(data, dataset, model)
    systems = ["model planner"] if model else ["planner", "query graphs"]
    rows = {system: [] for system in systems}
    files = {system: open(out_dir / f"{set_name}-{system.replace(' ', '-')}.jsonl", "w") for system in systems}
    try:
        for ident, text, shape in questions(set_name):
            truth = gold.get(f"{prefix}:{ident}-en", {})
            started = time.monotonic()
            answer = get_json(f"{base}/text2sparql?" + urllib.parse.urlencode({"question": text, "dataset": dataset}))
            seconds = time.monotonic() - started
            predicted, error = result_values(base, answer["query"])
            p, r, f = set_f(predicted, truth)
            lines = [(systems[0], {"id": ident, "shape": shape, "question": text, "query": answer["query"],
                                   "values": shown(predicted), "precision": p, "recall": r, "f": f,
                                   "seconds": seconds, "error": error})]
            if not model:
                context = get_json(f"{base}/retrieve", {"question": text, "strategy": "unified"})
                query = baseline_query(context)
                predicted, error = answer_column(base, query)
                p, r, f = set_f(predicted, truth)
                lines.append(("query graphs", {"id": ident, "shape": shape, "question": text, "query": query,
                                               "values": shown(predicted), "precision": p, "recall": r,
                                               "f": f, "error": error}))
            for system, line in lines:
                rows[system].append(line)
                files[system].write(json.dumps(line) + "\n")
                files[system].flush()
            print(f"{set_name} {ident} ({shape}): F {lines[0][1]['f']:.2f} in {seconds:.1f} s", file=sys.stderr)
    finally:
        process.terminate()
        process.wait()
        for handle in files.values():
            handle.close()
    for system, lines in rows.items():
        print(json.dumps(summary(set_name, system, lines)))
    return data, dataset


def summary(set_name, system, lines):
    by_shape = {}
    for line in lines:
        by_shape.setdefault(line["shape"], []).append(line["f"])
    seconds = sorted(l["seconds"] for l in lines if "seconds" in l)
    out = {
        "set": set_name,
        "system": system,
        "questions": len(lines),
        "mean_set_f": round(statistics.mean(l["f"] for l in lines), 3),
        "per_shape": {s: [round(statistics.mean(fs), 3), len(fs)] for s, fs in sorted(by_shape.items())},
    }
    if seconds:
        out["seconds_p50"] = round(statistics.median(seconds), 2)
        out["seconds_p95"] = round(seconds[min(len(seconds) - 1, round(0.95 * (len(seconds) - 1)))], 2)
    return out


def client(set_name, data, dataset, out_dir, model=False):
    """The official client's pipeline against kgfuse serve: ask, query, evaluate."""
    tool = VENV / "bin/text2sparql"
    if not tool.exists():
        sys.exit(f"no client at {tool}: run eval/text2sparql/install_client.sh")
    process, base = serve(data, dataset, model)
    work = out_dir / f"{set_name}-client"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    questions_file = str(HERE / set_name / "questions.yaml")
    try:
        steps = [
            ["ask", questions_file, f"{base}/text2sparql", "--answers-db", str(work / "answers.db"),
             "--retries-log", str(work / "retries.log"), "--retries", "0", "-o", str(work / "answers.json")],
            ["query", questions_file, "-a", str(work / "answers.json"), "-e", f"{base}/sparql",
             "-o", str(work / "pred.json")],
            ["evaluate", "kgfuse", str(HERE / set_name / "gold.json"), str(work / "pred.json"),
             "-o", str(work / "metrics.json")],
        ]
        for step in steps:
            out = subprocess.run([str(tool), *step], capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"text2sparql {step[0]} failed: {out.stderr[-800:]}")
    finally:
        process.terminate()
        process.wait()
    metrics = json.loads((work / "metrics.json").read_text())
    average = metrics.get("average", {})
    system = "model planner" if model else "planner"
    print(json.dumps({"set": set_name, "system": f"{system}, official client",
                      "questions": sum(1 for k in metrics if k != "average"),
                      "mean_set_f": round(average.get("set_F", 0.0), 3),
                      "set_f_ndcg": round(average.get("set_F_ndcg", 0.0), 3),
                      "metrics_file": str(work / "metrics.json")}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="lubm1,payments")
    parser.add_argument("--client", action="store_true")
    parser.add_argument("--model", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args()
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="kgfuse-text2sparql-"))
    out_dir = pathlib.Path(args.out) if args.out else scratch
    out_dir.mkdir(parents=True, exist_ok=True)
    for set_name in args.sets.split(","):
        data, dataset = evaluate_set(set_name, scratch, out_dir, args.model)
        if args.client:
            client(set_name, data, dataset, out_dir, args.model)
    print(f"per-question lines in {out_dir}", file=sys.stderr)


if __name__ == "__main__":
    main()

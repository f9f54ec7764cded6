#!/usr/bin/env python3
"""kgfuse on the Spider4SPARQL development databases (../shared/data/spider4sparql:
13 knowledge graphs, 706 questions people wrote for Spider), scored per question
against the set's true result set:

- set precision, recall and F over the set of every value of every row (an ASK
  as "true" or "false"), as TEXT2SPARQL'25 scores its teams;
- exact: the predicted value set equals the true one (execution accuracy).

For each database it builds a store as a new user would (`kgfuse init --embedder
hash`, or `--embedder E`, `kgfuse load kgs/DB.nt kgs/DB.owl`), starts `kgfuse serve --dataset
urn:spider4sparql:DB` on 127.0.0.1 and asks `GET /text2sparql` each question,
then runs the returned query on `/sparql`. Offline by default (`--offline`);
with `--model`, the model KGFUSE_LLM_BASE_URL and KGFUSE_LLM_MODEL name, its
replies cached per prompt in KGFUSE_LLM_CACHE_DIR.

    python3 eval/text2sparql/spider.py [--dbs car_1,pets_1] [--per-db N] [--model]
        [--embedder hash|static|minilm] [--out DIR]

`--per-db N` takes every k-th question of each database so that N are asked
(the same ones on every run), for model runs that cannot afford all 706.
Prints one JSON line per database, one per question shape (read off the gold
query: ask, count, group, superlative, order, negation, comparison, lookup;
`+columns` when it asks for several plain columns) and one for all; writes
per-question lines to DIR/spider-SYSTEM.jsonl.
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import statistics
import sys
import tempfile
import time
import urllib.parse

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import evaluate  # noqa: E402  (the shared server, query and scoring helpers)

DATA = pathlib.Path(os.environ.get("SPIDER4SPARQL", evaluate.ROOT.parent / "shared/data/spider4sparql"))


def questions():
    with open(DATA / "questions.jsonl") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def shape(gold_sparql, columns):
    """The question's shape, read off its gold query (for reporting only)."""
    q = re.sub(r"\s+", " ", gold_sparql.lower())
    if re.search(r"\bask\b", q):
        kind = "ask"
    elif "not exists" in q or " minus " in q or "!bound" in q:
        kind = "negation"
    elif "group by" in q:
        kind = "group"
    elif "order by" in q and "limit" in q:
        kind = "superlative"
    elif re.search(r"\((count|sum|avg|min|max)\s*\(", q):
        kind = "count" if "count" in q else "aggregate"
    elif "order by" in q:
        kind = "order"
    elif re.search(r"filter\s*\([^)]*[<>]", q):
        kind = "comparison"
    else:
        kind = "lookup"
    plain = [c for c in columns if not c.startswith("aggregation")]
    return kind + ("+columns" if len(plain) > 1 and kind in ("lookup", "order", "comparison") else "")


def build_store(db, scratch, embedder):
    data = scratch / f"{db}-store"
    if data.exists():
        shutil.rmtree(data)
    evaluate.kgfuse(data, "init", "--embedder", embedder)
    evaluate.kgfuse(data, "load", str(DATA / f"kgs/{db}.nt"), str(DATA / f"kgs/{db}.owl"))
    return data


def chosen(items, per_db):
    """Every k-th question so that about `per_db` are asked, or all."""
    if not per_db or per_db >= len(items):
        return items
    step = len(items) / per_db
    return [items[int(i * step)] for i in range(per_db)]


def summary_of(name, lines):
    seconds = sorted(l["seconds"] for l in lines)
    return {
        "set": name,
        "questions": len(lines),
        "mean_set_f": round(statistics.mean(l["f"] for l in lines), 3),
        "exact": round(statistics.mean(1.0 if l["exact"] else 0.0 for l in lines), 3),
        "seconds_p50": round(statistics.median(seconds), 2),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dbs", help="comma-separated databases (default: all in the folder)")
    parser.add_argument("--per-db", type=int, default=0)
    parser.add_argument("--model", action="store_true")
    parser.add_argument("--out")
    parser.add_argument("--embedder", default="hash", choices=["hash", "static", "minilm"],
                        help="the stores' embedder (`kgfuse init --embedder`; default hash)")
    args = parser.parse_args()
    everything = questions()
    dbs = args.dbs.split(",") if args.dbs else sorted({q["kg"] for q in everything})
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="kgfuse-spider-"))
    out_dir = pathlib.Path(args.out) if args.out else scratch
    out_dir.mkdir(parents=True, exist_ok=True)
    system = ("model-planner" if args.model else "planner") + (
        "" if args.embedder == "hash" else f"-{args.embedder}")
    lines = []
    with open(out_dir / f"spider-{system}.jsonl", "w") as out:
        for db in dbs:
            asked = chosen([q for q in everything if q["kg"] == db], args.per_db)
            data = build_store(db, scratch, args.embedder)
            dataset = f"urn:spider4sparql:{db}"
            process, base = evaluate.serve(data, dataset, args.model)
            try:
                for item in asked:
                    started = time.monotonic()
                    answer = evaluate.get_json(
                        f"{base}/text2sparql?" + urllib.parse.urlencode({"question": item["question"], "dataset": dataset}))
                    seconds = time.monotonic() - started
                    predicted, error = evaluate.result_values(base, answer["query"])
                    truth = set(item["true_values"])
                    p, r, f = evaluate.set_f(predicted, {v: 1 for v in truth})
                    line = {"id": item["id"], "db": db, "shape": shape(item["sparql"], item["columns"]),
                            "question": item["question"], "query": answer["query"],
                            "values": evaluate.shown(predicted), "precision": p, "recall": r, "f": f,
                            "exact": predicted == truth, "seconds": seconds, "error": error}
                    lines.append(line)
                    out.write(json.dumps(line) + "\n")
                    out.flush()
                    print(f"{item['id']} ({line['shape']}): F {f:.2f}{' exact' if line['exact'] else ''} "
                          f"in {seconds:.1f} s", file=sys.stderr)
            finally:
                process.terminate()
                process.wait()
            shutil.rmtree(data, ignore_errors=True)
            print(json.dumps(summary_of(db, [l for l in lines if l["db"] == db])), flush=True)
    for kind in sorted({l["shape"] for l in lines}):
        print(json.dumps(summary_of(f"shape {kind}", [l for l in lines if l["shape"] == kind])))
    print(json.dumps(summary_of(f"spider4sparql {system}", lines)))
    print(f"per-question lines in {out_dir}", file=sys.stderr)


if __name__ == "__main__":
    main()

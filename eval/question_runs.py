"""What eval/ask.py and eval/text_to_sparql.py share: the command line, the
loop over a question set, the per-question lines and the summary's timing."""
import argparse
import json
import os
import statistics
import subprocess
import sys

KGFUSE = os.environ.get("KGFUSE", "kgfuse")


def kgfuse(data, *args):
    """Runs `kgfuse --data DATA ARGS...` and returns its stdout; fails loudly."""
    out = subprocess.run([KGFUSE, "--data", data, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"kgfuse {args[:2]} failed: {out.stderr[-500:]}")
    return out.stdout


def share(rows, key):
    """The share of rows where `key` is true, among those where it is known."""
    known = [r[key] for r in rows if r[key] is not None]
    return round(sum(known) / len(known), 3) if known else None


def run(description, evaluate, summarize):
    """Parses --data/--set/--label/--out/--limit, calls evaluate(data, item) per
    question (one JSON line each to --out, else stderr) and prints
    summarize(rows) with the label, the count and seconds p50/p95 added."""
    parser = argparse.ArgumentParser(description=description.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--set", required=True)
    parser.add_argument("--label", default=os.environ.get("KGFUSE_LLM_MODEL", "offline"))
    parser.add_argument("--out")
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args()
    with open(args.set) as lines:
        items = [json.loads(line) for line in lines if line.strip()]
    if args.limit:
        items = items[: args.limit]
    rows = []
    out = open(args.out, "w") if args.out else sys.stderr
    for item in items:
        row = evaluate(args.data, item)
        rows.append(row)
        print(json.dumps(row), file=out, flush=True)
    if not rows:
        sys.exit(f"no questions in {args.set}")
    seconds = sorted(r["seconds"] for r in rows)
    n = len(rows)
    summary = {
        "label": args.label,
        "set": os.path.basename(args.set),
        "questions": n,
        **summarize(rows),
        "seconds_p50": statistics.median(seconds),
        "seconds_p95": seconds[min(n - 1, round(0.95 * (n - 1)))],
    }
    print(json.dumps(summary))

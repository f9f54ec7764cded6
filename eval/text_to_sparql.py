#!/usr/bin/env python3
"""Text-to-SPARQL with a language model, measured on a question set with gold
answers (e.g. eval/lubm/lubm1.jsonl): execution accuracy, answer-in-context and
seconds per question of `kgfuse retrieve --strategy unified`.

The model is whatever KGFUSE_LLM_BASE_URL / KGFUSE_LLM_MODEL name (none: the
offline model, which writes no query; its constructed queries still answer into
the context). KGFUSE_LLM_GRAMMAR=off measures without the grammar.

    eval "$(make -s llm-serve)"
    python3 eval/text_to_sparql.py --data STORE --set eval/lubm/lubm1.jsonl --label qwen-1.5b

Per question, with the gold set = `gold_answers` when the line has them, else `gold`:
- executed: the model's query was accepted (it parsed, passed the checks and ran);
- exact: some column of its result holds exactly the gold set (column names and
  row order do not matter): execution accuracy;
- contains: some column holds every gold value (and maybe more);
- in context: every gold value appears somewhere in the FusedContext (the
  generated query's rows, constructed queries, facts, text);
- constructed exact: the same test for the best query the query graphs built
  offline (no model): the baseline the model's query is measured against;
- answer in context: `kgfuse eval`'s test, one of the line's `gold_answers`
  appears in the context (any case); for the policy and support sets;
- rejected: attempts the checks refused, and of those, for unknown terms (with the
  grammar these should be 0; none of them ever reaches the store).
Writes one JSON line per question to --out and a summary line to stdout.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

KGFUSE = os.environ.get("KGFUSE", "kgfuse")


def kgfuse(data, *args):
    out = subprocess.run([KGFUSE, "--data", data, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"kgfuse {args[:2]} failed: {out.stderr[-500:]}")
    return out.stdout


def term_value(cell):
    """A SPARQL JSON results cell as the string the gold lists use."""
    return cell["value"]


def columns(results):
    """The value set of each column of a SPARQL JSON result (ASK: none)."""
    if "boolean" in results:
        return []
    names = results["head"]["vars"]
    sets = {name: set() for name in names}
    for row in results["results"]["bindings"]:
        for name, cell in row.items():
            sets[name].add(term_value(cell))
    return list(sets.values())


def evaluate(data, item):
    gold = set(item.get("gold_answers") or item["gold"])
    started = time.monotonic()
    context = json.loads(
        kgfuse(data, "retrieve", item["query"], "--strategy", "unified", "--format", "json")
    )
    seconds = time.monotonic() - started
    stage = next((s for s in context["trace"] if s["stage"] == "text-to-sparql"), None)
    query = None
    rejected = unknown = 0
    if stage:
        for kept in stage.get("kept", []):
            if kept.startswith(("SELECT", "ASK", "PREFIX")):
                query = kept
                break
        for dropped in stage.get("dropped", []):
            rejected += 1
            unknown += "neither declares nor uses" in dropped.get("why", "")
    exact = contains = False
    if query:
        results = json.loads(kgfuse(data, "sparql", query, "--format", "json"))
        for values in columns(results):
            exact |= values == gold
            contains |= gold <= values
    # The offline baseline: the best query the query graphs built (no model).
    constructed_exact = False
    built = next((s for s in context["trace"] if s["stage"] == "query graphs"), None)
    for kept in (built or {}).get("kept", []):
        if "rows" in kept and "SELECT" in kept:
            best = kept[kept.index("SELECT"):]
            results = json.loads(kgfuse(data, "sparql", best, "--format", "json"))
            constructed_exact = any(values == gold for values in columns(results))
            break
    text = json.dumps(context)
    in_context = all(value in text for value in gold)
    # `kgfuse eval`'s answer-in-context: one of the gold answers, any case.
    answers = [a.lower() for a in item.get("gold_answers", [])]
    answer_in_context = any(a in text.lower() for a in answers) if answers else None
    return {
        "id": item["id"],
        "seconds": round(seconds, 2),
        "query": query,
        "executed": query is not None,
        "exact": exact,
        "contains": contains,
        "in_context": in_context,
        "constructed_exact": constructed_exact,
        "answer_in_context": answer_in_context,
        "rejected": rejected,
        "unknown_terms": unknown,
    }


def share_of_known(rows, key):
    """The share of rows where `key` is true, among those where it is known."""
    known = [r[key] for r in rows if r[key] is not None]
    return sum(known) / len(known) if known else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--set", required=True)
    parser.add_argument("--label", default=os.environ.get("KGFUSE_LLM_MODEL", "offline"))
    parser.add_argument("--out")
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args()
    items = [json.loads(line) for line in open(args.set) if line.strip()]
    if args.limit:
        items = items[: args.limit]
    rows = []
    out = open(args.out, "w") if args.out else None
    for item in items:
        row = evaluate(args.data, item)
        rows.append(row)
        print(json.dumps(row), file=out or sys.stderr, flush=True)
    seconds = sorted(r["seconds"] for r in rows)
    n = len(rows)
    summary = {
        "label": args.label,
        "grammar": os.environ.get("KGFUSE_LLM_GRAMMAR", "on"),
        "questions": n,
        "executed": sum(r["executed"] for r in rows) / n,
        "exact": sum(r["exact"] for r in rows) / n,
        "contains": sum(r["contains"] for r in rows) / n,
        "in_context": sum(r["in_context"] for r in rows) / n,
        "constructed_exact": sum(r["constructed_exact"] for r in rows) / n,
        "answer_in_context": share_of_known(rows, "answer_in_context"),
        "rejected_per_question": sum(r["rejected"] for r in rows) / n,
        "unknown_term_rejections": sum(r["unknown_terms"] for r in rows),
        "seconds_p50": statistics.median(seconds),
        "seconds_p95": seconds[min(n - 1, round(0.95 * (n - 1)))],
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The grounded answer loop (`kgfuse ask`) measured on a question set with gold
answers (e.g. eval/policy.jsonl, eval/support.jsonl): how often it answers, how
often the answer is grounded, how often it is right, and what it costs.

The model is whatever KGFUSE_LLM_BASE_URL / KGFUSE_LLM_MODEL name (none: the
offline model, whose drafts are extractive).

    python3 eval/ask.py --data STORE --set eval/policy.jsonl --label offline
    eval "$(make -s llm-serve)"
    python3 eval/ask.py --data STORE --set eval/policy.jsonl --label qwen-1.5b

Per question:
- answered: `status` is `answered` (not `insufficient_context`);
- grounded: answered and `grounding_status` is `grounded` (every claim cites a
  passage that supports it, as ask's own check decides);
- correct: answered and the answer holds one of the line's `gold_answers`
  (case-insensitive), the same test `kgfuse eval` uses for answer-in-context;
- cites gold: a citation's source is one of the line's `gold` nodes;
- calls, prompt and completion tokens (from `usage`), seconds.
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


def ask(data, question):
    out = subprocess.run(
        [KGFUSE, "--data", data, "ask", question, "--format", "json"],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise RuntimeError(f"kgfuse ask failed: {out.stderr[-500:]}")
    return json.loads(out.stdout)


def evaluate(data, item):
    started = time.monotonic()
    reply = ask(data, item["query"])
    seconds = time.monotonic() - started
    answered = reply["status"] == "answered"
    answer = (reply.get("answer") or "").lower()
    gold_answers = [g.lower() for g in item.get("gold_answers", [])]
    gold_nodes = set(item["gold"])
    usage = reply.get("usage") or {}
    return {
        "id": item["id"],
        "seconds": round(seconds, 2),
        "status": reply["status"],
        "answered": answered,
        "grounded": answered and reply.get("grounding_status") == "grounded",
        "correct": answered and any(g in answer for g in gold_answers),
        "cites_gold": any(c.get("source_id") in gold_nodes for c in reply.get("citations", [])),
        "calls": usage.get("calls", 0),
        "prompt_tokens": usage.get("prompt_tokens", 0),
        "completion_tokens": usage.get("completion_tokens", 0),
        "answer": reply.get("answer"),
    }


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
    share = lambda key: round(sum(r[key] for r in rows) / n, 3)  # noqa: E731
    summary = {
        "label": args.label,
        "set": os.path.basename(args.set),
        "questions": n,
        "answered": share("answered"),
        "grounded": share("grounded"),
        "correct": share("correct"),
        "cites_gold": share("cites_gold"),
        "calls_per_question": round(sum(r["calls"] for r in rows) / n, 2),
        "tokens_per_question": round(
            sum(r["prompt_tokens"] + r["completion_tokens"] for r in rows) / n
        ),
        "seconds_p50": statistics.median(seconds),
        "seconds_p95": seconds[min(n - 1, round(0.95 * (n - 1)))],
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

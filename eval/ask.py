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
import json
import time

from question_runs import kgfuse, run, share


def evaluate(data, item):
    started = time.monotonic()
    reply = json.loads(kgfuse(data, "ask", item["query"], "--format", "json"))
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


def summarize(rows):
    n = len(rows)
    return {
        "answered": share(rows, "answered"),
        "grounded": share(rows, "grounded"),
        "correct": share(rows, "correct"),
        "cites_gold": share(rows, "cites_gold"),
        "calls_per_question": round(sum(r["calls"] for r in rows) / n, 2),
        "tokens_per_question": round(
            sum(r["prompt_tokens"] + r["completion_tokens"] for r in rows) / n
        ),
    }


if __name__ == "__main__":
    run(__doc__, evaluate, summarize)

#!/usr/bin/env python3
"""Text-to-SPARQL with a language model, measured on a question set with gold
answers (e.g. eval/lubm/lubm1.jsonl): execution accuracy, answer-in-context and
seconds per question of `kgfuse retrieve --strategy unified --model-query` (the
model's own query beside its plan's).

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
import json
import os
import time

from question_runs import kgfuse, run, share


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
        kgfuse(data, "retrieve", item["query"], "--strategy", "unified", "--model-query",
               "--format", "json")
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


def summarize(rows):
    n = len(rows)
    return {
        "grammar": os.environ.get("KGFUSE_LLM_GRAMMAR", "on"),
        "executed": share(rows, "executed"),
        "exact": share(rows, "exact"),
        "contains": share(rows, "contains"),
        "in_context": share(rows, "in_context"),
        "constructed_exact": share(rows, "constructed_exact"),
        "answer_in_context": share(rows, "answer_in_context"),
        "rejected_per_question": round(sum(r["rejected"] for r in rows) / n, 2),
        "unknown_term_rejections": sum(r["unknown_terms"] for r in rows),
    }


if __name__ == "__main__":
    run(__doc__, evaluate, summarize)

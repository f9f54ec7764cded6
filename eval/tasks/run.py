#!/usr/bin/env python3
"""Pass@1 of a model with and without kgfuse's context, on tasks with executable checks.

    python3 eval/tasks/run.py --tasks TASKS.jsonl --python VENV/bin/python \\
        --conditions none,flat,unified --kgfuse BIN --data STORE \\
        --model-url http://127.0.0.1:8080/v1 --model NAME [--limit N] [--out REPORT.json]

Each task (one JSON object per line: `id`, `prompt`, `check` (a Python program in
which `[solution]` stands for the model's code as a string literal), optional
`question` (what kgfuse is asked; the prompt otherwise), optional `exclude` (IRIs the
context must not use), optional `group` (for the per-group table), optional `env`
(variables the check needs), optional `python` (its own environment), optional
`data` (its own kgfuse store), optional `contexts` (conditions the task set
computed itself, such as `bm25-chunks` or `oracle`: each a list of items `{"text",
"shows"}`), optional `needs` (the IRIs of the functions its reference calls:
dependency recall is the share of them whose signature the context shows)) is
asked once per condition at temperature 0. The condition is the context block put before the task: `none`, or a
kgfuse strategy's FusedContext (`kgfuse retrieve --strategy S --offline --format
json`: retrieval uses kgfuse's offline model, so the context is the same whichever
model answers, and model-assisted retrieval is measured on its own). The
code is taken from the reply (a fenced block, else the reply), run through the
task's check (`check.py`: isolated, no network, time and memory limits), and the
outcome recorded: pass, syntax, exception, wrong or timeout.

Replies are cached per (task, condition, model, prompt hash) under
`$CARGO_TARGET_DIR/tasks/replies/` and contexts per (kgfuse binary, store,
question, strategy, exclusions) under `.../tasks/contexts/`, so an interrupted
run resumes where it stopped;
progress goes to stderr, the report (per condition: pass@1 with a 95 % Wilson
interval, tasks, context tokens, dependency recall, model seconds, failures by
kind) to stdout and, with `--out`, to a JSON file. `--budget-tokens N` cuts every
condition's context to the same N tokens; `--context-after` puts the context after
the task, so a task's conditions share its text as a prompt prefix.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import math
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check  # noqa: E402

SYSTEM = (
    "You are an expert Python programmer. Reply with the code that solves the task, "
    "in one ```python block, and nothing else."
)


def approx_tokens(text: str) -> int:
    """About four characters a token, as kgfuse's own report counts them."""
    return (len(text) + 3) // 4


#: Attempts at a retrieval while another process holds the store.
STORE_BUSY_RETRIES = 600

#: Attempts at one model request (a timeout or a refused connection is retried).
MODEL_ATTEMPTS = 3

#: Longest text of one context item in the prompt, in characters (the same for
#: every condition).
ITEM_CHARS = 800


def local_name(iri: str) -> str:
    """The last segment of an IRI (after `#` or `/`), for compact facts."""
    return iri.rstrip("/").rsplit("#", 1)[-1].rsplit("/", 1)[-1]


def clip(text: str) -> str:
    """`text` cut to ITEM_CHARS characters."""
    text = text.strip()
    return text if len(text) <= ITEM_CHARS else text[:ITEM_CHARS].rstrip() + " ..."


#: A leading docstring (an example file's question): the case's title names it.
LEADING_DOCSTRING = re.compile(r'\A\s*[rRuU]?("""|\'\'\')(.*?)\1\s*', re.S)


def example_code(code: str) -> str:
    """A case's code without its leading docstring, so the item's characters go
    to the code that shows the calls."""
    return LEADING_DOCSTRING.sub("", code, count=1).strip()


def context_items(context: dict, max_items: int) -> list[dict]:
    """A FusedContext as prompt items, each `{"text", "shows"}` (`shows`: the
    IRIs of the functions whose signature the item gives): functions with their
    signatures and summaries, worked examples with their code, dependency paths and
    facts (IRIs as local names), then text passages; at most `max_items` of each,
    each at most ITEM_CHARS."""
    items: list[dict] = []
    for function in context.get("functions", [])[:max_items]:
        signature = function.get("signature") or function.get("name") or function.get("iri")
        where = function.get("module")
        line = f"- {signature.strip()}" + (f"  (in {where})" if where else "")
        summary = function.get("summary")
        items.append({"text": clip(line + (f": {summary}" if summary else "")),
                      "shows": [function["iri"]], "iri": function["iri"]})
    for case in context.get("cases", [])[:max_items]:
        code = example_code(case.get("code") or "")
        if code:
            title = clip(case.get("title") or local_name(case["iri"]))
            items.append({"text": f"Example ({title}):\n```python\n{clip(code)}\n```",
                          "shows": [], "iri": case["iri"]})
    for path in context.get("paths", [])[:max_items]:
        items.append({"text": "- path: " + " -> ".join(local_name(step) for step in path), "shows": []})
    for fact in context.get("structured_facts", [])[:max_items]:
        items.append({"text": "- " + " ".join(local_name(str(fact.get(k, ""))) if str(fact.get(k, "")).startswith("http")
                                              else str(fact.get(k, "")) for k in ("subject", "predicate", "object")),
                      "shows": []})
    for hit in context.get("unstructured", [])[:max_items]:
        text = (hit.get("text") or "").strip()
        if text:
            # A hit on a function node is its signature and summary as embedded.
            items.append({"text": clip(text), "shows": [hit["iri"]], "iri": hit["iri"]})
    return items


def within_budget(items: list[dict], budget_tokens: int | None) -> list[dict]:
    """The leading items whose text fits in `budget_tokens` (all when no budget):
    every condition's context is cut the same way."""
    if not budget_tokens:
        return items
    kept, used = [], 0
    for item in items:
        cost = approx_tokens(item["text"]) + 1
        if used + cost > budget_tokens:
            break
        kept.append(item)
        used += cost
    return kept


def context_block(items: list[dict]) -> str:
    """The items as the context block put before the task."""
    if not items:
        return ""
    return "Context from the library's knowledge graph:\n" + "\n".join(i["text"] for i in items) + "\n\n"


def shown_items(items: list[dict]) -> list[str]:
    """The IRIs of what the items put in the prompt, in order."""
    return [i["iri"] for i in items if i.get("iri")]


def dependency_recall(task: dict, items: list[dict]) -> float | None:
    """The share of the task's `needs` (the IRIs of the functions its reference
    calls) whose signature the items show; None for a task without needs."""
    needs = set(task.get("needs") or [])
    if not needs:
        return None
    shown = {iri for item in items for iri in item.get("shows", [])}
    return len(needs & shown) / len(needs)


def binary_digest(path: str) -> str:
    """The kgfuse binary's SHA-256, so cached contexts follow the binary."""
    resolved = shutil.which(path) or path
    digest = hashlib.sha256()
    with open(resolved, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def retrieve(args: argparse.Namespace, task: dict, strategy: str) -> dict:
    """kgfuse's context for the task's question under `strategy` (cached per
    binary, store, question, strategy and exclusions)."""
    question = task.get("question", task["prompt"])
    data = task.get("data") or args.data
    command = [args.kgfuse, "--data", data, "retrieve", question, "--strategy", strategy,
               "--top-k", str(args.top_k), "--offline", "--format", "json"]
    for iri in task.get("exclude", []):
        command += ["--exclude", iri]
    key = {"binary": args.kgfuse_digest,
           "data": str(Path(data).absolute()), "command": command[3:]}

    def compute() -> dict:
        # A store is opened by one kgfuse process at a time: wait for another
        # run's retrieval (`--contexts-only` beside a model run) to finish.
        for attempt in range(STORE_BUSY_RETRIES):
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode == 0:
                return json.loads(done.stdout)
            if "in use by another kgfuse process" not in done.stderr:
                break
            time.sleep(1 + attempt % 5)
        raise SystemExit(f"kgfuse retrieve failed for {task['id']} ({strategy}):\n{done.stderr}")

    return cached("contexts", key, compute)


def ask(args: argparse.Namespace, prompt: str) -> tuple[str, float]:
    """One chat completion at temperature 0: the reply and the seconds it took."""
    body = json.dumps({
        "model": args.model,
        "temperature": 0,
        "max_tokens": args.max_tokens,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
    }).encode()
    request = urllib.request.Request(
        args.model_url.rstrip("/") + "/chat/completions",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    for attempt in range(1, MODEL_ATTEMPTS + 1):
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=args.model_timeout) as response:
                reply = json.load(response)
            return reply["choices"][0]["message"]["content"], time.monotonic() - started
        except (TimeoutError, ConnectionError, urllib.error.URLError) as error:
            print(f"the model did not answer (attempt {attempt} of {MODEL_ATTEMPTS}): {error}",
                  file=sys.stderr, flush=True)
            last = error
    sys.exit(f"the model at {args.model_url} did not answer after {MODEL_ATTEMPTS} attempts "
             f"({last}); the answers so far are cached: run the same command again to resume")


def extract_code(reply: str) -> str:
    """The code of a reply: its first fenced block (one the token limit left open
    runs to the reply's end), else DS-1000's `<code>` block, else the whole reply."""
    fenced = re.search(r"```(?:python|py)?[ \t]*\n(.*?)(?:```|\Z)", reply, re.S)
    if fenced:
        return fenced.group(1)
    tagged = re.search(r"<code>(.*?)</code>", reply, re.S)
    if tagged:
        return tagged.group(1)
    return reply


def cached(kind: str, key: dict, compute) -> dict:
    """A result stored under the hash of `key` in the cache's `kind` directory
    (`replies`, `contexts`), computed once."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()
    path = check.scratch_root() / kind / digest[:2] / f"{digest}.json"
    if path.exists():
        return json.loads(path.read_text())
    value = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))
    return value


def wilson(passed: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a pass rate."""
    if total == 0:
        return (0.0, 0.0)
    p = passed / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return (max(0.0, centre - half), min(1.0, centre + half))


def condition_items(args: argparse.Namespace, task: dict, condition: str) -> list[dict]:
    """The context items of one condition, within the budget: none, the task's
    own (`contexts`: conditions such as `bm25-chunks` or `oracle` that the task set
    computed), or a kgfuse strategy's."""
    if condition == "none":
        return []
    own = task.get("contexts", {})
    if condition in own:
        items = own[condition]
    else:
        items = context_items(retrieve(args, task, condition), args.max_items)
    return within_budget(items, args.budget_tokens)


def run_one(args: argparse.Namespace, task: dict, condition: str) -> dict:
    """One task under one condition: context, prompt, reply, check."""
    items = condition_items(args, task, condition)
    context = context_block(items)
    # After: the task's own text is the shared prefix of its conditions' prompts,
    # which the model server's prompt cache then serves once.
    prompt = (task["prompt"].rstrip() + "\n\n" + context).rstrip() if args.context_after and context \
        else context + task["prompt"]
    key = {"task": task["id"], "condition": condition, "model": args.model,
           "prompt": hashlib.sha256(prompt.encode()).hexdigest()}

    def compute() -> dict:
        reply, seconds = ask(args, prompt)
        code = extract_code(reply)
        program = task["check"].replace("[solution]", repr(code))
        outcome = check.run(program, args.python_of(task), args.timeout, extra_env=task.get("env"))
        return {"kind": outcome.kind, "detail": outcome.detail[-300:], "reply": reply,
                "model_seconds": seconds,
                "context_tokens": approx_tokens(context), "prompt_tokens": approx_tokens(prompt)}

    result = cached("replies", key, compute)
    return {"task": task["id"], "group": task.get("group", ""), "condition": condition,
            "context_items": shown_items(items),
            "dependency_recall": dependency_recall(task, items), **result}


def mean_of(values) -> float | None:
    """The mean of the values that are not None (None when there are none)."""
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def report(results: list[dict], conditions: list[str]) -> dict:
    """Per condition: pass@1 with its interval, tokens, seconds, failures by kind."""
    out = {}
    for condition in conditions:
        rows = [r for r in results if r["condition"] == condition]
        passed = sum(r["kind"] == "pass" for r in rows)
        low, high = wilson(passed, len(rows))
        out[condition] = {
            "tasks": len(rows),
            "pass_at_1": passed / len(rows) if rows else 0.0,
            "interval_95": [low, high],
            "context_tokens": sum(r["context_tokens"] for r in rows) / max(1, len(rows)),
            "dependency_recall": mean_of(r.get("dependency_recall") for r in rows),
            "model_seconds": sum(r["model_seconds"] for r in rows) / max(1, len(rows)),
            "failures": dict(collections.Counter(r["kind"] for r in rows if r["kind"] != "pass")),
            "by_group": {
                group: sum(r["kind"] == "pass" for r in rows if r["group"] == group)
                / max(1, sum(r["group"] == group for r in rows))
                for group in sorted({r["group"] for r in rows})
            },
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", required=True, type=Path)
    parser.add_argument("--python", required=True,
                        help="the tasks' environment (a task's own `python` wins)")
    parser.add_argument("--conditions", default="none,flat,unified")
    parser.add_argument("--kgfuse", default="kgfuse")
    parser.add_argument("--data", help="the kgfuse store (needed unless every condition is none)")
    parser.add_argument("--model-url", help="an OpenAI-compatible server (needed unless --contexts-only)")
    parser.add_argument("--model", help="the model's name on that server")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--max-items", type=int, default=5)
    parser.add_argument("--budget-tokens", type=int,
                        help="cut every condition's context to this many tokens (items from the end)")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--context-after", action="store_true",
                        help="put the context block after the task instead of before it (the "
                             "task's text is then a prefix the server's prompt cache can reuse "
                             "across conditions)")
    parser.add_argument("--model-timeout", type=float, default=600)
    parser.add_argument("--timeout", type=float, default=60, help="seconds a check may run")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--contexts-only", action="store_true",
                        help="only retrieve (and cache) the contexts, no model: run beside a "
                             "model run to keep retrieval off its path")
    args = parser.parse_args()
    conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
    args.python_of = lambda task: task.get("python") or args.python
    if not args.contexts_only and not (args.model_url and args.model):
        parser.error("--model-url and --model are needed (unless --contexts-only)")
    tasks = [json.loads(line) for line in args.tasks.read_text().splitlines() if line.strip()]
    tasks = tasks[: args.limit] if args.limit else tasks
    kgfuse_conditions = [c for c in conditions if c != "none"]
    for task in tasks:
        if any(c not in task.get("contexts", {}) for c in kgfuse_conditions) \
                and not (task.get("data") or args.data):
            parser.error(f"--data is needed for a kgfuse condition (task {task['id']} names no store)")
    args.kgfuse_digest = binary_digest(args.kgfuse) if any(
        c not in t.get("contexts", {}) for t in tasks for c in kgfuse_conditions) else ""
    if args.contexts_only:
        pairs = [(t, c) for t in tasks for c in conditions if c != "none"]
        shown = []
        for n, (task, condition) in enumerate(pairs, 1):
            items = condition_items(args, task, condition)
            shown.append({"task": task["id"], "group": task.get("group", ""), "condition": condition,
                          "kind": "unasked", "context_items": shown_items(items),
                          "dependency_recall": dependency_recall(task, items),
                          "context_tokens": approx_tokens(context_block(items))})
            print(f"[{n}/{len(pairs)}] context of {task['id']} {condition}", file=sys.stderr, flush=True)
        if args.out:
            # What each prompt would show, for needs.py, without a model.
            args.out.write_text(json.dumps({"results": shown}, indent=2))
        return
    results = []
    total = len(tasks) * len(conditions)
    for n, (task, condition) in enumerate(((t, c) for t in tasks for c in conditions), 1):
        result = run_one(args, task, condition)
        results.append(result)
        print(f"[{n}/{total}] {task['id']} {condition}: {result['kind']}", file=sys.stderr, flush=True)
    summary = {"conditions": report(results, conditions), "results": results}
    print(json.dumps(summary["conditions"], indent=2))
    if args.out:
        args.out.write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()

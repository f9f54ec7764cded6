#!/usr/bin/env python3
"""Which context items did the tasks need, and did they get them?

    python3 eval/tasks/needs.py --report REPORT.json --tasks TASKS.jsonl --kgfuse BIN --data STORE

For every task whose excluded worked example links to library functions (a
DS-1000 problem's `Origin` in the store `ds1000.py store` built: `kgfuse:exercises`,
resolved calls only), those functions are what the task needed: the API its
reference solution calls (for a perturbed problem, its origin's). Per condition of
a `run.py` report (`--out`), prints the share of needed functions the prompt
showed (over tasks that needed any), split by passed and failed tasks (or
`unasked`: a `run.py --contexts-only --out` file, what the prompts would show), and
the needed functions the tasks that did not pass most often did not get.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stores  # noqa: E402

EXERCISES = stores.KGFUSE + "exercises"


def needed_functions(kgfuse: str, data: str, cases: list[str]) -> dict[str, set[str]]:
    """Case IRI -> the functions it exercises (resolved calls)."""
    values = " ".join(f"<{case}>" for case in cases)
    query = f"SELECT ?case ?function WHERE {{ VALUES ?case {{ {values} }} ?case <{EXERCISES}> ?function }}"
    needed: dict[str, set[str]] = collections.defaultdict(set)
    for row in stores.select(kgfuse, data, query):
        needed[row["case"]].add(row["function"])
    return needed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", required=True, type=Path, help="run.py's --out file")
    parser.add_argument("--tasks", required=True, type=Path)
    parser.add_argument("--kgfuse", default="kgfuse")
    parser.add_argument("--data", required=True)
    args = parser.parse_args()
    tasks = {t["id"]: t for t in map(json.loads, args.tasks.read_text().splitlines()) if t}
    case_of = {tid: next((i for i in t.get("exclude", []) if "/case/" in i), None) for tid, t in tasks.items()}
    needed = needed_functions(args.kgfuse, args.data, sorted({c for c in case_of.values() if c}))
    results = json.loads(args.report.read_text())["results"]
    by_condition: dict[str, list[dict]] = collections.defaultdict(list)
    for result in results:
        by_condition[result["condition"]].append(result)
    for condition, rows in by_condition.items():
        if condition == "none":
            continue
        shares = {"pass": [], "fail": [], "unasked": []}
        missing: collections.Counter[str] = collections.Counter()
        for row in rows:
            need = needed.get(case_of.get(row["task"]) or "", set())
            if not need or "context_items" not in row:
                continue
            got = need & set(row["context_items"])
            outcome = row["kind"] if row["kind"] in ("pass", "unasked") else "fail"
            shares[outcome].append(len(got) / len(need))
            if outcome != "pass":
                missing.update(f.rsplit("/", 1)[-1] for f in need - got)
        line = ", ".join(
            f"{k} {sum(v) / len(v):.2f} of needed shown (n={len(v)})" for k, v in shares.items() if v
        )
        print(f"{condition}: {line}")
        print("  most missed by tasks that did not pass: " + ", ".join(f"{n} ({c})" for n, c in missing.most_common(8)))


if __name__ == "__main__":
    main()

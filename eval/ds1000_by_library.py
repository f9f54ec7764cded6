#!/usr/bin/env python3
"""Recall@k per DS-1000 library from `kgfuse eval --format json` output.

    python3 eval/ds1000_by_library.py QUESTIONS.jsonl EVAL.json [EVAL.json ...]

QUESTIONS.jsonl is the set eval/make_ds1000.py wrote (its `package` field names the
library); each EVAL.json is the JSON report of `kgfuse eval` on it (or on a subset of
it). Prints one Markdown table: a row per strategy, a column per library, each cell
"mean recall@k (questions)".
"""
import json
import sys
from collections import defaultdict


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    library = {}
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            if line.strip():
                item = json.loads(line)
                library[item["id"]] = item.get("package") or "?"
    libraries = sorted(set(library.values()))
    rows = []
    for path in sys.argv[2:]:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
        for strategy, queries in report["per_query"].items():
            recalls = defaultdict(list)
            for q in queries:
                recalls[library.get(q["id"], "?")].append(q["recall"])
            cells = []
            for lib in libraries:
                values = recalls.get(lib, [])
                cells.append(f"{sum(values) / len(values):.3f} ({len(values)})" if values else "-")
            rows.append(f"| {strategy} | " + " | ".join(cells) + " |")
    print("| strategy | " + " | ".join(libraries) + " |")
    print("|---|" + "---|" * len(libraries))
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

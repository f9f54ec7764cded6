#!/usr/bin/env python3
"""The pass@1 table of one or more `run.py` reports, per group and condition.

    python3 eval/tasks/table.py REPORT.json [REPORT.json ...] [--baseline none] [--tokens-vs flat]

Reports are merged (a later report's result for the same task and condition
replaces an earlier one), so conditions run separately (`none.json`,
`flat.json`, `unified.json`) make one table. Only tasks that every condition
answered count, so the conditions are compared on the same tasks. Prints, as
Markdown:

- per group (library) and overall: passed / tasks, pass@1 and its 95 % Wilson
  interval for every condition;
- per condition: context tokens (mean, and the ratio to `--tokens-vs`), model
  seconds (mean), failures by kind, and the paired comparison with `--baseline`
  (tasks only it passes, tasks only the baseline passes, and the two-sided exact
  sign-test p of those discordant pairs).
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import wilson  # noqa: E402


def merged(paths: list[Path]) -> dict[tuple[str, str], dict]:
    """(task, condition) -> result, later reports winning."""
    results: dict[tuple[str, str], dict] = {}
    for path in paths:
        for result in json.loads(path.read_text())["results"]:
            results[(result["task"], result["condition"])] = result
    return results


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact binomial p of `wins` against `losses` at even odds."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


def rate(rows: list[dict]) -> str:
    passed = sum(r["kind"] == "pass" for r in rows)
    low, high = wilson(passed, len(rows))
    share = passed / len(rows) if rows else 0.0
    return f"{passed}/{len(rows)} = {share:.3f} ({low:.3f}-{high:.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--baseline", default="none", help="the condition others are paired with")
    parser.add_argument("--tokens-vs", default="flat", help="the condition token counts are compared with")
    args = parser.parse_args()
    results = merged(args.reports)
    conditions = sorted({c for _, c in results}, key=lambda c: (c != args.baseline, c))
    tasks = sorted({t for t, _ in results if all((t, c) in results for c in conditions)})
    if not tasks:
        sys.exit("no task was answered under every condition")
    groups = sorted({results[(t, conditions[0])].get("group", "") for t in tasks})
    print(f"{len(tasks)} tasks answered under every condition\n")
    print("| group | " + " | ".join(conditions) + " |")
    print("|---|" + "---|" * len(conditions))
    for group in groups + ["all"]:
        chosen = [t for t in tasks if group == "all" or results[(t, conditions[0])].get("group", "") == group]
        cells = [rate([results[(t, c)] for t in chosen]) for c in conditions]
        print(f"| {group or '-'} | " + " | ".join(cells) + " |")
    print()
    print(f"| condition | context tokens (x {args.tokens_vs}) | model s | failures "
          f"| only it passes / only {args.baseline} passes (sign-test p) |")
    print("|---|---|---|---|---|")
    reference = args.tokens_vs if args.tokens_vs in conditions else None
    mean = lambda c, key: sum(results[(t, c)][key] for t in tasks) / len(tasks)  # noqa: E731
    for condition in conditions:
        tokens = mean(condition, "context_tokens")
        ratio = f" ({tokens / mean(reference, 'context_tokens'):.2f}x)" if reference and mean(reference, "context_tokens") else ""
        failures = collections.Counter(results[(t, condition)]["kind"] for t in tasks)
        failures.pop("pass", None)
        failed = ", ".join(f"{kind} {n}" for kind, n in sorted(failures.items()))
        passes = lambda c, t: results[(t, c)]["kind"] == "pass"  # noqa: E731
        wins = sum(passes(condition, t) and not passes(args.baseline, t) for t in tasks)
        losses = sum(passes(args.baseline, t) and not passes(condition, t) for t in tasks)
        paired = "-" if condition == args.baseline else f"{wins} / {losses} ({sign_test(wins, losses):.2f})"
        print(f"| {condition} | {tokens:.0f}{ratio} | {mean(condition, 'model_seconds'):.1f} | {failed} | {paired} |")


if __name__ == "__main__":
    main()

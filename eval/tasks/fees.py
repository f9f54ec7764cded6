#!/usr/bin/env python3
"""The fee domain (SGKR's case: DABstep's payment fees) as executable tasks for
`eval/tasks/run.py`.

    python3 eval/tasks/fees.py store --kgfuse BIN --data STORE
    python3 eval/tasks/fees.py tasks --kgfuse BIN --data STORE --out TASKS.jsonl

`store` builds the store the context comes from: the domain library of
fixtures/payment-fees (its code, tests and worked examples as cases, its
knowledge file). `tasks` writes the tasks: the 10 public DABstep dev tasks
(../shared/data/dabstep/dev.jsonl) and the fixture's worked examples whose
question is not one of them, each with its expected answer. A task asks for a
program that prints the answer; its check runs the program with the domain
library importable and the tables in `PAYMENT_FEES_DATA_DIR`, and compares the
last line printed with the expected answer under DABstep's rules (`same_answer`).

What no condition may see: the worked example of the task's own question (its
case, module and `solve` function are excluded from the context); and a task
whose expected answer the knowledge file states outright is left out (listed on
stderr), since any context that carries that text hands over the answer.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check  # noqa: E402
import stores  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures/payment-fees"
DEV = ROOT.parent / "shared/data/dabstep/dev.jsonl"


def normalise(answer: str) -> str:
    """An answer as DABstep compares it: trimmed, lower case, without surrounding
    quotes or a final full stop."""
    answer = answer.strip().lower()
    if len(answer) >= 2 and answer[0] == answer[-1] and answer[0] in "'\"":
        answer = answer[1:-1].strip()
    return answer.rstrip(".").strip()


def same_answer(given: str, expected: str) -> bool:
    """DABstep's rules: numbers equal within the expected answer's rounding (or a
    relative 1e-6); comma-separated lists equal as sets, item by item;
    `letter:value` pairs part by part; anything else equal as normalised text."""

    def scalar(a: str, b: str) -> bool:
        a, b = normalise(a), normalise(b)
        try:
            x, y = float(a), float(b)
        except ValueError:
            return a == b
        decimals = len(b.split(".")[1]) if "." in b else 0
        return abs(x - y) <= max(0.5 * 10 ** -decimals, 1e-6 * abs(y))

    def item(a: str, b: str) -> bool:
        if ":" in b and a.count(":") == b.count(":"):
            return all(scalar(x, y) for x, y in zip(a.split(":"), b.split(":")))
        return scalar(a, b)

    if "," in expected:
        wanted = [e for e in expected.split(",") if e.strip()]
        got = [g for g in given.split(",") if g.strip()]
        if len(wanted) != len(got):
            return False
        unmatched = list(wanted)
        for g in got:
            match = next((w for w in unmatched if item(g, w)), None)
            if match is None:
                return False
            unmatched.remove(match)
        return True
    return item(given, expected)


CHECK = '''
import contextlib, io, sys
sys.path.insert(0, {fixture!r})
{scorer}
_out = io.StringIO()
with contextlib.redirect_stdout(_out):
    exec(compile([solution], "solution.py", "exec"),
         {{"__name__": "__main__", "__file__": "solution.py", "__package__": None}})
_lines = [line for line in _out.getvalue().splitlines() if line.strip()]
_given = _lines[-1] if _lines else ""
print("printed:", _given)
assert same_answer(_given, {expected!r}), (_given, {expected!r})
'''


def check_program(expected: str) -> str:
    """The check for one task, with `[solution]` standing for the code."""
    scorer = inspect.getsource(normalise) + "\n" + inspect.getsource(same_answer)
    return CHECK.format(fixture=str(FIXTURE), scorer=scorer, expected=expected)


def tables() -> str:
    """The tables as the prompt describes them: file and fields."""
    lines = []
    for path in sorted((FIXTURE / "data").glob("*.json")):
        records = json.loads(path.read_text())
        fields = ", ".join(records[0]) if records else ""
        lines.append(f"- {path.name} ({len(records)} records): {fields}")
    return "\n".join(lines)


PROMPT = """Write a Python program that prints the answer to this question about card-payment fees; the answer must be the last line it prints.

Question: {question}
{guidelines}
The data are JSON files, each a list of records, in the directory named by the environment variable PAYMENT_FEES_DATA_DIR:
{tables}
A fee rule charges fixed_amount + rate * transaction_value / 10000 EUR. The Python package `payment_fees` (importable) is the domain library for these tables.
"""


def example_answer(doc: str) -> tuple[str, str]:
    """A worked example's docstring as (question, expected answer)."""
    question, _, answer = doc.partition("Expected answer:")
    return question.strip(), " ".join(answer.split())


def examples() -> dict[str, tuple[str, str]]:
    """The fixture's worked examples: module name -> (question, expected answer)."""
    found = {}
    for path in sorted((FIXTURE / "examples").glob("*.py")):
        doc = re.match(r'\s*"""(.*?)"""', path.read_text(), re.S)
        if doc and "Expected answer:" in doc.group(1):
            found[f"examples.{path.stem}"] = example_answer(doc.group(1))
    return found


def stated_in_knowledge(expected: str, knowledge: str) -> bool:
    """Whether the knowledge file states the answer (every item of a list) as a
    word of its text."""
    items = [normalise(i) for i in expected.split(",") if i.strip()]
    if not items or items == ["not applicable"]:
        return False
    text = knowledge.lower()
    return all(re.search(rf"(?<![\w.]){re.escape(i)}(?![\w])", text) for i in items)


def dev_number(module: str) -> str | None:
    """The DABstep dev task a worked example answers (`q_dev1273_...` -> `1273`)."""
    found = re.search(r"\.q_dev(\d+)_", module)
    return found.group(1) if found else None


def candidates(worked: dict[str, tuple[str, str]]) -> list[dict]:
    """The DABstep dev tasks, then the worked examples that are not one of them,
    each as (id, group, question, guidelines, expected answer, own examples)."""
    chosen = []
    dev_ids = set()
    for line in DEV.read_text().splitlines():
        task = json.loads(line)
        dev_ids.add(task["task_id"])
        own = [m for m in worked if dev_number(m) == task["task_id"]]
        chosen.append({"id": f"dabstep-{task['task_id']}", "group": "dabstep-dev",
                       "question": task["question"], "guidelines": task.get("guidelines", ""),
                       "expected": str(task["answer"]), "own": own})
    for module, (question, expected) in worked.items():
        if dev_number(module) in dev_ids:
            continue  # the dev task itself is in the set
        chosen.append({"id": module.removeprefix("examples."), "group": "fixture",
                       "question": question, "guidelines": "", "expected": expected,
                       "own": [module]})
    return chosen


def check_references(references: list[tuple[str, str, str]], env: dict) -> None:
    """The worked examples are the references: each must pass its task's check."""
    for task_id, module, program in references:
        source = (FIXTURE / (module.replace(".", "/") + ".py")).read_text()
        outcome = check.run(program.replace("[solution]", repr(source)), sys.executable, 60, extra_env=env)
        print(f"reference of {task_id}: {outcome.kind}")
        if outcome.kind != "pass":
            raise SystemExit(f"the worked example {module} fails its own check:\n{outcome.detail}")


def tasks(args: argparse.Namespace) -> None:
    knowledge = (FIXTURE / "knowledge.toml").read_text()
    nodes = stores.example_nodes(args.kgfuse, args.data, "examples.q_")
    env = {"PAYMENT_FEES_DATA_DIR": str(FIXTURE / "data")}
    references: list[tuple[str, str, str]] = []
    described = tables()
    written = 0
    with open(args.out, "w") as out:
        for task in candidates(examples()):
            if stated_in_knowledge(task["expected"], knowledge):
                print(f"left out {task['id']}: the knowledge file states its answer {task['expected']!r}",
                      file=sys.stderr)
                continue
            program = check_program(task["expected"])
            references += [(task["id"], module, program) for module in task["own"][:1]]
            guidelines = task["guidelines"]
            prompt = PROMPT.format(
                question=task["question"],
                guidelines=f"Answer format: {guidelines}\n" if guidelines else "",
                tables=described,
            )
            out.write(json.dumps({
                "id": task["id"],
                "group": task["group"],
                "prompt": prompt,
                "question": task["question"],
                "check": program,
                "exclude": [iri for m in task["own"] for iri in nodes.get(m, [])],
                "env": env,
            }) + "\n")
            written += 1
    print(f"{written} tasks in {args.out}")
    check_references(references, env)


def store(args: argparse.Namespace) -> None:
    """The fee domain's store: the fixture's code, tests, examples and knowledge."""
    stores.build(args.kgfuse, args.data, args.embedder, [
        ["ingest", "code", str(FIXTURE), "--knowledge", str(FIXTURE / "knowledge.toml")],
        ["index", "cases"],
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    s = commands.add_parser("store", help="build the fee domain's kgfuse store")
    s.add_argument("--kgfuse", default="kgfuse")
    s.add_argument("--data", required=True)
    s.add_argument("--embedder", default="hash", choices=["hash", "static", "minilm"])
    t = commands.add_parser("tasks", help="write the fee tasks for run.py")
    t.add_argument("--kgfuse", default="kgfuse")
    t.add_argument("--data", required=True, help="the store `store` built")
    t.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.command == "store":
        store(args)
    else:
        tasks(args)


if __name__ == "__main__":
    main()

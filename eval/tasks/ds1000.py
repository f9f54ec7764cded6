#!/usr/bin/env python3
"""DS-1000 as executable tasks for `eval/tasks`.

    python3 eval/tasks/ds1000.py validate --python VENV/bin/python [--split origin] [--jobs 2]

`validate` runs every problem's reference solution through the problem's own
check in the given environment and writes one line per problem (id, library,
kind, seconds) to the harness's cache, then prints the counts per library and
kind. DS-1000 was written against older library versions: a problem whose
reference fails here is excluded from every condition, and the report says how
many and why.

Splits: `origin` (the `Origin` problems: development and tuning) and `test`
(the stratified sample of perturbed problems listed in
eval/tasks/ds1000-test-ids.txt: run only for the final report).
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import gzip
import json
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check  # noqa: E402
import stores  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared/data/ds1000/ds1000.jsonl.gz"
TEST_IDS = Path(__file__).resolve().parent / "ds1000-test-ids.txt"
#: The libraries whose environments install here (PyTorch and TensorFlow are
#: left out: see EVALUATION.md).
LIBRARIES = ("Numpy", "Pandas", "Scipy", "Sklearn", "Matplotlib")


def problems(split: str, data: Path = DATA) -> list[dict]:
    """The problems of a split, in DS-1000's order."""
    rows = [json.loads(line) for line in gzip.open(data, "rt")]
    rows = [r for r in rows if r["metadata"]["library"] in LIBRARIES]
    if split == "origin":
        return [r for r in rows if r["metadata"]["perturbation_type"] == "Origin"]
    if split == "test":
        wanted = {int(line) for line in TEST_IDS.read_text().split() if line.strip()}
        return [r for r in rows if r["metadata"]["problem_id"] in wanted]
    raise SystemExit(f"unknown split {split!r}: origin or test")


#: The seaborn example datasets the Origin problems load; fetched once by
#: `prepare` (with network) so that checks run without it.
SEABORN_DATASETS = ("penguins", "tips", "planets", "exercise")


def seaborn_data() -> Path:
    """The seaborn data cache the checks read (`SEABORN_DATA`)."""
    return check.scratch_root() / "seaborn-data"


def check_env() -> dict[str, str]:
    """Environment variables every DS-1000 check gets."""
    return {"SEABORN_DATA": str(seaborn_data())}


def prepare(args: argparse.Namespace) -> None:
    """Fetches the seaborn datasets into the cache, with the task environment."""
    names = ", ".join(repr(n) for n in SEABORN_DATASETS)
    script = (
        "import seaborn as sns\n"
        f"for name in ({names},):\n"
        f"    sns.load_dataset(name, data_home={str(seaborn_data())!r})\n"
    )
    subprocess.run([args.python, "-c", script], check=True)
    print(f"seaborn data in {seaborn_data()}")


def check_template(problem: dict) -> str:
    """The problem's check as DS-1000's own harness builds it, with `[solution]`
    standing for the solution as a string literal (the form `run.py` fills)."""
    text = problem["code_context"] + "\ncode = [solution]\ntest_execution(code)\n"
    if "test_string(" in problem["code_context"]:
        text += "test_string(code)\n"
    return text


def program(problem: dict, solution: str) -> str:
    """The problem's check applied to `solution`."""
    return check_template(problem).replace("[solution]", repr(solution))


def question_of(problem: dict) -> str:
    """The problem's question: its prompt without the code it starts from."""
    text = problem["prompt"].split("\nA:\n")[0].removeprefix("Problem:\n").strip()
    if problem["metadata"]["library"] == "Matplotlib":
        # Matplotlib problems are code whose comments say what to draw.
        lines = text.split("# SOLUTION START")[0].splitlines()
        text = "\n".join(line.lstrip("# ") for line in lines if line.startswith("#"))
    return text


def setup_code(problem: dict) -> str:
    """The code the problem starts from (its imports and inputs)."""
    if problem["metadata"]["library"] == "Matplotlib":
        return problem["prompt"].split("# SOLUTION START")[0]
    found = re.search(r"\nA:\s*<code>\n(.*?)</code>", problem["prompt"], re.S)
    return found.group(1) if found else ""


def docstring(text: str) -> str:
    """`text` as a Python docstring literal."""
    return '"""' + text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"') + '\n"""'


def example_source(problem: dict) -> str:
    """An Origin problem as a worked example in kgfuse's layout for example files:
    the question as the module docstring, the imports at module level and the
    inputs and reference solution in `solve()`, so that code ingest links the case
    to the library functions it calls (`kgfuse:exercises`)."""
    imports: list[str] = []
    body: list[str] = []
    for line in (setup_code(problem) + "\n" + problem["reference_code"]).splitlines():
        if re.match(r"(import|from)\s", line):
            if line not in imports:
                imports.append(line)
        elif line.strip():
            body.append("    " + line)
    return "\n".join([docstring(question_of(problem)), "", *imports, "", "", "def solve():", *body, ""])


#: Where the worked examples are written under the store's source tree; their
#: module is `examples.ds1000_<problem id>`.
EXAMPLES = "examples"


def example_module(problem_id: int) -> str:
    """The qualified name of a problem's worked example in the store."""
    return f"{EXAMPLES}.ds1000_{problem_id}"


#: The import names of the five libraries, as installed in the environment.
PACKAGES = ("numpy", "pandas", "scipy", "sklearn", "matplotlib")


def source_tree(args: argparse.Namespace) -> Path:
    """The tree one ingest reads: the five libraries as installed in the task
    environment (links into its site-packages: the versions the checks run) and
    the Origin problems as example files. One run, so that the examples' calls
    resolve through the libraries' re-exports (`np.mean` ->
    `numpy.core.fromnumeric.mean`)."""
    site = subprocess.run(
        [args.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    root = Path(args.data).absolute().parent / (Path(args.data).name + "-src")
    if root.exists():
        shutil.rmtree(root)
    (root / EXAMPLES).mkdir(parents=True)
    for package in PACKAGES:
        (root / package).symlink_to(Path(site) / package, target_is_directory=True)
    chosen = problems("origin")
    for problem in chosen:
        name = example_module(problem["metadata"]["problem_id"]).split(".")[-1]
        (root / EXAMPLES / f"{name}.py").write_text(example_source(problem))
    print(f"{len(chosen)} worked examples in {root / EXAMPLES}", file=sys.stderr)
    return root


def store(args: argparse.Namespace) -> None:
    """A kgfuse store for the tasks: the libraries' sources as installed, the
    Origin problems as worked examples linked to the functions they call, the
    case base, and `examples.json` (each problem's example nodes, for exclusion)."""
    root = source_tree(args)
    stores.build(args.kgfuse, args.data, args.embedder, [["ingest", "code", str(root)], ["index", "cases"]])
    # Problem id -> its example's nodes (case, module, `solve`).
    nodes = {module.removeprefix(f"{EXAMPLES}.ds1000_"): iris
             for module, iris in stores.example_nodes(args.kgfuse, args.data, f"{EXAMPLES}.ds1000_").items()}
    (Path(args.data) / "examples.json").write_text(json.dumps(nodes, indent=1))
    print(f"{len(nodes)} problems' example nodes in {Path(args.data) / 'examples.json'}")


def origin_ids(data: Path = DATA) -> dict[int, int]:
    """Problem id -> the problem id of its `Origin` (DS-1000's
    `perturbation_origin_id` counts within the library, not across the set, and
    may name another perturbation: followed until an `Origin`)."""
    metas = [json.loads(line)["metadata"] for line in gzip.open(data, "rt")]
    by_library = {(m["library"], m["library_problem_id"]): m for m in metas}

    def origin(meta: dict) -> int:
        for _ in range(len(metas)):
            if meta["perturbation_type"] == "Origin":
                return meta["problem_id"]
            meta = by_library[(meta["library"], meta["perturbation_origin_id"])]
        raise ValueError(f"no Origin for problem {meta['problem_id']}")

    return {m["problem_id"]: origin(m) for m in metas}


def stratified_sample(chosen: list[dict], size: int, seed: int) -> list[dict]:
    """`size` of the problems, each library in proportion to its share, drawn with
    `seed`, in DS-1000's order (a development subset small enough for a model run)."""
    by_library: dict[str, list[dict]] = collections.defaultdict(list)
    for problem in chosen:
        by_library[problem["metadata"]["library"]].append(problem)
    rng = random.Random(seed)
    picked = set()
    for library in LIBRARIES:
        share = round(size * len(by_library[library]) / len(chosen))
        picked.update(p["metadata"]["problem_id"] for p in rng.sample(by_library[library], share))
    return [p for p in chosen if p["metadata"]["problem_id"] in picked]


def tasks(args: argparse.Namespace) -> None:
    """The split's problems whose reference passes in the environment, as tasks
    for `run.py`: DS-1000's prompt, its check, and the worked examples of the same
    origin excluded from the context."""
    passing = {
        r["id"]
        for r in map(json.loads, Path(args.validated).read_text().splitlines())
        if r["kind"] == "pass"
    }
    examples = json.loads((Path(args.data) / "examples.json").read_text())
    origins = origin_ids()
    chosen = [p for p in problems(args.split) if p["metadata"]["problem_id"] in passing]
    if args.sample:
        chosen = stratified_sample(chosen, args.sample, args.seed)
    written = 0
    with open(args.out, "w") as out:
        for problem in chosen:
            meta = problem["metadata"]
            question = question_of(problem)
            task = {
                "id": f"ds1000-{meta['problem_id']}",
                "group": meta["library"],
                "prompt": problem["prompt"],
                "question": question,
                "check": check_template(problem),
                "exclude": examples[str(origins[meta["problem_id"]])],
                "env": check_env(),
            }
            out.write(json.dumps(task) + "\n")
            written += 1
    print(f"{written} tasks in {args.out}")


def validate(args: argparse.Namespace) -> None:
    chosen = problems(args.split)
    out_dir = check.scratch_root() / "ds1000"
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"reference-{args.split}-{Path(args.python).absolute().parent.parent.name}.jsonl"

    def one(problem: dict) -> dict:
        outcome = check.run(
            program(problem, problem["reference_code"]),
            args.python,
            args.timeout,
            extra_env=check_env(),
        )
        meta = problem["metadata"]
        return {
            "id": meta["problem_id"],
            "library": meta["library"],
            "kind": outcome.kind,
            "seconds": round(outcome.seconds, 2),
            "detail": outcome.detail[-300:],
        }

    results = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for n, result in enumerate(pool.map(one, chosen), 1):
            results.append(result)
            if n % 20 == 0:
                print(f"{n}/{len(chosen)}", file=sys.stderr, flush=True)
    with out.open("w") as file:
        for result in results:
            file.write(json.dumps(result) + "\n")
    counts = collections.Counter((r["library"], r["kind"]) for r in results)
    for library in LIBRARIES:
        row = {kind: counts[(library, kind)] for kind in check.KINDS}
        print(library, row)
    print("all", dict(collections.Counter(r["kind"] for r in results)))
    print(f"written: {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    v = commands.add_parser("validate", help="run every reference solution through its check")
    v.add_argument("--python", required=True, help="the task environment's interpreter")
    v.add_argument("--split", default="origin", choices=["origin", "test"])
    v.add_argument("--jobs", type=int, default=2)
    v.add_argument("--timeout", type=float, default=120.0)
    t = commands.add_parser("tasks", help="write the split's tasks for run.py")
    t.add_argument("--split", default="origin", choices=["origin", "test"])
    t.add_argument("--validated", required=True, help="validate's output for the environment")
    t.add_argument("--data", required=True, help="the store `store` built (its examples.json)")
    t.add_argument("--out", required=True)
    t.add_argument("--sample", type=int, help="only this many, stratified by library")
    t.add_argument("--seed", type=int, default=46, help="the sample's seed")
    st = commands.add_parser("store", help="build the kgfuse store the tasks' context comes from")
    st.add_argument("--kgfuse", default="kgfuse")
    st.add_argument("--python", required=True, help="the task environment's interpreter")
    st.add_argument("--data", required=True, help="the new store's directory")
    st.add_argument("--embedder", default="hash", choices=["hash", "static", "minilm"])
    p = commands.add_parser("prepare", help="fetch the data the checks read (network needed)")
    p.add_argument("--python", required=True, help="the task environment's interpreter")
    args = parser.parse_args()
    if args.command == "validate":
        validate(args)
    elif args.command == "prepare":
        prepare(args)
    elif args.command == "tasks":
        tasks(args)
    elif args.command == "store":
        store(args)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Function tasks (from `functions.py tasks`) bound to a kgfuse store and to the
contexts the task set computes itself, ready for `run.py`:

    python3 eval/tasks/function_contexts.py --tasks TASKS.jsonl --masked DIR \\
        --kgfuse BIN --data STORE --out BOUND.jsonl [--embedder hash|minilm] [--rebuild]

1. **The store** is built from DIR, the package with the bodies of all the tasks'
   functions left out (`functions.py masked`), so no call edge, code text or
   vector derives from a reference body: `kgfuse init`, `kgfuse ingest code DIR`
   (its tests become worked examples), `kgfuse index cases`. Built once; kept
   unless `--rebuild`.
2. **Exclusions**: the worked examples (test functions) that exercise a task's
   function are left out of its kgfuse context (`exclude`, by IRI, read from the
   store by qualified name). The function itself stays in the store as the
   masked tree has it (signature and docstring, no body, no calls): the question
   declares it, as an editor's stub does, and `unified` reads its place (its
   class and module) from it; a strategy that shows it only repeats the question,
   as the bm25-chunks window holding its `def` does.
3. **Needs**: the IRIs of the package functions the reference calls (`callees`),
   the target of dependency recall.
4. **bm25-chunks**: BM25 over 20-line windows of DIR (chunks.py), the windows of
   the excluded tests left out, asked the task's question.
5. **oracle**: the signature and the docstring's first paragraph of exactly the
   functions the reference calls, read from the original source: the only
   condition that reads the reference.

Every condition's context is then cut to the same budget by `run.py
--budget-tokens`.
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import chunks  # noqa: E402
import stores  # noqa: E402

#: Most windows a bm25-chunks context offers (the budget cuts it further).
MAX_WINDOWS = 20
#: Longest docstring paragraph an oracle item keeps, in characters.
SUMMARY_CHARS = 400


def python_files(root: Path) -> list[tuple[str, str]]:
    """Every `.py` file under `root` (path relative to it, dotted module name
    from the path)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        parts = list(relative.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append((str(relative), ".".join(parts)))
    return out


def qualified_names(kgfuse: str, data: str) -> dict[str, str]:
    """Qualified name -> IRI of every function and case node in the store."""
    rows = stores.select(kgfuse, data, f"SELECT ?node ?name WHERE {{ ?node <{stores.KGFUSE}qualifiedName> ?name }}")
    return {row["name"]: row["node"] for row in rows}


def resolve(name: str, iri_of: dict[str, str]) -> str | None:
    """The IRI of a qualified name, also when the store names the module from a
    different root (`src.pkg.mod.f` / `pkg.mod.f`): the longest suffix match."""
    if name in iri_of:
        return iri_of[name]
    parts = name.split(".")
    for cut in range(1, len(parts) - 1):
        suffix = ".".join(parts[cut:])
        if suffix in iri_of:
            return iri_of[suffix]
    matches = [iri for known, iri in iri_of.items() if known.endswith("." + name)]
    return matches[0] if len(matches) == 1 else None


def build_store(args: argparse.Namespace) -> None:
    """The kgfuse store of the masked package, unless it exists."""
    data = Path(args.data)
    if data.exists() and not args.rebuild:
        print(f"using the store in {data}", file=sys.stderr)
        return
    if data.exists():
        shutil.rmtree(data)
    stores.build(args.kgfuse, str(data), args.embedder,
                 [["ingest", "code", str(args.masked)], ["index", "cases"]])


def test_ranges(masked: Path, names: list[str]) -> dict[str, list[tuple[int, int]]]:
    """File -> line ranges of the named test functions (`tests.test_x.test_y`,
    `tests.test_x.TestZ.test_y`) in the masked tree."""
    wanted = set(names)
    out: dict[str, list[tuple[int, int]]] = {}
    for relative, module in python_files(masked):
        try:
            tree = ast.parse((masked / relative).read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue

        def visit(node: ast.AST, prefix: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{prefix}.{child.name}"
                    if name in wanted or any(w.endswith("." + name) or name.endswith("." + w) for w in wanted):
                        out.setdefault(relative, []).append((child.lineno, child.end_lineno or child.lineno))
                    visit(child, name)

        visit(tree, module)
    return out


def signature_item(source_root: Path, qualname: str, iri: str | None) -> dict | None:
    """An oracle item: `- def name(params) -> ret  (in module): summary`, read
    from the original source."""
    for relative, module in python_files(source_root):
        inside = within_module(qualname, module)
        if inside is None:
            continue
        path = source_root / relative
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        node = find_definition(tree, inside.split("."))
        if node is None:
            continue
        returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
        line = f"- def {node.name}({ast.unparse(node.args)}){returns}  (in {qualname.rsplit('.', 1)[0]})"
        doc = (ast.get_docstring(node) or "").split("\n\n")[0].strip()
        text = line + (f": {' '.join(doc.split())[:SUMMARY_CHARS]}" if doc else "")
        return {"text": text, "shows": [iri] if iri else [], "iri": iri or qualname}
    return None


def within_module(qualname: str, module: str) -> str | None:
    """The part of `qualname` inside `module` (also when the module's dotted path
    carries a source folder: `src.pkg.mod` holds `pkg.mod.f`), or None."""
    parts = module.split(".")
    for cut in range(len(parts)):
        prefix = ".".join(parts[cut:])
        if prefix and qualname.startswith(prefix + "."):
            return qualname[len(prefix) + 1:]
    return None


def find_definition(tree: ast.AST, path: list[str]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The function at `path` (class names, then the function's) in `tree`."""
    node = tree
    for step in path:
        found = None
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and child.name == step:
                found = child
                break
        if found is None:
            return None
        node = found
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def bind(task: dict, args: argparse.Namespace, iri_of: dict[str, str], all_windows: list[chunks.Window]) -> dict:
    """The task with its store, exclusions, needs and own contexts."""
    tests = task.get("test_functions", [])
    excluded = [iri for iri in (resolve(t, iri_of) for t in tests) if iri]
    needs = [iri for iri in (resolve(c, iri_of) for c in task.get("callees", [])) if iri]
    # The windows of the tests that exercise the task are left out, as kgfuse's
    # `--exclude` leaves out their worked examples.
    skip = test_ranges(args.masked, tests)
    candidates = [w for w in all_windows
                  if not any(a <= w.end and w.start <= b for a, b in skip.get(w.file, []))]
    windows = chunks.best_windows(candidates, task.get("question", ""), MAX_WINDOWS)
    chunk_iris = {name: iri for name, iri in ((n, resolve(n, iri_of)) for w in windows for n in w.shows) if iri}
    source_root = Path(task["env"]["KGFUSE_FUNCTION_SRC"])
    oracle = [item for item in (signature_item(source_root, c, resolve(c, iri_of))
                                for c in task.get("callees", [])) if item]
    return {
        **task,
        "data": str(Path(args.data).absolute()),
        "exclude": excluded,
        "needs": needs,
        "contexts": {"bm25-chunks": chunks.items(windows, chunk_iris), "oracle": oracle},
        "unresolved": sorted(set(task.get("callees", [])) - {c for c in task.get("callees", [])
                                                               if resolve(c, iri_of)}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", required=True, type=Path)
    parser.add_argument("--masked", required=True, type=Path, help="`functions.py masked`'s tree")
    parser.add_argument("--kgfuse", default="kgfuse")
    parser.add_argument("--data", required=True)
    parser.add_argument("--embedder", default="hash", choices=["hash", "static", "minilm"])
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    tasks = [json.loads(line) for line in args.tasks.read_text().splitlines() if line.strip()]
    build_store(args)
    iri_of = qualified_names(args.kgfuse, args.data)
    all_windows = chunks.windows(args.masked, python_files(args.masked))
    with open(args.out, "w") as out:
        for task in tasks:
            bound = bind(task, args, iri_of, all_windows)
            if bound["unresolved"]:
                print(f"{task['id']}: callees not in the store: {bound['unresolved']}", file=sys.stderr)
            out.write(json.dumps(bound) + "\n")
    print(f"{len(tasks)} tasks bound to {args.data} in {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()

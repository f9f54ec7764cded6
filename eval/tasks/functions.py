#!/usr/bin/env python3
"""Function tasks from real packages: write a function of a pure-Python package
back, given its file with the body left out, so that the package's own tests pass.

    python3 eval/tasks/functions.py prepare NAME==VERSION [--dir SRC_DIR]
    python3 eval/tasks/functions.py tasks NAME==VERSION --sample N --seed S [--out TASKS.jsonl] [--list FILE]
    python3 eval/tasks/functions.py masked NAME==VERSION --tasks TASKS.jsonl --out DIR
    python3 eval/tasks/functions.py validate --tasks TASKS.jsonl

`prepare` fetches the package's sdist (`pip download --no-binary :all:`; or copies
SRC_DIR), makes a venv for it (pytest, coverage, its declared test requirements,
the package itself), runs its test suite once, offline, under coverage with one
dynamic context per test (its node id), and records for every function and method of
the package's own source the tests that ran lines of its body. `tasks` samples
functions with a docstring, a body of at least three statements, a call to another
function of the package (resolved statically) and a passing test, and writes one
task per function for `run.py`. `masked` writes the package's source and tests
with every task's body left out: what the kgfuse store is built from. `validate`
runs each task's check on the original body (must pass) and on a stub (must fail).

No package has code of its own here: everything is read from the package's files
and metadata. Caches live under `check.scratch_root()/functions/NAME-VERSION/`
(`$CARGO_TARGET_DIR/tasks`, else `~/.cache/kgfuse-target/tasks`). Progress goes to
stderr, results to stdout. The script runs on the system python3 (stdlib only);
pytest and coverage live in each package's venv.
"""

from __future__ import annotations

import argparse
import ast
import collections
import concurrent.futures
import configparser
import dataclasses
import inspect
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
import tokenize
import tomllib
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check  # noqa: E402

#: Most test node ids a task runs.
MAX_TESTS = 20

#: A test slower than this (seconds, in the coverage run) is not used by a task.
MAX_TEST_SECONDS = 10.0

#: Seconds the whole test suite may take under coverage.
SUITE_TIMEOUT = 1800

#: Extras, dependency groups and requirement files that hold test requirements;
#: the development ones are read only when a package declares none of these.
TEST_KEYS = ("test", "tests", "testing")
DEV_KEYS = ("dev", "development")

#: Directories never copied or searched: caches, builds, VCS.
SKIPPED_DIRS = {"__pycache__", ".git", ".hg", ".tox", ".nox", ".venv", "venv", ".pytest_cache",
                ".mypy_cache", ".eggs", "node_modules"}

#: Files never copied.
SKIPPED_FILES = ("*.pyc", ".coverage", ".coverage.*")

#: The pytest plugin the coverage run loads: each test's outcome and duration,
#: where its test function is defined, and coverage's dynamic context switched to the
#: test's node id while it runs (a `test_function` context names a function, which
#: inherited test methods and parametrisations share: their lines would be credited
#: to every test of that name).
OUTCOMES_PLUGIN = '''\
"""Test outcomes for kgfuse's eval/tasks/functions.py (written by it)."""
import inspect
import json
import os

import coverage
import pytest

_results = {}
_status = []


def _definition(item):
    """Where the test function is defined: [absolute file, qualified name]."""
    if not isinstance(item, pytest.Function):
        return None
    function = inspect.unwrap(getattr(item.obj, "__func__", item.obj))
    try:
        path = inspect.getsourcefile(function)
    except TypeError:
        return None
    return [os.path.abspath(path), function.__qualname__] if path else None


def pytest_collection_modifyitems(items):
    for item in items:
        _results[item.nodeid] = {"outcome": "passed", "seconds": 0.0, "definition": _definition(item)}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    current = coverage.Coverage.current()
    if current is not None:
        current.switch_context(item.nodeid)
    try:
        yield
    finally:
        if current is not None:
            current.switch_context("")


def pytest_runtest_logreport(report):
    entry = _results.setdefault(report.nodeid, {"outcome": "passed", "seconds": 0.0, "definition": None})
    entry["seconds"] += report.duration
    if hasattr(report, "wasxfail"):
        entry["outcome"] = "xfail"
    elif report.failed:
        entry["outcome"] = "failed"
    elif report.skipped and entry["outcome"] == "passed":
        entry["outcome"] = "skipped"


def pytest_sessionfinish(session, exitstatus):
    _status.append(int(exitstatus))
    with open(os.environ["KGFUSE_OUTCOMES"], "w") as out:
        json.dump(_results, out)


def pytest_unconfigure(config):
    """A test that left a non-daemon thread running would keep the process (and
    coverage's save at exit) waiting for ever: save now and leave."""
    import sys
    import threading
    stray = [t for t in threading.enumerate()
             if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if not stray:
        return
    try:
        current = coverage.Coverage.current()
        if current is not None:
            current.stop()
            current.save()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_status[-1] if _status else 1)
'''


def say(message: str) -> None:
    """Progress on stderr."""
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Splicing: shared by `tasks` (masking), `masked` and the checks, whose program
# embeds these functions' source (so they use only ast, io, textwrap, tokenize).
# --------------------------------------------------------------------------


def indentation(line):
    """The leading whitespace of a line."""
    return line[: len(line) - len(line.lstrip())]


def string_rows(text):
    """Numbers (1-based) of the lines of `text` that continue a multi-line token
    (a string), whose indentation is part of the string and must not change."""
    rows = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.end[0] > token.start[0]:
                rows.update(range(token.start[0] + 1, token.end[0] + 1))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return rows


def shift_block(text, old, new):
    """The lines of `text` with the leading indentation `old` replaced by `new`
    (lines inside multi-line strings left as they are)."""
    inside = string_rows(text)
    lines = []
    for number, line in enumerate(text.splitlines(), 1):
        if number in inside:
            lines.append(line)
        elif not line.strip():
            lines.append("")
        else:
            lines.append(new + (line[len(old):] if line.startswith(old) else line.lstrip()))
    return lines


def find_function(tree, lineno, name):
    """The definition of function `name` whose `def` is on line `lineno`."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno == lineno \
                and node.name == name:
            return node
    raise LookupError(f"no function {name} defined on line {lineno}")


def function_span(lines, node):
    """(first line with the decorators, last line of the header: the docstring's,
    last line of the function) of a function, 1-based; the last line takes in
    comment lines right after the body that are indented deeper than the `def`."""
    first = min([d.lineno for d in node.decorator_list] + [node.lineno])
    has_doc = ast.get_docstring(node, clean=False) is not None
    header_end = node.body[0].end_lineno if has_doc else node.body[0].lineno - 1
    end = node.end_lineno
    depth = len(indentation(lines[node.lineno - 1]))
    row = end
    while row < len(lines):
        text = lines[row]
        if text.strip() and not (text.lstrip().startswith("#") and len(indentation(text)) > depth):
            break
        row += 1
        if text.strip():
            end = row
    return first, header_end, end


def body_indent(lines, node):
    """The indentation of the function's statements."""
    has_doc = ast.get_docstring(node, clean=False) is not None
    statements = node.body[1:] if has_doc else node.body
    if statements:
        return indentation(lines[statements[0].lineno - 1])
    return indentation(lines[node.lineno - 1]) + "    "


def reply_function(tree, name):
    """The reply's definition of `name`: at its top level or in one of its classes."""
    for statement in tree.body:
        candidates = statement.body if isinstance(statement, ast.ClassDef) else [statement]
        for candidate in candidates:
            if isinstance(candidate, (ast.FunctionDef, ast.AsyncFunctionDef)) and candidate.name == name:
                return candidate
    return None


def splice(source, lineno, name, solution):
    """`source` with the function `name` (its `def` on line `lineno`) replaced by
    `solution`: the reply's `def name` (re-indented; the original decorators kept
    when it has none), else the reply as the body under the original `def` line and
    docstring. Raises SyntaxError when the reply or the result does not parse."""
    lines = source.splitlines()
    node = find_function(ast.parse(source), lineno, name)
    first, header_end, end = function_span(lines, node)
    reply_text = textwrap.dedent(solution).strip("\n")
    reply_lines = reply_text.splitlines()
    found = reply_function(ast.parse(reply_text), name)
    if found is not None:
        start = min([d.lineno for d in found.decorator_list] + [found.lineno])
        block = "\n".join(reply_lines[start - 1:found.end_lineno])
        new = shift_block(block, indentation(reply_lines[found.lineno - 1]),
                          indentation(lines[node.lineno - 1]))
        head = lines[:(first if found.decorator_list else node.lineno) - 1]
    else:
        new = shift_block(reply_text, "", body_indent(lines, node))
        head = lines[:header_end]
    result = "\n".join(head + new + lines[end:]) + "\n"
    compile(result, "<spliced>", "exec", dont_inherit=True)
    return result


def mask(source, targets):
    """`source` with the bodies of the functions `targets` ((lineno, name) pairs)
    replaced by `...`; signature, decorators and docstring kept."""
    lines = source.splitlines()
    tree = ast.parse(source)
    nodes = [find_function(tree, lineno, name) for lineno, name in targets]
    for node in sorted(nodes, key=lambda n: n.lineno, reverse=True):
        _, header_end, end = function_span(lines, node)
        lines[header_end:end] = [body_indent(lines, node) + "..."]
    return "\n".join(lines) + "\n"


SPLICE_HELPERS = (indentation, string_rows, shift_block, find_function, function_span,
                  body_indent, reply_function, splice)

#: The check: copies the package source, splices the solution into the target
#: file and runs the task's tests with the package venv's interpreter.
CHECK = '''\
import ast, io, os, shutil, subprocess, sys, textwrap, tokenize

TASK = __TASK__
SOLUTION = [solution]

__HELPERS__

def die_with_parent():
    """The tests' process ends with the check's (a timed-out check is killed)."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except Exception:
        pass


def main():
    shutil.copytree(os.environ["KGFUSE_FUNCTION_SRC"], ".", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".coverage*"))
    path = os.path.join(TASK["import_root"], TASK["file"])
    with open(path, encoding="utf-8") as file:
        source = file.read()
    spliced = splice(source, TASK["lineno"], TASK["name"], SOLUTION)
    with open(path, "w", encoding="utf-8") as file:
        file.write(spliced)
    root = os.path.abspath(TASK["import_root"])
    env = dict(os.environ, PYTHONPATH=root, PYTHONDONTWRITEBYTECODE="1")
    python = os.environ.get("KGFUSE_FUNCTION_PYTHON") or sys.executable
    # pytest.main, then exit at once: a thread a test left running must not hang the check.
    runner = ("import os, sys, pytest; code = pytest.main(sys.argv[1:]); "
              "sys.stdout.flush(); sys.stderr.flush(); os._exit(int(code))")
    command = [python, "-c", runner, *TASK["tests"], "-q", "-p", "no:cacheprovider", "-x",
               "--rootdir=.", *TASK["pytest_args"]]
    done = subprocess.run(command, env=env, capture_output=True, text=True, preexec_fn=die_with_parent)
    output = (done.stdout + done.stderr)[-2000:]
    if done.returncode not in (0, 1):
        raise RuntimeError(f"pytest exited with {done.returncode}: the tests did not run\\n{output}")
    assert done.returncode == 0, f"the package's tests failed\\n{output}"
    if " passed" not in done.stdout:
        raise RuntimeError(f"pytest ended without reporting passed tests\\n{output}")


main()
'''


def check_program(task: dict) -> str:
    """The check of a task: CHECK with the task's parameters and the splice
    helpers filled in."""
    helpers = "\n\n".join(inspect.getsource(f) for f in SPLICE_HELPERS)
    program = CHECK.replace("__HELPERS__", helpers).replace("__TASK__", repr(task))
    if program.count("[solution]") != 1:
        raise SystemExit(f"the check of {task} would hold the solution token more than once")
    return program


# --------------------------------------------------------------------------
# Packages: fetching, the venv, the test run.
# --------------------------------------------------------------------------


def parse_spec(spec: str) -> tuple[str, str]:
    """NAME==VERSION as (NAME, VERSION)."""
    name, sep, version = spec.partition("==")
    if not sep or not name.strip() or not version.strip():
        raise SystemExit(f"expected NAME==VERSION, got {spec!r}")
    return name.strip(), version.strip()


def spec_of_dir(directory: Path) -> str:
    """NAME==VERSION of a local source directory, from pyproject.toml's [project]
    or setup.cfg's [metadata]."""
    pyproject = directory / "pyproject.toml"
    if pyproject.is_file():
        project = tomllib.loads(pyproject.read_text()).get("project", {})
        if project.get("name") and project.get("version"):
            return f"{project['name']}=={project['version']}"
    setup_cfg = directory / "setup.cfg"
    if setup_cfg.is_file():
        parser = read_ini(setup_cfg)
        if parser.has_option("metadata", "name") and parser.has_option("metadata", "version"):
            return f"{parser.get('metadata', 'name')}=={parser.get('metadata', 'version')}"
    raise SystemExit(f"{directory}: no static name and version in pyproject.toml or setup.cfg; "
                     "give NAME==VERSION")


def read_ini(path: Path) -> configparser.ConfigParser:
    """An ini file (setup.cfg, tox.ini) as read by configparser; empty when it
    does not parse."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path)
    except configparser.Error as error:
        say(f"  {path} does not parse ({error}): left out")
        return configparser.ConfigParser(interpolation=None)
    return parser


def cache_dir(name: str, version: str) -> Path:
    """Where one package's sdist, source, venv and test records live."""
    return check.scratch_root() / "functions" / f"{name}-{version}"


def run_logged(command: list[str], log: Path, **kwargs) -> subprocess.CompletedProcess:
    """Runs `command` with its output appended to `log`."""
    with log.open("a") as out:
        out.write(f"$ {' '.join(map(str, command))}\n")
        out.flush()
        return subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, text=True, **kwargs)


def fetch_source(name: str, version: str, cache: Path, directory: Path | None) -> Path:
    """The package's source root in the cache: the unpacked sdist, or a copy of
    `directory`."""
    unpacked = cache / "source"
    if unpacked.is_dir() and any(unpacked.iterdir()):
        return only_child(unpacked)
    if directory is not None:
        target = unpacked / directory.resolve().name
        shutil.copytree(directory, target, ignore=ignored)
        return target
    sdists = cache / "sdist"
    sdists.mkdir(parents=True, exist_ok=True)
    say(f"pip download {name}=={version} (sdist)")
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                           "-q", "-d", str(sdists), f"{name}=={version}"], capture_output=True, text=True)
    archives = [p for p in sdists.iterdir() if p.name.endswith((".tar.gz", ".zip", ".tar.bz2", ".tgz"))]
    if done.returncode != 0 or not archives:
        raise SystemExit(f"no sdist of {name}=={version}:\n{done.stderr[-2000:]}")
    unpacked.mkdir(parents=True, exist_ok=True)
    if archives[0].name.endswith(".zip"):
        with zipfile.ZipFile(archives[0]) as archive:
            archive.extractall(unpacked)
    else:
        with tarfile.open(archives[0]) as archive:
            archive.extractall(unpacked, filter="data")
    return only_child(unpacked)


def only_child(directory: Path) -> Path:
    """The single directory an archive unpacks to."""
    children = [p for p in directory.iterdir() if p.is_dir()]
    if len(children) != 1:
        raise SystemExit(f"{directory}: expected one source directory, found {len(children)}")
    return children[0]


def ignored(directory: str, names: list[str]) -> set[str]:
    """shutil.copytree's filter: caches, builds and VCS directories."""
    patterns = shutil.ignore_patterns(*SKIPPED_FILES)(directory, names)
    return set(patterns) | {n for n in names if n in SKIPPED_DIRS or n.endswith(".egg-info")}


def requirement_name(requirement: str) -> str:
    """The normalised project name a requirement string starts with."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return re.sub(r"[-_.]+", "-", match.group(1)).lower() if match else ""


def declared_requirements(root: Path, keys: tuple[str, ...]) -> list[list[str]]:
    """Pip argument groups for the requirements the package declares under
    `keys`: pyproject extras and dependency groups, setup.cfg and setup.py extras
    (literal), requirement files whose name holds a key, and tox's [testenv] deps."""
    groups: list[list[str]] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        data = tomllib.loads(pyproject.read_text())
        extras = data.get("project", {}).get("optional-dependencies", {})
        groups += [list(extras[k]) for k in keys if k in extras]
        dependency_groups = data.get("dependency-groups", {})
        groups += [dependency_group(dependency_groups, k) for k in keys if k in dependency_groups]
    setup_cfg = root / "setup.cfg"
    if setup_cfg.is_file():
        parser = read_ini(setup_cfg)
        for key in keys:
            if parser.has_option("options.extras_require", key):
                groups.append([line.strip() for line in parser.get("options.extras_require", key).splitlines()
                               if line.strip()])
    groups += setup_py_extras(root / "setup.py", keys)
    for folder in (root, root / "requirements"):
        if folder.is_dir():
            for path in sorted(folder.glob("*.txt")):
                if any(k in path.stem.lower() for k in keys):
                    groups.append(["-r", str(path)])
    if keys == TEST_KEYS:
        groups += tox_deps(root)
    return [g for g in groups if g]


def dependency_group(groups: dict, key: str, depth: int = 0) -> list[str]:
    """A PEP 735 dependency group, its `include-group`s expanded."""
    result = []
    for entry in groups.get(key, []):
        if isinstance(entry, str):
            result.append(entry)
        elif isinstance(entry, dict) and "include-group" in entry and depth < 10:
            result += dependency_group(groups, entry["include-group"], depth + 1)
    return result


def setup_py_extras(setup_py: Path, keys: tuple[str, ...]) -> list[list[str]]:
    """`extras_require` entries of a setup.py when they are written as literals."""
    if not setup_py.is_file():
        return []
    try:
        tree = ast.parse(setup_py.read_text())
    except SyntaxError:
        return []
    assigned = {t.id: node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "extras_require":
            value = assigned.get(node.value.id) if isinstance(node.value, ast.Name) else node.value
            try:
                extras = ast.literal_eval(value) if value is not None else {}
            except ValueError:
                return []
            return [list(extras[k]) for k in keys if k in extras]
    return []


def tox_deps(root: Path) -> list[list[str]]:
    """tox.ini's [testenv] deps: plain requirements and `-r` files (factor-
    conditional lines and URLs skipped)."""
    tox = root / "tox.ini"
    if not tox.is_file():
        return []
    parser = read_ini(tox)
    if not parser.has_option("testenv", "deps"):
        return []
    group = []
    for line in parser.get("testenv", "deps").splitlines():
        line = line.strip().replace("{toxinidir}", str(root))
        if not line or line.startswith("#") or "{" in line or "://" in line or re.match(r"^[\w,!-]+:\s", line):
            continue
        if line.startswith("-r"):
            path = root / line[2:].strip()
            if path.is_file():
                group += ["-r", str(path)]
        elif not line.startswith("-"):
            group.append(line)
    return [group] if group else []


def pip_install(python: Path, groups: list[list[str]], log: Path, skip: str) -> None:
    """Installs each group; a group that fails is retried item by item, and what
    still fails is reported and left out. Requirements on the package itself
    (`skip`) are left out."""
    for group in groups:
        group = [g for g in group if g.startswith("-") or requirement_name(g) != skip]
        if not group or run_logged([str(python), "-m", "pip", "install", "-q", *group], log).returncode == 0:
            continue
        for item in pip_items(group):
            if run_logged([str(python), "-m", "pip", "install", "-q", *item], log).returncode != 0:
                say(f"  could not install {' '.join(item)} (see {log})")


def pip_items(group: list[str]) -> list[list[str]]:
    """A pip argument group split into its requirements (`-r FILE` kept together)."""
    items, i = [], 0
    while i < len(group):
        step = 2 if group[i] == "-r" else 1
        items.append(group[i:i + step])
        i += step
    return items


def make_venv(name: str, source: Path, cache: Path, force: bool) -> Path:
    """A venv with pytest, coverage, the package's test requirements and the
    package (installed from a copy of the source, so no build files land in it):
    its interpreter."""
    venv = cache / "venv"
    python = venv / "bin" / "python"
    ready = venv / ".kgfuse-ready"
    if ready.exists() and not force:
        return python
    if venv.exists():
        shutil.rmtree(venv)
    log = cache / "install.log"
    log.write_text("")
    say(f"venv {venv}")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    groups = [["pytest", "coverage"]]
    declared = declared_requirements(source, TEST_KEYS) or declared_requirements(source, DEV_KEYS)
    say(f"  test requirements: {declared or 'none declared'}")
    pip_install(python, groups + declared, log, skip=requirement_name(name))
    with tempfile.TemporaryDirectory(prefix="kgfuse-build-") as build:
        copy = Path(build) / source.name
        shutil.copytree(source, copy, ignore=ignored)
        if run_logged([str(python), "-m", "pip", "install", "-q", str(copy)], log).returncode != 0:
            raise SystemExit(f"could not install {name} from {source}: see {log}")
    ready.write_text("")
    return python


def distribution_files(python: Path, name: str) -> list[str]:
    """The .py files the installed distribution holds, relative to site-packages."""
    script = ("import importlib.metadata as m, json, sys\n"
              "print(json.dumps([str(f) for f in (m.distribution(sys.argv[1]).files or [])]))")
    done = subprocess.run([str(python), "-c", script, name], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{name} is not installed in {python}:\n{done.stderr[-1000:]}")
    files = json.loads(done.stdout)
    return sorted(f for f in files if f.endswith(".py") and not f.startswith("..")
                  and ".dist-info" not in f and "__pycache__" not in f)


def locate_import_root(source: Path, files: list[str]) -> Path:
    """The directory of the source tree that the installed files sit in (the
    source root, or `src/`...): the one holding most of them."""
    tops = {f.split("/")[0] for f in files}
    candidates = {source}
    for directory, dirs, names in os.walk(source):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
        for entry in [*dirs, *names]:
            if entry in tops:
                candidates.add(Path(directory))
    best = max(sorted(candidates), key=lambda d: sum((d / f).is_file() for f in files))
    if not any((best / f).is_file() for f in files):
        raise SystemExit(f"none of the installed files of the package is in {source}")
    return best


def is_test_file(relative: str) -> bool:
    """A test module: in a `test`/`tests`/`testing` directory, or named like
    pytest's test files, or a conftest."""
    parts = relative.split("/")
    stem = parts[-1]
    return (any(p in TEST_KEYS for p in parts[:-1]) or stem.startswith("test_") or stem.endswith("_test.py")
            or stem == "conftest.py")


def module_name(path: Path, root: Path) -> str:
    """A file's dotted module name as kgfuse ingest names it: the chain of
    enclosing packages (directories with `__init__.py`), else the path below
    `root`."""
    parts = [] if path.stem == "__init__" else [path.stem]
    directory = path.parent
    in_package = False
    while (directory / "__init__.py").is_file() and directory != root.parent:
        in_package = True
        parts.insert(0, directory.name)
        directory = directory.parent
    if not in_package:
        parts = list(path.parent.relative_to(root).parts) + parts
    return ".".join(parts)


def offline(command: list[str]) -> list[str]:
    """`command` in a network namespace of its own when the kernel allows it."""
    return (["unshare", "-rn"] if check._can_unshare() else []) + command


def run_suite(name: str, version: str, python: Path, source: Path, import_root: Path,
              files: list[str], cache: Path, force: bool) -> tuple[dict, dict, list[str]]:
    """Runs the test suite once under coverage, offline: (outcomes by node id,
    coverage JSON with contexts, extra pytest arguments the suite needed)."""
    outcomes_path, report_path = cache / "outcomes.json", cache / "coverage.json"
    args_path = cache / "pytest-args.json"
    if outcomes_path.exists() and report_path.exists() and args_path.exists() and not force:
        return json.loads(outcomes_path.read_text()), json.loads(report_path.read_text()), \
            json.loads(args_path.read_text())
    plugin = cache / "plugin"
    plugin.mkdir(exist_ok=True)
    (plugin / "kgfuse_outcomes.py").write_text(OUTCOMES_PLUGIN)
    tops = sorted({p.split("/")[0].removesuffix(".py") for p in files})
    rc = cache / "coveragerc"
    rc.write_text(f"[run]\ndata_file = {cache / '.coverage'}\nsource_pkgs = {', '.join(tops)}\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"),
           "PYTHONPATH": f"{import_root}{os.pathsep}{plugin}", "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONHASHSEED": "0", "KGFUSE_OUTCOMES": str(outcomes_path),
           "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9"}
    log = cache / "tests.log"
    log.write_text("")
    for extra in ([], ["-o", "addopts="]):
        command = offline([str(python), "-m", "coverage", "run", f"--rcfile={rc}",
                           f"--context={name}-{version}", "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "-p", "kgfuse_outcomes", "--continue-on-collection-errors", "--rootdir=.", *extra])
        say(f"  running the tests under coverage{' without addopts' if extra else ''} (log: {log})")
        outcomes_path.unlink(missing_ok=True)
        try:
            done = run_logged(command, log, cwd=source, env=env, timeout=SUITE_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise SystemExit(f"the test suite of {name}=={version} ran over {SUITE_TIMEOUT} s: see {log}")
        if done.returncode in (0, 1) and outcomes_path.exists():
            break
        say(f"  pytest exited with {done.returncode}")
        if done.returncode not in (3, 4):  # an internal or a usage error: perhaps the addopts
            raise SystemExit(f"the test suite of {name}=={version} did not run: see {log}")
    else:
        raise SystemExit(f"the test suite of {name}=={version} did not run: see {log}")
    subprocess.run([str(python), "-m", "coverage", "json", f"--rcfile={rc}", "--show-contexts",
                    "-q", "-o", str(report_path)], cwd=source, check=True)
    args_path.write_text(json.dumps(extra))
    return json.loads(outcomes_path.read_text()), json.loads(report_path.read_text()), extra


def package_files(import_root: Path, python: Path, name: str) -> list[str]:
    """The package's own modules (not its tests), relative to the import root."""
    return [f for f in distribution_files(python, name) if (import_root / f).is_file() and not is_test_file(f)]


def check_import(python: Path, import_root: Path, files: list[str]) -> None:
    """Makes sure the source tree, not the installed copy, is what gets imported."""
    top = files[0].split("/")[0].removesuffix(".py")
    done = subprocess.run([str(python), "-c", f"import {top}; print({top}.__file__)"],
                          env={**os.environ, "PYTHONPATH": str(import_root)}, cwd=import_root,
                          capture_output=True, text=True)
    where = done.stdout.strip()
    if done.returncode != 0 or not where.startswith(str(import_root)):
        raise SystemExit(f"`import {top}` does not load the source tree {import_root}: "
                         f"{where or done.stderr[-1000:]}")


def check_not_runner(python: Path, files: list[str]) -> None:
    """Refuses a package that pytest itself (with its plugins) imports: a task's
    solution would then run the test runner, which could misreport its tests."""
    script = ("import sys, pytest\n"
              "pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', '/nonexistent-kgfuse'])\n"
              "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))")
    with tempfile.TemporaryDirectory(prefix="kgfuse-runner-") as scratch:
        done = subprocess.run([str(python), "-c", script], cwd=scratch, capture_output=True, text=True)
    loaded = set(done.stdout.strip().splitlines()[-1].split()) if done.stdout.strip() else set()
    tops = {f.split("/")[0].removesuffix(".py") for f in files}
    if tops & loaded:
        raise SystemExit(f"pytest itself imports {sorted(tops & loaded)}: its tests would run on the "
                         "solution's copy of the test runner; choose another package")


def executed_by(report: dict, source: Path) -> dict[Path, dict[int, set[str]]]:
    """Coverage's JSON report as file -> line -> dynamic contexts (the node ids
    of the tests that ran it; the static context prefix dropped)."""
    lines: dict[Path, dict[int, set[str]]] = {}
    for file, data in report.get("files", {}).items():
        path = (source / file).resolve()
        for line, contexts in data.get("contexts", {}).items():
            names = {c.split("|", 1)[1] for c in contexts if "|" in c}
            if names:
                lines.setdefault(path, {})[int(line)] = names
    return lines


def function_tests(package: Package, executed: dict) -> dict[str, dict]:
    """Every function of the package: where it is and the node ids of the tests
    that ran a line of its body."""
    result = {}
    for qualname, function in sorted(package.functions.items()):
        node = function.node
        statements = node.body[1:] if ast.get_docstring(node, clean=False) is not None else node.body
        contexts: set[str] = set()
        if statements:
            file_lines = executed.get((package.root / function.module.file).resolve(), {})
            for line in range(statements[0].lineno, node.end_lineno + 1):
                contexts |= file_lines.get(line, set())
        tests = sorted(contexts)
        result[qualname] = {"file": function.module.file, "lineno": node.lineno,
                            "end_lineno": node.end_lineno, "tests": tests}
    return result


def prepare(args: argparse.Namespace) -> None:
    """The `prepare` command."""
    directory = Path(args.dir).resolve() if args.dir else None
    if directory is not None and not directory.is_dir():
        raise SystemExit(f"{directory} is not a directory")
    spec = args.spec or (spec_of_dir(directory) if directory else None)
    if spec is None:
        raise SystemExit("give NAME==VERSION (or --dir with a pyproject.toml or setup.cfg)")
    name, version = parse_spec(spec)
    cache = cache_dir(name, version)
    if args.force and (cache / "source").exists():
        shutil.rmtree(cache / "source")
    cache.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    source = fetch_source(name, version, cache, directory)
    python = make_venv(name, source, cache, args.force)
    installed = time.monotonic()
    import_root = locate_import_root(source, distribution_files(python, name))
    files = package_files(import_root, python, name)
    check_import(python, import_root, files)
    check_not_runner(python, files)
    say(f"{name}=={version}: {len(files)} modules in {import_root}")
    outcomes, report, extra = run_suite(name, version, python, source, import_root, files, cache, args.force)
    tested = time.monotonic()
    package = Package(import_root, files)
    functions = function_tests(package, executed_by(report, source))
    record = {"name": name, "version": version, "source": str(source),
              "import_root": str(import_root.relative_to(source)), "python": str(python),
              "files": files, "pytest_args": extra, "tests": outcomes, "functions": functions,
              "seconds": {"install": round(installed - started, 1), "tests": round(tested - installed, 1)}}
    (cache / "prepare.json").write_text(json.dumps(record, indent=1))
    counts = collections.Counter(o["outcome"] for o in outcomes.values())
    print(json.dumps({"package": f"{name}=={version}", "modules": len(files), "functions": len(functions),
                      "functions_tested": sum(bool(f["tests"]) for f in functions.values()),
                      "tests": dict(counts), "seconds": record["seconds"],
                      "record": str(cache / "prepare.json")}, indent=1))


# --------------------------------------------------------------------------
# Static analysis: the package's functions and the calls between them.
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Module:
    """One module of the package: its bindings of names to dotted targets."""

    name: str
    file: str
    is_package: bool
    tree: ast.Module
    source: str
    names: dict[str, str] = dataclasses.field(default_factory=dict)
    stars: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Class:
    """A class of the package."""

    qualname: str
    module: Module
    node: ast.ClassDef
    methods: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Function:
    """A module-level function or a method (functions inside functions are left out)."""

    qualname: str
    module: Module
    node: ast.FunctionDef | ast.AsyncFunctionDef
    cls: Class | None


def dotted_parts(expr: ast.expr) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None for anything but names and attributes."""
    if isinstance(expr, ast.Name):
        return [expr.id]
    if isinstance(expr, ast.Attribute):
        head = dotted_parts(expr.value)
        return head + [expr.attr] if head else None
    return None


def child_blocks(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists inside a compound statement (if, try, with, for, match)."""
    blocks = []
    for value in vars(statement).values():
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            blocks.append(value)
        elif isinstance(value, list):
            blocks += [v.body for v in value if isinstance(v, (ast.ExceptHandler, ast.match_case))]
    return blocks


def local_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names a function binds itself (parameters, assignments, inner definitions),
    which shadow the module's."""
    arguments = node.args
    names = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                             *filter(None, [arguments.vararg, arguments.kwarg])]}
    for statement in node.body:
        for inner in ast.walk(statement):
            if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                names.add(inner.id)
            elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(inner.name)
            elif isinstance(inner, ast.ExceptHandler) and inner.name:
                names.add(inner.name)
    return names


class Package:
    """The package's modules parsed, with their functions, classes and imports,
    and the static resolution of calls between them."""

    def __init__(self, root: Path, files: list[str]):
        self.root = root
        self.modules: dict[str, Module] = {}
        self.functions: dict[str, Function] = {}
        self.classes: dict[str, Class] = {}
        self.definitions: collections.Counter[str] = collections.Counter()
        for file in files:
            path = Path(file)
            name = ".".join(path.parent.parts + (() if path.stem == "__init__" else (path.stem,)))
            try:
                source = (root / file).read_text(encoding="utf-8")
                tree = ast.parse(source)
            except (SyntaxError, UnicodeDecodeError) as error:
                say(f"  {file} does not parse here ({error}): left out")
                continue
            self.modules[name] = Module(name, file, path.stem == "__init__", tree, source)
        for module in self.modules.values():
            self._imports(module)
            self._collect(module, module.tree.body, module.name, None)

    def _imports(self, module: Module) -> None:
        """The module's imports (anywhere in it) as name bindings."""
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        module.names[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        module.names[top] = top
            elif isinstance(node, ast.ImportFrom):
                base = self._absolute(module, node.module, node.level)
                for alias in node.names:
                    if alias.name == "*":
                        module.stars.append(base)
                    else:
                        module.names[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name

    @staticmethod
    def _absolute(module: Module, name: str | None, level: int) -> str:
        """The absolute module name of a (relative) `from` import."""
        if level == 0:
            return name or ""
        package = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
        package = package[: len(package) - (level - 1)]
        return ".".join(package + ([name] if name else []))

    def _collect(self, module: Module, statements: list[ast.stmt], prefix: str, cls: Class | None) -> None:
        """The functions and classes defined in `statements` (recursing into
        classes and compound statements, not into functions)."""
        for statement in statements:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = f"{prefix}.{statement.name}"
                self.definitions[qualname] += 1
                self.functions[qualname] = Function(qualname, module, statement, cls)
                if cls is not None:
                    cls.methods[statement.name] = qualname
                else:
                    module.names[statement.name] = qualname
            elif isinstance(statement, ast.ClassDef):
                qualname = f"{prefix}.{statement.name}"
                self.definitions[qualname] += 1
                info = Class(qualname, module, statement)
                self.classes[qualname] = info
                if cls is None:
                    module.names[statement.name] = qualname
                self._collect(module, statement.body, qualname, info)
            else:
                for block in child_blocks(statement):
                    self._collect(module, block, prefix, cls)

    def resolve(self, dotted: str, depth: int = 0) -> str | None:
        """The package function, class or module `dotted` names, through
        re-exports and star imports; None outside the package."""
        if dotted in self.functions or dotted in self.classes or dotted in self.modules:
            return dotted
        if depth > 10:
            return None
        parts = dotted.split(".")
        for i in range(len(parts) - 1, 0, -1):
            head, rest = ".".join(parts[:i]), parts[i:]
            if head in self.classes and len(rest) == 1:
                return self.lookup(head, rest[0])
            if head in self.modules:
                module = self.modules[head]
                targets = [module.names[rest[0]]] if rest[0] in module.names else []
                targets = [".".join([t, *rest[1:]]) for t in targets] + [".".join([s, *rest]) for s in module.stars]
                for target in targets:
                    found = self.resolve(target, depth + 1) if target != dotted else None
                    if found:
                        return found
                return None
        return None

    def bases(self, cls: Class) -> list[str]:
        """The class's base classes that are the package's own."""
        result = []
        for expr in cls.node.bases:
            parts = dotted_parts(expr)
            if parts and parts[0] in cls.module.names:
                target = self.resolve(".".join([cls.module.names[parts[0]], *parts[1:]]))
                if target in self.classes:
                    result.append(target)
        return result

    def lookup(self, class_qualname: str, name: str, seen: set[str] | None = None) -> str | None:
        """The method `name` of a class, defined there or in a package base class."""
        seen = seen if seen is not None else set()
        if class_qualname in seen or class_qualname not in self.classes:
            return None
        seen.add(class_qualname)
        cls = self.classes[class_qualname]
        if name in cls.methods:
            return cls.methods[name]
        for base in self.bases(cls):
            found = self.lookup(base, name, seen)
            if found:
                return found
        return None

    def callees(self, function: Function) -> list[str]:
        """The package functions and methods the function's body calls, resolved
        statically: names defined in or imported into its module, `module.f(...)`,
        `self.m(...)`/`cls.m(...)` and `super().m(...)` through the package's own
        base classes, and `Class(...)` as its `__init__`."""
        node = function.node
        shadowed = local_names(node)
        first = None
        decorators = {dotted_parts(d)[-1] for d in node.decorator_list if dotted_parts(d)}
        if function.cls is not None and "staticmethod" not in decorators:
            positional = [*node.args.posonlyargs, *node.args.args]
            first = positional[0].arg if positional else None
        found = set()
        for statement in node.body:
            for call in ast.walk(statement):
                if isinstance(call, ast.Call):
                    target = self.call_target(call.func, function, shadowed, first)
                    if target and target != function.qualname:
                        found.add(target)
        return sorted(found)

    def call_target(self, func: ast.expr, function: Function, shadowed: set[str], first: str | None) -> str | None:
        """The package function a call's callee expression names, if any."""
        cls = function.cls
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) \
                and isinstance(func.value.func, ast.Name) and func.value.func.id == "super" and cls:
            for base in self.bases(cls):
                found = self.lookup(base, func.attr)
                if found:
                    return found
            return None
        parts = dotted_parts(func)
        if not parts:
            return None
        if first is not None and parts[0] == first:
            return self.lookup(cls.qualname, parts[1]) if len(parts) == 2 else None
        if parts[0] in shadowed or parts[0] not in function.module.names:
            return None
        target = self.resolve(".".join([function.module.names[parts[0]], *parts[1:]]))
        if target in self.functions:
            return target
        if target in self.classes:
            return self.lookup(target, "__init__")
        return None


# --------------------------------------------------------------------------
# Tasks.
# --------------------------------------------------------------------------


def load_record(spec: str) -> dict:
    """What `prepare` recorded for NAME==VERSION."""
    name, version = parse_spec(spec)
    path = cache_dir(name, version) / "prepare.json"
    if not path.is_file():
        raise SystemExit(f"{path} not found: run `functions.py prepare {spec}` first")
    return json.loads(path.read_text())


def statement_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Statements in the body after the docstring, nested ones counted."""
    body = node.body[1:] if ast.get_docstring(node, clean=False) is not None else node.body
    return sum(isinstance(inner, ast.stmt) for statement in body for inner in ast.walk(statement))


def test_function_name(outcome: dict, source: Path) -> str | None:
    """The test function a test runs, where it is defined, as `module.function`
    or `module.Class.method` with the module named as kgfuse ingest names it;
    None for a test that is no function of the source tree (a doctest)."""
    definition = outcome.get("definition")
    path, source = (Path(definition[0]).resolve(), source.resolve()) if definition else (None, source)
    if path is None or not path.is_relative_to(source):
        return None
    return f"{module_name(path, source)}.{definition[1]}"


def passing_tests(record: dict, node_ids: list[str]) -> list[str]:
    """The node ids that passed in the coverage run and ran fast enough."""
    tests = record["tests"]
    return [n for n in node_ids if tests.get(n, {}).get("outcome") == "passed"
            and tests[n].get("seconds", 0) <= MAX_TEST_SECONDS]


def candidates(record: dict, package: Package) -> list[dict]:
    """The functions a task can be made of, sorted by qualified name."""
    found = []
    for qualname, function in sorted(package.functions.items()):
        node = function.node
        body = node.body
        tests = passing_tests(record, record["functions"].get(qualname, {}).get("tests", []))
        if (ast.get_docstring(node, clean=False) is None or len(body) < 2
                or body[0].lineno == node.lineno or body[1].lineno == body[0].end_lineno
                or statement_count(node) < 3 or package.definitions[qualname] != 1 or not tests):
            continue
        callees = package.callees(function)
        if callees:
            found.append({"qualname": qualname, "function": function, "callees": callees, "tests": tests})
    return found


#: What the prompt shows of the file, as an editor's window would: the file's
#: opening (docstring, imports) up to HEAD_LINES, the enclosing class's header,
#: up to BEFORE_LINES before the function and AFTER_LINES after it, in at most
#: VIEW_CHARS (about 2,000 tokens: the model's window is 4,096).
HEAD_LINES = 40
BEFORE_LINES = 60
AFTER_LINES = 20
VIEW_CHARS = 8000


def opening_lines(tree: ast.Module) -> int:
    """The lines of the file's opening: its docstring and its top-level imports
    before the first definition."""
    end = 0
    for statement in tree.body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)) or (
                isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)):
            end = statement.end_lineno or end
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
    return end


def editor_view(masked: str, node: ast.FunctionDef | ast.AsyncFunctionDef, cls: ast.ClassDef | None) -> str:
    """The masked file as an editor shows it around the function: its opening,
    the class header, the lines before and after; left-out lines marked."""
    lines = masked.splitlines()
    tree = ast.parse(masked)
    target = find_function(tree, node.lineno, node.name)
    first, _, end = function_span(lines, target)
    before = BEFORE_LINES
    while True:
        shown = set(range(1, min(opening_lines(tree), HEAD_LINES) + 1))
        if cls is not None:
            shown.update(range(cls.lineno, cls.lineno + 1))
        shown.update(range(max(1, first - before), min(len(lines), end + AFTER_LINES) + 1))
        out, hidden = [], 0
        for number, line in enumerate(lines, 1):
            if number in shown:
                if hidden:
                    out.append(f"# ... ({hidden} lines not shown)")
                    hidden = 0
                out.append(line)
            else:
                hidden += 1
        if hidden:
            out.append(f"# ... ({hidden} lines not shown)")
        view = "\n".join(out) + "\n"
        if len(view) <= VIEW_CHARS or before == 0:
            return view
        before = max(0, before - 10)


def make_task(record: dict, candidate: dict) -> dict:
    """One task line for run.py."""
    name, version = record["name"], record["version"]
    function: Function = candidate["function"]
    node, module = function.node, function.module
    lines = module.source.splitlines()
    masked = mask(module.source, [(node.lineno, node.name)])
    cls = enclosing_class(ast.parse(module.source), node)
    view = editor_view(masked, node, cls)
    local = candidate["qualname"][len(module.name) + 1:]
    kind = "method" if function.cls else "function"
    prompt = (f"Below is part of the file `{module.file}` of the Python package {name} {version}, with the "
              f"body of `{local}` left out. Write the complete {kind} `{node.name}` (its `def` line, docstring "
              f"optional, and body) so that the package's tests pass. Reply with the {kind} only, in one "
              f"```python block.\n\n```python\n{view}```")
    _, header_end, _ = function_span(lines, node)
    indent = indentation(lines[node.lineno - 1])
    question = "\n".join(line[len(indent):] if line.startswith(indent) else line.lstrip()
                         for line in lines[node.lineno - 1:header_end])
    source = Path(record["source"])
    names = (test_function_name(record["tests"].get(n, {}), source)
             for n in record["functions"][candidate["qualname"]]["tests"])
    exercising = sorted({n for n in names if n})
    tests = candidate["tests"][:MAX_TESTS]
    task_id = f"{name}-{version}:{candidate['qualname']}"
    parameters = {"import_root": record["import_root"], "file": module.file, "name": node.name,
                  "lineno": node.lineno, "tests": tests, "pytest_args": record["pytest_args"]}
    return {"id": task_id, "group": name, "package": name, "version": version, "file": module.file,
            "qualname": candidate["qualname"], "lineno": node.lineno, "end_lineno": node.end_lineno,
            "prompt": prompt, "question": question, "tests": tests, "callees": candidate["callees"],
            "test_functions": exercising,
            "env": {"KGFUSE_FUNCTION_SRC": record["source"], "KGFUSE_FUNCTION_PYTHON": record["python"]},
            "check": check_program(parameters)}


def enclosing_class(tree: ast.Module, node: ast.AST) -> ast.ClassDef | None:
    """The class whose body holds `node` directly, if any."""
    for candidate in ast.walk(tree):
        if isinstance(candidate, ast.ClassDef) and any(
                getattr(child, "lineno", None) == node.lineno for child in candidate.body):
            return candidate
    return None


def tasks(args: argparse.Namespace) -> None:
    """The `tasks` command."""
    record = load_record(args.spec)
    package = Package(Path(record["source"]) / record["import_root"], record["files"])
    found = candidates(record, package)
    chosen = random.Random(args.seed).sample(found, min(args.sample, len(found))) if args.sample else found
    chosen.sort(key=lambda c: c["qualname"])
    lines = [json.dumps(make_task(record, c)) for c in chosen]
    out = args.out or cache_dir(record["name"], record["version"]) / "tasks.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(line + "\n" for line in lines))
    listed = "".join(c["qualname"] + "\n" for c in chosen)
    if args.list:
        if args.list.exists() and args.list.read_text() != listed:
            say(f"the sample differs from {args.list} (written again): another version of the "
                f"package or of this script")
        args.list.write_text(listed)
    tested = sum(bool(f["tests"]) for f in record["functions"].values())
    print(json.dumps({"package": args.spec, "functions": len(package.functions), "functions_tested": tested,
                      "candidates": len(found), "sampled": len(chosen), "out": str(out)}, indent=1))


def read_tasks(path: Path) -> list[dict]:
    """A task file's tasks."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def masked(args: argparse.Namespace) -> None:
    """The `masked` command: the package's .py files (source and tests) with
    every task's body left out."""
    record = load_record(args.spec)
    task_list = [t for t in read_tasks(args.tasks)]
    others = {f"{t['package']}=={t['version']}" for t in task_list} - {f"{record['name']}=={record['version']}"}
    if others:
        raise SystemExit(f"{args.tasks} holds tasks of other packages: {sorted(others)}")
    if args.out.exists() and any(args.out.iterdir()):
        raise SystemExit(f"{args.out} exists and is not empty: remove it first")
    source = Path(record["source"])
    targets: dict[str, list[tuple[int, str]]] = collections.defaultdict(list)
    for task in task_list:
        path = Path(record["import_root"]) / task["file"]
        targets[str(path)].append((task["lineno"], task["qualname"].rsplit(".", 1)[1]))
    written = 0
    for directory, dirs, names in os.walk(source):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info"))
        for file in sorted(n for n in names if n.endswith(".py")):
            relative = str((Path(directory) / file).relative_to(source))
            text = (source / relative).read_text(encoding="utf-8", errors="surrogateescape")
            if relative in targets:
                text = mask(text, targets.pop(relative))
                ast.parse(text, relative)
            out = args.out / relative
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8", errors="surrogateescape")
            written += 1
    if targets:
        raise SystemExit(f"target files not found in {source}: {sorted(targets)}")
    print(json.dumps({"package": args.spec, "files": written, "masked_functions": len(task_list),
                      "out": str(args.out)}, indent=1))


def reference(task: dict) -> str:
    """The task's original function (decorators included), dedented."""
    root = Path(task["env"]["KGFUSE_FUNCTION_SRC"])
    path = root / json_parameters(task)["import_root"] / task["file"]
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    node = find_function(ast.parse(source), task["lineno"], task["qualname"].rsplit(".", 1)[1])
    first, _, _ = function_span(lines, node)
    text = "\n".join(lines[first - 1:node.end_lineno])
    return "\n".join(shift_block(text, indentation(lines[node.lineno - 1]), "")) + "\n"


def json_parameters(task: dict) -> dict:
    """The parameters a task's check was written with."""
    match = re.search(r"^TASK = (.*)$", task["check"], re.MULTILINE)
    return ast.literal_eval(match.group(1))


STUB = "raise NotImplementedError\n"


def validate_one(task: dict, python: str, timeout: float) -> dict:
    """A task's check on its original function and on a stub body."""
    outcomes = {}
    for label, solution in (("reference", reference(task)), ("stub", STUB)):
        program = task["check"].replace("[solution]", repr(solution))
        outcome = check.run(program, python, timeout, extra_env=task.get("env"))
        outcomes[label] = {"kind": outcome.kind, "seconds": round(outcome.seconds, 1),
                           "detail": outcome.detail[-400:]}
    return {"id": task["id"], **outcomes}


def validate(args: argparse.Namespace) -> None:
    """The `validate` command: every task's reference must pass, its stub fail."""
    task_list = read_tasks(args.tasks)
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(validate_one, t, args.python, args.timeout) for t in task_list]
        for n, future in enumerate(futures, 1):
            result = future.result()
            results.append(result)
            ok = result["reference"]["kind"] == "pass" and result["stub"]["kind"] != "pass"
            say(f"[{n}/{len(task_list)}] {result['id']}: reference {result['reference']['kind']} "
                f"({result['reference']['seconds']} s), stub {result['stub']['kind']}{'' if ok else '  <- PROBLEM'}")
    bad_reference = [r for r in results if r["reference"]["kind"] != "pass"]
    stub_passes = [r for r in results if r["stub"]["kind"] == "pass"]
    for r in bad_reference:
        say(f"reference fails: {r['id']} ({r['reference']['kind']}): {r['reference']['detail'][-300:]}")
    for r in stub_passes:
        say(f"stub passes: {r['id']}")
    summary = {"tasks": len(results), "reference_passes": len(results) - len(bad_reference),
               "stub_fails": len(results) - len(stub_passes),
               "reference_failures": [r["id"] for r in bad_reference],
               "stub_passes": [r["id"] for r in stub_passes],
               "stub_kinds": dict(collections.Counter(r["stub"]["kind"] for r in results))}
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in results))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("prepare", help="fetch, install and run the tests under coverage")
    p.add_argument("spec", nargs="?", help="NAME==VERSION (optional with --dir: read from its metadata)")
    p.add_argument("--dir", help="a local source directory instead of the sdist")
    p.add_argument("--force", action="store_true", help="redo every step")
    p.set_defaults(run=prepare)
    t = commands.add_parser("tasks", help="write the tasks of a prepared package")
    t.add_argument("spec")
    t.add_argument("--sample", type=int, default=0, help="how many (0: all candidates)")
    t.add_argument("--seed", type=int, default=63)
    t.add_argument("--out", type=Path,
                   help="the tasks, prompts and checks (default: the package's cache folder, tasks.jsonl)")
    t.add_argument("--list", type=Path,
                   help="also the sampled functions' qualified names, one a line (the list kept in the repo)")
    t.set_defaults(run=tasks)
    m = commands.add_parser("masked", help="the source and tests with the tasks' bodies left out")
    m.add_argument("spec")
    m.add_argument("--tasks", type=Path, required=True)
    m.add_argument("--out", type=Path, required=True)
    m.set_defaults(run=masked)
    v = commands.add_parser("validate", help="references must pass, stubs must fail")
    v.add_argument("--tasks", type=Path, required=True)
    v.add_argument("--python", default=sys.executable,
                   help="runs the check (the tests run with the package's venv)")
    v.add_argument("--timeout", type=float, default=60)
    v.add_argument("--jobs", type=int, default=1)
    v.add_argument("--out", type=Path, help="per-task outcomes (JSON lines)")
    v.set_defaults(run=validate)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()

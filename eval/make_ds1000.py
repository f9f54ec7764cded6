#!/usr/bin/env python3
"""Builds a kgfuse evaluation set from DS-1000 (standard library only, Python 3.11).

    python3 eval/make_ds1000.py --data ../shared/data/ds1000/ds1000.jsonl.gz --out OUT_DIR \
        [--libraries numpy,pandas,scipy,matplotlib,sklearn] [--limit-per-library N]

Steps:

1. Downloads the source distribution of each library with
   `pip download --no-deps --no-binary :all: --no-build-isolation` into OUT_DIR/sdists
   (versions of the DS-1000 environment by default, see DEFAULT_VERSIONS; written to
   OUT_DIR/versions.json) and extracts the `.py` files of the package directory only
   to OUT_DIR/src/<package>/, so `kgfuse ingest code OUT_DIR/src/pandas` gives
   qualified names starting with `pandas.`. Because of `--no-build-isolation`, pip
   prepares the metadata of these old setup.py projects with the build tools of the
   interpreter that runs it; by default that is a venv in OUT_DIR/buildenv with
   setuptools<60, Cython<3, numpy, scipy and pybind11 (wheels), made on first use
   (`--no-build-env` uses this interpreter instead).
2. Indexes every module-level and class-level `def` of the extracted sources (the
   definitions kgfuse ingests; module names follow kgfuse: the chain of directories
   with `__init__.py`) and the module namespaces (imports, `from x import *` with
   `__all__`, simple aliases), so a public name such as `numpy.mean` resolves to its
   definition (`numpy.core.fromnumeric.mean`).
3. For each DS-1000 problem of the selected libraries, parses `reference_code` with
   `ast`, learns import aliases from the prompt, `code_context` and the reference,
   and collects the library APIs the reference calls:
   - calls through an imported module or name (`np.mean`, `stats.ttest_ind`,
     `LinearRegression(...)`; a class call counts as the class's own `__init__`);
   - method calls on objects (`df.groupby(...)`): when the receiver's class is known
     (a constructor call, a return annotation, a pandas accessor, ...) the method is
     looked up along the class's bases; a numpy array method maps to the numpy
     function of the same name (`a.reshape` -> `numpy.reshape`); otherwise the
     method name is looked up among all methods of the problem's library and kept
     when there are 1 to 5 candidates (they become alternatives).
   Each gold item is the list of candidate definitions (qualified names of real
   `def`s in the extracted sources); any of them counts.
4. Writes OUT_DIR/ds1000.jsonl (one question per problem with gold) and
   OUT_DIR/stats.json, and prints the counts per library.
5. Writes OUT_DIR/ingest.sh with the kgfuse commands of the evaluation (not run).
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import gzip
import json
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

# DS-1000 `metadata.library` -> (package directory / import name, PyPI name).
LIBRARIES: dict[str, tuple[str, str]] = {
    "Numpy": ("numpy", "numpy"),
    "Pandas": ("pandas", "pandas"),
    "Scipy": ("scipy", "scipy"),
    "Matplotlib": ("matplotlib", "matplotlib"),
    "Sklearn": ("sklearn", "scikit-learn"),
    "Pytorch": ("torch", "torch"),
    "Tensorflow": ("tensorflow", "tensorflow"),
}
PACKAGE_TO_LIBRARY = {pkg: lib for lib, (pkg, _) in LIBRARIES.items()}
# The versions of DS-1000's evaluation environment (the problems mention
# tensorflow 2.10.0); override with --versions numpy=1.26.4,...
DEFAULT_VERSIONS = {
    "numpy": "1.21.5",
    "pandas": "1.3.5",
    "scipy": "1.7.3",
    "matplotlib": "3.5.2",
    "sklearn": "1.0.2",
    "torch": "1.12.1",
    "tensorflow": "2.10.0",
}
DEFAULT_LIBRARIES = ["numpy", "pandas", "scipy", "matplotlib", "sklearn"]
# torch and tensorflow: no sdist on PyPI (tensorflow) or a huge one (torch).
HEAVY = {"torch", "tensorflow"}
# Build tools for `pip download --no-build-isolation` of the default (setup.py) sdists.
BUILD_ENV_REQUIREMENTS = [
    "setuptools<60",
    "wheel<0.38",
    "Cython<3",
    "numpy==1.23.5",
    "scipy==1.9.3",
    "pybind11<2.11",
]
MAX_CANDIDATES = 5
QUERY_LIMIT = 1500

# Method names of Python's built-in types: a call of one of these on an object of
# unknown type is more likely a str/list/dict call than a library call.
BUILTIN_METHODS = {
    name
    for t in (str, bytes, list, dict, set, frozenset, tuple, int, float, complex, object)
    for name in dir(t)
}
# Methods of numpy.ndarray (implemented in C; their Python documentation is the
# function of the same name, `numpy.reshape` for `ndarray.reshape`).
NDARRAY_METHOD_NAMES = set(
    "all any argmax argmin argpartition argsort astype byteswap choose clip compress conj "
    "conjugate copy cumprod cumsum diagonal dot dump dumps fill flatten getfield item "
    "itemset max mean min newbyteorder nonzero partition prod ptp put ravel repeat reshape "
    "resize round searchsorted setfield setflags sort squeeze std sum swapaxes take tobytes "
    "tofile tolist tostring trace transpose var view".split()
)
BUILTIN_CALLS = {
    "list": "list", "dict": "dict", "set": "set", "frozenset": "set", "tuple": "tuple",
    "str": "str", "repr": "str", "format": "str", "int": "int", "float": "float",
    "len": "int", "sum": "num", "abs": "num", "round": "num", "min": "any", "max": "any",
    "sorted": "list", "reversed": "iter", "range": "range", "zip": "iter",
    "enumerate": "iter", "map": "iter", "filter": "iter", "bool": "bool",
}


def log(message: str = "") -> None:
    print(message, flush=True)


# --------------------------------------------------------------------------------------
# 1. Download and extract
# --------------------------------------------------------------------------------------


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def find_sdist(directory: Path, pypi: str, version: str) -> Path | None:
    if not directory.is_dir():
        return None
    for path in sorted(directory.iterdir()):
        match = re.fullmatch(r"(.+)-([^-]+?)(\.tar\.gz|\.zip|\.tar\.bz2|\.tgz)", path.name)
        if match and normalise(match[1]) == normalise(pypi) and match[2] == version:
            return path
    return None


def ensure_build_env(directory: Path) -> Path:
    """A venv with the build tools old setup.py sdists need to prepare metadata."""
    python = directory / "bin" / "python"
    marker = directory / ".ds1000-ready"
    if python.exists() and marker.exists():
        return python
    log(f"creating build environment {directory} ({', '.join(BUILD_ENV_REQUIREMENTS)})")
    subprocess.run([sys.executable, "-m", "venv", str(directory)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--only-binary", ":all:",
         *BUILD_ENV_REQUIREMENTS],
        check=True,
    )
    marker.write_text("ok\n")
    return python


def pip_download(python: str, pypi: str, version: str, sdists: Path, logs: Path) -> tuple[Path | None, str]:
    """Runs pip download; returns (sdist path or None, status message)."""
    existing = find_sdist(sdists, pypi, version)
    if existing:
        return existing, "cached"
    base = [
        python, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
        "--no-build-isolation",
        # The DS-1000 versions predate Python 3.11; we only read their sources.
        "--ignore-requires-python",
        "--dest", str(sdists), f"{pypi}=={version}",
    ]
    # The second attempt prepares metadata with the legacy `setup.py egg_info`,
    # which numpy.distutils projects (scipy) answer without configuring BLAS.
    attempts = [base, base + ["--no-use-pep517"]]
    log_path = logs / f"pip-{pypi}.log"
    last = ""
    with log_path.open("w") as out:
        for command in attempts:
            out.write("$ " + " ".join(command) + "\n")
            out.flush()
            result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT)
            found = find_sdist(sdists, pypi, version)
            if result.returncode == 0 and found:
                return found, "downloaded" + (" (legacy metadata)" if command is not base else "")
            last = f"pip exited {result.returncode}"
    tail = [l.strip() for l in log_path.read_text(errors="replace").splitlines() if l.strip()]
    hint = next((l for l in reversed(tail) if "rror" in l and "subprocess" not in l), tail[-1] if tail else "")
    return None, f"{last}: {hint[:200]} (log: {log_path})"


def extract_package(archive: Path, package: str, destination: Path, keep_tests: bool) -> int:
    """Extracts the `.py` files of the package directory; returns their number."""
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            members = [(i.filename, i) for i in zf.infolist() if not i.is_dir()]
            read = lambda m: zf.read(m)  # noqa: E731
            return _extract(members, read, package, destination, keep_tests)
    with tarfile.open(archive) as tf:
        members = [(m.name, m) for m in tf.getmembers() if m.isfile()]
        read = lambda m: tf.extractfile(m).read()  # noqa: E731
        return _extract(members, read, package, destination, keep_tests)


def _extract(members, read, package: str, destination: Path, keep_tests: bool) -> int:
    inits = [
        name for name, _ in members
        if name.endswith(f"/{package}/__init__.py") or name == f"{package}/__init__.py"
    ]
    if not inits:
        raise RuntimeError(f"no {package}/__init__.py in the archive")
    prefix = min(inits, key=lambda n: n.count("/"))[: -len("__init__.py")]
    if destination.exists():
        shutil.rmtree(destination)
    count = 0
    for name, member in members:
        if not name.startswith(prefix) or not name.endswith(".py"):
            continue
        relative = name[len(prefix):]
        parts = relative.split("/")
        if any(p in ("", ".", "..") for p in parts) or relative.startswith("/"):
            continue
        if not keep_tests and any(p in ("tests", "test") for p in parts[:-1]):
            continue
        target = destination.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(read(member))
        count += 1
    return count


# --------------------------------------------------------------------------------------
# 2. The name index
# --------------------------------------------------------------------------------------


def segment(name: str) -> str:
    """kgfuse's module segment: non-alphanumeric characters become `_`."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


def is_test_segment(s: str) -> bool:
    return s in ("test", "tests", "testing") or s.startswith("test_") or s.endswith("_test")


@dataclass
class Def:
    qual: str
    module: str
    owner: str | None  # class qualified name for methods
    returns: ast.expr | None
    is_property: bool


@dataclass
class ClassInfo:
    qual: str
    module: str
    bases: list[str]
    members: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # name -> [(kind, qual)]
    attr_types: dict[str, ast.expr] = field(default_factory=dict)  # name -> type expression
    member_aliases: dict[str, str] = field(default_factory=dict)  # name = other_name


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    role: str  # library | test | example
    symbols: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    stars: list[str] = field(default_factory=list)
    all_ops: list[tuple[str, ast.expr]] = field(default_factory=list)


def dotted_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted_name(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


class Index:
    """Definitions and module namespaces of the extracted packages."""

    def __init__(self) -> None:
        self.modules: dict[str, Module] = {}
        self.defs: dict[str, Def] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.type_aliases: dict[str, tuple[str, ast.expr]] = {}
        self.methods_by_name: dict[str, dict[str, set[str]]] = {}  # package -> name -> quals
        self.unparsed_files: dict[str, int] = {}
        self.outside_files: dict[str, int] = {}
        self._lookup_cache: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {}
        self._all_cache: dict[str, list[str] | None] = {}

    # -- building ---------------------------------------------------------------------

    def add_package(self, top: Path) -> None:
        package = segment(top.name)
        for path in sorted(top.rglob("*.py")):
            if any(p == "__pycache__" for p in path.parts):
                continue
            module = self._module_name(path, top)
            if module is None:
                self.outside_files[package] = self.outside_files.get(package, 0) + 1
                continue
            try:
                tree = ast.parse(path.read_bytes(), filename=str(path))
            except (SyntaxError, ValueError):
                self.unparsed_files[package] = self.unparsed_files.get(package, 0) + 1
                continue
            parts = module.split(".")
            stem = path.stem
            if any(p in ("examples", "example") for p in parts):
                role = "example"
            elif is_test_segment(stem) or any(is_test_segment(p) for p in parts):
                role = "test"
            else:
                role = "library"
            info = Module(module, path, path.name == "__init__.py", role)
            self.modules[module] = info
            self._visit_module_block(tree.body, info)

    @staticmethod
    def _module_name(path: Path, top: Path) -> str | None:
        """The module kgfuse gives the file: enclosing directories with __init__.py."""
        parts = [] if path.stem == "__init__" else [segment(path.stem)]
        directory = path.parent
        reached = False
        while (directory / "__init__.py").is_file():
            parts.append(segment(directory.name))
            if directory == top:
                reached = True
            directory = directory.parent
        if not reached or not parts:
            return None
        return ".".join(reversed(parts))

    def _bind(self, symbols: dict, name: str, binding: tuple[str, str]) -> None:
        bindings = symbols.setdefault(name, [])
        if binding not in bindings:
            bindings.append(binding)

    def _absolute(self, module: Module, level: int, target: str | None) -> str:
        if level == 0:
            return target or ""
        parts = module.name.split(".")
        if not module.is_package:
            parts = parts[:-1]
        if level > 1:
            parts = parts[: len(parts) - (level - 1)]
        if target:
            parts = parts + target.split(".")
        return ".".join(parts)

    def _visit_module_block(self, body: list[ast.stmt], module: Module) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qual = f"{module.name}.{node.name}"
                self._add_def(qual, module.name, None, node)
                self._bind(module.symbols, node.name, ("def", qual))
            elif isinstance(node, ast.ClassDef):
                qual = f"{module.name}.{node.name}"
                self._add_class(qual, module, node)
                self._bind(module.symbols, node.name, ("class", qual))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self._bind(module.symbols, alias.asname, ("import", alias.name))
                    else:
                        root = alias.name.split(".")[0]
                        self._bind(module.symbols, root, ("import", root))
            elif isinstance(node, ast.ImportFrom):
                source = self._absolute(module, node.level, node.module)
                for alias in node.names:
                    if alias.name == "*":
                        if source not in module.stars:
                            module.stars.append(source)
                    else:
                        self._bind(module.symbols, alias.asname or alias.name,
                                   ("import", f"{source}.{alias.name}"))
            elif isinstance(node, ast.Assign):
                value_name = dotted_name(node.value)
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        if target.id == "__all__":
                            module.all_ops.append(("set", node.value))
                        elif value_name:
                            self._bind(module.symbols, target.id, ("alias", value_name))
                        elif isinstance(node.value, ast.Subscript) or (
                                isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.BitOr)):
                            # `FrameOrSeriesUnion = Union["DataFrame", "Series"]`
                            key = f"{module.name}:{target.id}"
                            self.type_aliases[key] = (module.name, node.value)
                            self._bind(module.symbols, target.id, ("typealias", key))
                        elif isinstance(node.value, ast.Call) and dotted_name(node.value.func):
                            # `norm = norm_gen(name="norm")`: an instance of a class.
                            self._bind(module.symbols, target.id, ("instance", dotted_name(node.value.func)))
                        else:
                            module.symbols.setdefault(target.id, [])
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if node.target.id == "__all__" and node.value is not None:
                    module.all_ops.append(("set", node.value))
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                if node.target.id == "__all__":
                    module.all_ops.append(("add", node.value))
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                call = node.value
                if (isinstance(call.func, ast.Attribute) and call.func.attr in ("extend", "append")
                        and isinstance(call.func.value, ast.Name) and call.func.value.id == "__all__"
                        and call.args):
                    arg = call.args[0]
                    if call.func.attr == "append":
                        arg = ast.List(elts=[arg], ctx=ast.Load())
                    module.all_ops.append(("add", arg))
            # kgfuse visits conditional blocks too (`try: ... except ImportError:`).
            for block in self._sub_blocks(node):
                self._visit_module_block(block, module)

    @staticmethod
    def _sub_blocks(node: ast.stmt) -> list[list[ast.stmt]]:
        if isinstance(node, ast.If):
            return [node.body, node.orelse]
        if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            return [node.body, *[h.body for h in node.handlers], node.orelse, node.finalbody]
        if isinstance(node, (ast.With, ast.AsyncWith)):
            return [node.body]
        return []

    def _add_def(self, qual: str, module: str, owner: str | None, node) -> None:
        decorators = {dotted_name(d.func if isinstance(d, ast.Call) else d) or "" for d in node.decorator_list}
        is_property = any(d.split(".")[-1] in ("property", "cache_readonly", "cached_property")
                          for d in decorators)
        existing = self.defs.get(qual)
        if existing is None:
            self.defs[qual] = Def(qual, module, owner, node.returns, is_property)
        else:
            existing.returns = existing.returns or node.returns
            existing.is_property = existing.is_property or is_property

    def _add_class(self, qual: str, module: Module, node: ast.ClassDef) -> None:
        bases = []
        for base in node.bases:
            if isinstance(base, ast.Subscript):
                base = base.value
            name = dotted_name(base)
            if name:
                bases.append(name)
        info = self.classes.get(qual)
        if info is None:
            info = ClassInfo(qual, module.name, bases)
            self.classes[qual] = info
        self._visit_class_block(node.body, info, module)

    def _visit_class_block(self, body: list[ast.stmt], info: ClassInfo, module: Module) -> None:
        package = module.name.split(".")[0]
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qual = f"{info.qual}.{node.name}"
                self._add_def(qual, module.name, info.qual, node)
                self._bind(info.members, node.name, ("def", qual))
                if module.role == "library" and not node.name.startswith("_"):
                    self.methods_by_name.setdefault(package, {}).setdefault(node.name, set()).add(qual)
            elif isinstance(node, ast.ClassDef):
                qual = f"{info.qual}.{node.name}"
                self._add_class(qual, module, node)
                self._bind(info.members, node.name, ("class", qual))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                info.attr_types.setdefault(node.target.id, node.annotation)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                value = node.value
                if isinstance(value, ast.Name):
                    info.member_aliases.setdefault(name, value.id)
                elif (isinstance(value, ast.Call) and (dotted_name(value.func) or "").endswith("CachedAccessor")
                      and len(value.args) >= 2):
                    # pandas: `str = CachedAccessor("str", StringMethods)`
                    info.attr_types.setdefault(name, value.args[1])
            for block in self._sub_blocks(node):
                self._visit_class_block(block, info, module)

    # -- resolving --------------------------------------------------------------------

    def module_all(self, name: str, seen: frozenset = frozenset()) -> list[str] | None:
        """The module's `__all__` when it can be computed statically."""
        if name in self._all_cache:
            return self._all_cache[name]
        module = self.modules.get(name)
        if module is None or not module.all_ops or name in seen:
            return None
        seen = seen | {name}
        result: list[str] = []
        for op, expr in module.all_ops:
            value = self._eval_all(expr, module, seen)
            if value is None:
                self._all_cache[name] = None
                return None
            result = value if op == "set" else result + value
        self._all_cache[name] = result
        return result

    def _eval_all(self, expr: ast.expr, module: Module, seen) -> list[str] | None:
        if isinstance(expr, (ast.List, ast.Tuple)):
            out = []
            for element in expr.elts:
                if isinstance(element, ast.Constant) and isinstance(element.value, str):
                    out.append(element.value)
                else:
                    return None
            return out
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            left = self._eval_all(expr.left, module, seen)
            right = self._eval_all(expr.right, module, seen)
            return None if left is None or right is None else left + right
        if isinstance(expr, ast.Call) and dotted_name(expr.func) == "list" and len(expr.args) == 1:
            return self._eval_all(expr.args[0], module, seen)
        if isinstance(expr, ast.Attribute) and expr.attr == "__all__":
            for kind, target in self.resolve_in_module(module.name, dotted_name(expr.value) or ""):
                if kind == "module":
                    return self.module_all(target, seen)
            return None
        if isinstance(expr, ast.Name) and expr.id == "__all__":
            return []  # `__all__ = __all__ + [...]`
        return None

    def exported(self, module_name: str, name: str) -> bool:
        names = self.module_all(module_name)
        if names is not None:
            return name in names
        return not name.startswith("_")

    def lookup(self, module_name: str, name: str, seen: frozenset = frozenset()) -> tuple[tuple[str, str], ...]:
        """What `name` is in a module's namespace: ('def'|'class'|'module', qual) targets."""
        key = (module_name, name)
        if key in self._lookup_cache:
            return self._lookup_cache[key]
        if key in seen:
            return ()
        seen = seen | {key}
        module = self.modules.get(module_name)
        out: list[tuple[str, str]] = []
        if module is not None:
            for kind, target in module.symbols.get(name, []):
                if kind in ("def", "class", "typealias"):
                    out.append((kind, target))
                elif kind == "import":
                    out.extend(self.resolve(target, seen))
                elif kind == "alias":
                    out.extend(self.resolve_in_module(module_name, target, seen))
                elif kind == "instance":
                    out.extend(("instance", q) for k, q in self.resolve_in_module(module_name, target, seen)
                               if k == "class")
            if not out and name not in module.symbols:
                for star in module.stars:
                    if star in self.modules and self.exported(star, name):
                        out.extend(self.lookup(star, name, seen))
                        if out:
                            break
        if not out and f"{module_name}.{name}" in self.modules:
            out.append(("module", f"{module_name}.{name}"))
        result = tuple(dict.fromkeys(out))
        # An empty answer inside a cycle may be the cycle's fault: cache only answers.
        if result or not seen - {key}:
            self._lookup_cache[key] = result
        return result

    def resolve(self, dotted: str, seen: frozenset = frozenset()) -> tuple[tuple[str, str], ...]:
        """Targets of an absolute dotted name (`numpy.linalg.norm`)."""
        if dotted in self.modules:
            return (("module", dotted),)
        if "." not in dotted:
            return ()
        head, _, last = dotted.rpartition(".")
        out: list[tuple[str, str]] = []
        for target in self.resolve(head, seen):
            out.extend(self.attribute(target, last, seen))
        return tuple(dict.fromkeys(out))

    def resolve_in_module(self, module_name: str, dotted: str, seen: frozenset = frozenset()):
        """Targets of a dotted name as written inside a module."""
        if not dotted:
            return ()
        first, *rest = dotted.split(".")
        targets = list(self.lookup(module_name, first, seen))
        if not targets and first in self.modules:
            targets = [("module", first)]
        for part in rest:
            targets = [t for target in targets for t in self.attribute(target, part, seen)]
        return tuple(dict.fromkeys(targets))

    def attribute(self, target: tuple[str, str], name: str, seen: frozenset = frozenset()):
        kind, qual = target
        if kind == "module":
            return self.lookup(qual, name, seen)
        if kind in ("class", "instance"):
            return self.class_member(qual, name)
        return ()

    def class_bases(self, qual: str) -> list[str]:
        info = self.classes.get(qual)
        if info is None:
            return []
        out = []
        for base in info.bases:
            for kind, target in self.resolve_in_module(info.module, base):
                if kind == "class" and target != qual:
                    out.append(target)
        return out

    def mro(self, qual: str) -> list[str]:
        order: list[str] = []
        stack = [qual]
        while stack:
            current = stack.pop(0)
            if current in order or len(order) > 100:
                continue
            order.append(current)
            stack = self.class_bases(current) + stack
        return order

    def class_member(self, qual: str, name: str, own_only: bool = False) -> tuple[tuple[str, str], ...]:
        for cls in ([qual] if own_only else self.mro(qual)):
            info = self.classes.get(cls)
            if info is None:
                continue
            if name in info.members:
                return tuple(info.members[name])
            alias = info.member_aliases.get(name)
            if alias and alias in info.members:
                return tuple(info.members[alias])
        return ()

    def class_attr_type(self, qual: str, name: str) -> tuple[str, ast.expr] | None:
        for cls in self.mro(qual):
            info = self.classes.get(cls)
            if info is not None and name in info.attr_types:
                return info.module, info.attr_types[name]
        return None


# --------------------------------------------------------------------------------------
# 3. Gold APIs of a problem
# --------------------------------------------------------------------------------------

# A type is ("class", qualified name), ("ndarray", ""), ("builtin", name) or None.
NDARRAY = ("ndarray", "")
# Where the function form of a library's methods lives.
FUNCTION_FORM = {"matplotlib": "matplotlib.pyplot"}
SELF_TYPE_HINTS = ("Self", "FrameOrSeries", "NDFrameT", "FrameOrSeriesUnion", "_T", "T")


class ProblemAnalyser:
    def __init__(self, index: Index, package: str, aliases: dict[str, str],
                 skipped_calls: set[int] = frozenset()) -> None:
        self.index = index
        self.package = package
        self.aliases = aliases
        self.skipped_calls = skipped_calls
        self.env: dict[str, tuple | None] = {}
        self.gold: list[tuple[str, ...]] = []
        self.kinds: list[str] = []
        self.calls = 0
        self.unresolved: list[str] = []
        self.dataframe = self._class_of("pandas.DataFrame")
        self.series = self._class_of("pandas.Series")

    def _class_of(self, dotted: str):
        for kind, qual in self.index.resolve(dotted):
            if kind == "class":
                return ("class", qual)
        return None

    # -- statements -------------------------------------------------------------------

    def run(self, statements: list[ast.stmt], collect: bool) -> None:
        for node in statements:
            self.statement(node, collect)

    def statement(self, node: ast.stmt, collect: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            positional = arguments.posonlyargs + arguments.args
            defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
            for arg, default in zip(positional, defaults):
                if default is not None:
                    self.env[arg.arg] = self.type_of(default, frozenset())
                # otherwise a parameter keeps the type of the outer variable of the same
                # name (DS-1000: `def g(df): ...; result = g(df.copy())`).
            for default in arguments.defaults + [d for d in arguments.kw_defaults if d]:
                if collect:
                    self.expression(default, frozenset())
            self.run(node.body, collect)
            return
        if isinstance(node, ast.ClassDef):
            self.run(node.body, collect)
            return
        if collect:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.expression(child, frozenset())
        if isinstance(node, ast.Assign):
            value_type = self.type_of(node.value, frozenset())
            for target in node.targets:
                self.assign(target, node.value, value_type)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self.assign(node.target, node.value, self.type_of(node.value, frozenset()))
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self.assign(node.target, None, None)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, None, None)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                self.statement(child, collect)
            elif isinstance(child, ast.excepthandler):
                self.run(child.body, collect)
            elif isinstance(child, ast.match_case):
                self.run(child.body, collect)
            elif isinstance(child, ast.withitem) and collect:
                self.expression(child.context_expr, frozenset())

    def assign(self, target: ast.expr, value: ast.expr | None, value_type) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = value_type
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) else None
            for i, element in enumerate(target.elts):
                if isinstance(element, ast.Starred):
                    element = element.value
                if values is not None:
                    self.assign(element, values[i], self.type_of(values[i], frozenset()))
                else:
                    self.assign(element, None, None)

    # -- expressions ------------------------------------------------------------------

    def expression(self, node: ast.expr, shadow: frozenset) -> None:
        """Collects the calls of an expression, innermost scopes aware of lambdas."""
        if isinstance(node, ast.Lambda):
            params = {a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
            if node.args.vararg:
                params.add(node.args.vararg.arg)
            if node.args.kwarg:
                params.add(node.args.kwarg.arg)
            self.expression(node.body, shadow | params)
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = set(shadow)
            for generator in node.generators:
                self.expression(generator.iter, frozenset(inner))
                inner |= {n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)}
                for condition in generator.ifs:
                    self.expression(condition, frozenset(inner))
            if isinstance(node, ast.DictComp):
                self.expression(node.key, frozenset(inner))
                self.expression(node.value, frozenset(inner))
            else:
                self.expression(node.elt, frozenset(inner))
            return
        if isinstance(node, ast.NamedExpr):
            self.expression(node.value, shadow)
            self.env[node.target.id] = self.type_of(node.value, shadow)
            return
        if isinstance(node, ast.Call):
            self.call(node, shadow)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expression(child, shadow)
            elif isinstance(child, ast.keyword):
                self.expression(child.value, shadow)

    def alias_path(self, node: ast.expr, shadow: frozenset) -> str | None:
        """`np.linalg.norm` -> `numpy.linalg.norm` when the root is an imported name."""
        name = dotted_name(node)
        if not name:
            return None
        root, _, rest = name.partition(".")
        if root in shadow or root in self.env or root not in self.aliases:
            return None
        return self.aliases[root] + ("." + rest if rest else "")

    def call(self, node: ast.Call, shadow: frozenset) -> None:
        func = node.func
        if id(node) in self.skipped_calls:
            return
        self.calls += 1
        path = self.alias_path(func, shadow)
        if path is not None:
            targets = self.index.resolve(path)
            defs = self.defs_of(targets)
            if defs:
                self.add(defs, "path")
            else:
                self.unresolved.append(path)
            return
        if not isinstance(func, ast.Attribute):
            return
        receiver = self.type_of(func.value, shadow)
        name = func.attr
        if receiver is not None and receiver[0] == "builtin":
            return
        if receiver is not None and receiver[0] == "class":
            defs = self.defs_of(self.index.class_member(receiver[1], name))
            if defs:
                self.add(defs, "typed")
                return
        if receiver is None and self.package == "numpy" and name in NDARRAY_METHOD_NAMES:
            # In numpy problems an object of unknown type is an array in practice; numpy's
            # Python classes with such methods (masked arrays, matrix, user_array) are not.
            receiver = NDARRAY
        if receiver == NDARRAY:
            defs = self.defs_of(self.index.resolve(f"numpy.{name}"))
            if defs:
                self.add(defs, "ndarray")
            else:
                self.unresolved.append(f"ndarray.{name}")
            return
        if receiver is None and (name in BUILTIN_METHODS or self.package == "numpy"):
            # numpy's own Python classes (masked arrays, matrix, ...) are rarely the
            # receivers in numpy problems, built-in types' methods never library calls.
            self.unresolved.append(f"?.{name}")
            return
        candidates = set(self.index.methods_by_name.get(self.package, {}).get(name, set()))
        # The function form of the method (`numpy.reshape`, `matplotlib.pyplot.legend`).
        function_module = FUNCTION_FORM.get(self.package, self.package)
        candidates |= set(self.defs_of(self.index.resolve(f"{function_module}.{name}")))
        if not candidates and name in NDARRAY_METHOD_NAMES and self.package != "numpy":
            # `X.reshape(-1, 1)` in a scikit-learn problem: most likely a numpy array.
            defs = self.defs_of(self.index.resolve(f"numpy.{name}"))
            if defs:
                self.add(defs, "ndarray")
                return
        if 1 <= len(candidates) <= MAX_CANDIDATES:
            self.add(tuple(sorted(candidates)), "name")
        else:
            self.unresolved.append(f"?.{name} ({len(candidates)} candidates)")

    def defs_of(self, targets) -> tuple[str, ...]:
        out = []
        for kind, qual in targets:
            if kind == "def":
                out.append(qual)
            elif kind == "class":
                # A class call is its own `__init__`, when the class defines one.
                for k, q in self.index.class_member(qual, "__init__", own_only=True):
                    if k == "def":
                        out.append(q)
            # Calling an object (`stats.norm(loc, scale)`) reaches a generic `__call__`
            # (rv_generic.__call__ for every scipy.stats distribution): not gold.
        return tuple(sorted(dict.fromkeys(out)))

    def add(self, defs: tuple[str, ...], kind: str) -> None:
        if defs not in self.gold:
            self.gold.append(defs)
            self.kinds.append(kind)

    # -- types ------------------------------------------------------------------------

    def type_of(self, node: ast.expr, shadow: frozenset):
        if isinstance(node, ast.Name):
            if node.id in shadow:
                return None
            if node.id in self.env:
                return self.env[node.id]
            return None
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return ("builtin", "str")
            if isinstance(node.value, (int, float, complex, bool)):
                return ("builtin", "num")
            return None
        if isinstance(node, (ast.List, ast.ListComp)):
            return ("builtin", "list")
        if isinstance(node, (ast.Dict, ast.DictComp)):
            return ("builtin", "dict")
        if isinstance(node, (ast.Set, ast.SetComp)):
            return ("builtin", "set")
        if isinstance(node, ast.Tuple):
            return ("builtin", "tuple")
        if isinstance(node, ast.JoinedStr):
            return ("builtin", "str")
        if isinstance(node, ast.Call):
            return self.call_type(node, shadow)
        if isinstance(node, ast.Subscript):
            return self.subscript_type(node, shadow)
        if isinstance(node, ast.Attribute):
            path = self.alias_path(node, shadow)
            if path is not None:
                # A module attribute that is not called: an object such as scipy.stats.norm
                # (a class or a constant otherwise).
                for kind, qual in self.index.resolve(path):
                    if kind == "instance":
                        return ("class", qual)
                return None
            base = self.type_of(node.value, shadow)
            if base is not None and base[0] == "class":
                found = self.index.class_attr_type(base[1], node.attr)
                if found is not None:
                    return self.annotation_type(found[0], found[1], base)
                for kind, qual in self.index.class_member(base[1], node.attr):
                    definition = self.index.defs.get(qual) if kind == "def" else None
                    if definition is not None and definition.is_property:
                        return self.annotation_type(definition.module, definition.returns, base)
            if base == NDARRAY and node.attr in ("T", "real", "imag", "flat"):
                return NDARRAY
            if base is not None and base == self.dataframe and node.attr in ("loc", "iloc"):
                return ("indexer", "DataFrame")
            if base is not None and base == self.series and node.attr in ("loc", "iloc"):
                return ("indexer", "Series")
            if base is not None and base == self.dataframe and self.series is not None \
                    and not self.index.class_member(base[1], node.attr):
                return self.series  # `df.col`: a column
            return None
        if isinstance(node, (ast.BinOp, ast.Compare, ast.BoolOp, ast.UnaryOp)):
            # Element-wise operators keep the container: `(df.a != df.b).sum()`.
            operands = {
                ast.BinOp: lambda n: [n.left, n.right], ast.Compare: lambda n: [n.left, *n.comparators],
                ast.BoolOp: lambda n: n.values, ast.UnaryOp: lambda n: [n.operand],
            }[type(node)](node)
            types = [self.type_of(o, shadow) for o in operands]
            for container in (self.dataframe, self.series, NDARRAY):
                if container is not None and container in types:
                    return container
            if isinstance(node, ast.BinOp) and types[0] is not None and types[0][0] == "builtin" \
                    and types[0][1] in ("str", "list"):
                return types[0]
            return None
        return None

    def subscript_type(self, node: ast.Subscript, shadow: frozenset):
        base = self.type_of(node.value, shadow)
        key = node.slice
        string_key = isinstance(key, ast.Constant) and isinstance(key.value, str)
        if base == NDARRAY:
            return NDARRAY if not isinstance(key, ast.Constant) else None
        if base is None:
            return None
        if base == self.dataframe:
            if string_key:
                return self.series
            if isinstance(key, ast.Name):
                # `df[col]` is a column unless the name is a mask or a list of columns.
                key_type = self.type_of(key, shadow)
                if key_type in (self.series, NDARRAY) or key_type == ("builtin", "list"):
                    return self.dataframe
                return self.series
            return self.dataframe  # a column list, a mask or a slice
        if base == ("indexer", "DataFrame"):
            if isinstance(key, ast.Tuple) and len(key.elts) == 2:
                # `.loc[rows, cols]`: one scalar side makes a Series, none a DataFrame.
                scalar = [isinstance(e, ast.Constant) or isinstance(e, ast.UnaryOp) and isinstance(e.operand, ast.Constant)
                          for e in key.elts]
                if all(scalar):
                    return None
                if any(scalar):
                    return self.series
                if all(isinstance(e, (ast.Slice, ast.List)) for e in key.elts):
                    return self.dataframe
                return None
            return None if isinstance(key, ast.Constant) else self.dataframe
        if base == ("indexer", "Series"):
            return self.series if not isinstance(key, ast.Constant) else None
        if base[0] == "class":
            short = base[1].rsplit(".", 1)[-1]
            if short == "DataFrameGroupBy":
                if string_key:
                    return self._class_of("pandas.core.groupby.generic.SeriesGroupBy")
                if isinstance(key, ast.List):
                    return base
        return None

    def call_type(self, node: ast.Call, shadow: frozenset):
        func = node.func
        if isinstance(func, ast.Name) and func.id in BUILTIN_CALLS and func.id not in shadow \
                and func.id not in self.env and func.id not in self.aliases:
            return ("builtin", BUILTIN_CALLS[func.id])
        path = self.alias_path(func, shadow)
        if path is not None:
            for kind, qual in self.index.resolve(path):
                if kind == "class":
                    return ("class", qual)
                if kind == "instance":
                    for k, q in self.index.class_member(qual, "__call__"):
                        if k == "def":
                            return self.annotation_type(self.index.defs[q].module, self.index.defs[q].returns, None)
                    return None
                if kind == "def":
                    definition = self.index.defs[qual]
                    found = self.annotation_type(definition.module, definition.returns, None)
                    if found is not None:
                        return found
            if path.split(".")[0] == "numpy":
                return NDARRAY  # numpy functions (mostly C) return arrays
            return None
        if isinstance(func, ast.Attribute):
            receiver = self.type_of(func.value, shadow)
            if receiver is not None and receiver[0] == "class":
                for kind, qual in self.index.class_member(receiver[1], func.attr):
                    if kind == "def":
                        definition = self.index.defs[qual]
                        return self.annotation_type(definition.module, definition.returns, receiver)
                    if kind == "class":
                        return ("class", qual)
            if receiver == NDARRAY:
                if func.attr in ("tolist",):
                    return ("builtin", "list")
                if func.attr in ("item",):
                    return None
                return NDARRAY
            if receiver is not None and receiver[0] == "builtin" and receiver[1] == "str":
                return ("builtin", "list" if func.attr in ("split", "rsplit", "splitlines") else "str")
        return None

    def annotation_type(self, module: str, annotation: ast.expr | None, receiver, depth: int = 0):
        if annotation is None:
            return None
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value.strip(), mode="eval").body
            except SyntaxError:
                return None
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            for side in (annotation.left, annotation.right):
                if not (isinstance(side, ast.Constant) and side.value is None):
                    return self.annotation_type(module, side, receiver, depth + 1)
            return None
        if isinstance(annotation, ast.Subscript):
            head = (dotted_name(annotation.value) or "").split(".")[-1]
            if head in ("Optional", "Union"):
                elements = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
                for element in elements:
                    if not (isinstance(element, ast.Constant) and element.value is None):
                        return self.annotation_type(module, element, receiver, depth + 1)
                return None
            annotation = annotation.value
        name = dotted_name(annotation)
        if not name:
            return None
        if name.split(".")[-1] in ("ndarray", "ArrayLike", "NDArray"):
            return NDARRAY
        if receiver is not None and name.split(".")[-1] in SELF_TYPE_HINTS:
            return receiver  # `def copy(self: FrameOrSeries) -> FrameOrSeries`
        for kind, qual in self.index.resolve_in_module(module, name):
            if kind == "class":
                return ("class", qual)
            if kind == "typealias" and depth < 5:
                alias_module, expr = self.index.type_aliases[qual]
                return self.annotation_type(alias_module, expr, receiver, depth + 1)
        if name in ("str", "list", "dict", "int", "float", "bool", "tuple", "set"):
            return ("builtin", name)
        return None


def parse_reference(code: str) -> ast.Module | None:
    attempts = [code, textwrap.dedent(code)]
    lines = code.splitlines()
    if len(lines) > 1:
        # The first line lost its indentation: indent it like the second.
        indent = re.match(r"\s*", lines[1])[0]
        attempts.append(textwrap.dedent("\n".join([indent + lines[0].lstrip()] + lines[1:])))
    attempts.append("def _ds1000_solution():\n" + textwrap.indent(textwrap.dedent(code), "    "))
    for attempt in attempts:
        try:
            return ast.parse(attempt)
        except SyntaxError:
            continue
    return None


def parse_loose(code: str) -> list[ast.stmt]:
    """Parses skeleton code; a trailing `def f(...):` without body gets one."""
    for attempt in (code, code + "\n    pass\n"):
        try:
            return ast.parse(attempt).body
        except SyntaxError:
            continue
    return []


def collect_aliases(*texts: str) -> dict[str, str]:
    """Import aliases from every `import`/`from` line of the texts."""
    aliases: dict[str, str] = {}
    for text in texts:
        for line in text.splitlines():
            stripped = line.strip()
            if not (stripped.startswith("import ") or stripped.startswith("from ")):
                continue
            try:
                tree = ast.parse(stripped)
            except SyntaxError:
                continue
            for node in tree.body:
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.asname:
                            aliases[alias.asname] = alias.name
                        else:
                            root = alias.name.split(".")[0]
                            aliases.setdefault(root, root)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    for alias in node.names:
                        if alias.name != "*":
                            aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def test_input_statements(code_context: str) -> list[ast.stmt]:
    """The body of DS-1000's `define_test_input`, where inputs are built."""
    try:
        tree = ast.parse(code_context)
    except SyntaxError:
        return []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "define_test_input":
            return node.body
    return []


def prompt_code(prompt: str) -> str:
    blocks = re.findall(r"<code>(.*?)</code>", prompt, flags=re.S)
    return "\n".join(blocks) if blocks else prompt


def make_query(prompt: str, library: str) -> str:
    if library == "Matplotlib" or "<code>" not in prompt:
        # Matplotlib prompts are code whose comments state the task.
        comments = []
        for line in prompt.splitlines():
            stripped = line.strip()
            if stripped.startswith("#"):
                text = stripped.lstrip("#").strip()
                if text and not re.fullmatch(r"SOLUTION (START|END)", text):
                    comments.append(text)
        text = "\n".join(comments) if comments else prompt
    else:
        text = re.split(r"\n\s*A:\s*\n", prompt, maxsplit=1)[0]
        text = re.sub(r"^\s*Problem:\s*", "", text)
    text = re.sub(r"\n{3,}", "\n\n", text.strip())
    if len(text) > QUERY_LIMIT:
        cut = text[:QUERY_LIMIT]
        space = max(cut.rfind(" "), cut.rfind("\n"))
        text = (cut[:space] if space > QUERY_LIMIT * 0.8 else cut).rstrip()
    return text


def analyse_problem(index: Index, row: dict, package: str):
    reference = row["reference_code"]
    tree = parse_reference(reference)
    if tree is None:
        return None
    prompt = row["prompt"]
    context = row.get("code_context", "")
    aliases = collect_aliases(prompt, context, reference)
    # DS-1000's wrapper `result = g(df.copy())` is boilerplate, not an API use.
    local = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    skipped = {
        id(arg)
        for call in ast.walk(tree)
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in local
        for arg in call.args
        if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute)
        and arg.func.attr == "copy" and not arg.args
    }
    analyser = ProblemAnalyser(index, package, aliases, skipped)
    analyser.run(test_input_statements(context), collect=False)
    analyser.run(parse_loose(prompt_code(prompt)), collect=False)
    analyser.run(tree.body, collect=True)
    return analyser


# --------------------------------------------------------------------------------------
# 4./5. Outputs
# --------------------------------------------------------------------------------------


def write_ingest_script(out: Path, packages: list[str]) -> Path:
    path = out / "ingest.sh"
    ingest = "\n".join(f'"$KGFUSE" --data "$STORE" ingest code "$OUT/src/{p}" >&2' for p in packages)
    path.write_text(f"""#!/usr/bin/env bash
# Evaluates kgfuse on the DS-1000 set built by eval/make_ds1000.py (not run by it).
#
#   {out}/ingest.sh [STORE_DIR] [hash|minilm]
#
# Needs the `kgfuse` binary on PATH (or KGFUSE=path).
set -euo pipefail

OUT="{out}"
STORE="${{1:-$OUT/store}}"
EMBEDDER="${{2:-hash}}"
KGFUSE="${{KGFUSE:-kgfuse}}"

rm -rf "$STORE"
if [ "$EMBEDDER" = minilm ]; then
  "$KGFUSE" --data "$STORE" init --embedder minilm >&2
else
  "$KGFUSE" --data "$STORE" init --embedder hash --dimension 384 >&2
fi
{ingest}
"$KGFUSE" --data "$STORE" index cases >&2
"$KGFUSE" --data "$STORE" eval "$OUT/ds1000.jsonl" --k 5
""")
    path.chmod(0o755)
    return path


def load_rows(path: Path) -> list[dict]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def parse_libraries(text: str) -> list[str]:
    names = {
        "numpy": "numpy", "np": "numpy", "pandas": "pandas", "pd": "pandas",
        "scipy": "scipy", "matplotlib": "matplotlib", "plt": "matplotlib",
        "sklearn": "sklearn", "scikit-learn": "sklearn", "torch": "torch", "pytorch": "torch",
        "tensorflow": "tensorflow", "tf": "tensorflow",
    }
    out = []
    for item in text.split(","):
        item = item.strip().lower()
        if not item:
            continue
        if item not in names:
            raise SystemExit(f"unknown library {item!r}; choose from numpy, pandas, scipy, "
                             "matplotlib, sklearn, torch, tensorflow")
        if names[item] not in out:
            out.append(names[item])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, type=Path, help="DS-1000 JSONL (optionally .gz)")
    parser.add_argument("--out", required=True, type=Path, help="output directory")
    parser.add_argument("--libraries", default=",".join(DEFAULT_LIBRARIES),
                        help="comma-separated (default: %(default)s; torch and tensorflow are "
                             "skipped unless named)")
    parser.add_argument("--limit-per-library", type=int, default=None, metavar="N",
                        help="only the first N problems of each library")
    parser.add_argument("--versions", default="",
                        help="overrides, e.g. numpy=1.26.4,pandas=2.0.3 (default: DS-1000's)")
    parser.add_argument("--build-env", type=Path, default=None,
                        help="venv with build tools for pip (default: OUT/buildenv)")
    parser.add_argument("--no-build-env", action="store_true",
                        help="run pip with this interpreter and its build tools")
    parser.add_argument("--no-tests", action="store_true",
                        help="leave the packages' tests/ directories out of src/")
    args = parser.parse_args()

    out = args.out.resolve()
    libraries = parse_libraries(args.libraries)
    versions = dict(DEFAULT_VERSIONS)
    for item in filter(None, (s.strip() for s in args.versions.split(","))):
        key, _, version = item.partition("=")
        versions[parse_libraries(key)[0]] = version.strip()
    rows = load_rows(args.data)
    per_library: dict[str, list[dict]] = {}
    for row in rows:
        per_library.setdefault(row["metadata"]["library"], []).append(row)
    for heavy in sorted(HEAVY - set(libraries)):
        lib = PACKAGE_TO_LIBRARY[heavy]
        log(f"skipping {lib} ({len(per_library.get(lib, []))} problems): {heavy} is not "
            "selected by default (huge sdist or none on PyPI); name it in --libraries to try")

    sdists, src, logs = out / "sdists", out / "src", out / "logs"
    for directory in (sdists, src, logs):
        directory.mkdir(parents=True, exist_ok=True)

    # 1. Download and extract.
    python = sys.executable
    pypi_of = {pkg: pypi for pkg, pypi in LIBRARIES.values()}
    missing = [p for p in libraries if not find_sdist(sdists, pypi_of[p], versions[p])]
    if missing and not args.no_build_env:
        try:
            python = str(ensure_build_env((args.build_env or out / "buildenv").resolve()))
        except subprocess.CalledProcessError as error:
            log(f"warning: could not create the build environment ({error}); using {python}")
    wanted = ", ".join(f"{pypi_of[p]}=={versions[p]}" for p in libraries)
    if missing:
        log(f"downloading sdists with {python} -m pip (reusing those in {sdists}): {wanted}")
    else:
        log(f"sdists already in {sdists}: {wanted}")
    version_record: dict[str, dict] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(libraries) or 1) as pool:
        futures = {
            p: pool.submit(pip_download, python, pypi_of[p], versions[p], sdists, logs)
            for p in libraries
        }
        results = {p: f.result() for p, f in futures.items()}
    available: list[str] = []
    for package in libraries:
        archive, status = results[package]
        record = {"pypi": pypi_of[package], "version": versions[package], "status": status}
        if archive is None:
            log(f"  {package}: download FAILED: {status}")
        else:
            try:
                files = extract_package(archive, package, src / package, keep_tests=not args.no_tests)
            except (RuntimeError, OSError, tarfile.TarError, zipfile.BadZipFile) as error:
                record["status"] = f"extraction failed: {error}"
                log(f"  {package}: extraction FAILED: {error}")
            else:
                record.update(sdist=archive.name, python_files=files)
                available.append(package)
                log(f"  {package} {versions[package]}: {status}, {files} .py files -> {src / package}")
        version_record[package] = record
    (out / "versions.json").write_text(json.dumps(version_record, indent=2) + "\n")

    # 2. Index.
    index = Index()
    for package in available:
        index.add_package(src / package)
    for package in available:
        defs = sum(1 for d in index.defs.values() if d.module.split(".")[0] == package)
        modules = sum(1 for m in index.modules if m.split(".")[0] == package)
        log(f"  index {package}: {modules} modules, {defs} defs"
            + (f", {index.unparsed_files[package]} files not parsed" if package in index.unparsed_files else "")
            + (f", {index.outside_files[package]} files outside the package chain" if package in index.outside_files else ""))

    # 3./4. Problems.
    lines: list[str] = []
    details: list[str] = []
    stats: dict[str, dict] = {}
    header = f"{'library':<11} {'problems':>8} {'kept':>5} {'no parse':>8} {'no gold':>7} {'gold/problem':>12}  by kind"
    table = [header]
    for package in libraries:
        lib = PACKAGE_TO_LIBRARY[package]
        problems = per_library.get(lib, [])
        if args.limit_per_library is not None:
            problems = problems[: args.limit_per_library]
        counts = {"problems": len(problems), "kept": 0, "no_parse": 0, "no_gold": 0,
                  "gold_items": 0, "kinds": {}}
        if package not in available:
            counts["note"] = "library not available"
            stats[package] = counts
            table.append(f"{package:<11} {len(problems):>8}     - (not available: {version_record[package]['status'][:60]})")
            continue
        gold_sizes = []
        for row in problems:
            analyser = analyse_problem(index, row, package)
            if analyser is None:
                counts["no_parse"] += 1
                continue
            gold = [list(g) for g in analyser.gold if any(q in index.defs for q in g)]
            if not gold:
                counts["no_gold"] += 1
                continue
            counts["kept"] += 1
            gold_sizes.append(len(gold))
            for kind in analyser.kinds:
                counts["kinds"][kind] = counts["kinds"].get(kind, 0) + 1
            item = {
                "id": f"ds1000-{row['metadata']['problem_id']}",
                "query": make_query(row["prompt"], lib),
                "gold": gold,
                "package": package,
            }
            lines.append(json.dumps(item, ensure_ascii=False))
            details.append(json.dumps({
                "id": item["id"], "library": lib, "reference_code": row["reference_code"],
                "gold": [{"kind": k, "candidates": list(g)} for g, k in zip(analyser.gold, analyser.kinds)
                         if any(q in index.defs for q in g)],
                "unresolved": analyser.unresolved,
            }, ensure_ascii=False))
        counts["gold_items"] = sum(gold_sizes)
        counts["gold_per_problem"] = round(statistics.mean(gold_sizes), 2) if gold_sizes else 0
        stats[package] = counts
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(counts["kinds"].items()))
        table.append(f"{package:<11} {counts['problems']:>8} {counts['kept']:>5} {counts['no_parse']:>8} "
                     f"{counts['no_gold']:>7} {counts['gold_per_problem']:>12}  {kinds}")
    (out / "ds1000.jsonl").write_text("".join(line + "\n" for line in lines))
    (out / "ds1000-details.jsonl").write_text("".join(line + "\n" for line in details))
    (out / "stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    log("")
    for line in table:
        log(line)
    log(f"\nwrote {len(lines)} questions to {out / 'ds1000.jsonl'}")
    log("gold kinds: path = module-qualified call (np.mean), typed = method of a known class, "
        "ndarray = array method as numpy function, name = method name with 1-5 candidates")

    # 5. The kgfuse commands.
    script = write_ingest_script(out, available)
    log(f"wrote {script} (not run)")
    return 0 if available else 1


if __name__ == "__main__":
    sys.exit(main())

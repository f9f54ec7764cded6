"""The standard baseline of repository-level code completion: BM25 over
fixed-size windows of a package's code (RepoCoder's sparse retriever: windows of
20 lines every 10 lines, code split into identifier words), the best windows
first, as context items for `run.py`.

An item `shows` the functions whose `def` line it holds (by qualified name; the
caller maps them to IRIs), so dependency recall is counted the same way for every
condition.
"""

from __future__ import annotations

import ast
import math
import re
from collections import Counter
from pathlib import Path

#: Lines in a window, and lines between the starts of two windows.
WINDOW_LINES = 20
WINDOW_STEP = 10

#: BM25's usual parameters.
K1 = 1.2
B = 0.75

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def code_words(text: str) -> list[str]:
    """The words of code: identifiers, also split at `_` and case changes,
    lowercased ("get_contentType" -> get_contenttype, get, content, type)."""
    out = []
    for token in IDENTIFIER.findall(text):
        lower = token.lower()
        out.append(lower)
        parts = [p.lower() for piece in token.split("_") for p in CAMEL.findall(piece)]
        if len(parts) > 1:
            out.extend(parts)
    return out


def definitions(path: Path, module: str) -> dict[int, str]:
    """`def` line -> qualified name (`module.Class.method`) of the file's
    functions and methods."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return {}
    out: dict[int, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}.{child.name}"
                out[child.lineno] = name
                visit(child, name)
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}.{child.name}")

    visit(tree, module)
    return out


class Window:
    """Lines `start`..`end` (1-based, inclusive) of one file."""

    def __init__(self, file: str, start: int, end: int, text: str, shows: list[str]):
        self.file, self.start, self.end, self.text, self.shows = file, start, end, text, shows
        self.words = Counter(code_words(text))
        self.length = sum(self.words.values())


def windows(root: Path, files: list[tuple[str, str]]) -> list[Window]:
    """The windows of `files` ((path relative to `root`, dotted module))."""
    out = []
    for relative, module in files:
        path = root / relative
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        defs = definitions(path, module)
        for start in range(1, max(2, len(lines) - WINDOW_LINES + WINDOW_STEP + 1), WINDOW_STEP):
            end = min(len(lines), start + WINDOW_LINES - 1)
            text = "\n".join(lines[start - 1:end])
            if text.strip():
                shows = [name for line, name in defs.items() if start <= line <= end]
                out.append(Window(relative, start, end, text, shows))
            if end >= len(lines):
                break
    return out


def best_windows(all_windows: list[Window], query: str, k: int) -> list[Window]:
    """The `k` windows that best match `query` by BM25, best first (ties by
    place)."""
    if not all_windows:
        return []
    n = len(all_windows)
    average = sum(w.length for w in all_windows) / n
    df: Counter = Counter()
    for window in all_windows:
        df.update(window.words.keys())
    terms = Counter(code_words(query))

    def score(window: Window) -> float:
        total = 0.0
        for term, count in terms.items():
            tf = window.words.get(term, 0)
            if tf:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                total += count * idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * window.length / average))
        return total

    ranked = sorted(all_windows, key=lambda w: (-score(w), w.file, w.start))
    return [w for w in ranked[:k] if score(w) > 0]


def items(chosen: list[Window], iri_of: dict[str, str]) -> list[dict]:
    """The windows as `run.py` context items (`shows`: the IRIs of the functions
    whose `def` line a window holds)."""
    return [{"text": f"# {w.file}, lines {w.start}-{w.end}\n```python\n{w.text}\n```",
             "shows": [iri_of[name] for name in w.shows if name in iri_of]}
            for w in chosen]

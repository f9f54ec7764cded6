#!/usr/bin/env python3
"""A synthetic Python package for ingest benchmarks (issue 44): MODULES modules of
PER functions each, every function with a docstring and one call to the next one.

    python3 bench/synthetic_package.py OUT MODULES [PER]   # writes OUT/synthpkg/
    kgfuse --data D init --embedder hash && kgfuse --data D ingest code OUT/synthpkg
"""
import pathlib
import sys


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    root, modules = pathlib.Path(sys.argv[1]), int(sys.argv[2])
    per = int(sys.argv[3]) if len(sys.argv) == 4 else 100
    package = root / "synthpkg"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text('"""A synthetic package."""\n')
    for m in range(modules):
        parts = [f'"""Module {m} of the synthetic package."""\n']
        for f in range(per):
            callee = f"f_{m}_{(f + 1) % per}"
            parts.append(
                f"def f_{m}_{f}(x, y=1):\n"
                f'    """Compute value {f} of module {m} from x and y."""\n'
                f"    return {callee}(x) + y\n\n"
            )
        (package / f"mod_{m}.py").write_text("\n".join(parts))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The source code of DS-1000's five libraries, and nothing of DS-1000's problems.

Step 1 of eval/make_ds1000.py alone (its build environment, `pip download` of the
sdists, the package directory's `.py` files without tests into OUT/src/<package>),
for benchmarks on real code:

    python3 bench/ds1000_sources.py OUT
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "eval"))
import make_ds1000 as m  # noqa: E402

out = Path(sys.argv[1]).resolve()
sdists, src, logs = out / "sdists", out / "src", out / "logs"
for directory in (sdists, src, logs):
    directory.mkdir(parents=True, exist_ok=True)
python = str(m.ensure_build_env(out / "buildenv"))
pypi_of = {pkg: pypi for pkg, pypi in m.LIBRARIES.values()}
for package in m.DEFAULT_LIBRARIES:
    archive, status = m.pip_download(python, pypi_of[package], m.DEFAULT_VERSIONS[package], sdists, logs)
    if archive is None:
        sys.exit(f"{package}: {status}")
    files = m.extract_package(archive, package, src / package, False)
    print(f"{package}: {files} files in {src / package}", flush=True)

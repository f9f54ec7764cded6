"""Runs a task's own check on a piece of code, isolated: a fresh process of the
task environment's Python, in a scratch directory, with no network (a network
namespace of its own through `unshare -rn` when the kernel allows it), a time
limit and a memory limit. Says how it ended: pass, syntax, exception, wrong
(the check's assertion failed) or timeout.

The program a task gives is wrapped so that the kind of failure is reported on
the last line of stdout; nothing of the task's own output is parsed.
"""

from __future__ import annotations

import dataclasses
import os
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

#: The kinds a check can end with.
KINDS = ("pass", "syntax", "exception", "wrong", "timeout")

MARKER = "KGFUSE-CHECK:"

WRAPPER = """
import sys as _sys, traceback as _traceback
try:
    exec(compile(_PROGRAM, "<task>", "exec"), {"__name__": "__main__"})
except SyntaxError as _error:
    _traceback.print_exc()
    print("\\n%s syntax" % _MARKER)
    _sys.exit(0)
except AssertionError:
    _traceback.print_exc()
    print("\\n%s wrong" % _MARKER)
    _sys.exit(0)
except BaseException:
    _traceback.print_exc()
    print("\\n%s exception" % _MARKER)
    _sys.exit(0)
print("\\n%s pass" % _MARKER)
"""


@dataclasses.dataclass
class Outcome:
    """How one check ended."""

    kind: str
    seconds: float
    #: The last lines of the check's output (stderr first), for the report.
    detail: str


def _can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    done = subprocess.run(["unshare", "-rn", "true"], capture_output=True)
    return done.returncode == 0


_UNSHARE = None


def run(
    program: str,
    python: str,
    timeout: float = 60.0,
    memory_mb: int = 4096,
    extra_env: dict[str, str] | None = None,
) -> Outcome:
    """Runs `program` (Python source) with the interpreter `python`; `extra_env`
    adds environment variables (a data cache the task reads, say)."""
    global _UNSHARE
    if _UNSHARE is None:
        _UNSHARE = _can_unshare()
    source = f"_PROGRAM = {program!r}\n_MARKER = {MARKER!r}\n{WRAPPER}"

    def limits() -> None:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        os.setsid()

    command = (["unshare", "-rn"] if _UNSHARE else []) + [python, "-c", source]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "MPLBACKEND": "Agg",
        "PYTHONHASHSEED": "0",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "http_proxy": "http://127.0.0.1:9",
        "https_proxy": "http://127.0.0.1:9",
        **(extra_env or {}),
    }
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kgfuse-check-") as scratch:
        try:
            done = subprocess.run(
                command,
                cwd=scratch,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
                preexec_fn=limits,
            )
        except subprocess.TimeoutExpired as expired:
            tail = (expired.stderr or b"")[-600:]
            if isinstance(tail, bytes):
                tail = tail.decode("utf-8", "replace")
            return Outcome("timeout", time.monotonic() - started, tail)
    seconds = time.monotonic() - started
    lines = done.stdout.strip().splitlines()
    kind = "exception"
    if lines and lines[-1].startswith(MARKER):
        kind = lines[-1][len(MARKER):].strip()
    detail = (done.stderr.strip()[-500:] + "\n" + "\n".join(lines[-3:])).strip()
    if done.returncode != 0 and kind == "exception":
        detail = f"exit {done.returncode}: {detail}"
    return Outcome(kind, seconds, detail)


def scratch_root() -> Path:
    """Where the harness keeps its caches: `$KGFUSE_TASKS_DIR`, else beside the
    build (`$CARGO_TARGET_DIR/tasks`), never in the work tree."""
    if os.environ.get("KGFUSE_TASKS_DIR"):
        return Path(os.environ["KGFUSE_TASKS_DIR"])
    target = os.environ.get("CARGO_TARGET_DIR") or str(Path.home() / ".cache/kgfuse-target")
    return Path(target) / "tasks"

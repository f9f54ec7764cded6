#!/usr/bin/env python3
"""Where a long command's memory goes, phase by phase.

Runs COMMAND, samples the resident memory of it and its children every
INTERVAL seconds, and reads the lines it prints (stdout and stderr). Each line
starts a phase; at the end a table lists the phases that lasted a second or more
(and the one with the highest peak) with their duration and the peak resident
memory while they ran (a phase is the work that came after its line, up to the
next one). The command's own output is passed through.

    bench/rss_timeline.py [--interval 0.5] [--max-mib N] -- COMMAND [ARGS...]

With --max-mib the command is killed (SIGKILL, exit status -9) once it and its
children hold more than N MiB, so a run that would exhaust the machine stops
with its table printed.

For example, which step of the retrieval benchmark peaks:

    bench/rss_timeline.py -- kgfuse-bench retrieval 100000

Linux only (reads /proc).
"""

import argparse
import os
import subprocess
import sys
import threading
import time


def tree_rss_kib(root_pid):
    """Resident KiB of root_pid and every descendant (from /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
        except OSError:
            continue
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--max-mib", type=float, default=None)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("a command to run is needed")

    start = time.monotonic()
    phases = [["(start)", start, 0]]  # label, started, peak KiB
    lock = threading.Lock()
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )

    def sample():
        while process.poll() is None:
            rss = tree_rss_kib(process.pid)
            with lock:
                phases[-1][2] = max(phases[-1][2], rss)
            if args.max_mib is not None and rss / 1024 > args.max_mib:
                print(f"rss_timeline: {rss / 1024:.0f} MiB > --max-mib {args.max_mib:.0f}: killing the command",
                      file=sys.stderr, flush=True)
                process.kill()
                return
            time.sleep(args.interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    for line in process.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        text = line.strip()
        if text:
            with lock:
                phases.append([text[:90], time.monotonic(), 0])
    status = process.wait()
    sampler.join()
    end = time.monotonic()

    print(f"\n## Resident memory by phase ({' '.join(command)})\n")
    print("| from s | lasted s | peak MiB | phase (the line that began it) |")
    print("|---|---|---|---|")
    overall = 0
    for i, (label, started, peak) in enumerate(phases):
        until = phases[i + 1][1] if i + 1 < len(phases) else end
        overall = max(overall, peak)
        if until - started >= 1.0 or peak == max(p[2] for p in phases):
            label = label.replace("|", "\\|")
            print(
                f"| {started - start:.1f} | {until - started:.1f} | {peak / 1024:.0f} | {label} |"
            )
    print(f"\nPeak resident memory: {overall / 1024:.0f} MiB over {end - start:.1f} s; exit {status}.")
    sys.exit(128 - status if status < 0 else status)


if __name__ == "__main__":
    main()

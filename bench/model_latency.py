#!/usr/bin/env python3
"""Seconds and model requests per question of `kgfuse retrieve --strategy
unified` with a real model server, one binary after the other on the same
questions, for comparing two builds:

    eval "$(make -s llm-serve)"
    python3 bench/model_latency.py --data STORE --set eval/lubm/lubm1.jsonl --limit 10 \\
        --server-log ~/.cache/kgfuse/llm/server-8088.log OLD-KGFUSE NEW-KGFUSE

Each binary answers every question in turn (not interleaved: a llama.cpp server
keeps the prompt it evaluated last, and interleaving two binaries would evict
each one's prefix for the other). The first question of each binary is a
warm-up, not counted. Requests are counted as the chat-completion lines the
server's log gains during a question. No reply cache is used (KGFUSE_LLM_CACHE_DIR
is removed from the environment). Prints one JSON line per question and binary,
then one summary line per binary: p50 and p95 seconds, median requests.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def chat_lines(log):
    """How many chat-completion requests the server's log holds so far."""
    if not log or not os.path.exists(log):
        return 0
    with open(log, errors="replace") as text:
        return sum("/chat/completions" in line for line in text)


def one(binary, data, question, log, env):
    """Seconds and requests of one retrieval."""
    before = chat_lines(log)
    started = time.monotonic()
    out = subprocess.run(
        [binary, "--data", data, "retrieve", question, "--strategy", "unified", "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
    )
    seconds = time.monotonic() - started
    if out.returncode != 0:
        raise RuntimeError(f"{binary} failed on {question!r}: {out.stderr[-500:]}")
    return seconds, chat_lines(log) - before


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--set", required=True)
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--server-log", help="the llama.cpp server's log, to count requests")
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    with open(args.set) as lines:
        questions = [json.loads(line)["query"] for line in lines if line.strip()]
    if args.limit:
        questions = questions[: args.limit + 1]
    env = {k: v for k, v in os.environ.items() if k != "KGFUSE_LLM_CACHE_DIR"}
    if "KGFUSE_LLM_BASE_URL" not in env:
        sys.exit("no model server: run eval \"$(make -s llm-serve)\" first")
    summaries = []
    for binary in args.binaries:
        seconds, requests = [], []
        for n, question in enumerate(questions):
            took, asked = one(binary, args.data, question, args.server_log, env)
            row = {"binary": binary, "question": question, "seconds": round(took, 2),
                   "requests": asked, "warm_up": n == 0}
            print(json.dumps(row), flush=True)
            if n > 0:
                seconds.append(took)
                requests.append(asked)
        seconds.sort()
        summaries.append({
            "binary": binary,
            "questions": len(seconds),
            "seconds_p50": round(statistics.median(seconds), 2),
            "seconds_p95": round(seconds[min(len(seconds) - 1, round(0.95 * (len(seconds) - 1)))], 2),
            "requests_median": statistics.median(requests) if args.server_log else None,
            "requests_total": sum(requests) if args.server_log else None,
        })
    for summary in summaries:
        print(json.dumps(summary))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""An OpenAI-compatible chat server on 127.0.0.1 that answers every request with
the same reply: the harness's tests run against it, so no test depends on a
model's quality.

    python3 eval/tasks/fake_model.py --reply-file REPLY.txt [--port 0] [--log PROMPTS.jsonl]

Prints the port it listens on, then serves until killed; with `--log`, appends
each request's messages as one JSON line (so a test can see what was asked).
"""

from __future__ import annotations

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reply-file", required=True, type=Path)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", type=Path, help="append every request's messages here")
    args = parser.parse_args()
    reply = args.reply_file.read_text()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
            length = int(self.headers.get("Content-Length", 0))
            request = json.loads(self.rfile.read(length) or b"{}")
            if args.log:
                with args.log.open("a") as log:
                    log.write(json.dumps(request.get("messages", [])) + "\n")
            body = json.dumps({
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(server.server_address[1], flush=True)
    sys.stdout.close()
    server.serve_forever()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`gangbridge placement status`: reads /debug/placement from a server (here a stand-in HTTP
server on an ephemeral port serving a fixed document) and prints the table or the JSON; a
server without the route, one that answers garbage, and bad flags are reported."""
import http.server
import json
import os
import subprocess
import sys
import threading

BIN = os.environ["GANGBRIDGE"]

DOC = {
    "model": {"synced": True, "generation": 42, "nodes": 3, "domains": 2, "hypernodes": 0,
              "pods": 5},
    "passes": 7,
    "gangs": [
        {"gang": "team-a/llama", "state": "gated", "outcome": "nofit",
         "reason": "needs 16 pods x 8 nvidia.com/gpu in one tier-2 domain; best is spine-3: 11 of 16",
         "domain": "", "pods": 16, "gated": 16, "minMember": 16, "ageSeconds": 750.0,
         "raced": False, "released": 0, "decision": "", "reservedPods": 0},
        {"gang": "team-b/bert", "state": "released", "outcome": "released", "reason": "",
         "domain": "rack-2", "pods": 4, "gated": 1, "minMember": 4, "ageSeconds": 3.0,
         "raced": False, "released": 3, "decision": "9f3c0a1b2c3d4e5f", "reservedPods": 4},
    ],
}

answer = {"path": "/debug/placement", "body": json.dumps(DOC).encode()}


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        if self.path != answer["path"]:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer["body"])))
        self.end_headers()
        self.wfile.write(answer["body"])

    def log_message(self, *args):
        pass


failures = []


def check(what, cond, detail=""):
    if not cond:
        failures.append(what)
        print(f"FAIL {what}\n{detail}")


def run(*args):
    return subprocess.run([BIN, "placement", *args], capture_output=True, text=True, timeout=30)


def main():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}"

    r = run("status", "--url", url)
    check("table exit 0", r.returncode == 0, r.stderr)
    lines = r.stdout.splitlines()
    check("table header", lines and lines[0].split()[:8] == [
        "GANG", "STATE", "OUTCOME", "AGE", "PODS(G/R/M)", "RESERVED", "DECISION", "REASON"],
        r.stdout)
    check("waiting gang with its reason and age",
          any(l.startswith("team-a/llama") and " nofit " in l and " 12m " in l
              and l.split()[4:7] == ["16/0/16", "0", "-"]
              and "best is spine-3: 11 of 16" in l for l in lines), r.stdout)
    # Half-way through its release: 1 gated, 3 released, the whole gang reserved, and
    # the id of its decision record.
    check("released gang with its domain, release progress and decision",
          any(l.startswith("team-b/bert") and "released" in l and "in rack-2" in l
              and l.split()[4:7] == ["1/3/4", "4", "9f3c0a1b2c3d4e5f"] for l in lines),
          r.stdout)

    r = run("status", "--url", url + "/", "-o", "json")
    check("json exit 0", r.returncode == 0, r.stderr)
    try:
        check("json is the document", json.loads(r.stdout) == DOC, r.stdout)
    except ValueError:
        check("json parses", False, r.stdout)

    answer["body"] = b"not json"
    r = run("status", "--url", url)
    check("garbage -> exit 1", r.returncode == 1 and "not a placement status document" in r.stderr,
          r.stderr)
    answer["path"] = "/elsewhere"
    r = run("status", "--url", url)
    check("404 -> exit 1 naming placement.enabled",
          r.returncode == 1 and "HTTP 404" in r.stderr and "placement.enabled" in r.stderr,
          r.stderr)
    r = run("status", "-o", "yaml")
    check("-o yaml is a usage error", r.returncode == 2 and "not table or json" in r.stderr,
          r.stderr)
    r = run("list")
    check("unknown subcommand is a usage error", r.returncode == 2, r.stderr)
    r = run("--help")
    check("--help", r.returncode == 0 and "placement status" in r.stdout, r.stdout)
    srv.shutdown()
    print(f"{'FAIL' if failures else 'PASS'}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

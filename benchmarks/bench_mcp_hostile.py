"""The MCP HTTP server under half-open connections (issue 40 #7): an attacker holds N connections whose request
head never ends, under a lowered open-files limit; a normal client with the token then calls ``tools/list``.

Run:  .venv/bin/python benchmarks/bench_mcp_hostile.py [--json]

For each (open-files limit, half-open connections): whether the server is still up, the open files it holds
(``/proc/PID/fd``, Linux), the normal client's median and worst latency over 5 calls, and any traceback on its
stderr. Target: the server up, under its open-files limit, the client served (< 1 s), no traceback. Exit status 1
when missed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

CLI = str(Path(sys.executable).with_name("perplexed"))
TOKEN = "bench-token-7c1e"
CASES = ((256, 300), (1024, 1100))
INIT = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-06-18"}


def one(limit: int, count: int, home: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PERPLEXED_", "SEARXNG_"))}
    env.update(HOME=home, PERPLEXED_MCP_TOKEN=TOKEN, SEARXNG_URL="http://127.0.0.1:9")
    proc = subprocess.Popen([CLI, "mcp", "--http", "--port", "0", "--provider", "searxng"], env=env, cwd=home,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)))
    assert proc.stderr is not None
    port = int(re.search(r":(\d+)/mcp", proc.stderr.readline()).group(1))  # type: ignore[union-attr]
    held = []
    started = time.monotonic()
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
        held.append(sock)
    opened_s = time.monotonic() - started
    time.sleep(1)
    files = len(os.listdir(f"/proc/{proc.pid}/fd")) if proc.poll() is None else None
    latencies, statuses = [], []
    for _ in range(5):
        t0 = time.monotonic()
        try:
            statuses.append(httpx.post(f"http://127.0.0.1:{port}/mcp", json=INIT, headers=HEADERS,
                                       timeout=30).status_code)
        except httpx.HTTPError as exc:
            statuses.append(type(exc).__name__)  # type: ignore[arg-type]
        latencies.append(time.monotonic() - t0)
    alive = proc.poll() is None
    for sock in held:
        sock.close()
    proc.terminate()
    try:
        err = proc.communicate(timeout=20)[1]
    except subprocess.TimeoutExpired:
        proc.kill()
        err = proc.communicate()[1]
    return {"open_files_limit": limit, "half_open": count, "opened_s": round(opened_s, 2), "server_up": alive,
            "server_files": files, "client_status": statuses, "client_median_s": round(statistics.median(latencies), 3),
            "client_worst_s": round(max(latencies), 3), "traceback": "Traceback" in err}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        rows = [one(limit, count, home) for limit, count in CASES]
    ok = all(r["server_up"] and not r["traceback"] and r["client_status"] == [200] * 5
             and float(r["client_median_s"]) < 1 and int(r["server_files"] or 0) < int(r["open_files_limit"])
             for r in rows)
    if args.json:
        print(json.dumps({"rows": rows, "ok": ok, "loadavg": open("/proc/loadavg").read().split()[:3]}))
    else:
        for r in rows:
            print(r)
        print("load average:", open("/proc/loadavg").read().split()[:3], "ok" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

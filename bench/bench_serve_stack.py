"""Load on ``gpusched serve`` from another process on loopback: requests/s and latency with open
watches, for one or more source trees side by side (e.g. the old http.server stack and this one).

    python bench/bench_serve_stack.py [--tree OLD_CHECKOUT] [--clients 16] [--watches 200]
                                      [--seconds 15]

Each tree's ``gpusched serve --virtual-clock`` runs on a fresh state file (``PYTHONPATH`` set to
the tree); the run opens ``--watches`` watches on configmaps, then ``--clients`` threads, each on
one keep-alive connection, mix list (60 %), get (20 %) and create (20 %) ConfigMaps for
``--seconds``; a watch's delivery latency is the time from a create's 201 to its ADDED line on
one watch. Prints one row per tree: requests/s, p50/p99 latency (ms), errors, watch delivery
p50 (ms), server RSS (MiB). Not a test: numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

from serve_common import start, stop  # bench/ is the script's sys.path[0]

REPO = Path(__file__).resolve().parents[1]
CMS = "/api/v1/namespaces/default/configmaps"



def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def client(port: int, until: float, seed: int, latencies: list, errors: list) -> None:
    rng = random.Random(seed)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    count = 0
    while time.monotonic() < until:
        roll = rng.random()
        try:
            started = time.monotonic()
            if roll < 0.2:
                count += 1
                body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": f"c{seed}-{count}"}})
                conn.request("POST", CMS, body=body, headers={"Content-Type": "application/json"})
            elif roll < 0.4 and count:
                conn.request("GET", f"{CMS}/c{seed}-{rng.randint(1, count)}")
            else:
                conn.request("GET", CMS + "?limit=50")
            response = conn.getresponse()
            response.read()
            latencies.append(time.monotonic() - started)
            if response.status >= 500:
                errors.append(response.status)
        except OSError as err:
            errors.append(str(err))
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.close()


def watch_delivery(port: int) -> float:
    """ms from a create's answer to its ADDED event on a watch."""
    watch = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    watch.request("GET", CMS + "?watch=true&resourceVersion=" + json.loads(
        _get(port, CMS))["metadata"]["resourceVersion"])
    response = watch.getresponse()
    name = f"probe-{random.randint(0, 10**9)}"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", CMS, body=json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                               "metadata": {"name": name}}),
                 headers={"Content-Type": "application/json"})
    conn.getresponse().read()
    answered = time.monotonic()
    while name not in response.readline().decode():
        pass
    delivered = time.monotonic()
    watch.close()
    conn.close()
    return (delivered - answered) * 1000


def _get(port: int, path: str) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path)
    text = conn.getresponse().read().decode()
    conn.close()
    return text


def run(tree: Path, clients: int, watches: int, seconds: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        process, port = start(tree, Path(tmp) / "state.db")
        try:
            open_watches = []
            for _ in range(watches):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                conn.request("GET", CMS + "?watch=true")
                open_watches.append((conn, conn.getresponse()))
            latencies: list[float] = []
            errors: list = []
            until = time.monotonic() + seconds
            threads = [threading.Thread(target=client, args=(port, until, i, latencies, errors))
                       for i in range(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            delivery = [watch_delivery(port) for _ in range(5)]
            rss = rss_mib(process.pid)
            for conn, _ in open_watches:
                conn.close()
        finally:
            stop(process, 30)
    latencies.sort()
    return {"rps": len(latencies) / seconds,
            "p50": 1000 * statistics.median(latencies) if latencies else 0,
            "p99": 1000 * latencies[int(0.99 * (len(latencies) - 1))] if latencies else 0,
            "errors": len(errors), "watch_p50": statistics.median(delivery), "rss": rss}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[], help="another source tree to compare")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--watches", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=15.0)
    args = parser.parse_args()
    print(f"{'tree':40} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6} {'watch ms':>8} {'RSS MiB':>8}")
    for tree in [Path(t).resolve() for t in args.tree] + [REPO]:
        r = run(tree, args.clients, args.watches, args.seconds)
        print(f"{str(tree)[-40:]:40} {r['rps']:8.0f} {r['p50']:8.1f} {r['p99']:8.1f} {r['errors']:6d} "
              f"{r['watch_p50']:8.1f} {r['rss']:8.0f}", flush=True)


if __name__ == "__main__":
    main()

"""Load benchmark of ``gpusched serve`` in the shape of issue 16 point 7: mixed clients, open
watches and a preloaded store, for one or more source trees side by side in one run.

    python bench/bench_serve_load.py [--tree OLD_CHECKOUT] [--clients 50] [--watches 200]
                                     [--objects 10000] [--seconds 30]

For each tree (``--tree`` ones first, then this checkout): a fresh state file is preloaded with
``--objects`` ConfigMaps by that tree's own ``gpusched apply`` (``PYTHONPATH`` = the tree), then
that tree's ``gpusched serve --virtual-clock`` starts on it. ``--watches`` watches on configmaps
open from the list's resourceVersion, each read by its own thread. ``--clients`` threads, each on
one keep-alive connection, run for ``--seconds``: get of a preloaded object 35 %, list by a label
selector matching 1 % of the objects 20 %, create 20 %, merge patch 15 %, delete of one of its
own creates 10 %. A probe thread creates one object every 0.5 s; its delivery latency is the time
from the create's answer to the ADDED line on each watch (0 when the event came first).

Prints one row per tree: requests/s, p50/p99 latency (ms), 5xx and connection errors, watch
delivery p50/p99 (ms), server RSS at the end and its peak (MiB). Not a test: the numbers depend
on the machine and its load (print ``os.getloadavg()`` with them).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from serve_common import env_for, start, stop  # bench/ is the script's sys.path[0]

REPO = Path(__file__).resolve().parents[1]
CMS = "/api/v1/namespaces/default/configmaps"
GROUPS = 100
CHUNK = 500
JSON = {"Content-Type": "application/json"}
MERGE = {"Content-Type": "application/merge-patch+json"}


def configmap(name: str, group: int) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"group": f"g{group}"}}, "data": {"k": "v"}}



def preload(tree: Path, state: Path, objects: int, tmp: Path) -> None:
    """``gpusched apply`` of the objects in chunks (JSON is YAML), with the tree's own CLI."""
    for first in range(0, objects, CHUNK):
        items = [configmap(f"pre-{i}", i % GROUPS) for i in range(first, min(objects, first + CHUNK))]
        manifest = tmp / f"pre-{first}.yaml"
        manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        subprocess.run([sys.executable, "-m", "gpusched", "--state", str(state), "apply", "-f",
                        str(manifest)], env=env_for(tree), cwd=tree, check=True,
                       stdout=subprocess.DEVNULL)



def memory_mib(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process in MiB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                  if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))]


class Run:
    """Shared results of one tree's run."""

    def __init__(self, port: int, objects: int):
        self.port = port
        self.objects = objects
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.errors: list[object] = []
        self.answered: dict[str, float] = {}     # probe name -> time its create was answered
        self.seen: list[tuple[str, float]] = []  # (probe name, time a watch saw it)
        self.stop = threading.Event()

    def connect(self, timeout: float = 120) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)


def one(conn: http.client.HTTPConnection, method: str, path: str, body: dict | None = None,
        headers: dict | None = None) -> int:
    conn.request(method, path, body=json.dumps(body).encode() if body is not None else None,
                 headers=headers or {})
    response = conn.getresponse()
    response.read()
    return response.status


def client(run: Run, until: float, seed: int) -> None:
    rng = random.Random(seed)
    conn = run.connect()
    mine: list[str] = []
    count = 0
    while time.monotonic() < until:
        roll = rng.random()
        started = time.monotonic()
        try:
            if roll < 0.35:
                status = one(conn, "GET", f"{CMS}/pre-{rng.randrange(run.objects)}")
            elif roll < 0.55:
                status = one(conn, "GET", f"{CMS}?labelSelector=group%3Dg{rng.randrange(GROUPS)}")
            elif roll < 0.75 or not mine:
                count += 1
                name = f"c{seed}-{count}"
                status = one(conn, "POST", CMS, configmap(name, rng.randrange(GROUPS)), JSON)
                mine.append(name)
            elif roll < 0.90:
                status = one(conn, "PATCH", f"{CMS}/pre-{rng.randrange(run.objects)}",
                             {"data": {"k": str(count)}}, MERGE)
            else:
                status = one(conn, "DELETE", f"{CMS}/{mine.pop(rng.randrange(len(mine)))}")
        except OSError as err:
            with run.lock:
                run.errors.append(repr(err))
            conn.close()
            conn = run.connect()
            continue
        with run.lock:
            run.latencies.append(time.monotonic() - started)
            if status >= 500:
                run.errors.append(status)
    conn.close()


def watcher(run: Run, response: http.client.HTTPResponse) -> None:
    try:
        while not run.stop.is_set():
            line = response.readline()
            if not line:
                return
            if b'"probe-' in line and b'"ADDED"' in line:
                name = json.loads(line)["object"]["metadata"]["name"]
                with run.lock:
                    run.seen.append((name, time.monotonic()))
    except (OSError, ValueError):
        return


def prober(run: Run, until: float) -> None:
    conn = run.connect()
    index = 0
    while time.monotonic() < until and not run.stop.wait(0.5):
        index += 1
        name = f"probe-{index}"
        try:
            one(conn, "POST", CMS, configmap(name, 0), JSON)
        except OSError:
            conn.close()
            conn = run.connect()
            continue
        with run.lock:
            run.answered[name] = time.monotonic()
    conn.close()


def open_watches(run: Run, count: int) -> list[http.client.HTTPConnection]:
    conn = run.connect()
    conn.request("GET", f"{CMS}?labelSelector=group%3Dg0")
    version = json.loads(conn.getresponse().read())["metadata"]["resourceVersion"]
    conn.close()
    opened = []
    for _ in range(count):
        watch = run.connect(timeout=600)
        watch.request("GET", f"{CMS}?watch=true&resourceVersion={version}")
        threading.Thread(target=watcher, args=(run, watch.getresponse()), daemon=True).start()
        opened.append(watch)
    return opened


def measure(tree: Path, clients: int, watches: int, objects: int, seconds: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state.db"
        began = time.monotonic()
        preload(tree, state, objects, Path(tmp))
        preload_s = time.monotonic() - began
        process, port = start(tree, state)
        run = Run(port, objects)
        try:
            opened = open_watches(run, watches)
            until = time.monotonic() + seconds
            threads = [threading.Thread(target=client, args=(run, until, i)) for i in range(clients)]
            threads.append(threading.Thread(target=prober, args=(run, until)))
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            deadline = time.monotonic() + 30       # let the watches catch up with the last probe
            while time.monotonic() < deadline and len(run.seen) < len(run.answered) * watches:
                time.sleep(0.1)
            rss, peak = memory_mib(process.pid)
            run.stop.set()
            for watch in opened:          # shutdown, not close: a reader thread holds the file
                watch.sock.shutdown(socket.SHUT_RDWR)
        finally:
            stop(process, 30)
    delivery = [max(0.0, seen - run.answered[name]) * 1000 for name, seen in run.seen
                if name in run.answered]
    missing = len(run.answered) * watches - len(delivery)
    return {"rps": len(run.latencies) / seconds, "p50": 1000 * percentile(run.latencies, 0.5),
            "p99": 1000 * percentile(run.latencies, 0.99), "errors": len(run.errors),
            "watch_p50": percentile(delivery, 0.5), "watch_p99": percentile(delivery, 0.99),
            "missing": missing, "rss": rss, "peak": peak, "preload_s": preload_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[], help="another source tree to compare")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--watches", type=int, default=200)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    print(f"clients={args.clients} watches={args.watches} objects={args.objects} "
          f"seconds={args.seconds} loadavg={os.getloadavg()}", flush=True)
    print(f"{'tree':30} {'req/s':>6} {'p50 ms':>7} {'p99 ms':>7} {'errors':>6} {'watch p50':>9} "
          f"{'watch p99':>9} {'missed':>6} {'RSS':>5} {'peak':>5} {'preload s':>9}", flush=True)
    for tree in [Path(t).resolve() for t in args.tree] + [REPO]:
        r = measure(tree, args.clients, args.watches, args.objects, args.seconds)
        print(f"{str(tree)[-30:]:30} {r['rps']:6.0f} {r['p50']:7.1f} {r['p99']:7.1f} "
              f"{r['errors']:6d} {r['watch_p50']:9.1f} {r['watch_p99']:9.1f} {r['missing']:6d} "
              f"{r['rss']:5.0f} {r['peak']:5.0f} {r['preload_s']:9.0f}", flush=True)
    print(f"loadavg after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()

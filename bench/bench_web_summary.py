"""Web page summary benchmark: how long ``GET /gpusched/v1/summary`` (and one page of a group's
nodes) takes on a large cluster (a script, not a test).

Builds an embedded cluster in a temporary SQLite file: ``--nodes`` nodes in four NodePools
(A100-40GB, H100-80GB, L40S, T4; 8, 8, 4 and 4 GPUs), ``--pods`` bare pods in eight namespaces
(35% one GPU, 5% two GPUs, the rest CPU-only, 100m cpu / 256Mi; the GPU pods that do not fit
stay Pending), built with ``Cluster.apply`` in batches. Then it serves the page's routes
(``server.web.routes.WebRoutes``) over that cluster in this process, as ``serve`` does on its
cluster worker, and times:

- ``first summary``: the first one of a server (every node's advertisement and every pod's
  entry derived: the caches are empty);
- ``summary cold``: the first summary after a change (the index is rebuilt from the caches);
- ``summary warm``: a summary at the same resourceVersion (the index is reused);
- ``nodes page``: ``/gpusched/v1/summary/nodes?group=...&limit=50`` (one expanded group);
- ``filtered``: the summary with ``namespace=`` and ``q=`` filters.

With ``--serve`` the same requests go over HTTP to a real ``gpusched serve --virtual-clock`` on
the state file (the change before each cold summary is a pod created through the API; the
server's CPU is read from /proc around each request, so it includes its other threads).

Each is run ``--repeat`` times (a cold one after a one-pod change each time); wall and CPU
milliseconds (median) and the response size are printed with the load average (on a shared
machine only the CPU milliseconds compare).

    python bench/bench_web_summary.py                      # 1,000 nodes, 20,000 pods
    python bench/bench_web_summary.py --nodes 100 --pods 2000
    python bench/bench_web_summary.py --profile            # cProfile of one cold summary
    python bench/bench_web_summary.py --keep /tmp/web.db   # build once, reuse on later runs
"""

from __future__ import annotations

import argparse
import cProfile
import http.client
import json
import os
import pstats
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qsl

from gpusched.cluster.cluster import Cluster
from gpusched.objects.manifest import Manifest
from gpusched.server.http import Request
from gpusched.server.web.routes import WebRoutes

POOLS = (("a100", "A100-40GB", 8, 0.4), ("h100", "H100-80GB", 8, 0.3),
         ("l40s", "L40S", 4, 0.2), ("t4", "T4", 4, 0.1))
NAMESPACES = tuple(f"team-{c}" for c in "abcdefgh")


def nodepools(nodes: int) -> list[dict[str, Any]]:
    out = []
    for name, model, gpus, share in POOLS:
        out.append({"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool",
                    "metadata": {"name": name},
                    "spec": {"count": max(1, int(nodes * share)), "namePrefix": name,
                             "gpu": {"model": model, "count": gpus}, "cpu": "96", "memory": "1Ti"}})
    return out


def namespaces() -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in NAMESPACES]


def pod(i: int) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": "100m", "memory": "256Mi"}}
    roll = (i * 7919) % 100
    if roll < 40:
        resources["limits"] = {"nvidia.com/gpu": "2" if roll < 5 else "1"}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p-{i:06d}", "namespace": NAMESPACES[i % len(NAMESPACES)],
                         "labels": {"app": f"app-{i % 50}"}},
            "spec": {"containers": [{"name": "main", "image": "busybox", "resources": resources}]}}


def build(cluster: Cluster, nodes: int, pods: int, batch: int) -> None:
    cluster.apply([Manifest("bench", i, body) for i, body in
                   enumerate(namespaces() + nodepools(nodes))])
    for start in range(0, pods, batch):
        cluster.apply([Manifest("bench", i, pod(i)) for i in range(start, min(pods, start + batch))])


def timed(fn: Callable[[], bytes]) -> tuple[float, float, int]:
    wall, cpu = time.perf_counter(), time.process_time()
    size = len(fn())
    return 1000 * (time.perf_counter() - wall), 1000 * (time.process_time() - cpu), size


def touch(cluster: Cluster, i: int) -> None:
    """One small change (a new pod), so the next summary is a cold one."""
    cluster.apply([Manifest("bench", 0, {"apiVersion": "v1", "kind": "Pod",
                                         "metadata": {"name": f"touch-{i}", "namespace": "team-a"},
                                         "spec": {"containers": [{"name": "c", "image": "busybox"}]}})])


def measure(cluster: Cluster, web: WebRoutes, repeat: int) -> dict[str, list[tuple[float, float, int]]]:
    def get(path: str) -> Callable[[], bytes]:
        def run() -> bytes:
            base, _, query = path.partition("?")
            response = web.handle(Request("GET", base, dict(parse_qsl(query)), {}))
            assert response.status == 200, response.body[:300]
            return response.body
        return run

    rows: dict[str, list[tuple[float, float, int]]] = {
        "first summary (empty caches)": [timed(get("/gpusched/v1/summary"))],
        "summary cold": [], "summary warm": [], "nodes page": [], "filtered": []}
    group = json.loads(get("/gpusched/v1/summary")())["groups"][0]["id"]
    for i in range(repeat):
        touch(cluster, i)
        rows["summary cold"].append(timed(get("/gpusched/v1/summary")))
        rows["summary warm"].append(timed(get("/gpusched/v1/summary")))
        rows["nodes page"].append(timed(get(f"/gpusched/v1/summary/nodes?group={group}&limit=50")))
        rows["filtered"].append(timed(get("/gpusched/v1/summary?namespace=team-c&q=p-0001")))
    return rows


def serve_measure(state: Path, repeat: int) -> dict[str, list[tuple[float, float, int]]]:
    """The requests of :func:`measure` over HTTP to ``gpusched serve`` (see the docstring)."""
    process = subprocess.Popen([sys.executable, "-m", "gpusched", "--state", str(state), "serve",
                                "--port", "0", "--virtual-clock"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    try:
        port = int(process.stdout.readline().split("listening on ")[1].split()[0].rpartition(":")[2])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

        def call(method: str, path: str, body: dict[str, Any] | None = None) -> bytes:
            conn.request(method, path, body=json.dumps(body) if body else None,
                         headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            data = response.read()
            assert 200 <= response.status < 300, data[:300]
            return data

        def get(path: str) -> Callable[[], bytes]:
            return lambda: call("GET", path)

        def timed_server(fn: Callable[[], bytes]) -> tuple[float, float, int]:
            cpu = _server_cpu(process.pid)
            wall, _, size = timed(fn)
            return wall, 1000 * (_server_cpu(process.pid) - cpu), size

        rows: dict[str, list[tuple[float, float, int]]] = {
            "first summary (empty caches)": [timed_server(get("/gpusched/v1/summary"))],
            "summary cold": [], "summary warm": [], "nodes page": [], "filtered": []}
        group = json.loads(get("/gpusched/v1/summary")())["groups"][0]["id"]
        for i in range(repeat):
            call("POST", "/api/v1/namespaces/team-a/pods",
                 {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"http-{i}"},
                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
            rows["summary cold"].append(timed_server(get("/gpusched/v1/summary")))
            rows["summary warm"].append(timed_server(get("/gpusched/v1/summary")))
            rows["nodes page"].append(timed_server(get(f"/gpusched/v1/summary/nodes?group={group}&limit=50")))
            rows["filtered"].append(timed_server(get("/gpusched/v1/summary?namespace=team-c&q=p-0001")))
        return rows
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


def _server_cpu(pid: int) -> float:
    """User + system CPU seconds of a process (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _load(values: tuple[float, float, float]) -> str:
    return " ".join(f"{v:.1f}" for v in values)


def report(rows: dict[str, list[tuple[float, float, int]]], nodes: int, pods: int) -> None:
    print(f"summary endpoint at {nodes:,} nodes / {pods:,} pods (median of {len(rows['filtered'])})")
    print("| request | wall ms | cpu ms | bytes |")
    print("|---|---:|---:|---:|")
    for name, samples in rows.items():
        wall = statistics.median(s[0] for s in samples)
        cpu = statistics.median(s[1] for s in samples)
        print(f"| {name} | {wall:.0f} | {cpu:.0f} | {samples[-1][2]:,} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=2000, help="pods per apply")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--keep", type=Path, help="a state file: reused if it exists, else saved")
    parser.add_argument("--serve", action="store_true", help="over HTTP to gpusched serve")
    args = parser.parse_args(argv)
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "bench.db"
        started = time.perf_counter()
        if args.keep is not None and args.keep.exists():
            shutil.copyfile(args.keep, state)
        else:
            with Cluster.open(str(state)) as cluster:
                build(cluster, args.nodes, args.pods, args.batch)
            if args.keep is not None:                 # closed: the WAL is checkpointed
                shutil.copyfile(state, args.keep)
        built = time.perf_counter() - started
        if args.serve:
            report(serve_measure(state, args.repeat), args.nodes, args.pods)
            print(f"over HTTP to gpusched serve; load average (1, 5, 15 min) at start "
                  f"{_load(load_start)}, at end {_load(os.getloadavg())}; {os.cpu_count()} CPUs")
            return 0
        with Cluster.open(str(state)) as cluster:
            web = WebRoutes(cluster.read, lambda fn: fn(cluster))
            if args.profile:
                web.handle(Request("GET", "/gpusched/v1/summary", {}, {}))
                touch(cluster, 999)
                profiler = cProfile.Profile()
                profiler.enable()
                web.handle(Request("GET", "/gpusched/v1/summary", {}, {}))
                profiler.disable()
                pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(25)
            rows = measure(cluster, web, args.repeat)
    report(rows, args.nodes, args.pods)
    print(f"build {built:.0f} s; load average (1, 5, 15 min) at start {_load(load_start)}, "
          f"at end {_load(os.getloadavg())}; {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())

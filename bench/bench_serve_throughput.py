"""Throughput through ``gpusched serve``: nodes and one-GPU pods created and bound over the API,
side by side with ``gpusched apply`` of the same objects (a script, not a test).

    python bench/bench_serve_throughput.py [--nodes 1000] [--pods 5000] [--threads 8]
                                           [--tree OLD_CHECKOUT] [--virtual-clock] [--no-apply]

For each tree (``--tree`` ones first, then this checkout), on a fresh state file:

1. ``gpusched serve`` starts on loopback (real-time clock unless ``--virtual-clock``);
2. ``--threads`` clients, each on one keep-alive connection, POST ``--nodes`` Nodes (8x
   A100-40GB each, as a NodePool would make them): nodes/s is nodes over the time until the last
   create was answered; then the bench waits until serve's processes are idle (the nodes'
   settle done), whose CPU counts in the node phase;
3. the same clients POST ``--pods`` bare pods asking for one ``nvidia.com/gpu``; then the bench
   polls ``fieldSelector=spec.nodeName=`` until no pod is unbound: pods/s is pods over the time
   from the first create to the moment all are bound (created and bound, as the target says);
4. the server's CPU seconds (user + system, ``/proc/PID/stat``) for each phase, in all and per
   process (serve's API process and its controller process), per node and per pod.

Then ``gpusched apply`` of the same nodes (one file) and the same pods (one file) on another fresh
state file, each timed as one command, with its CPU seconds.

Not a test: the numbers depend on the machine and its load, printed with them (``uptime``).
The same script runs against older checkouts (``--tree``) for the "before" numbers; ``--repeat``
alternates them (before, after, before, after ...). The clients send pre-encoded JSON over
``http.client`` keep-alive connections, so their own CPU stays small.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from serve_common import env_for, start, stop  # bench/ is the script's sys.path[0]

REPO = Path(__file__).resolve().parents[1]
JSON = {"Content-Type": "application/json"}
TICKS = os.sysconf("SC_CLK_TCK")


def node(i: int) -> dict[str, Any]:
    """A Node as the NodePool controller would create it (8x A100-40GB, 96 CPUs, 1 TiB)."""
    name = f"node-{i:04d}"
    resources = {"cpu": "96", "memory": "1Ti", "pods": "110", "ephemeral-storage": "100Gi"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "labels": {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
                                    "kubernetes.io/hostname": name},
                         "annotations": {"gpusched.io/gpu-model": "A100-40GB",
                                         "gpusched.io/gpu-count": "8"}},
            "spec": {}, "status": {"capacity": dict(resources), "allocatable": dict(resources)}}


def pod(i: int) -> dict[str, Any]:
    """A bare pod asking for one GPU (and a little CPU and memory)."""
    resources = {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"nvidia.com/gpu": "1"}}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p-{i:05d}", "namespace": "default"},
            "spec": {"containers": [{"name": "main", "image": "busybox", "resources": resources}]}}


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (``/proc/PID/stat`` fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (serve's controller process, when it has one)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return sorted(found)


def process_cpu(pid: int) -> dict[str, float]:
    """CPU seconds so far of serve (``api``) and of each child (``controllers``, ...)."""
    cpu = {"api": cpu_seconds(pid)}
    for n, child in enumerate(children(pid)):
        cpu["controllers" if n == 0 else f"child{n}"] = cpu_seconds(child)
    return cpu


def per_pod_ms(before: dict[str, float], after: dict[str, float], pods: int) -> str:
    """``api 1.2 + controllers 3.4 ms/pod``: CPU per pod of each process in a phase."""
    return " + ".join(f"{name} {1000 * (after[name] - before.get(name, 0.0)) / pods:.2f}"
                      for name in after) + " ms/pod"


def uptime() -> str:
    return "load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())




def post_all(port: int, path: str, bodies: list[dict[str, Any]], threads: int) -> list[str]:
    """POST every body from ``threads`` keep-alive clients (body i goes to client i % threads);
    returns the failures (status and message), empty when every create was accepted."""
    failures: list[str] = []
    lock = threading.Lock()

    def client(share: list[bytes]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        for body in share:
            conn.request("POST", path, body=body, headers=JSON)
            response = conn.getresponse()
            text = response.read()
            if response.status != 201:
                with lock:
                    failures.append(f"{response.status} {text[:200]!r}")
        conn.close()

    encoded = [json.dumps(body).encode() for body in bodies]     # before the clock starts
    workers = [threading.Thread(target=client, args=(encoded[i::threads],)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return failures


def unbound(port: int) -> int:
    """Whether a pod has no ``spec.nodeName`` yet (one item asked for: a cheap answer)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3D&limit=1")
    items = json.loads(conn.getresponse().read())["items"]
    conn.close()
    return len(items)


def wait_bound(port: int, deadline_s: float = 3600) -> None:
    deadline = time.monotonic() + deadline_s
    while unbound(port) and time.monotonic() < deadline:
        time.sleep(0.1)


def through_api(tree: Path, nodes: int, pods: int, threads: int, virtual: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        process, port = start(tree, Path(tmp) / "state.db", virtual)
        try:
            cpu0, began = process_cpu(process.pid), time.monotonic()
            failed = post_all(port, "/api/v1/nodes", [node(i) for i in range(nodes)], threads)
            node_s = time.monotonic() - began      # created: every create answered
            wait_settled(process.pid)
            cpu1 = process_cpu(process.pid)
            began = time.monotonic()
            failed += post_all(port, "/api/v1/namespaces/default/pods",
                               [pod(i) for i in range(pods)], threads)
            created_s = time.monotonic() - began
            wait_bound(port)
            pod_s, cpu2 = time.monotonic() - began, process_cpu(process.pid)
        finally:
            stop(process, 60)
    return {"nodes/s": nodes / node_s, "node cpu s": sum(cpu1.values()) - sum(cpu0.values()),
            "node s": node_s, "pods/s": pods / pod_s,
            "pod cpu s": sum(cpu2.values()) - sum(cpu1.values()), "pod s": pod_s,
            "created s": created_s, "failed": len(failed), "first failure": failed[:1],
            "node split": per_pod_ms(cpu0, cpu1, nodes).replace("pod", "node"),
            "pod split": per_pod_ms(cpu1, cpu2, pods)}


def wait_settled(pid: int, quiet_s: float = 0.5, deadline_s: float = 600) -> None:
    """Until serve's processes use no CPU for ``quiet_s`` (the controllers took the nodes in:
    node objects made, device plugin advertised), so the pod phase starts from a settled store."""
    deadline, last = time.monotonic() + deadline_s, -1.0
    while time.monotonic() < deadline:
        now = sum(process_cpu(pid).values())
        if now - last < 0.02:
            return
        last = now
        time.sleep(quiet_s)


def apply_file(tree: Path, state: Path, path: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one ``gpusched apply -f`` (the child's CPU time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    subprocess.run([sys.executable, "-m", "gpusched", "--state", str(state), "apply", "-f",
                    str(path)], env=env_for(tree), cwd=tree, check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def through_apply(tree: Path, nodes: int, pods: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        state, folder = Path(tmp) / "state.db", Path(tmp)
        node_file, pod_file = folder / "nodes.json", folder / "pods.json"
        node_file.write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                         "items": [node(i) for i in range(nodes)]}))
        pod_file.write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                        "items": [pod(i) for i in range(pods)]}))
        node_s, node_cpu = apply_file(tree, state, node_file)
        pod_s, pod_cpu = apply_file(tree, state, pod_file)
    return {"nodes/s": nodes / node_s, "node cpu s": node_cpu, "node s": node_s,
            "pods/s": pods / pod_s, "pod cpu s": pod_cpu, "pod s": pod_s}


def row(label: str, r: dict[str, Any]) -> str:
    return (f"{label[-34:]:34} {r['nodes/s']:8.1f} {r['node s']:7.1f} {r['node cpu s']:7.1f} "
            f"{r['pods/s']:7.1f} {r['pod s']:7.1f} {r['pod cpu s']:7.1f} {r.get('failed', 0):6d}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[], help="another source tree to compare")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--virtual-clock", action="store_true", help="serve --virtual-clock")
    parser.add_argument("--no-apply", action="store_true", help="skip the gpusched apply rows")
    parser.add_argument("--repeat", type=int, default=1,
                        help="alternate the trees this many times (before, after, before, ...)")
    args = parser.parse_args()
    print(f"nodes={args.nodes} pods={args.pods} threads={args.threads} "
          f"virtual_clock={args.virtual_clock} cpus={os.cpu_count()} {uptime()}", flush=True)
    print(f"{'how (tree)':34} {'nodes/s':>8} {'node s':>7} {'cpu s':>7} {'pods/s':>7} "
          f"{'pod s':>7} {'cpu s':>7} {'failed':>6}", flush=True)
    for tree in ([Path(t).resolve() for t in args.tree] + [REPO]) * args.repeat:
        result = through_api(tree, args.nodes, args.pods, args.threads, args.virtual_clock)
        print(row(f"serve {tree}", result), flush=True)
        print(f"  nodes: {result['node split']}; pods: {result['pod split']}; pods created in "
              f"{result['created s']:.1f} s ({args.pods / result['created s']:.0f}/s)", flush=True)
        if result["first failure"]:
            print(f"  first failure: {result['first failure'][0]}", flush=True)
        if not args.no_apply:
            print(row(f"apply {tree}", through_apply(tree, args.nodes, args.pods)), flush=True)
        print(f"  {uptime()}", flush=True)


if __name__ == "__main__":
    main()

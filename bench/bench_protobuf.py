"""What serve's protobuf codec costs per object, beside JSON: CPU microseconds to encode and decode
a pod, a GPU node and a 100-node list, and their sizes.

    python -m bench.bench_protobuf [--rounds 5] [--repeat 500]

The node is examples/cluster.yaml's first GPU node as the embedded cluster stores it (applied to
a temporary state file). Each round times JSON (``json.dumps`` / ``json.loads``) and protobuf
(``server.protobuf.envelope``) one after the other, so both see the same load; the table shows
the median over rounds and the load average. Not a test (``tests/server/protobuf`` are).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from gpusched.server.protobuf.envelope import decode_object, encode_object

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train-1", "namespace": "default",
                                                        "labels": {"app": "train"}},
       "spec": {"containers": [{"name": "c", "image": "pytorch:latest",
                                "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "4"}}}]}}


def cluster_node() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        state = str(Path(tmp, "state.db"))
        cli = [sys.executable, "-m", "gpusched", "--state", state]
        subprocess.run([*cli, "apply", "-f", "examples/cluster.yaml"], check=True, capture_output=True)
        listed = json.loads(subprocess.run([*cli, "get", "nodes", "-o", "json"], check=True,
                                           capture_output=True, text=True).stdout)
    node: dict[str, Any] = listed["items"][0]
    return {"apiVersion": "v1", "kind": "Node", **node}


def per_call_us(fn: Callable[[], Any], repeat: int) -> float:
    start = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - start) / repeat * 1e6


def measure(obj: dict[str, Any], repeat: int) -> dict[str, float]:
    text, data = json.dumps(obj).encode(), encode_object(obj)
    assert data is not None
    return {"json encode": per_call_us(lambda: json.dumps(obj).encode(), repeat),
            "json decode": per_call_us(lambda: json.loads(text), repeat),
            "protobuf encode": per_call_us(lambda: encode_object(obj), repeat),
            "protobuf decode": per_call_us(lambda: decode_object(data), repeat),
            "json bytes": len(text), "protobuf bytes": len(data)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=500)
    args = parser.parse_args()
    node = cluster_node()
    items = [{k: v for k, v in node.items() if k not in ("apiVersion", "kind")}] * 100
    objects = {"pod": POD, "GPU node": node,
               "NodeList of 100": {"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": items}}
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in objects}
    for _ in range(args.rounds):
        for name, obj in objects.items():
            rows[name].append(measure(obj, max(1, args.repeat // (100 if "100" in name else 1))))
    columns = list(next(iter(rows.values()))[0])
    print("object            " + "  ".join(f"{c:>15}" for c in columns))
    for name, runs in rows.items():
        medians = [statistics.median(r[c] for r in runs) for c in columns]
        print(f"{name:<18}" + "  ".join(f"{m:>15.0f}" for m in medians))
    print("(microseconds of CPU per object; sizes in bytes) load average: "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()

"""A simulated day of diurnal inference load on L4 nodes, with and without node autoscaling.

    python examples/autoscaling-day/day.py                # NodePool l4 autoscaling 1..6
    python examples/autoscaling-day/day.py --fixed        # six L4 nodes all day
    python examples/autoscaling-day/day.py --state day.db # keep the state file to inspect

The Deployment ``inference`` carries a diurnal load curve (``deployment.yaml``: 5 req/s at
03:00, 55 at 15:00) and an HPA keeps its pods' ``gpu_utilization`` at 50 % (``hpa.yaml``, 1..6
replicas). The clock advances in 1-minute steps; each hour's row shows the replicas and Nodes at
the end of the hour, the pending pod-minutes (pending pods sampled every minute) and the cost of
the pool's node-hours in that hour (``gpusched cost --by nodepool``: a node costs from creation
to removal, used or not; L4 at 0.60 USD per GPU-hour). The outcome is documented, with the
numbers, in docs/autoscaling.md (and checked by tests/examples/test_autoscaling_day.py):
autoscaled, the nodes follow the replicas and pods wait only while a node provisions (3 min);
fixed, nothing waits and six nodes are paid all day.

Uses the embedded cluster API (``gpusched.cluster.cluster.Cluster``), the same code the CLI runs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from gpusched.cluster.cluster import Cluster
from gpusched.metrics import cost
from gpusched.cluster.apiserver.store import parse_start
from gpusched.objects.manifest import load_text

HERE = Path(__file__).resolve().parent
STEP = 60             # seconds between samples
START = "2026-01-01T00:00:00Z"


def pending_pods(cluster: Cluster) -> int:
    return sum(1 for p in cluster.get("pods", selector="app=inference")
               if not p["spec"].get("nodeName"))


def hour_cost(cluster: Cluster) -> float:
    view = cluster.view()
    rows = cost.node_usage(view.list("NodePool"), view.list("Node"), view.now(),
                           cost.load_prices(None), since=view.now() - 3600)
    return sum(r.dollars for r in rows)


def run(fixed: bool, state: str) -> list[tuple[int, int, int, float, float]]:
    pool = HERE / ("nodepool-fixed.yaml" if fixed else "nodepool-autoscaled.yaml")
    manifests = []
    for path in (pool, HERE / "deployment.yaml", HERE / "hpa.yaml"):
        manifests += load_text(path.read_text(), path.name)
    rows = []
    with Cluster.open(state, start=parse_start(START)) as cluster:
        cluster.reset()
        cluster.apply(manifests)
        for hour in range(24):
            pending_minutes = 0.0
            for _ in range(3600 // STEP):
                pending_minutes += pending_pods(cluster) * STEP / 60
                cluster.advance(STEP)
            replicas = cluster.get("deployments", ["inference"])[0]["spec"]["replicas"]
            nodes = len(cluster.get("nodes"))
            rows.append((hour, replicas, nodes, pending_minutes, hour_cost(cluster)))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixed", action="store_true", help="six L4 nodes, no autoscaling")
    parser.add_argument("--state", default="", help="state file (default: a temporary one)")
    args = parser.parse_args(argv)
    state = args.state or str(Path(tempfile.mkdtemp()) / "day.db")
    rows = run(args.fixed, state)
    print(f"{'HOUR':<6}{'REPLICAS':>9}{'NODES':>7}{'PENDING(pod-min)':>18}{'COST(USD)':>11}")
    for hour, replicas, nodes, pending, dollars in rows:
        print(f"{hour:02d}:00 {replicas:>9}{nodes:>7}{pending:>18.0f}{dollars:>11.2f}")
    print(f"{'TOTAL':<6}{'':>9}{'':>7}{sum(r[3] for r in rows):>18.0f}"
          f"{sum(r[4] for r in rows):>11.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

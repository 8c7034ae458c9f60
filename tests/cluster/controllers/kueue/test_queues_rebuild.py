"""The Kueue scheduler's kept state (``cluster.controllers.kueue.queues``) against the store: a
mid-size run (300 Jobs over 10 ClusterQueues in two cohorts, borrowing, reclaim and in-queue
preemption, one StrictFIFO queue, Jobs finishing, Jobs deleted, a quota changed) ends in the same
state whether the scheduler keeps its queue manager and quota cache across passes or rebuilds
them from the store before every command; after each command the kept state is the one a
rebuild derives (the parked Workloads, the heaps, the usage each admitted Workload holds); a
fresh process makes the same decisions.

Upstream keeps the same state in memory (``pkg/cache/queue/manager.go``: the heaps and
``inadmissibleWorkloads``, requeued by ``QueueAssociatedInadmissibleWorkloadsAfter`` when a
Workload that held quota goes; ``pkg/cache/scheduler/cache.go``: the usage) and rebuilds it from
its informers when it starts.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
import yaml

from gpusched.cluster.cluster import Cluster
from gpusched.cluster.controllers.kueue import queues
from gpusched.objects.manifest import load_text

KUEUE = "kueue.x-k8s.io/v1beta2"
QUEUES = 10
FLAVORS = (("a100", "A100-80GB", "NVIDIA-A100-SXM4-80GB"), ("h100", "H100-80GB", "NVIDIA-H100-80GB-HBM3"))


def _text(docs: list[dict[str, Any]]) -> list[Any]:
    return load_text(yaml.safe_dump_all(docs, sort_keys=False), "test.yaml")


def cluster_queue(q: int, nominal: int) -> dict[str, Any]:
    name = f"team-{q}"
    return {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
        "cohortName": f"cohort-{q % 2}",
        "queueingStrategy": "StrictFIFO" if q == 3 else "BestEffortFIFO",
        "namespaceSelector": {},
        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
        "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
            {"name": flavor, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": nominal,
                                            "borrowingLimit": nominal}]} for flavor, _, _ in FLAVORS]}]}}


def setup() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for flavor, model, product in FLAVORS:
        docs.append({"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool", "metadata": {"name": flavor},
                     "spec": {"count": 5, "gpu": {"model": model, "count": 8}, "cpu": "96", "memory": "1Ti"}})
        docs.append({"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": flavor},
                     "spec": {"nodeLabels": {"nvidia.com/gpu.product": product}}})
    for q in range(QUEUES):
        docs += [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{q}"}}, cluster_queue(q, 4),
                 {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": "queue", "namespace": f"team-{q}"},
                  "spec": {"clusterQueue": f"team-{q}"}}]
    for value, name in ((100, "low"), (1000, "normal"), (10000, "high")):
        docs.append({"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value})
    return docs


def job(index: int) -> dict[str, Any]:
    """1 or 4 GPUs per pod, parallelism 1 or 2, three priorities, 10 minutes to a day."""
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"job-{index:03d}", "namespace": f"team-{index % QUEUES}",
                         "labels": {"kueue.x-k8s.io/queue-name": "queue",
                                    "kueue.x-k8s.io/priority-class": ("low", "normal", "high")[index % 7 % 3]}},
            "spec": {"parallelism": 1 + index % 2, "completions": 1 + index % 2, "template": {
                "metadata": {"annotations": {"gpusched.io/duration": ("10m", "30m", "24h")[index % 3]}},
                "spec": {"restartPolicy": "Never", "containers": [{
                    "name": "train", "image": "busybox",
                    "resources": {"limits": {"nvidia.com/gpu": 4 if index % 5 == 0 else 1}}}]}}}}


Step = Callable[[Cluster], Any]


def steps() -> list[Step]:
    out: list[Step] = [lambda c: c.apply(_text(setup()))]
    for batch in range(6):
        out.append(lambda c, b=batch: c.apply(_text([job(i) for i in range(b * 50, b * 50 + 50)])))
        out.append(lambda c: c.advance(600))
        if batch == 2:
            out.append(lambda c: c.apply(_text([cluster_queue(5, 8)])))       # more quota in cohort-1
        if batch == 3:
            out.append(lambda c: c.delete_many("Job", [(f"job-{i:03d}", f"team-{i % QUEUES}") for i in range(0, 40, 3)]))
    return out


def _workloads(cluster: Cluster) -> dict[str, Any]:
    """Each Workload's admission and conditions (type, status, reason, message)."""
    out = {}
    for wl in cluster.get("workloads", all_namespaces=True):
        status = wl.get("status") or {}
        out[f"{wl['metadata']['namespace']}/{wl['metadata']['name']}"] = (
            status.get("admission"),
            sorted((c["type"], c["status"], c.get("reason"), c.get("message")) for c in status.get("conditions") or ()))
    return out


def _kept(cluster: Cluster) -> queues.State:
    return cluster._load().memo[queues.MEMO]["state"]


def _summary(state: queues.State) -> tuple[Any, ...]:
    manager = state.manager
    return (sorted(manager.parked_keys()), sorted(set(manager.keys()) - manager.parked_keys()),
            sorted((w.key, w.cluster_queue, sorted(w.usage.items())) for w in state.world.snapshot.admitted),
            sorted((k, v) for k, v in state.lq_counts.items()))


def _run(path: str, rebuild: bool) -> tuple[dict[str, Any], int]:
    parked_seen = 0
    with Cluster.open(path) as cluster:
        for step in steps():
            if rebuild:
                cluster._load().memo.pop(queues.MEMO, None)
            step(cluster)
            if not rebuild and queues.MEMO in cluster._load().memo:
                view = cluster._load()
                kept = _summary(_kept(cluster))
                assert kept == _summary(queues.build(view, derived=True)), "kept state != rebuilt state"
                parked_seen = max(parked_seen, len(kept[0]))
        return _workloads(cluster), parked_seen


@pytest.fixture(scope="module")
def kept_run(tmp_path_factory: Any) -> tuple[str, dict[str, Any], int]:
    path = str(tmp_path_factory.mktemp("kept") / "state.db")
    workloads, parked = _run(path, rebuild=False)
    return path, workloads, parked


def test_kept_state_and_rebuild_decide_the_same(kept_run: tuple[str, dict[str, Any], int], tmp_path: Any) -> None:
    _, kept, parked = kept_run
    rebuilt, _ = _run(str(tmp_path / "rebuilt.db"), rebuild=True)
    assert parked > 0, "the run never parked a Workload: it tests nothing"
    admitted = sum(1 for admission, _ in kept.values() if admission)
    assert 0 < admitted < len(kept)
    assert kept == rebuilt


def _decisions(workloads: dict[str, Any]) -> dict[str, Any]:
    return {key: (admission, [c[:3] for c in conditions]) for key, (admission, conditions) in workloads.items()}


def test_a_fresh_process_admits_the_same(kept_run: tuple[str, dict[str, Any], int]) -> None:
    """A new process rebuilds the state with every pending Workload in its heap (upstream's
    manager after a restart): it nominates the parked ones again, which may refresh a message
    (how much more quota is needed) but admits, preempts and parks the same Workloads."""
    path, kept, _ = kept_run
    with Cluster.open(path) as cluster:
        cluster.settle()
        assert _decisions(_workloads(cluster)) == _decisions(kept)

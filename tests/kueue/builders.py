"""Tiny builders of v1beta2 Kueue dicts, for the pure ``gpusched.kueue`` tests and, as YAML
(:func:`manifests`), for the Kueue tests on the embedded cluster; with the two readers those
share (a queued Job's Workload, a condition)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from gpusched.kueue.cycle import Pending
from gpusched.kueue.inputs import podset_request
from gpusched.kueue.jobframework import workload_name
from gpusched.kueue.ordering import QueuedWorkload
from gpusched.kueue.preemption import Admitted
from gpusched.objects.quantity import canonical

KUEUE_API = "kueue.x-k8s.io/v1beta2"


def flavor_quota(name: str, **resources: Any) -> dict[str, Any]:
    """One flavor of a resource group: ``gpu=8`` or ``gpu=(8, borrow, lend)``; ``gpu`` stands
    for ``nvidia.com/gpu``."""
    entries = []
    for res, value in resources.items():
        nominal, borrowing, lending = value if isinstance(value, tuple) else (value, None, None)
        entry: dict[str, Any] = {"name": "nvidia.com/gpu" if res == "gpu" else res, "nominalQuota": nominal}
        if borrowing is not None:
            entry["borrowingLimit"] = borrowing
        if lending is not None:
            entry["lendingLimit"] = lending
        entries.append(entry)
    return {"name": name, "resources": entries}


def make_cq(name: str, *flavors: dict[str, Any], cohort: str | None = None, **spec: Any) -> dict[str, Any]:
    covered = sorted({res["name"] for flavor in flavors for res in flavor["resources"]})
    body: dict[str, Any] = {"resourceGroups": [{"coveredResources": covered, "flavors": list(flavors)}] if flavors else []}
    if cohort:
        body["cohortName"] = cohort
    body.update(spec)
    return {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": body}


def make_cohort(name: str, *flavors: dict[str, Any], parent: str | None = None,
                weight: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    if flavors:
        covered = sorted({res["name"] for flavor in flavors for res in flavor["resources"]})
        spec["resourceGroups"] = [{"coveredResources": covered, "flavors": list(flavors)}]
    if parent:
        spec["parentName"] = parent
    return {"apiVersion": KUEUE_API, "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def make_flavor(name: str, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
                tolerations: list[dict[str, str]] | None = None, topology: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if labels:
        spec["nodeLabels"] = labels
    if taints:
        spec["nodeTaints"] = taints
    if tolerations:
        spec["tolerations"] = tolerations
    if topology:
        spec["topologyName"] = topology
    return {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def make_podset(name: str = "main", count: int = 1, node_selector: dict[str, str] | None = None,
                tolerations: list[dict[str, str]] | None = None, **requests: Any) -> dict[str, Any]:
    """A Workload PodSet whose one container requests ``requests`` (``gpu`` = nvidia.com/gpu)."""
    reqs = {("nvidia.com/gpu" if k == "gpu" else k): v for k, v in requests.items()}
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": reqs}}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    return {"name": name, "count": count, "template": {"spec": spec}}


SPOT_TAINT = {"key": "instance", "value": "spot", "effect": "NoSchedule"}
SPOT_TOLERATION = {"key": "instance", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}
FLAVORS = [make_flavor("default"), make_flavor("one", {"type": "one"}), make_flavor("two", {"type": "two"}),
           make_flavor("a100", {"gpu": "a100"}), make_flavor("h100", {"gpu": "h100"}),
           make_flavor("tainted", taints=[SPOT_TAINT]),
           make_flavor("taint_and_toleration", taints=[SPOT_TAINT], tolerations=[SPOT_TOLERATION])]


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def local_queue(name: str, namespace_: str, cluster_queue: str) -> dict[str, Any]:
    return {"apiVersion": KUEUE_API, "kind": "LocalQueue", "metadata": {"name": name, "namespace": namespace_},
            "spec": {"clusterQueue": cluster_queue}}


def workload_priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": KUEUE_API, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value}


def topology(name: str, *levels: str) -> dict[str, Any]:
    return {"apiVersion": KUEUE_API, "kind": "Topology", "metadata": {"name": name},
            "spec": {"levels": [{"nodeLabel": level} for level in levels]}}


def queued_job(name: str, gpus: int, queue: str, namespace_: str = "team-a", priority_class: str = "",
               pods: int | None = None, indexed: bool = False, annotations: dict[str, str] | None = None,
               command: Sequence[str] = ("sleep", "3600")) -> dict[str, Any]:
    """A batch/v1 Job labelled for LocalQueue ``queue`` (and WorkloadPriorityClass
    ``priority_class``): ``pods`` pods (parallelism = completions; the Job's defaults without)
    of one busybox container ``train`` with ``gpus`` GPUs."""
    labels = {"kueue.x-k8s.io/queue-name": queue}
    if priority_class:
        labels["kueue.x-k8s.io/priority-class"] = priority_class
    container: dict[str, Any] = {"name": "train", "image": "busybox"}
    if command:
        container["command"] = list(command)
    container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    template: dict[str, Any] = {"spec": {"restartPolicy": "Never", "containers": [container]}}
    if annotations:
        template["metadata"] = {"annotations": annotations}
    spec: dict[str, Any] = {}
    if pods is not None:
        spec.update(parallelism=pods, completions=pods)
    if indexed:
        spec["completionMode"] = "Indexed"
    spec["template"] = template
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace_, "labels": labels}, "spec": spec}


def manifests(*bodies: dict[str, Any]) -> str:
    """The bodies as one YAML stream, for ``tests.cluster.builders.apply``."""
    return yaml.safe_dump_all(bodies)


def job_workload(cluster: Any, job_name: str, namespace_: str = "team-a") -> dict[str, Any]:
    """The Workload of the Job ``job_name`` (``jobframework.workload_name``)."""
    [found] = cluster.get("Job", [job_name], namespace=namespace_)
    [wl] = cluster.get("Workload", [workload_name(job_name, found["metadata"]["uid"])], namespace=namespace_)
    return wl


def condition(obj: dict[str, Any], type_: str) -> tuple[str, str, str]:
    """Status, reason and message of ``obj``'s condition ``type_``."""
    found = next(c for c in obj["status"]["conditions"] if c["type"] == type_)
    return found["status"], found["reason"], found["message"]


def queued_jobset(name: str, queue: str, replicated: Sequence[tuple[str, int, int, int]], namespace_: str = "team-a",
                  annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """A JobSet labelled for LocalQueue ``queue``: per ``(name, replicas, pods, gpus)`` a
    replicatedJob of ``replicas`` Jobs of ``pods`` pods with ``gpus`` GPUs each; ``annotations``
    go on every pod template."""
    rjobs = []
    for rjob, replicas, pods, gpus in replicated:
        template: dict[str, Any] = {"spec": {"containers": [{"name": rjob, "image": "busybox",
                                                             "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}
        if annotations:
            template["metadata"] = {"annotations": annotations}
        rjobs.append({"name": rjob, "replicas": replicas,
                      "template": {"spec": {"parallelism": pods, "completions": pods, "template": template}}})
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": namespace_, "labels": {"kueue.x-k8s.io/queue-name": queue}},
            "spec": {"replicatedJobs": rjobs}}


def raw_quota(flavor: str, **resources: Any) -> dict[str, Any]:
    """A flavor's quotas with resource names as written (``gpu`` stays ``gpu``); a value is
    nominal, or (nominal, borrowingLimit[, lendingLimit]) with None for an unset limit."""
    entries = []
    for name, value in resources.items():
        nominal, *limits = value if isinstance(value, tuple) else (value,)
        entry = {"name": name.replace("_", "-"), "nominalQuota": nominal}
        for field, limit in zip(("borrowingLimit", "lendingLimit"), limits):
            if limit is not None:
                entry[field] = limit
        entries.append(entry)
    return {"name": flavor, "resources": entries}


def queue(name: str, *flavors: dict[str, Any], cohort: str | None = None, **spec: Any) -> dict[str, Any]:
    """A ClusterQueue with one resource group of ``flavors`` (``raw_quota``) and ``spec`` fields."""
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"resourceGroups": [{"coveredResources": sorted({r["name"] for f in flavors for r in f["resources"]}),
                                         "flavors": list(flavors)}], **({"cohortName": cohort} if cohort else {}), **spec}}


def using(key: str, cq: str, priority: int = 0, **usage: tuple[str, str]) -> Admitted:
    """An admitted workload: ``resource=(flavor, quantity)``."""
    amounts = {(flavor, res.replace("_", "-")): canonical(res.replace("_", "-"), qty) for res, (flavor, qty) in usage.items()}
    return Admitted(key, cq, amounts, priority, 0.0, 0.0, key.split("/")[1])


def wanting(key: str, cq: str, priority: int = 0, *, at: float = 0.0, **requests: str) -> Pending:
    """A pending head ``namespace/name`` of one pod requesting ``requests``, created at ``at``."""
    podset = {"name": "main", "count": 1, "template": {"spec": {"containers": [
        {"name": "c", "resources": {"requests": {k.replace("_", "-"): v for k, v in requests.items()}}}]}}}
    return Pending(QueuedWorkload(key, cq, priority, at, key.split("/")[1]), (podset_request(podset),))

"""The controllers ``settle`` runs: ``CONTROLLERS`` (in order), ``KEYED`` (take the work queue),
``WATCHES`` (full pass only on a change they read) and ``TIMED`` (per-object timers by kind).

See the package docstring (``cluster.controllers``) for how settle uses them. A controller of a
package above the cluster layer (Slurm's ``sbatch``) runs in a slot it installs
(``controllers.installed``).

Neighbours: every module of ``cluster.controllers``; read by ``cluster.cluster`` and
``cluster.timers``.
"""

from __future__ import annotations

from typing import Callable

from gpusched.cluster.kubelet import containers, device_plugin, node_status, pod_lifecycle
from gpusched.cluster.controllers.gpuoperator import clusterpolicy as gpu_operator
from gpusched.cluster.controllers.network import endpoints
from gpusched.cluster.controllers.storage import volumes
from gpusched.cluster.controllers.autoscaling import autoscaler, hpa, vpa
from gpusched.cluster.controllers.nodes import bootstrap, node_lifecycle, nodepool
from gpusched.cluster.controllers.workloads import (daemonset, deployment, deployment_status, job,
                                                    replicaset)
from gpusched.cluster import queueing
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.controllers.autoscaling import autoscaler_groups
from gpusched.cluster.controllers.common import collect_garbage
from gpusched.cluster.controllers.installed import slot
from gpusched.devices.operator import OPERATOR_NAMESPACE

Watch = Callable[[Changes], bool]

# Order matters only for how many rounds settle needs, never for the fixpoint it reaches.
# (name, reconcile(view) or reconcile(view, changes) for the KEYED ones)
CONTROLLERS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("bootstrap", bootstrap.reconcile),
    ("cluster-autoscaler", autoscaler.reconcile),
    ("nodepool", nodepool.reconcile),
    ("node-status", node_status.reconcile),
    ("device-plugin", device_plugin.reconcile),
    ("persistentvolume", volumes.reconcile),
    ("endpoints", endpoints.reconcile),
    ("gpu-operator", gpu_operator.reconcile),
    ("garbage-collector", collect_garbage),
    ("horizontal-pod-autoscaler", hpa.reconcile),
    ("vpa-recommender", vpa.reconcile),
    ("deployment", deployment.reconcile),
    ("replicaset", replicaset.reconcile),
    ("sbatch", slot("sbatch")),       # gpusched.slurm.controller, installed from above
    ("job", job.reconcile),
    ("daemonset", daemonset.reconcile),
    ("node-lifecycle", node_lifecycle.reconcile),
    ("containers", containers.reconcile),
)
# After these, the kubelet admits the pods bound to each node (kubelet.admission), then
# pod_lifecycle.reconcile starts them; then quotas are refreshed and the scheduler runs.

KEYED = frozenset({"garbage-collector", "deployment", "replicaset", "sbatch", "job", "daemonset",
                   "node-lifecycle", "containers", "node-status", "device-plugin"})


def _kinds(*kinds: str, operator_pods: bool = False) -> Watch:
    """A watch: any change of these kinds (and of the GPU operator's pods)."""
    wanted = frozenset(kinds)

    def watches(changes: Changes) -> bool:
        return any(k[0] in wanted or (operator_pods and k[0] == "Pod" and k[1] == OPERATOR_NAMESPACE)
                   for k in changes.keys)
    return watches


def _endpoints_watch(changes: Changes) -> bool:
    """Services, their endpoints, and pods in a namespace that has a Service with a selector."""
    if changes.any_kind(("Service", "Endpoints", "EndpointSlice")):
        return True
    namespaces = {k[1] for k in changes.keys if k[0] == "Pod"}
    return any((s.get("spec") or {}).get("selector")
               for ns in namespaces for s in changes.view.list("Service", ns))


def _volumes_watch(changes: Changes) -> bool:
    """Claims, volumes, classes, nodes, and pods in a namespace that has a claim."""
    if changes.any_kind(("PersistentVolumeClaim", "PersistentVolume", "StorageClass", "Node")):
        return True
    namespaces = {k[1] for k in changes.keys if k[0] == "Pod"}
    return any(changes.view.list("PersistentVolumeClaim", ns) for ns in namespaces)


def _autoscaler_watch(changes: Changes) -> bool:
    """NodePools; and anything while a pool is autoscaled (pending pods, node utilization)."""
    return changes.any_kind(("NodePool",)) or bool(autoscaler_groups.groups(changes.view))


def _present(kind: str) -> Watch:
    """A watch for a controller of ``kind`` objects that reads pods and metrics: its own kind's
    changes, and anything while one of them exists."""
    def watches(changes: Changes) -> bool:
        return changes.any_kind((kind,)) or bool(changes.view.list(kind))
    return watches


WATCHES = {
    "cluster-autoscaler": _autoscaler_watch,
    "horizontal-pod-autoscaler": _present("HorizontalPodAutoscaler"),
    "vpa-recommender": _present("VerticalPodAutoscaler"),
    "bootstrap": _kinds("Namespace", "PriorityClass", "Service", "ServiceAccount", "StorageClass"),
    "nodepool": _kinds("NodePool", "Node", "ConfigMap"),
    "persistentvolume": _volumes_watch,
    "endpoints": _endpoints_watch,
    "gpu-operator": _kinds("ClusterPolicy", "Node", "ConfigMap", "DaemonSet", "Namespace",
                           "PriorityClass", operator_pods=True),
}

# kind -> per-object timers (``cluster.timers``); add a controller's due function here.
TIMED = {
    "Pod": (pod_lifecycle.completion_due, pod_lifecycle.termination_due,
            node_lifecycle.eviction_due, containers.restart_due, queueing.retry_due),
    "Job": (job.due,),
    "Deployment": (deployment_status.progress_due,),
    "NodePool": (autoscaler.due,),
    "HorizontalPodAutoscaler": (hpa.sync_due,),
    "VerticalPodAutoscaler": (vpa.sample_due,),
}

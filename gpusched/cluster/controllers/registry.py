"""The controllers ``settle`` runs, as kube-controller-manager lists them: one
:class:`Descriptor` per controller (``cmd/kube-controller-manager/app/controller_descriptor.go``
``NewControllerDescriptors``; names from ``cmd/kube-controller-manager/names/
controller_names.go``), and what ``cluster.clock.settle`` reads from them: ``CONTROLLERS`` (in order),
``KEYED`` (take the work queue of changed keys), ``WATCHES`` (a full pass only on a change they
read) and ``TIMED`` (per-object timers by kind).

Upstream starts every controller at once, each on its own informers and work queue; here
``settle`` runs them one after another in ``DESCRIPTORS`` order, round after round until nothing
changes, so the order decides only how many rounds a change needs, never the fixpoint (it is
upstream's registration order where upstream has the controller, with gpusched's own and the
operators' where their inputs are ready: the furniture first, NodePools before the node-side
parts that advertise their devices, owners before what they own). A keyed controller declares
its informers in its module's ``QUEUE`` (``controllers.base``); the others read little or run on
timers and declare a watch: the kinds whose change may concern them.

A controller of a package above the cluster layer (Slurm's ``sbatch``) runs in a slot it installs
(``controllers.installed``).

A controller that acts on the objects of one kind and on nothing else (Deployments, ReplicaSets,
DaemonSets, HorizontalPodAutoscalers, VerticalPodAutoscalers, ClusterPolicies) is named here by
its module (``_of_kind``) and imported at its first run with an object of that kind in the view
or a change of one: while there is none, its pass would change nothing (its queue's objects are
of that kind; the autoscalers' records of gone objects are dropped by the settle that deletes
them), so a command on a cluster without them imports none of them. The cluster autoscaler is
imported once a NodePool is autoscaled (``_autoscaled``: its pass's own first test). ``TIMED``'s
due functions of those kinds are imported at their first call, which needs an object of the kind.

Neighbours: every controller package; read by ``cluster.clock.settle``, ``cluster.cluster`` and
``cluster.clock.timers``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from gpusched.cluster.scheduling import host as scheduling_host
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.controllers.autoscaling import autoscaler_groups
from gpusched.cluster.controllers.common import collect_garbage
from gpusched.cluster.controllers.dra import claims as dra_claims
from gpusched.cluster.controllers.dra import slices as dra_slices
from gpusched.cluster.controllers.installed import slot
from gpusched.cluster.controllers.network import endpoints
from gpusched.cluster.controllers.nodes import bootstrap, node_lifecycle, nodepool
from gpusched.cluster.controllers.storage import volumes
from gpusched.cluster.controllers.workloads import job
from gpusched.cluster.kubelet import containers, device_plugin, node_status, pod_lifecycle
from gpusched.devices.operator import OPERATOR_NAMESPACE

if TYPE_CHECKING:
    from gpusched.cluster.apiserver.view import View

Watch = Callable[[Changes], bool]


def _imported(target: str) -> Callable[..., Any]:
    """``"workloads.deployment:reconcile"``: that function of ``gpusched.cluster.controllers.
    workloads.deployment``, imported at its first call."""
    module, _, name = target.partition(":")

    def call(*args: Any) -> Any:
        function = getattr(importlib.import_module(f"gpusched.cluster.controllers.{module}"), name)
        return function(*args)
    return call


def _only_when(needed: Callable[[View, Changes | None], bool],
               target: str) -> Callable[..., None]:
    """The reconcile of ``target``, run (and imported) only when ``needed`` says its pass may
    change something (see the module docstring)."""
    run = _imported(target)

    def reconcile(view: View, changes: Changes | None = None) -> None:
        if needed(view, changes):
            run(view) if changes is None else run(view, changes)
    return reconcile


def _of_kind(kind: str, target: str) -> Callable[..., None]:
    """A controller of ``kind`` objects alone: needed while the view holds one or one changed."""
    def needed(view: View, changes: Changes | None) -> bool:
        return bool(view.list(kind)) or (changes is not None and changes.any_kind((kind,)))
    return _only_when(needed, target)


def _kueue_in_use(view: View, changes: Changes | None) -> bool:
    """Kueue's scheduler has nothing to do without a ClusterQueue or a Workload (its pass's
    first test), so a cluster without them does not import it."""
    kinds = ("ClusterQueue", "Workload")
    return any(view.list(kind) for kind in kinds) or (changes is not None and changes.any_kind(kinds))


def _autoscaled(view: View, _changes: Changes | None) -> bool:
    """The cluster autoscaler's pass does nothing without an autoscaled NodePool (its first
    step, ``autoscaler_groups.groups``)."""
    return bool(autoscaler_groups.groups(view))


@dataclass(frozen=True, slots=True)
class Descriptor:
    """One controller: ``name`` (settle's step), ``upstream`` (the controller it is, by
    kube-controller-manager's name or its project's), ``reconcile`` (``reconcile(view)``, or
    ``reconcile(view, changes)`` when ``keyed``), ``watch`` (a full-pass controller's filter:
    None runs it on any change)."""

    name: str
    upstream: str
    reconcile: Callable[..., None]
    keyed: bool = False
    watch: Watch | None = None


def _kinds(*kinds: str, operator_pods: bool = False) -> Watch:
    """A watch: any change of these kinds (and of the GPU operator's pods)."""
    wanted = frozenset(kinds)

    def watches(changes: Changes) -> bool:
        return any(k[0] in wanted or (operator_pods and k[0] == "Pod" and k[1] == OPERATOR_NAMESPACE)
                   for k in changes.keys)
    return watches


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


DESCRIPTORS: tuple[Descriptor, ...] = (
    # The furniture: namespaces, system PriorityClasses, default ServiceAccounts
    # (namespace-controller, serviceaccount-controller, the apiserver's bootstrap controllers).
    Descriptor("bootstrap", "serviceaccount-controller", bootstrap.reconcile,
               watch=_kinds("Namespace", "PriorityClass", "Service", "ServiceAccount",
                            "StorageClass")),
    Descriptor("cluster-autoscaler", "cluster-autoscaler (kubernetes/autoscaler)",
               _only_when(_autoscaled, "autoscaling.autoscaler:reconcile"),
               watch=_autoscaler_watch),
    Descriptor("nodepool", "gpusched NodePool (a cloud provider's node groups)", nodepool.reconcile,
               keyed=True),
    Descriptor("node-status", "kubelet (kubelet_node_status.go)", node_status.reconcile, keyed=True),
    Descriptor("device-plugin", "NVIDIA device plugin + GPU Feature Discovery",
               device_plugin.reconcile, keyed=True),
    Descriptor("dra-slices", "NVIDIA DRA driver kubelet plugin (gpu-kubelet-plugin)",
               dra_slices.reconcile, keyed=True),
    Descriptor("persistentvolume", "persistentvolume-binder-controller", volumes.reconcile,
               watch=_volumes_watch),
    Descriptor("endpoints", "endpoints-controller, endpointslice-controller", endpoints.reconcile,
               keyed=True),
    Descriptor("gpu-operator", "NVIDIA gpu-operator (clusterpolicy_controller.go)",
               _of_kind("ClusterPolicy", "gpuoperator.clusterpolicy:reconcile"),
               watch=_kinds("ClusterPolicy", "Node", "ConfigMap", "DaemonSet", "Namespace",
                            "PriorityClass", operator_pods=True)),
    Descriptor("garbage-collector", "garbage-collector-controller", collect_garbage, keyed=True),
    Descriptor("resourceclaim", "resource-claim-controller", dra_claims.reconcile, keyed=True),
    Descriptor("horizontal-pod-autoscaler", "horizontal-pod-autoscaler-controller",
               _of_kind("HorizontalPodAutoscaler", "autoscaling.hpa:reconcile"),
               watch=_present("HorizontalPodAutoscaler")),
    Descriptor("vpa-recommender", "vpa-recommender (kubernetes/autoscaler)",
               _of_kind("VerticalPodAutoscaler", "autoscaling.vpa:reconcile"),
               watch=_present("VerticalPodAutoscaler")),
    Descriptor("deployment", "deployment-controller",
               _of_kind("Deployment", "workloads.deployment:reconcile"), keyed=True),
    Descriptor("replicaset", "replicaset-controller",
               _of_kind("ReplicaSet", "workloads.replicaset:reconcile"), keyed=True),
    Descriptor("sbatch", "gpusched.slurm.controller (installed from above)", slot("sbatch"),
               keyed=True),
    Descriptor("kueue-scheduler", "kueue scheduler (pkg/scheduler/scheduler.go)",
               _only_when(_kueue_in_use, "kueue.scheduler:reconcile"), keyed=True),
    Descriptor("kueue-job", "kueue job integration (jobframework/reconciler.go)",
               _of_kind("Job", "kueue.jobs:reconcile"), keyed=True),
    Descriptor("kueue-jobset", "kueue jobset integration (jobs/jobset)",
               _of_kind("JobSet", "kueue.jobsets:reconcile"), keyed=True),
    Descriptor("jobset", "jobset-controller (kubernetes-sigs/jobset)",
               _of_kind("JobSet", "workloads.jobset:reconcile"), keyed=True),
    Descriptor("job", "job-controller", job.reconcile, keyed=True),
    Descriptor("kueue-pods-ready", "kueue workload controller (waitForPodsReady)",
               _of_kind("Workload", "kueue.pods_ready:reconcile"), keyed=True),
    Descriptor("podgroup", "scheduler-plugins podgroup controller (podgroup_controller.go)",
               _of_kind("PodGroup", "workloads.podgroup:reconcile"), keyed=True),
    Descriptor("kueue-topology-ungater", "kueue tas-topology-ungater (pkg/controller/tas/topology_ungater.go)",
               _of_kind("Workload", "kueue.ungater:reconcile"), keyed=True),
    Descriptor("daemonset", "daemonset-controller",
               _of_kind("DaemonSet", "workloads.daemonset:reconcile"), keyed=True),
    Descriptor("statefulset", "statefulset-controller",
               _of_kind("StatefulSet", "workloads.statefulset:reconcile"), keyed=True),
    Descriptor("node-lifecycle", "node-lifecycle-controller, taint-eviction-controller, "
               "pod-garbage-collector-controller, disruption-controller", node_lifecycle.reconcile,
               keyed=True),
    Descriptor("containers", "kubelet (kuberuntime restarts)", containers.reconcile, keyed=True),
)
# After these, the kubelet admits the pods bound to each node (kubelet.admission), then
# pod_lifecycle.reconcile starts them; then quotas are refreshed and the scheduler runs
# (``cluster.clock.settle``).

# What ``cluster.clock.settle`` reads.
CONTROLLERS: tuple[tuple[str, Callable[..., None]], ...] = tuple(
    (d.name, d.reconcile) for d in DESCRIPTORS)
KEYED = frozenset(d.name for d in DESCRIPTORS if d.keyed)
WATCHES = {d.name: d.watch for d in DESCRIPTORS if d.watch is not None}

# kind -> per-object timers (``cluster.clock.timers``); add a controller's due function here.
TIMED = {
    "Pod": (pod_lifecycle.completion_due, pod_lifecycle.termination_due,
            node_lifecycle.eviction_due, containers.restart_due, scheduling_host.retry_due),
    "Job": (job.due,),
    "Workload": (_imported("kueue.pods_ready:due"),),
    "Deployment": (_imported("workloads.deployment_status:progress_due"),),
    "NodePool": (_imported("autoscaling.autoscaler:due"),),
    "HorizontalPodAutoscaler": (_imported("autoscaling.hpa:sync_due"),),
    "VerticalPodAutoscaler": (_imported("autoscaling.vpa:sample_due"),),
}

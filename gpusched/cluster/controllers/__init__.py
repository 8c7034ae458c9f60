"""Controllers: each module reconciles one kind; ``CONTROLLERS`` is the order ``settle`` runs them.

Every controller is ``reconcile(view) -> None`` (changes go through the View); timed ones also
have per-object timers ``due(view, body) -> float | None`` listed by kind in ``TIMED``: the
event heap of ``cluster.timers`` orders them so ``Cluster.advance`` steps through time in order.

Neighbours: ``cluster.cluster`` (settle, advance) runs them; they use ``cluster.admission`` and
``cluster.view``.
"""

from __future__ import annotations

from gpusched.cluster.controllers import (autoscaler, bootstrap, containers, daemonset, deployment,
                                          device_plugin, endpoints, gpu_operator, hpa, job,
                                          node_lifecycle,
                                          node_status, nodepool, pod_lifecycle, replicaset,
                                          sbatch, volumes, vpa)
from gpusched.cluster.controllers.common import collect_garbage

# Order matters only for how many rounds settle needs, never for the fixpoint it reaches.
CONTROLLERS = (
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
    ("sbatch", sbatch.reconcile),
    ("job", job.reconcile),
    ("daemonset", daemonset.reconcile),
    ("node-lifecycle", node_lifecycle.reconcile),
    ("containers", containers.reconcile),
)
# After these, the kubelet admits the pods bound to each node (cluster.kubelet), then
# pod_lifecycle.reconcile starts them; then quotas are refreshed and the scheduler runs.

# kind -> per-object timers (``cluster.timers``); add a controller's due function here.
TIMED = {
    "Pod": (pod_lifecycle.completion_due, pod_lifecycle.termination_due,
            node_lifecycle.eviction_due, containers.restart_due),
    "Job": (job.due,),
    "Deployment": (deployment.progress_due,),
    "NodePool": (autoscaler.due,),
    "HorizontalPodAutoscaler": (hpa.sync_due,),
    "VerticalPodAutoscaler": (vpa.sample_due,),
}

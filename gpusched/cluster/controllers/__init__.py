"""Controllers: each module reconciles one kind; ``CONTROLLERS`` is the order ``settle`` runs them.

Every controller is ``reconcile(view) -> None`` (changes go through the View); timed ones also
have ``next_time(view) -> float | None``, the next virtual time at which they have work, used by
``Cluster.advance`` to step through time in order.

Neighbours: ``cluster.cluster`` (settle, advance) runs them; they use ``cluster.admission`` and
``cluster.view``.
"""

from __future__ import annotations

from gpusched.cluster.controllers import (daemonset, deployment, device_plugin, job,
                                          node_lifecycle, node_status, nodepool, pod_lifecycle,
                                          replicaset, sbatch)
from gpusched.cluster.controllers.common import collect_garbage

# Order matters only for how many rounds settle needs, never for the fixpoint it reaches.
CONTROLLERS = (
    ("nodepool", nodepool.reconcile),
    ("node-status", node_status.reconcile),
    ("device-plugin", device_plugin.reconcile),
    ("garbage-collector", collect_garbage),
    ("deployment", deployment.reconcile),
    ("replicaset", replicaset.reconcile),
    ("sbatch", sbatch.reconcile),
    ("job", job.reconcile),
    ("daemonset", daemonset.reconcile),
    ("node-lifecycle", node_lifecycle.reconcile),
)
# pod_lifecycle.reconcile runs after these, with the kubelet's device admission check
# (cluster.scheduling.kubelet_admission_error); then quotas are refreshed and the scheduler runs.

TIMED = (pod_lifecycle.next_time, job.next_time, node_lifecycle.next_time, deployment.next_time)

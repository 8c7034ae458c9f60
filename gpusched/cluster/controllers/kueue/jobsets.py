"""Kueue's JobSet integration (``jobframework/reconciler.go`` for ``pkg/controller/jobs/jobset``):
a JobSet labelled ``kueue.x-k8s.io/queue-name`` (suspended at create by
``admission.kueue_jobset``) gets one Workload with a PodSet per replicatedJob, so the whole
JobSet - leader and workers - is admitted at once or not at all; once admitted, each
replicatedJob's pod template gets its PodSet's flavor labels and tolerations and the JobSet is
unsuspended, which the JobSet controller passes on to its Jobs; an evicted JobSet is suspended
with its original templates; a Completed or Failed JobSet finishes its Workload: the events of
``jobframework``'s reconciler over ``gpusched.kueue.jobsets.JOBSET``.

Neighbours: ``jobframework`` (the reconciler), ``gpusched.kueue.jobsets`` (the JobSet's adapter),
``scheduler`` (admits).
"""

from __future__ import annotations

from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.apiserver.view import View
from gpusched.cluster.controllers.base import WorkQueue, controller, itself
from gpusched.cluster.controllers.kueue.jobframework import JobReconciler
from gpusched.kueue.jobsets import JOBSET

COMPONENT = "kueue-jobset-controller"
QUEUE = WorkQueue("JobSet", (itself("JobSet"), controller("Workload", "JobSet")), frozenset({"ResourceFlavor"}),
                  pod_creator=False)
_RECONCILER = JobReconciler(JOBSET, QUEUE, COMPONENT)


def reconcile(view: View, changes: Changes | None = None) -> None:
    """The JobSets with a queue label that ``QUEUE`` enqueues (every one without ``changes``)."""
    _RECONCILER.reconcile(view, changes)

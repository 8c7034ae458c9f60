"""Kueue's batch/v1 Job integration (``pkg/controller/jobframework/reconciler.go`` for
``pkg/controller/jobs/job``): a Job labelled ``kueue.x-k8s.io/queue-name`` (suspended at create by
``admission.kueue_job``) gets its Workload, runs once it is admitted with its flavors' nodeLabels
and tolerations, is suspended again with its original template when evicted, and finishes its
Workload: ``jobframework``'s reconciler over ``gpusched.kueue.jobs.JOB``.

Neighbours: ``jobframework`` (the reconciler), ``gpusched.kueue.jobs`` (the Job's adapter),
``scheduler`` (admits).
"""

from __future__ import annotations

from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.apiserver.view import View
from gpusched.cluster.controllers.base import WorkQueue, controller, itself
from gpusched.cluster.controllers.kueue.jobframework import JobReconciler
from gpusched.kueue.jobs import JOB

COMPONENT = "kueue-job-controller"
# A Job is synced when it changes or its Workload does; a ResourceFlavor's change re-checks all.
QUEUE = WorkQueue("Job", (itself("Job"), controller("Workload", "Job")), frozenset({"ResourceFlavor"}),
                  pod_creator=False)
_RECONCILER = JobReconciler(JOB, QUEUE, COMPONENT)


def reconcile(view: View, changes: Changes | None = None) -> None:
    """The Jobs with a queue label that ``QUEUE`` enqueues (every one without ``changes``)."""
    _RECONCILER.reconcile(view, changes)

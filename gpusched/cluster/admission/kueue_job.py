"""Kueue's Job webhook, mutating half (``pkg/controller/jobframework/defaults.go``
``ApplyDefaultForSuspend``): a batch/v1 Job created with a ``kueue.x-k8s.io/queue-name`` label
is created suspended, so no pod runs before Kueue admits its Workload; and a Job without the
label in a namespace that has a LocalQueue named ``default`` gets the label (LocalQueue
defaulting), as the webhook does.

Neighbours: ``admission.registry`` (at MutatingAdmissionWebhook's place);
``controllers.kueue.jobs`` unsuspends the Job once admitted.
"""

from __future__ import annotations

from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.plugin import CREATE, Plugin

NAME = "mjob.kb.io"          # Kueue's MutatingWebhookConfiguration entry for batch/v1 Jobs
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def _admit(attrs: Attributes) -> None:
    job = attrs.obj
    meta = job.setdefault("metadata", {})
    if any(ref.get("kind") == "JobSet" and ref.get("controller")
           for ref in meta.get("ownerReferences") or ()):
        return          # a JobSet's Job: its JobSet is the queued object (IsOwnerManagedByKueue)
    labels = meta.get("labels") or {}
    if not labels.get(QUEUE_LABEL):
        namespace = str(meta.get("namespace") or "default")
        if attrs.view.get("LocalQueue", "default", namespace) is None:
            return
        meta["labels"] = {**labels, QUEUE_LABEL: "default"}
    job.setdefault("spec", {})["suspend"] = True


PLUGIN = Plugin(NAME, frozenset({CREATE}), frozenset({"Job"}), mutate=_admit)

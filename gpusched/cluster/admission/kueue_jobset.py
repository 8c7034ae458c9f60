"""Kueue's JobSet webhook, mutating half (``pkg/controller/jobs/jobset/jobset_webhook.go``
``Default`` + ``jobframework.ApplyDefaultForSuspend``): a JobSet created with a
``kueue.x-k8s.io/queue-name`` label (or in a namespace with a LocalQueue named ``default``) is
created suspended, so no Job runs before Kueue admits its Workload.

Neighbours: ``admission.registry``; ``controllers.kueue.jobsets`` unsuspends it once admitted.
"""

from __future__ import annotations

from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.plugin import CREATE, Plugin

NAME = "kueue-mjobset.kb.io"     # Kueue's entry for jobset.x-k8s.io JobSets
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def _admit(attrs: Attributes) -> None:
    jobset = attrs.obj
    meta = jobset.setdefault("metadata", {})
    labels = meta.get("labels") or {}
    if not labels.get(QUEUE_LABEL):
        namespace = str(meta.get("namespace") or "default")
        if attrs.view.get("LocalQueue", "default", namespace) is None:
            return
        meta["labels"] = {**labels, QUEUE_LABEL: "default"}
    jobset.setdefault("spec", {})["suspend"] = True


PLUGIN = Plugin(NAME, frozenset({CREATE}), frozenset({"JobSet"}), mutate=_admit)

"""Kueue's Job webhook, mutating half (``pkg/controller/jobs/job/job_webhook.go`` on
``jobframework``'s base webhook): a batch/v1 Job created with a ``kueue.x-k8s.io/queue-name``
label (or in a namespace with a LocalQueue named ``default``, which gives it the label) is
created suspended, so no pod runs before Kueue admits its Workload; a JobSet's Job is left
alone (its JobSet is the queued object).

Neighbours: ``kueue_base_webhook`` (the defaulting), ``admission.registry`` (at
MutatingAdmissionWebhook's place); ``controllers.kueue.jobs`` unsuspends the Job once admitted.
"""

from __future__ import annotations

from gpusched.cluster.admission.kueue_base_webhook import default_for_suspend
from gpusched.cluster.admission.plugin import CREATE, Plugin

NAME = "mjob.kb.io"          # Kueue's MutatingWebhookConfiguration entry for batch/v1 Jobs

PLUGIN = Plugin(NAME, frozenset({CREATE}), frozenset({"Job"}), mutate=default_for_suspend(frozenset({"JobSet"})))

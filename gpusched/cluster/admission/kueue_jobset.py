"""Kueue's JobSet webhook, mutating half (``pkg/controller/jobs/jobset/jobset_webhook.go``
``Default`` on ``jobframework``'s base webhook): a JobSet created with a
``kueue.x-k8s.io/queue-name`` label (or in a namespace with a LocalQueue named ``default``) is
created suspended, so no Job runs before Kueue admits its Workload.

Neighbours: ``kueue_base_webhook`` (the defaulting), ``admission.registry``;
``controllers.kueue.jobsets`` unsuspends it once admitted.
"""

from __future__ import annotations

from gpusched.cluster.admission.kueue_base_webhook import default_for_suspend
from gpusched.cluster.admission.plugin import CREATE, Plugin

NAME = "kueue-mjobset.kb.io"     # Kueue's entry for jobset.x-k8s.io JobSets

PLUGIN = Plugin(NAME, frozenset({CREATE}), frozenset({"JobSet"}), mutate=default_for_suspend())

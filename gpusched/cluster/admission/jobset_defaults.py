"""JobSet's own mutating webhook (kubernetes-sigs/jobset ``api/jobset/v1alpha2/
jobset_webhook.go`` ``Default``), as installed with JobSet: a created JobSet gets
``successPolicy.operator: All``, ``startupPolicy.startupPolicyOrder: AnyOrder``,
``network.enableDNSHostnames: true`` and ``publishNotReadyAddresses: true``, and each
replicatedJob ``replicas: 1`` and, in its Job template, ``completionMode: Indexed`` and a pod
``restartPolicy: OnFailure`` when unset.

Neighbours: ``admission.registry`` (with the other mutating webhooks);
``controllers.workloads.jobset`` reads what it defaults.
"""

from __future__ import annotations

from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.plugin import CREATE, Plugin

NAME = "mjobset.kb.io"


def _admit(attrs: Attributes) -> None:
    spec = attrs.obj.setdefault("spec", {})
    spec.setdefault("successPolicy", {}).setdefault("operator", "All")
    spec.setdefault("startupPolicy", {}).setdefault("startupPolicyOrder", "AnyOrder")
    network = spec.setdefault("network", {})
    network.setdefault("enableDNSHostnames", True)
    network.setdefault("publishNotReadyAddresses", True)
    for rjob in spec.get("replicatedJobs") or ():
        if not isinstance(rjob, dict):
            continue
        rjob.setdefault("replicas", 1)
        job_spec = rjob.setdefault("template", {}).setdefault("spec", {})
        job_spec.setdefault("completionMode", "Indexed")
        pod_spec = job_spec.setdefault("template", {}).setdefault("spec", {})
        pod_spec.setdefault("restartPolicy", "OnFailure")


PLUGIN = Plugin(NAME, frozenset({CREATE}), frozenset({"JobSet"}), mutate=_admit)

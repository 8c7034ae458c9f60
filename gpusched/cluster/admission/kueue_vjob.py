"""Kueue's Job webhook, validating half (``vjob.kb.io``, ``pkg/controller/jobs/job/job_webhook.go``
with ``jobframework/tas_validation.go`` ``ValidateTASPodSetRequest``), for a batch/v1 Job with a
``kueue.x-k8s.io/queue-name`` label, on create and update: its pod template names at most one of
the topology annotations (required, preferred, unconstrained), and an unconstrained value is a
bool.

Neighbours: ``admission.registry`` (at ValidatingAdmissionWebhook's place), ``webhook`` (the
denial), ``gpusched.kueue.tas_request`` (the annotations).
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.plugin import CREATE, UPDATE, Plugin
from gpusched.cluster.admission.webhook import deny
from gpusched.errors import FieldError
from gpusched.kueue.jobframework import QUEUE_LABEL
from gpusched.kueue.tas_request import UNCONSTRAINED, conflicting_annotations

NAME = "vjob.kb.io"
_BOOLS = {"1", "t", "T", "true", "TRUE", "True", "0", "f", "F", "false", "FALSE", "False"}


def validate_topology_annotations(job: dict[str, Any]) -> list[FieldError]:
    """``ValidateTASPodSetRequest`` on ``spec.template.metadata``: the webhook's errors."""
    template = (job.get("spec") or {}).get("template") or {}
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    if not isinstance(annotations, dict):
        return []
    path = "spec.template.metadata.annotations"
    errors = []
    conflict = conflicting_annotations(annotations)
    if conflict:
        errors.append(FieldError(path, "Invalid value", None, conflict))
    value = annotations.get(UNCONSTRAINED)
    if value is not None and str(value) not in _BOOLS:
        errors.append(FieldError(f"{path}[{UNCONSTRAINED}]", "Invalid value", str(value), "must be a boolean value"))
    return errors


def _validate(attrs: Attributes) -> None:
    labels = ((attrs.obj.get("metadata") or {}).get("labels") or {})
    if labels.get(QUEUE_LABEL):
        deny(NAME, validate_topology_annotations(attrs.obj))


PLUGIN = Plugin(NAME, frozenset({CREATE, UPDATE}), frozenset({"Job"}), validate=_validate)

"""Kueue's ResourceFlavor webhook: ``vresourceflavor.kb.io`` (kubernetes-sigs/kueue
``pkg/webhooks/resourceflavor_webhook.go`` ``ValidateResourceFlavor``), on create and update:

- ``spec.nodeLabels``: label keys and values (``metav1validation.ValidateLabels``);
- ``spec.nodeTaints``: key, value, unique per key and effect (``kueue_rules``);
- ``spec.tolerations``: a non-empty key is a label name.

The mutating webhook adds the ``kueue.x-k8s.io/resource-in-use`` finalizer, left out here as
for ClusterQueues (see ``kueue_clusterqueue``).

Neighbours: ``admission.registry``, ``kueue_rules``, ``webhook``.
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.kueue_rules import validate_node_taints, validate_tolerations
from gpusched.cluster.admission.plugin import CREATE, UPDATE, Plugin
from gpusched.cluster.admission.webhook import deny
from gpusched.errors import FieldError
from gpusched.objects.fieldcheck import Errors
from gpusched.objects.validation_affinity import validate_labels

NAME = "vresourceflavor.kb.io"


def validate_resource_flavor(flavor: dict[str, Any]) -> list[FieldError]:
    """``ValidateResourceFlavor``: the webhook's errors, in its order."""
    spec: dict[str, Any] = flavor["spec"] if isinstance(flavor.get("spec"), dict) else {}
    e = Errors()
    validate_labels(e.string_map(spec, "nodeLabels", "spec.nodeLabels"), "spec.nodeLabels", e)
    validate_node_taints(spec.get("nodeTaints"), "spec.nodeTaints", e)
    validate_tolerations(spec.get("tolerations"), "spec.tolerations", e)
    return e.items


def _validate(attrs: Attributes) -> None:
    deny(NAME, validate_resource_flavor(attrs.obj))


PLUGIN = Plugin(NAME, frozenset({CREATE, UPDATE}), frozenset({"ResourceFlavor"}), validate=_validate)

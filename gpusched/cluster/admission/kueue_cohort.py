"""Kueue's Cohort webhook: ``vcohort.kb.io`` (kubernetes-sigs/kueue
``pkg/webhooks/cohort_webhook.go`` ``validateCohort``), on create and update:

- ``spec.fairSharing`` weight (``kueue_rules.validate_fair_sharing``);
- the resource groups as a ClusterQueue's, where a limit needs ``spec.parentName`` (``must be
  nil when parent is empty``) and a lendingLimit may exceed the cohort's own nominal quota (it
  limits the subtree's).

Neighbours: ``admission.registry``, ``kueue_rules``, ``webhook``.
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.kueue_rules import validate_fair_sharing, validate_resource_groups
from gpusched.cluster.admission.plugin import CREATE, UPDATE, Plugin
from gpusched.cluster.admission.webhook import deny
from gpusched.errors import FieldError
from gpusched.objects.fieldcheck import Errors

NAME = "vcohort.kb.io"


def validate_cohort(cohort: dict[str, Any]) -> list[FieldError]:
    """``validateCohort``: the webhook's errors, in its order."""
    spec: dict[str, Any] = cohort["spec"] if isinstance(cohort.get("spec"), dict) else {}
    e = Errors()
    validate_fair_sharing(spec.get("fairSharing"), "spec.fairSharing", e)
    validate_resource_groups(spec.get("resourceGroups"), "spec.resourceGroups",
                             has_parent=bool(spec.get("parentName")), is_cohort=True, e=e)
    return e.items


def _validate(attrs: Attributes) -> None:
    deny(NAME, validate_cohort(attrs.obj))


PLUGIN = Plugin(NAME, frozenset({CREATE, UPDATE}), frozenset({"Cohort"}), validate=_validate)

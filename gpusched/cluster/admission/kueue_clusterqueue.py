"""Kueue's ClusterQueue webhooks: ``vclusterqueue.kb.io`` (kubernetes-sigs/kueue
``pkg/webhooks/clusterqueue_webhook.go``, ``ValidateClusterQueue`` / ``ValidateClusterQueueUpdate``).

On create and update, with the webhook's field paths and messages:

- the resource groups (``kueue_rules.validate_resource_groups``: names, duplicates, quotas,
  limits that need ``cohortName``, lendingLimit at most nominal);
- ``spec.namespaceSelector`` as a label selector;
- ``spec.preemption``: ``reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never``;
- ``spec.flavorFungibility.preference``: ``preference "X" requires both whenCanBorrow and
  whenCanPreempt to be TryNextFlavor``;
- ``spec.fairSharing`` weight;
- at most 256 flavors and 256 covered resources in all, 512 flavor-resource pairs per group;
- ``spec.admissionChecksStrategy.admissionChecks[i].onFlavors[j]``: a flavor of the queue.

The mutating webhook (``mclusterqueue.kb.io``) adds the ``kueue.x-k8s.io/resource-in-use``
finalizer, which Kueue's controller removes once nothing uses the queue; gpusched leaves it out
until it has that controller, so a ClusterQueue deletes at once.

Neighbours: ``admission.registry`` (at ValidatingAdmissionWebhook's place), ``kueue_rules``,
``webhook``.
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.kueue_rules import validate_fair_sharing, validate_resource_groups
from gpusched.cluster.admission.plugin import CREATE, UPDATE, Plugin
from gpusched.cluster.admission.webhook import deny
from gpusched.errors import FieldError
from gpusched.objects.fieldcheck import Errors
from gpusched.objects.validation_affinity import validate_label_selector

NAME = "vclusterqueue.kb.io"
MAX_FLAVORS = MAX_COVERED = 256
MAX_COMBINATIONS = 512


def validate_cluster_queue(cq: dict[str, Any]) -> list[FieldError]:
    """``ValidateClusterQueue``: the webhook's errors, in its order."""
    spec: dict[str, Any] = cq["spec"] if isinstance(cq.get("spec"), dict) else {}
    e = Errors()
    groups = spec.get("resourceGroups")
    validate_resource_groups(groups, "spec.resourceGroups", has_parent=bool(spec.get("cohortName")),
                             is_cohort=False, e=e)
    if spec.get("namespaceSelector") is not None:
        validate_label_selector(spec["namespaceSelector"], "spec.namespaceSelector", e)
    _preemption(spec.get("preemption"), e)
    _fungibility(spec.get("flavorFungibility"), e)
    validate_fair_sharing(spec.get("fairSharing"), "spec.fairSharing", e)
    _totals(groups if isinstance(groups, list) else [], e)
    _on_flavors(spec, e)
    return e.items


def _preemption(preemption: Any, e: Errors) -> None:
    if not isinstance(preemption, dict):
        return
    borrow = preemption.get("borrowWithinCohort")
    if (preemption.get("reclaimWithinCohort") == "Never" and isinstance(borrow, dict)
            and borrow.get("policy") != "Never"):
        e.invalid("spec.preemption", preemption, "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never")


def _fungibility(fungibility: Any, e: Errors) -> None:
    if not isinstance(fungibility, dict) or fungibility.get("preference") is None:
        return
    if fungibility.get("whenCanBorrow") != "TryNextFlavor" or fungibility.get("whenCanPreempt") != "TryNextFlavor":
        preference = str(fungibility["preference"])
        e.invalid("spec.flavorFungibility.preference", preference,
                  f'preference "{preference}" requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor')


def _totals(groups: list[Any], e: Errors) -> None:
    groups = [g if isinstance(g, dict) else {} for g in groups]
    flavors = sum(len(g.get("flavors") or []) for g in groups)
    if flavors > MAX_FLAVORS:
        e.invalid("spec.resourceGroups", flavors, "total number of flavors across all resourceGroups "
                  f"must be ≤ {MAX_FLAVORS}, got {flavors}")
    covered = sum(len(g.get("coveredResources") or []) for g in groups)
    if covered > MAX_COVERED:
        e.invalid("spec.resourceGroups", covered, "total number of covered resources across all "
                  f"resourceGroups must be ≤ {MAX_COVERED}, got {covered}")
    for i, group in enumerate(groups):
        pairs = sum(len((f or {}).get("resources") or []) for f in group.get("flavors") or [])
        if pairs > MAX_COMBINATIONS:
            e.invalid(f"spec.resourceGroups[{i}]", pairs, "number of flavor-resource combinations "
                      f"in a resourceGroup must be ≤ {MAX_COMBINATIONS}, got {pairs}")


def _on_flavors(spec: dict[str, Any], e: Errors) -> None:
    """``validateAdmissionCheckOnFlavors``: each onFlavors entry is a flavor of the queue."""
    strategy = spec.get("admissionChecksStrategy")
    if not isinstance(strategy, dict):
        return
    flavors = [str((f or {}).get("name", "")) for g in spec.get("resourceGroups") or []
               for f in (g or {}).get("flavors") or []]
    for i, check in enumerate(strategy.get("admissionChecks") or []):
        for j, flavor in enumerate((check or {}).get("onFlavors") or []):
            if flavor not in flavors:
                e.unsupported(f"spec.admissionChecksStrategy.admissionChecks[{i}].onFlavors[{j}]",
                              flavor, flavors)


def _validate(attrs: Attributes) -> None:
    deny(NAME, validate_cluster_queue(attrs.obj))


PLUGIN = Plugin(NAME, frozenset({CREATE, UPDATE}), frozenset({"ClusterQueue"}), validate=_validate)

"""Rules Kueue's webhooks share (not a plugin): resource groups, fair sharing, taints, tolerations.

From kubernetes-sigs/kueue ``pkg/webhooks/clusterqueue_webhook.go`` (``validateResourceGroups``,
``validateFlavorQuotas``, ``validateLimit``, ``validateLendingLimit``), ``common.go``
(``validateResourceName``, ``validateFairSharing``), ``resourceflavor_webhook.go``
(``validateNodeTaints``) and ``workload_webhook.go`` (``validateTolerations``), with their field
paths and messages:

- a covered resource is a qualified name and appears once in the queue
  (``spec.resourceGroups[0].coveredResources[1]: Duplicate value: "cpu"``); a flavor appears once;
- the i-th resource of a flavor must be the i-th covered resource
  (``...flavors[0].resources[1].name: Invalid value: "gpu": must match the name in coveredResources``);
- quotas are not negative (``must be greater than or equal to 0``); ``borrowingLimit`` and
  ``lendingLimit`` need a cohort (``must be nil when cohort is empty``; for a Cohort, ``must be
  nil when parent is empty``); a ClusterQueue's ``lendingLimit`` is at most its nominal quota
  (``must be less than or equal to the nominalQuota``);
- fair sharing's weight: not negative, and when not 0 above 1n (``When not 0, weight must be >
  10e-9``);
- a flavor's node taints: keys are label names, values label values, unique per key and effect
  (``Duplicate value: {...}: taints must be unique by key and effect pair``).

Neighbours: ``admission.kueue_clusterqueue``, ``kueue_cohort``, ``kueue_resourceflavor``,
``kueue_workload``; ``objects.quantity``, ``objects.names``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import json

from gpusched.errors import FieldError

from gpusched.objects.fieldcheck import Errors
from gpusched.objects.names import label_value_errors, qualified_name_errors
from gpusched.objects.quantity import QuantityError, parse_quantity

NEGATIVE = "must be greater than or equal to 0"
LIMIT_WITHOUT_PARENT = "must be nil when {} is empty"
LENDING_OVER_NOMINAL = "must be less than or equal to the nominalQuota"


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _amount(value: Any) -> Fraction | None:
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def _not_negative(value: Any, path: str, e: Errors) -> Fraction | None:
    amount = _amount(value)
    if amount is not None and amount < 0:
        e.invalid(path, str(value), NEGATIVE)
    return amount


def validate_resource_groups(groups: Any, path: str, *, has_parent: bool, is_cohort: bool,
                             e: Errors) -> None:
    """``validateResourceGroups`` of a ClusterQueue or a Cohort."""
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    for i, group in enumerate(_list(groups)):
        group_path = f"{path}[{i}]"
        covered = [str(r) for r in _list((group or {}).get("coveredResources"))]
        for j, name in enumerate(covered):
            at = f"{group_path}.coveredResources[{j}]"
            for msg in qualified_name_errors(name):
                e.invalid(at, name, msg)
            if name in seen_resources:
                e.duplicate(at, name)
            seen_resources.add(name)
        for j, flavor in enumerate(_list((group or {}).get("flavors"))):
            at = f"{group_path}.flavors[{j}]"
            _flavor_quotas(flavor or {}, covered, at, has_parent, is_cohort, e)
            name = str((flavor or {}).get("name", ""))
            if name in seen_flavors:
                e.duplicate(f"{at}.name", name)
            seen_flavors.add(name)


def _flavor_quotas(flavor: dict[str, Any], covered: list[str], path: str, has_parent: bool,
                   is_cohort: bool, e: Errors) -> None:
    for i, quota in enumerate(_list(flavor.get("resources"))[:len(covered)]):
        quota = quota or {}
        at = f"{path}.resources[{i}]"
        if quota.get("name") != covered[i]:
            e.invalid(f"{at}.name", quota.get("name", ""), "must match the name in coveredResources")
        nominal = _not_negative(quota.get("nominalQuota", 0), f"{at}.nominalQuota", e)
        parent = LIMIT_WITHOUT_PARENT.format("parent" if is_cohort else "cohort")
        if quota.get("borrowingLimit") is not None:
            if not has_parent:
                e.invalid(f"{at}.borrowingLimit", str(quota["borrowingLimit"]), parent)
            _not_negative(quota["borrowingLimit"], f"{at}.borrowingLimit", e)
        if quota.get("lendingLimit") is not None:
            lend = _not_negative(quota["lendingLimit"], f"{at}.lendingLimit", e)
            if not has_parent:
                e.invalid(f"{at}.lendingLimit", str(quota["lendingLimit"]), parent)
            if not is_cohort and lend is not None and nominal is not None and lend > nominal:
                e.invalid(f"{at}.lendingLimit", str(quota["lendingLimit"]), LENDING_OVER_NOMINAL)


def validate_fair_sharing(fair_sharing: Any, path: str, e: Errors) -> None:
    """``validateFairSharing``: the weight (a quantity) is >= 0 and, when not 0, > 1n."""
    weight = (fair_sharing or {}).get("weight") if isinstance(fair_sharing, dict) else None
    if weight is None:
        return
    amount = _amount(weight)
    if amount is None:
        return
    if amount < 0:
        e.invalid(path, str(weight), NEGATIVE)
    if 0 < amount <= Fraction(1, 10**9):
        e.invalid(path, str(weight), "When not 0, weight must be > 10e-9")


def validate_node_taints(taints: Any, path: str, e: Errors) -> None:
    """``validateNodeTaints``: key a label name, value a label value, unique key and effect."""
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(_list(taints)):
        taint = taint if isinstance(taint, dict) else {}
        at = f"{path}[{i}]"
        key, value = str(taint.get("key", "")), str(taint.get("value", ""))
        for msg in qualified_name_errors(key):
            e.invalid(f"{at}.key", key, msg)
        messages = label_value_errors(value)
        if messages:
            e.invalid(f"{at}.value", value, ";".join(messages))
        pair = (str(taint.get("effect", "")), key)
        if pair in seen:
            e.items.append(_duplicate_taint(at, taint))
            continue
        seen.add(pair)


def _duplicate_taint(path: str, taint: dict[str, Any]) -> FieldError:
    """apimachinery renders a struct value as its JSON (Go's field order: key, value, effect)."""
    shown = {"key": str(taint.get("key", ""))}
    if taint.get("value"):
        shown["value"] = str(taint["value"])
    shown["effect"] = str(taint.get("effect", ""))
    return FieldError(path, "Duplicate value", json.dumps(shown, separators=(",", ":")),
                      "taints must be unique by key and effect pair", False)


def validate_tolerations(tolerations: Any, path: str, e: Errors) -> None:
    """``validateTolerations`` (Kueue's copy): a non-empty key is a label name."""
    for i, toleration in enumerate(_list(tolerations)):
        key = str((toleration or {}).get("key", "")) if isinstance(toleration, dict) else ""
        if key:
            for msg in qualified_name_errors(key):
                e.invalid(f"{path}[{i}].key", key, msg)

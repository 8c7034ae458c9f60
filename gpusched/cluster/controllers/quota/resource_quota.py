"""``syncResourceQuota`` (``pkg/controller/resourcequota/resource_quota_controller.go``).

For every ResourceQuota: ``status.hard`` = ``spec.hard`` (each Quantity serialized as
``Quantity.String()`` keeps its format: 100G stays 100G, 1024Mi becomes 1Gi), ``status.used`` =
the usage of every key some evaluator tracks (zero when nothing is charged). The status is
written through the apiserver's status subresource, only when it differs.

Neighbours: ``cluster.settle`` runs :func:`reconcile` after the kubelet in every round where a
quota exists; ``admission.quota_evaluator`` (usage); ``apiserver.write`` (the status write).
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.admission.quota_evaluator import format_amount_for_key, quota_used
from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.view import View, copy_tree
from gpusched.objects.quantity import quantity_string


def quota_status(view: View, quota: dict[str, Any]) -> dict[str, Any]:
    hard_raw = (quota.get("spec") or {}).get("hard") or {}
    used = quota_used(view, quota)
    status: dict[str, Any] = {"hard": {k: quantity_string(v) for k, v in sorted(hard_raw.items())}}
    if used:
        status["used"] = {k: format_amount_for_key(k, v) for k, v in sorted(used.items())}
    return status


def reconcile(view: View) -> None:
    """Refresh every quota's status (see the module docstring)."""
    for quota in view.list("ResourceQuota"):
        status = quota_status(view, quota)
        if quota.get("status") != status:
            new = copy_tree(quota)
            new["status"] = status
            write.update_status(view, new)

"""Deployment, ReplicaSet and Job fields beyond selector and template, with upstream's wording.

From kubernetes ``pkg/apis/apps/validation/validation.go``:

- ``ValidateDeploymentSpec`` (after v1 defaulting): ``strategy`` (``ValidateDeploymentStrategy``:
  ``Recreate`` without ``rollingUpdate``, or ``RollingUpdate`` whose ``maxSurge`` /
  ``maxUnavailable`` are non-negative integers or ``[0-9]+%`` percents, not both 0, and
  ``maxUnavailable`` at most 100%); ``minReadySeconds`` and ``revisionHistoryLimit`` >= 0;
  ``progressDeadlineSeconds`` >= 0 and greater than ``minReadySeconds``;
- ``ValidateDeploymentStatus`` / ``ValidateReplicaSetStatus`` (the ``status`` subresource): counts
  >= 0, none above ``status.replicas``, available not above ready.

From ``pkg/apis/batch/validation/validation.go``: ``completionMode`` NonIndexed or Indexed
(Indexed needs ``completions``).

An IntOrString is printed bare in a message (it is a ``fmt.Stringer``): ``Invalid value: 150x``.

Neighbours: fieldcheck (Errors), names (percent); used by objects.validation and cluster.api_ops.
"""

from __future__ import annotations

from typing import Any

from gpusched.errors import FieldError
from gpusched.objects.fieldcheck import Errors
from gpusched.objects.names import PERCENT_MSG, is_percent
from gpusched.objects.digits import is_digits

STRATEGY_TYPES = ("Recreate", "RollingUpdate")
COMPLETION_MODES = ("NonIndexed", "Indexed")
_NON_NEGATIVE = "must be greater than or equal to 0"


def _invalid_bare(e: Errors, path: str, value: Any, detail: str) -> None:
    """An ``Invalid value`` whose value Go prints with ``String()`` (IntOrString): unquoted."""
    e.items.append(FieldError(path, "Invalid value", str(value), detail, False))


def validate_deployment_spec(spec: dict[str, Any], e: Errors) -> None:
    """The strategy, minReadySeconds, revisionHistoryLimit and progressDeadlineSeconds rules."""
    strategy = e.mapping(spec, "strategy", "spec.strategy")
    if strategy is not None:
        _strategy(strategy, e)
    ready = e.integer(spec, "minReadySeconds", "spec.minReadySeconds", minimum=0)
    e.integer(spec, "revisionHistoryLimit", "spec.revisionHistoryLimit", minimum=0)
    deadline = e.integer(spec, "progressDeadlineSeconds", "spec.progressDeadlineSeconds", minimum=0)
    if deadline is not None and deadline <= (ready or 0):
        e.invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds")


def _strategy(strategy: dict[str, Any], e: Errors) -> None:
    """``ValidateDeploymentStrategy``: an unsupported type is reported on the whole strategy,
    printed as Go's ``%#v`` of the internal struct."""
    kind = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            e.forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'")
    elif kind == "RollingUpdate":
        if isinstance(rolling, dict):
            _rolling_update(rolling, e)
        else:
            e.required("spec.strategy.rollingUpdate", "this should be defaulted and never be nil")
    else:
        pointer = "nil" if rolling is None else "0xc000000000"
        shown = (f'apps.DeploymentStrategy{{Type:"{kind if isinstance(kind, str) else ""}", '
                 f"RollingUpdate:(*apps.RollingUpdateDeployment)({pointer})}}")
        e.items.append(FieldError("spec.strategy", "Unsupported value", shown,
                                  'supported values: "Recreate", "RollingUpdate"', False))


def _rolling_update(rolling: dict[str, Any], e: Errors) -> None:
    """``ValidateRollingUpdateDeployment``."""
    path = "spec.strategy.rollingUpdate"
    surge, unavailable = rolling.get("maxSurge"), rolling.get("maxUnavailable")
    for field, value in (("maxUnavailable", unavailable), ("maxSurge", surge)):
        _positive_int_or_percent(value, f"{path}.{field}", e)
    if _int_or_percent_value(unavailable) == 0 and _int_or_percent_value(surge) == 0:
        _invalid_bare(e, f"{path}.maxUnavailable", 0 if unavailable is None else unavailable,
                      "may not be 0 when `maxSurge` is 0")
    if isinstance(unavailable, str) and is_percent(unavailable) and int(unavailable[:-1]) > 100:
        _invalid_bare(e, f"{path}.maxUnavailable", unavailable, "must not be greater than 100%")


def _positive_int_or_percent(value: Any, path: str, e: Errors) -> None:
    """``ValidatePositiveIntOrPercent``: a percent string, or an integer >= 0."""
    if isinstance(value, str):
        if not is_percent(value):
            _invalid_bare(e, path, value, PERCENT_MSG)
    elif isinstance(value, int) and not isinstance(value, bool) and value < 0:
        e.invalid(path, value, _NON_NEGATIVE)


def _int_or_percent_value(value: Any) -> int:
    """``getIntOrPercentValue``: a percent's number, an integer, else 0 (``IntValue`` of a string
    that is no integer)."""
    if isinstance(value, str):
        text = value[:-1] if is_percent(value) else value
        return int(text) if is_digits(text) else 0
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def default_statefulset_spec(spec: dict[str, Any]) -> None:
    """apps/v1 ``SetDefaults_StatefulSet``: OrderedReady, RollingUpdate with partition 0,
    revisionHistoryLimit 10, PVCs retained when deleted and when scaled."""
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = spec.setdefault("updateStrategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate" and isinstance(strategy.setdefault("rollingUpdate", {}), dict):
            strategy["rollingUpdate"].setdefault("partition", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    retention = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
    if isinstance(retention, dict):
        retention.setdefault("whenDeleted", "Retain")
        retention.setdefault("whenScaled", "Retain")


def validate_statefulset_spec(spec: dict[str, Any], e: Errors) -> None:
    """``ValidateStatefulSetSpec`` (pkg/apis/apps/validation/validation.go): the pod management
    policy and update strategy, a non-negative partition."""
    policy = spec.get("podManagementPolicy")
    if policy not in ("OrderedReady", "Parallel"):
        e.invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'")
    raw = spec.get("updateStrategy")
    strategy: dict[str, Any] = raw if isinstance(raw, dict) else {}
    kind = strategy.get("type")
    if kind == "OnDelete" and strategy.get("rollingUpdate") is not None:
        e.invalid("spec.updateStrategy.rollingUpdate", strategy["rollingUpdate"],
                  "only allowed for updateStrategy 'RollingUpdate'")
    elif kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate") or {}
        if isinstance(rolling, dict):
            e.integer(rolling, "partition", "spec.updateStrategy.rollingUpdate.partition", minimum=0)
    elif kind != "OnDelete":
        e.invalid("spec.updateStrategy", raw, "must be 'RollingUpdate' or 'OnDelete'")


def validate_completion_mode(spec: dict[str, Any], e: Errors) -> None:
    """A Job's ``completionMode``: NonIndexed or Indexed, Indexed with ``completions``."""
    mode = spec.get("completionMode")
    if mode is None:
        return
    if mode not in COMPLETION_MODES:
        e.unsupported("spec.completionMode", mode, COMPLETION_MODES)
    elif mode == "Indexed" and spec.get("completions") is None:
        e.required("spec.completions", "when completion mode is Indexed")


_STATUS_COUNTS = {
    "Deployment": ("updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas"),
    "ReplicaSet": ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"),
}
_NOT_ABOVE_REPLICAS = {"Deployment": ("updatedReplicas", "readyReplicas", "availableReplicas"),
                       "ReplicaSet": ("fullyLabeledReplicas", "readyReplicas", "availableReplicas")}


def validate_workload_status(kind: str, status: Any) -> list[FieldError]:
    """``ValidateDeploymentStatus`` / ``ValidateReplicaSetStatus`` of a status write (absent counts
    are 0, as Go's zero values)."""
    e = Errors()
    if kind not in _STATUS_COUNTS or not isinstance(status, dict):
        return e.items
    e.integer(status, "observedGeneration", "status.observedGeneration", minimum=0)
    counts = {"replicas": e.integer(status, "replicas", "status.replicas", minimum=0) or 0}
    for field in _STATUS_COUNTS[kind]:
        counts[field] = e.integer(status, field, f"status.{field}", minimum=0) or 0
    for field in ("terminatingReplicas", "collisionCount") if kind == "Deployment" else ():
        e.integer(status, field, f"status.{field}", minimum=0)
    for field in _NOT_ABOVE_REPLICAS[kind]:
        if counts[field] > counts["replicas"]:
            e.invalid(f"status.{field}", counts[field], "cannot be greater than status.replicas")
    if counts["availableReplicas"] > counts["readyReplicas"]:
        e.invalid("status.availableReplicas", counts["availableReplicas"], "cannot be greater than readyReplicas")
    return e.items

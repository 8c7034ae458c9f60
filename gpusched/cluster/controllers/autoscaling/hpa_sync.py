"""The HPA controller's settings (kube-controller-manager's ``--horizontal-pod-autoscaler-*`` flags,
the default ``behavior`` rules) and the state of one ``reconcileAutoscaler``: ``Sync`` (the HPA,
its conditions and events) and ``MetricError`` (a metric that could not be computed).

Neighbours: ``controllers.autoscaling.hpa`` (the controller), ``hpa_metrics``, ``hpa_replicas`` and
``hpa_behavior`` (the steps of a sync), all of which use ``Sync``.
"""

from __future__ import annotations

from typing import Any

from dataclasses import dataclass, field

from gpusched.cluster.usage import Usage
from gpusched.cluster.apiserver.view import View

COMPONENT = "horizontal-pod-autoscaler"
SYNC_PERIOD = 15.0                  # --horizontal-pod-autoscaler-sync-period
DOWNSCALE_WINDOW = 300              # --horizontal-pod-autoscaler-downscale-stabilization
TOLERANCE = 0.1                     # --horizontal-pod-autoscaler-tolerance
CPU_INITIALIZATION_PERIOD = 300.0   # --horizontal-pod-autoscaler-cpu-initialization-period
INITIAL_READINESS_DELAY = 30.0      # --horizontal-pod-autoscaler-initial-readiness-delay
METRIC_WINDOW = 30.0
SCALE_UP_LIMIT_FACTOR, SCALE_UP_LIMIT_MINIMUM = 2.0, 4.0
SCALABLE = {"Deployment": "deployments.apps", "ReplicaSet": "replicasets.apps"}
# pkg/apis/autoscaling/v2/defaults.go: defaultHPAScaleUpRules / defaultHPAScaleDownRules
DEFAULT_SCALE_UP: dict[str, Any] = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                    "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                 {"type": "Percent", "value": 100, "periodSeconds": 15}]}
DEFAULT_SCALE_DOWN: dict[str, Any] = {"selectPolicy": "Max",
                      "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


class MetricError(Exception):
    """A metric could not be computed: ``reason`` is the condition/event reason."""

    def __init__(self, reason: str, message: str, wrapped: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.wrapped = wrapped if wrapped is not None else message


@dataclass
class Sync:
    """One reconcileAutoscaler: the HPA being changed, its conditions and events."""

    view: View
    hpa: dict[str, Any]
    state: dict[str, Any]
    usage: Usage
    conditions: list[Any] = field(default_factory=list)

    def condition(self, type_: str, status: str, reason: str, message: str) -> None:
        """``setConditionInList``: replace in place, lastTransitionTime only on a change."""
        for cond in self.conditions:
            if cond["type"] == type_:
                if cond["status"] != status:
                    cond["lastTransitionTime"] = self.view.timestamp()
                cond.update(status=status, reason=reason, message=message)
                return
        self.conditions.append({"type": type_, "status": status,
                                "lastTransitionTime": self.view.timestamp(),
                                "reason": reason, "message": message})

    def event(self, type_: str, reason: str, message: str) -> None:
        self.view.record_event(self.hpa, reason, message, type_, COMPONENT)

    def unable(self, err: MetricError) -> dict[str, Any]:
        """``getUnableComputeReplicaCountCondition``: the event now, the condition for later."""
        self.event("Warning", err.reason, str(err))
        return {"type": "ScalingActive", "status": "False", "reason": err.reason,
                "message": f"the HPA was unable to compute the replica count: {err}"}

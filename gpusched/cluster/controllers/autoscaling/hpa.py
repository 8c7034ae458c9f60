"""The HorizontalPodAutoscaler controller (autoscaling/v2), as kube-controller-manager's
``pkg/controller/podautoscaler/horizontal.go`` and ``replica_calculator.go`` compute it.

Every HPA is synced every ``SYNC_PERIOD`` (``--horizontal-pod-autoscaler-sync-period``, 15 s) of
virtual time, the first time one period after it was created (upstream queues it rate-limited).
A sync (``reconcileAutoscaler``):

1. reads the target's scale (Deployment / ReplicaSet): ``FailedGetScale`` otherwise;
2. outside [minReplicas, maxReplicas] it moves inside; at 0 replicas scaling is disabled;
3. otherwise every metric proposes ``ceil(current x ratio)`` (tolerance 0.1; missing metrics
   count 100 % of the request on a scale-down and 0 on a scale-up; unready pods 0 on a
   scale-up), the largest proposal wins; a metric that fails sets ``ScalingActive=False`` with
   ``FailedGet<Type>Metric`` and the event of that name;
4. stabilization (without ``behavior``: the highest recommendation of the last 300 s; with it
   the windows of ``scaleUp``/``scaleDown``) and rate limits (without ``behavior``:
   ``max(2 x current, 4)``; with it the policies and ``selectPolicy``), then min/max;
5. a change updates ``spec.replicas`` of the target, the ``SuccessfulRescale`` event
   (``New size: 3; reason: cpu resource utilization (percentage of request) above target``)
   and ``status.lastScaleTime``; conditions AbleToScale / ScalingActive / ScalingLimited.

The controller's in-memory history (recommendations, scale events) is kept in
``view.stats["hpa"]`` so it survives between commands. Metrics come from ``cluster.usage``,
the same source ``serve``'s metrics APIs answer from.

Neighbours: ``hpa_sync`` (settings, ``Sync``), ``hpa_metrics`` (step 3), ``hpa_replicas`` (its
arithmetic), ``hpa_behavior`` (step 4), ``cluster.usage`` (metrics).
"""

from __future__ import annotations

from typing import Any

import copy

from gpusched.cluster.apiserver import write
from gpusched.cluster.controllers.autoscaling.hpa_behavior import (normalize,
                                                                   normalize_with_behaviors,
                                                                   store_scale_event)
from gpusched.cluster.controllers.autoscaling.hpa_metrics import compute_replicas_for_metrics
from gpusched.cluster.controllers.autoscaling.hpa_sync import SCALABLE, SYNC_PERIOD, Sync
from gpusched.cluster.usage import Usage
from gpusched.cluster.apiserver.view import View

# ---- controller entry points ------------------------------------------------------------------

def _key(hpa: dict[str, Any]) -> str:
    meta = hpa["metadata"]
    return f"{meta.get('namespace', 'default')}/{meta['name']}"


def _states(view: View) -> dict[str, Any]:
    result: dict[str, Any] = view.stats.setdefault("hpa", {})
    return result


def sync_due(view: View, hpa: dict[str, Any]) -> float | None:
    """When the HPA is next synced (``controllers.registry.TIMED``)."""
    state = view.stats.get("hpa", {}).get(_key(hpa))
    if state is None or state.get("uid") != hpa["metadata"].get("uid"):
        return view.now()
    return float(state["lastSync"]) + SYNC_PERIOD


def reconcile(view: View) -> None:
    states = _states(view)
    hpas = view.list("HorizontalPodAutoscaler")
    live = {_key(h) for h in hpas}
    for gone in sorted(set(states) - live):       # reconcileKey: deleted -> forget its history
        del states[gone]
    usage = None
    for hpa in hpas:
        key, uid = _key(hpa), hpa["metadata"].get("uid")
        state = states.get(key)
        if state is None or state.get("uid") != uid:
            states[key] = {"uid": uid, "lastSync": view.now(), "recommendations": [],
                           "up": [], "down": []}
            view.touch(hpa)
            continue
        if view.now() < float(state["lastSync"]) + SYNC_PERIOD:
            continue
        state["lastSync"] = view.now()
        usage = usage or Usage(view)
        reconcile_autoscaler(view, hpa, state, usage)
        view.touch(hpa)


# ---- reconcileAutoscaler ----------------------------------------------------------------------

def _scale(view: View, hpa: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """(target, error) as the scale subresource answers."""
    ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
    kind, name = str(ref.get("kind", "")), str(ref.get("name", ""))
    api_version = str(ref.get("apiVersion", ""))
    group = api_version.split("/")[0] if "/" in api_version else ""
    if kind not in SCALABLE or group not in ("apps", ""):
        return None, f'no matches for kind "{kind}" in group "{group}"'
    target = view.get(kind, name, hpa["metadata"].get("namespace", "default"))
    if target is None:
        return None, f'{SCALABLE[kind]} "{name}" not found'
    return target, ""


def reconcile_autoscaler(view: View, hpa: dict[str, Any], state: dict[str, Any], usage: Usage) -> None:
    spec, status = hpa.get("spec") or {}, copy.deepcopy(hpa.get("status") or {})
    sync = Sync(view, hpa, state, usage, list(status.get("conditions") or []))
    target = _get_scale(sync, status)
    if target is None:
        return
    current = int((target.get("spec") or {}).get("replicas", 1))
    status_replicas = int((target.get("status") or {}).get("replicas", 0))
    if not state["recommendations"]:                      # recordInitialRecommendation
        state["recommendations"].append([current, view.now()])
    minimum, maximum = int(spec.get("minReplicas", 1)), int(spec.get("maxReplicas", 1))
    desired, reason, rescale = 0, "", True
    statuses: list[dict[str, Any]] = []
    if current == 0 and minimum != 0:
        rescale = False
        sync.condition("ScalingActive", "False", "ScalingDisabled",
                       "scaling is disabled since the replica count of the target is zero")
    elif current > maximum:
        reason, desired = "Current number of replicas above Spec.MaxReplicas", maximum
    elif current < minimum:
        reason, desired = "Current number of replicas below Spec.MinReplicas", minimum
    else:
        outcome = _desired_by_metrics(sync, target, status, current, status_replicas)
        if outcome is None:
            return
        desired, reason, statuses = outcome
        rescale = desired != current
    new_status = _status(status, current, desired if rescale else current, statuses)
    if rescale:
        _rescale(sync, target, current, desired, reason)
        new_status["lastScaleTime"] = view.timestamp()
    _write(view, hpa, {**new_status, "conditions": sync.conditions})


def _get_scale(sync: Sync, status: dict[str, Any]) -> dict[str, Any] | None:
    """The target's scale, AbleToScale=True (SucceededGetScale); or None after the
    FailedGetScale event, condition and status write."""
    target, error = _scale(sync.view, sync.hpa)
    if target is None:
        sync.event("Warning", "FailedGetScale", error)
        sync.condition("AbleToScale", "False", "FailedGetScale",
                       f"the HPA controller was unable to get the target's current scale: {error}")
        _write(sync.view, sync.hpa, {**status, "conditions": sync.conditions})
        return None
    sync.condition("AbleToScale", "True", "SucceededGetScale",
                   "the HPA controller was able to get the target's current scale")
    return target


def _desired_by_metrics(sync: Sync, target: dict[str, Any], status: dict[str, Any], current: int,
                        status_replicas: int) -> tuple[int, str, list[Any]] | None:
    """Within min/max: the metrics' proposal, its reason and the metric statuses, normalized
    (with behaviors when set); None after writing the status of a failed computation
    (FailedComputeMetricsReplicas)."""
    spec = sync.hpa.get("spec") or {}
    minimum, maximum = int(spec.get("minReplicas", 1)), int(spec.get("maxReplicas", 1))
    proposal, metric, statuses, error_text = compute_replicas_for_metrics(
        sync, target, current, status_replicas)
    if proposal == -1:
        _write(sync.view, sync.hpa, {**_status(status, current, status.get("desiredReplicas", 0),
                                               statuses), "conditions": sync.conditions})
        sync.event("Warning", "FailedComputeMetricsReplicas", error_text)
        return None
    desired, reason, rescale_metric = 0, "", ""
    if proposal > desired:
        desired, rescale_metric = proposal, metric
    if desired > current:
        reason = f"{rescale_metric} above target"
    if desired < current:
        reason = "All metrics below target"
    if spec.get("behavior") is None:
        desired = normalize(sync, current, desired, minimum, maximum)
    else:
        desired = normalize_with_behaviors(sync, current, desired, minimum, maximum)
    return desired, reason, statuses


def _rescale(sync: Sync, target: dict[str, Any], current: int, desired: int, reason: str) -> None:
    """The target's new replica count, AbleToScale=True (SucceededRescale), the
    SuccessfulRescale event and the scale event behaviors remember."""
    _set_replicas(sync.view, target, desired)
    sync.condition("AbleToScale", "True", "SucceededRescale",
                   f"the HPA controller was able to update the target scale to {desired}")
    sync.event("Normal", "SuccessfulRescale", f"New size: {desired}; reason: {reason}")
    store_scale_event(sync, current, desired)


def _status(old: dict[str, Any], current: int, desired: int, statuses: list[Any]) -> dict[str, Any]:
    """``setStatus``: currentReplicas, desiredReplicas, lastScaleTime, currentMetrics."""
    out: dict[str, Any] = {"currentReplicas": current, "desiredReplicas": desired}
    if old.get("lastScaleTime"):
        out["lastScaleTime"] = old["lastScaleTime"]
    if statuses:
        out["currentMetrics"] = statuses
    return out


def _write(view: View, hpa: dict[str, Any], status: dict[str, Any]) -> None:
    """``updateStatusIfNeeded``: write only a changed status."""
    if status.get("conditions") == []:
        status.pop("conditions")
    if hpa.get("status") == status:
        return
    new = copy.deepcopy(hpa)
    new["status"] = status
    write.update_status(view, new)


def _set_replicas(view: View, target: dict[str, Any], replicas: int) -> None:
    new = copy.deepcopy(target)
    new.setdefault("spec", {})["replicas"] = int(replicas)
    write.update(view, new, subresource="scale")

"""The HPA's normalization of a desired replica count (``normalizeDesiredReplicas`` and
``normalizeDesiredReplicasWithBehaviors`` in ``horizontal.go``): stabilization windows, scale
rate limits (``max(2 x current, 4)`` or the ``behavior`` policies and ``selectPolicy``) and
min/max, with the AbleToScale / ScalingLimited conditions; and the scale-event history.

Neighbours: ``controllers.autoscaling.hpa`` (calls it after the metrics), ``hpa_sync`` (settings,
``Sync``).
"""

from __future__ import annotations

from typing import Any

import copy
import math

from gpusched.cluster.controllers.autoscaling.hpa_sync import (DEFAULT_SCALE_DOWN, DEFAULT_SCALE_UP,
                                                               DOWNSCALE_WINDOW,
                                                               SCALE_UP_LIMIT_FACTOR,
                                                               SCALE_UP_LIMIT_MINIMUM, Sync)

# ---- normalization ----------------------------------------------------------------------------

def normalize(sync: Sync, current: int, desired: int, minimum: int, maximum: int) -> int:
    """``normalizeDesiredReplicas`` (no ``behavior``): 300 s downscale stabilization, then
    ``convertDesiredReplicasWithRules``."""
    stabilized = _stabilize(sync, desired)
    if stabilized != desired:
        sync.condition("AbleToScale", "True", "ScaleDownStabilized",
                       "recent recommendations were higher than current one, applying the "
                       "highest recent recommendation")
    else:
        sync.condition("AbleToScale", "True", "ReadyForNewScale",
                       "recommended size matches current size")
    result, reason, message = _with_rules(current, stabilized, minimum, maximum)
    sync.condition("ScalingLimited", "False" if result == stabilized else "True", reason, message)
    return result


def _stabilize(sync: Sync, desired: int) -> int:
    now, best = sync.view.now(), desired
    recs = sync.state["recommendations"]
    cutoff, old = now - DOWNSCALE_WINDOW, None
    for i, (rec, stamp) in enumerate(recs):
        if stamp < cutoff:
            old = i
        elif rec > best:
            best = rec
    if old is not None:
        recs[old] = [desired, now]
    else:
        recs.append([desired, now])
    return best


def _with_rules(current: int, desired: int, minimum: int, maximum: int) -> tuple[int, str, str]:
    limit = int(max(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM))
    if maximum > limit:
        top, reason, message = limit, "ScaleUpLimit", ("the desired replica count is increasing "
                                                       "faster than the maximum scale rate")
    else:
        top, reason, message = maximum, "TooManyReplicas", ("the desired replica count is more "
                                                            "than the maximum replica count")
    if desired < minimum:
        return minimum, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
    if desired > top:
        return top, reason, message
    return desired, "DesiredWithinRange", "the desired count is within the acceptable range"


def rules_of(hpa: dict[str, Any], direction: str) -> dict[str, Any]:
    """The defaulted scaling rules (``GenerateHPAScale{Up,Down}Rules`` and
    ``maybeInitScaleDownStabilizationWindow``)."""
    given = ((hpa.get("spec") or {}).get("behavior") or {}).get(direction) or {}
    rules = copy.deepcopy(DEFAULT_SCALE_UP if direction == "scaleUp" else DEFAULT_SCALE_DOWN)
    for key in ("selectPolicy", "stabilizationWindowSeconds", "policies"):
        if given.get(key) is not None:
            rules[key] = given[key]
    rules.setdefault("stabilizationWindowSeconds", DOWNSCALE_WINDOW)
    return rules


def normalize_with_behaviors(sync: Sync, current: int, desired: int, minimum: int,
                             maximum: int) -> int:
    up, down = rules_of(sync.hpa, "scaleUp"), rules_of(sync.hpa, "scaleDown")
    stabilized, reason, message = _stabilize_with_behaviors(sync, current, desired, up, down)
    if stabilized != desired:
        sync.condition("AbleToScale", "True", reason, message)
    else:
        sync.condition("AbleToScale", "True", "ReadyForNewScale",
                       "recommended size matches current size")
    result, reason, message = _with_behavior_rate(sync, current, stabilized, minimum, maximum,
                                                  up, down)
    sync.condition("ScalingLimited", "False" if result == stabilized else "True", reason, message)
    return result


def _stabilize_with_behaviors(sync: Sync, current: int, desired: int, up: dict[str, Any],
                              down: dict[str, Any]) -> tuple[int, str, str]:
    now = sync.view.now()
    up_cut = now - int(up["stabilizationWindowSeconds"])
    down_cut = now - int(down["stabilizationWindowSeconds"])
    up_rec, down_rec, old = desired, desired, None
    recs = sync.state["recommendations"]
    for i, (rec, stamp) in enumerate(recs):
        if stamp > up_cut:
            up_rec = min(rec, up_rec)
        if stamp > down_cut:
            down_rec = max(rec, down_rec)
        if stamp < up_cut and stamp < down_cut:
            old = i
    result = max(current, up_rec)
    result = min(result, down_rec)
    if old is not None:
        recs[old] = [desired, now]
    else:
        recs.append([desired, now])
    if desired >= current:
        return result, "ScaleUpStabilized", ("recent recommendations were lower than current one, "
                                             "applying the lowest recent recommendation")
    return result, "ScaleDownStabilized", ("recent recommendations were higher than current one, "
                                           "applying the highest recent recommendation")


def _changes(events: list[Any], period: float, now: float) -> int:
    """``getReplicasChangePerPeriod``."""
    return sum(int(change) for change, stamp, _ in events if stamp > now - period)


def scale_up_limit(current: int, up_events: list[Any], down_events: list[Any], rules: dict[str, Any],
                   now: float) -> int:
    """``calculateScaleUpLimitWithScalingRules``."""
    select = rules.get("selectPolicy", "Max")
    if select == "Disabled":
        return current
    pick, result = (min, math.inf) if select == "Min" else (max, -math.inf)
    for policy in rules.get("policies") or []:
        period = float(policy.get("periodSeconds", 0))
        start = current - _changes(up_events, period, now) + _changes(down_events, period, now)
        value = int(policy.get("value", 0))
        proposed = (start + value if policy.get("type") == "Pods"
                    else math.ceil(start * (1 + value / 100)))
        result = pick(result, proposed)
    return int(result) if math.isfinite(result) else current


def scale_down_limit(current: int, up_events: list[Any], down_events: list[Any], rules: dict[str, Any],
                     now: float) -> int:
    """``calculateScaleDownLimitWithBehaviors``."""
    select = rules.get("selectPolicy", "Max")
    if select == "Disabled":
        return current
    pick, result = (max, -math.inf) if select == "Min" else (min, math.inf)
    for policy in rules.get("policies") or []:
        period = float(policy.get("periodSeconds", 0))
        start = current - _changes(up_events, period, now) + _changes(down_events, period, now)
        value = int(policy.get("value", 0))
        proposed = (start - value if policy.get("type") == "Pods"
                    else int(start * (1 - value / 100)))
        result = pick(result, proposed)
    return int(result) if math.isfinite(result) else current


def _with_behavior_rate(sync: Sync, current: int, desired: int, minimum: int, maximum: int,
                        up: dict[str, Any], down: dict[str, Any]) -> tuple[int, str, str]:
    """``convertDesiredReplicasWithBehaviorRate``."""
    now, state = sync.view.now(), sync.state
    if desired > current:
        limit = max(current, scale_up_limit(current, state["up"], state["down"], up, now))
        if maximum > limit:
            top, reason, message = limit, "ScaleUpLimit", ("the desired replica count is "
                                                           "increasing faster than the maximum "
                                                           "scale rate")
        else:
            top, reason, message = maximum, "TooManyReplicas", ("the desired replica count is "
                                                                "more than the maximum replica "
                                                                "count")
        if desired > top:
            return top, reason, message
    elif desired < current:
        limit = min(current, scale_down_limit(current, state["up"], state["down"], down, now))
        if minimum < limit:
            bottom, reason, message = limit, "ScaleDownLimit", ("the desired replica count is "
                                                                "decreasing faster than the "
                                                                "maximum scale rate")
        else:
            bottom, reason, message = minimum, "TooFewReplicas", ("the desired replica count is "
                                                                  "less than the minimum replica "
                                                                  "count")
        if desired < bottom:
            return bottom, reason, message
    return desired, "DesiredWithinRange", "the desired count is within the acceptable range"


def store_scale_event(sync: Sync, previous: int, new: int) -> None:
    """``storeScaleEvent``: only with ``behavior``; an outdated entry is reused."""
    if (sync.hpa.get("spec") or {}).get("behavior") is None:
        return
    direction = "up" if new > previous else "down"
    rules = rules_of(sync.hpa, "scaleUp" if direction == "up" else "scaleDown")
    longest = max((int(p.get("periodSeconds", 0)) for p in rules.get("policies") or []), default=0)
    events, now = sync.state[direction], sync.view.now()
    for event in events:                                  # markScaleEventsOutdated
        if event[1] < now - longest:
            event[2] = True
    entry = [abs(new - previous), now, False]
    old = max((i for i, event in enumerate(events) if event[2]), default=None)
    if old is not None:
        events[old] = entry
    else:
        events.append(entry)

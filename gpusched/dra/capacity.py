"""Consumable capacity (KEP-5075): how much of a shareable device's capacity a request takes.

A request names amounts in ``capacity.requests``; a capacity it does not name consumes the
policy's ``default`` or, without one, the whole capacity. With a ``requestPolicy``, an amount is
rounded up: to ``validRange.min`` when below it, then to the next ``min + n*step``; or to the
next of the sorted ``validValues``. An amount that still breaks the policy (above ``max``, off
the step, not a valid value), or that no longer fits next to what other shares took, rules the
device out. Worked example: capacity 40Gi, range min 1Gi step 1Gi, request 1.5Gi -> 2Gi.

Upstream: ``structured/internal/incubating/consumable_capacity.go``.

Neighbours: ``dra.model`` (capacities and requests), ``dra.allocator``.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from gpusched.dra.model import Capacity, Number, quantity


def _policy_values(policy: Mapping[str, Any]) -> tuple[Number | None, Mapping[str, Any] | None, list[Number]]:
    default = quantity(policy["default"]) if policy.get("default") is not None else None
    valid_range = policy.get("validRange") if isinstance(policy.get("validRange"), dict) else None
    values = [quantity(v) for v in policy.get("validValues") or ()]
    return default, valid_range, values


def consumed_amount(requested: Number | None, capacity: Capacity) -> Number:
    """upstream ``calculateConsumedCapacity``."""
    policy = capacity.policy
    if requested is None:
        if policy and policy.get("default") is not None:
            return quantity(policy["default"])
        return capacity.value
    if not policy:
        return requested
    _, valid_range, values = _policy_values(policy)
    if valid_range is not None and valid_range.get("min") is not None:
        return _round_up_range(requested, valid_range)
    if policy.get("validValues") is not None:
        return next((v for v in values if requested <= v), requested)
    return requested


def _round_up_range(requested: Number, valid_range: Mapping[str, Any]) -> Number:
    low = quantity(valid_range["min"])
    if requested < low:
        return low
    if valid_range.get("step") is None:
        return requested
    step = quantity(valid_range["step"])
    value = math.ceil(requested)            # Quantity.Value() rounds up
    low_int, step_int = math.ceil(low), math.ceil(step)
    n = -(-(value - low_int) // step_int)
    return low_int + step_int * n


def violates_policy(amount: Number, capacity: Capacity) -> bool:
    """upstream ``violatesPolicy``."""
    policy = capacity.policy
    if not policy:
        return False
    default, valid_range, values = _policy_values(policy)
    if default is not None and amount == default:
        return False
    if valid_range is not None:
        if valid_range.get("max") is not None and amount > quantity(valid_range["max"]):
            return True
        if valid_range.get("step") is not None:
            low = math.ceil(quantity(valid_range.get("min", 0)))
            return (math.ceil(amount) - low) % math.ceil(quantity(valid_range["step"])) != 0
        return False
    if values:
        return amount not in values
    return False


def consumed_capacity(requests: Mapping[str, Number] | None,
                      capacities: Mapping[str, Capacity]) -> dict[str, Number]:
    """upstream ``GetConsumedCapacityFromRequest``: every capacity of the device, consumed."""
    requests = requests or {}
    return {name: consumed_amount(requests.get(name), cap) for name, cap in capacities.items()}


def fits(requests: Mapping[str, Number] | None, capacities: Mapping[str, Capacity],
         allocated: Mapping[str, Number], allocating: Mapping[str, Number]) -> bool | None:
    """upstream ``CmpRequestOverCapacity``: ``None`` when the request names a capacity the
    device lacks (upstream's error, which skips the device), else whether it fits."""
    if not requests and not allocated and not allocating and not any(c.policy for c in capacities.values()):
        return True          # nothing asked, nothing shared, no policy: every capacity fits whole
    requests = requests or {}
    if any(name not in capacities for name in requests):
        return None
    for name, cap in capacities.items():
        amount = consumed_amount(requests.get(name), cap)
        if violates_policy(amount, cap):
            return False
        if allocated.get(name, 0) + amount + allocating.get(name, 0) > cap.value:
            return False
    return True

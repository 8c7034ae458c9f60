"""Tiny builders for DRA objects, named after upstream's allocator test helpers
(``structured/internal/allocatortesting/allocator_testing.go``: ``class``, ``request``,
``claimWithRequests``, ``device``, ``sliceWithDevices``, ``deviceAllocationResult``, ...), so a
case reads like its upstream original. They build the stored dicts and parse them through
``dra.model``, as the scheduler will."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpusched.dra.allocator import Allocated, InUse, NodeFacts, Unallocatable, allocate
from gpusched.dra.in_use import DeviceId
from gpusched.dra.model import Claim, DeviceClass, Slice

NODE1, NODE2 = "node-1", "node-2"
REGION1, REGION2 = "region-1", "region-2"
CLASS_A, CLASS_B = "class-a", "class-b"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
POOL1, POOL2, POOL3, POOL4 = "pool-1", "pool-2", "pool-3", "pool-4"
REQ0, REQ1, REQ2 = "req-0", "req-1", "req-2"
SUB0, SUB1 = "subReq-0", "subReq-1"
CLAIM0, CLAIM1 = "claim-0", "claim-1"
SLICE1, SLICE2, SLICE3, SLICE4 = "slice-1", "slice-2", "slice-3", "slice-4"
DEVICE0, DEVICE1, DEVICE2, DEVICE3, DEVICE4 = "device-0", "device-1", "device-2", "device-3", "device-4"
REQ3 = "req-3"
CAPACITY0, CAPACITY1 = "capacity-0", "capacity-1"
INT_ATTRIBUTE, VERSION_ATTRIBUTE = "driver-a/numa", "driver-a/driverVersion"
STRING_ATTRIBUTE, BOOL_ATTRIBUTE = "driver-a/stringAttribute", "driver-a/boolAttribute"
FIXED_SHARE_ID = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
COUNTER_SET1, COUNTER_SET2 = "counter-set-1", "counter-set-2"
ALL_NODES, PER_DEVICE = "nodeSelectionAll", "nodeSelectionPerDevice"


def node(name: str = NODE1, region: str = REGION1) -> NodeFacts:
    return NodeFacts(name, {"region": region, "planet": "earth"})


def cel(expression: str) -> dict[str, Any]:
    return {"cel": {"expression": expression}}


def device_class(name: str, driver: str, config_attribute: str | None = None,
                 expression: str | None = None) -> DeviceClass:
    spec: dict[str, Any] = {"selectors": [cel(expression or f'device.driver == "{driver}"')]}
    if config_attribute:
        spec["config"] = [device_configuration(driver, config_attribute)]
    return DeviceClass.from_object({"metadata": {"name": name}, "spec": spec})


def device_configuration(driver: str, attribute: str) -> dict[str, Any]:
    return {"opaque": {"driver": driver, "parameters": {attribute: attribute + "Value"}}}


def request(name: str, klass: str, count: int = 1, *selectors: str, mode: str = "ExactCount",
            **extra: Any) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": klass, "allocationMode": mode, **extra}
    if mode == "ExactCount":
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [cel(s) for s in selectors]
    return {"name": name, "exactly": exactly}


def all_request(name: str, klass: str, **extra: Any) -> dict[str, Any]:
    return request(name, klass, mode="All", **extra)


def sub_request(name: str, klass: str, count: int = 1, *selectors: str, mode: str = "ExactCount",
                **extra: Any) -> dict[str, Any]:
    body = request(name, klass, count, *selectors, mode=mode, **extra)["exactly"]
    return {"name": name, **body}


def prioritized(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": list(subs)}


def claim(name: str, *requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None,
          config: list[dict[str, Any]] | None = None, uid: str = "") -> Claim:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    return Claim.from_object({"metadata": {"name": name, "uid": uid or f"uid-{name}"},
                              "spec": {"devices": devices}})


def match(attribute: str, *requests: str) -> dict[str, Any]:
    return {"matchAttribute": attribute, **({"requests": list(requests)} if requests else {})}


def distinct(attribute: str, *requests: str) -> dict[str, Any]:
    return {"distinctAttribute": attribute, **({"requests": list(requests)} if requests else {})}


def device(name: str, capacity: dict[str, Any] | None = None, attributes: dict[str, Any] | None = None,
           **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, **extra}
    if capacity:
        body["capacity"] = {k: v if isinstance(v, dict) else {"value": v} for k, v in capacity.items()}
    if attributes:
        body["attributes"] = attributes
    return body


def counter_device(name: str, *consumptions: dict[str, Any], attributes: dict[str, Any] | None = None,
                   **extra: Any) -> dict[str, Any]:
    """upstream ``device(name, fromCounters, ...).withDeviceCounterConsumption(...)``: the
    device's capacities are the counters it consumes."""
    capacity = {name_: value for c in consumptions for name_, value in c["counters"].items()}
    return device(name, attributes=attributes, capacity=capacity or None, consumesCounters=list(consumptions),
                  **extra)


def range_policy(value: str = "4") -> dict[str, Any]:
    """upstream ``withCapacityRequestPolicyRange``: default 2, range 2..4 step 2."""
    return {"value": value, "requestPolicy": {"default": "2", "validRange": {"min": "2", "step": "2", "max": "4"}}}


def values_policy(default: str, value: str, *more: str) -> dict[str, Any]:
    """upstream ``withCapacityRequestPolicyValidValues``: the default first, then ``more``."""
    return {"value": value, "requestPolicy": {"default": default, "validValues": [default, *more]}}


def multi_class(name: str, driver: str, multi: bool) -> DeviceClass:
    """upstream ``classWithAllowMultipleAllocations``."""
    return device_class(name, driver, expression=f'device.driver == "{driver}" && '
                                                 f'device.allowMultipleAllocations == {str(multi).lower()}')


def used(*ids: DeviceId, capacity: dict[DeviceId, dict[str, Any]] | None = None,
         shares: tuple[tuple[DeviceId, str], ...] = ()) -> InUse:
    """upstream ``allocatedDevices`` / ``allocatedCapacityDevices`` / ``allocatedSharedDeviceIDs``."""
    from gpusched.dra.model import quantity
    return InUse(frozenset(ids), frozenset(shares),
                 {d: {k: quantity(v) for k, v in c.items()} for d, c in (capacity or {}).items()})


def share(request_: str, driver: str, pool_: str, device_: str, consumed: dict[str, str] | None = None) -> dict[str, Any]:
    """upstream ``deviceRequestAllocationResult(...).withConsumedCapacity(&fixedShareID, ...)``."""
    out = result(request_, driver, pool_, device_, shareID=FIXED_SHARE_ID)
    if consumed:
        out["consumedCapacity"] = consumed
    return out


def consumes(counter_set: str, **counters: str) -> dict[str, Any]:
    return {"counterSet": counter_set, "counters": {k: {"value": v} for k, v in counters.items()}}


def counter_set(name: str, **counters: str) -> dict[str, Any]:
    return {"name": name, "counters": {k: {"value": v} for k, v in counters.items()}}


def pool(name: str, count: int = 1, generation: int = 1) -> dict[str, Any]:
    return {"name": name, "resourceSliceCount": count, "generation": generation}


def _selection(selection: Any) -> dict[str, Any]:
    if isinstance(selection, dict):
        return {"nodeSelector": selection}
    if selection == ALL_NODES:
        return {"allNodes": True}
    if selection == PER_DEVICE:
        return {"perDeviceNodeSelection": True}
    return {"nodeName": selection}


def slice_body(name: str, selection: Any, pool_: Any, driver: str, *devices: dict[str, Any],
               counter_sets: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": driver, "pool": pool(pool_) if isinstance(pool_, str) else pool_,
                            **_selection(selection)}
    if devices:
        spec["devices"] = list(devices)
    if counter_sets:
        spec["sharedCounters"] = counter_sets
    return {"metadata": {"name": name}, "spec": spec}


def slice_with(name: str, selection: Any, pool_: Any, driver: str, *devices: dict[str, Any],
               counter_sets: list[dict[str, Any]] | None = None) -> Slice:
    return Slice.from_object(slice_body(name, selection, pool_, driver, *devices, counter_sets=counter_sets))


def one_device(name: str, selection: Any, pool_: Any, driver: str) -> Slice:
    return slice_with(name, selection, pool_, driver, device(DEVICE1))


def many_devices(name: str, selection: Any, pool_: Any, driver: str, count: int) -> Slice:
    return slice_with(name, selection, pool_, driver, *(device(f"device-{i}") for i in range(count)))


def node_label_selector(key: str, *values: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}]}


def local(node_name: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                     "values": [node_name]}]}]}


def result(request_: str, driver: str, pool_: str, device_: str, admin: bool = False,
           **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"request": request_, "driver": driver, "pool": pool_, "device": device_}
    if admin:
        out["adminAccess"] = True
    out.update(extra)
    return out


def allocation(selector: dict[str, Any] | None, *results: dict[str, Any],
               config: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"results": list(results)}
    if config:
        devices["config"] = config
    out: dict[str, Any] = {"devices": devices}
    if selector is not None:
        out["nodeSelector"] = selector
    return out


def allocated_claim(allocation_: dict[str, Any]) -> Claim:
    return Claim.from_object({"metadata": {"name": "allocated"}, "spec": {},
                              "status": {"allocation": allocation_}})


@dataclass
class Case:
    """One upstream test case: ``expect`` is the allocations (results compared in any order),
    ``()`` for "no solution"; ``error`` a substring of the error."""
    claims: list[Claim]
    classes: list[DeviceClass] = field(default_factory=list)
    slices: list[Slice] = field(default_factory=list)
    node: NodeFacts = field(default_factory=node)
    in_use: InUse = field(default_factory=InUse)
    expect: tuple[dict[str, Any], ...] = ()
    error: str = ""
    steps: int = 0


def _normal(allocation_: dict[str, Any]) -> dict[str, Any]:
    """Results in any order (upstream compares with ConsistOf); share IDs replaced by upstream's
    fixed one, as its test harness does."""
    out = dict(allocation_)
    devices = dict(out["devices"])
    shares = [{**r, "shareID": FIXED_SHARE_ID} if "shareID" in r else r for r in devices["results"]]
    devices["results"] = sorted(shares, key=repr)
    out["devices"] = devices
    return out


def run(case: Case) -> None:
    got = allocate(case.claims, case.node, case.slices, {c.name: c for c in case.classes}, case.in_use)
    if case.steps:
        assert got.steps == case.steps, f"{got.steps} search steps, upstream takes {case.steps}"
    if case.error:
        assert isinstance(got, Unallocatable) and case.error in got.reason, got
        return
    if not case.expect:
        assert isinstance(got, Unallocatable) and not got.error, got
        return
    assert isinstance(got, Allocated), got
    assert [_normal(a) for a in got.allocations] == [_normal(a) for a in case.expect]

"""Typed read views of the ``resource.k8s.io/v1`` objects, parsed once from the stored dicts.

``Slice.from_object`` / ``DeviceClass.from_object`` / ``Claim.from_object`` turn a stored body
into frozen values the allocator walks without touching a dict again: quantities become exact
numbers (an ``int`` when whole, else a ``Fraction``), node selectors become
``objects.selectors`` terms, attributes keep their API type (a string and a version with the same
text are different values to ``matchAttribute``, as upstream compares them).

The stored objects were validated when they were written (``objects.validation``); parsing here
is lenient: a field of the wrong shape reads as absent, never as a traceback.

Upstream: ``k8s.io/api/resource/v1/types.go`` (field names and defaults: ``allocationMode``
defaults to ``ExactCount`` and ``count`` to 1; a toleration's operator to ``Equal``).

Neighbours: ``dra.cel`` (a device's CEL view is cached on the ``Device``), ``dra.allocator``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Mapping, Union

from gpusched.objects.quantity import QuantityError, parse_quantity
from gpusched.objects.selectors import term_from_dict
from gpusched.objects.types import NodeSelectorTerm

Number = Union[int, Fraction]
ATTRIBUTE_KINDS = ("int", "bool", "string", "version")


def quantity(value: object) -> Number:
    """A quantity as an exact number: ``"1Gi"`` -> 1073741824, ``"500m"`` -> Fraction(1, 2);
    text that is no quantity reads as 0 (validation refused it when it was stored)."""
    if isinstance(value, str):
        return _quantity_text(value)
    try:
        amount = parse_quantity(value)
    except (QuantityError, ValueError, TypeError):
        return 0
    return amount.numerator if amount.denominator == 1 else amount


@functools.lru_cache(maxsize=8192)
def _quantity_text(text: str) -> Number:
    """Slices repeat the same few quantities (``"1"``, ``"80Gi"``) thousands of times."""
    try:
        amount = parse_quantity(text)
    except (QuantityError, ValueError):
        return 0
    return amount.numerator if amount.denominator == 1 else amount


def go_text(text: str) -> str:
    """A string as Go's JSON decoding stores it: a lone UTF-16 surrogate (``"\\ud800"`` in
    JSON) becomes U+FFFD, so the CEL runtime (UTF-8 only) can take it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _terms(selector: Any) -> tuple[NodeSelectorTerm, ...] | None:
    if not isinstance(selector, dict):
        return None
    return tuple(term_from_dict({k: [r for r in _list(t.get(k)) if isinstance(r, dict)]
                                 for k in ("matchExpressions", "matchFields")})
                 for t in _list(selector.get("nodeSelectorTerms")) if isinstance(t, dict))


@dataclass(frozen=True)
class Attribute:
    """One typed attribute: ``kind`` is ``int``, ``bool``, ``string`` or ``version``."""
    kind: str
    value: int | bool | str

    @staticmethod
    def from_object(body: Any) -> Attribute | None:
        body = _dict(body)
        for kind in ATTRIBUTE_KINDS:
            value = body.get(kind)
            if value is not None:
                return Attribute(kind, go_text(value) if isinstance(value, str) else value)
        # List values (``ints``, ``strings``...) are alpha and off in v1.36: CEL reports them.
        return Attribute("unsupported", "")


@dataclass(frozen=True)
class Capacity:
    """A device capacity: ``value`` and its written text, and the optional request policy."""
    value: Number
    text: str
    policy: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: Taint) -> bool:
        """``resourceclaim.ToleratesTaint`` (``resourceclaim/devicetoleration.go``)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


@dataclass(frozen=True)
class CounterConsumption:
    counter_set: str
    counters: Mapping[str, Number]


@dataclass(frozen=True)
class CounterSet:
    name: str
    counters: Mapping[str, Number]


def _capacity(body: dict[str, Any]) -> Capacity:
    value = body.get("value")
    return Capacity(quantity(value), str(value if value is not None else ""), body.get("requestPolicy"))


@dataclass(frozen=True, eq=False)
class Device:
    """One device of a slice. ``driver`` is the slice's (CEL's ``device.driver``). ``cel`` is
    the per-device cache ``dra.cel`` keeps (its CEL input and selector results): a device is
    parsed once per slice generation, so its selector results never go stale."""
    name: str
    driver: str
    attributes: Mapping[str, Attribute] = field(default_factory=dict)
    capacity: Mapping[str, Capacity] = field(default_factory=dict)
    consumes_counters: tuple[CounterConsumption, ...] = ()
    taints: tuple[Taint, ...] = ()
    allow_multiple_allocations: bool = False
    binds_to_node: bool = False
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    node_name: str = ""
    node_selector: Mapping[str, Any] | None = None
    all_nodes: bool = False
    cel: dict[Any, Any] = field(default_factory=dict, repr=False)

    @property
    def node_terms(self) -> tuple[NodeSelectorTerm, ...] | None:
        return _terms(self.node_selector)

    def attribute(self, qualified: str) -> Attribute | None:
        """upstream ``lookupAttribute``: ``<driver>/<name>`` also finds an unqualified name."""
        found = self.attributes.get(qualified)
        if found is not None:
            return found
        domain, _, name = qualified.partition("/")
        if name and domain == self.driver:
            return self.attributes.get(name)
        return None

    @staticmethod
    def from_object(body: Any, driver: str) -> Device:
        body = _dict(body)
        attributes = {str(k): a for k, v in _dict(body.get("attributes")).items()
                      if (a := Attribute.from_object(v)) is not None}
        capacity = {str(k): _capacity(_dict(v)) for k, v in _dict(body.get("capacity")).items()}
        consumes = tuple(
            CounterConsumption(str(_dict(c).get("counterSet", "")),
                               {str(n): quantity(_dict(v).get("value"))
                                for n, v in _dict(_dict(c).get("counters")).items()})
            for c in _list(body.get("consumesCounters")))
        taints = tuple(Taint(str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
                       for t in _list(body.get("taints")) if isinstance(t, dict))
        return Device(
            name=str(body.get("name", "")), driver=driver, attributes=attributes, capacity=capacity,
            consumes_counters=consumes, taints=taints,
            allow_multiple_allocations=body.get("allowMultipleAllocations") is True,
            binds_to_node=body.get("bindsToNode") is True,
            binding_conditions=tuple(str(c) for c in _list(body.get("bindingConditions"))),
            binding_failure_conditions=tuple(str(c) for c in _list(body.get("bindingFailureConditions"))),
            node_name=str(body.get("nodeName") or ""),
            node_selector=body.get("nodeSelector") if isinstance(body.get("nodeSelector"), dict) else None,
            all_nodes=body.get("allNodes") is True)


@dataclass(frozen=True, eq=False)
class Slice:
    """A ResourceSlice: its pool, how it selects nodes, its devices or its shared counters."""
    name: str
    driver: str
    pool: str
    generation: int
    resource_slice_count: int
    node_name: str = ""
    node_selector: Mapping[str, Any] | None = None
    all_nodes: bool = False
    per_device_node_selection: bool = False
    devices: tuple[Device, ...] = ()
    shared_counters: tuple[CounterSet, ...] = ()

    @property
    def node_terms(self) -> tuple[NodeSelectorTerm, ...] | None:
        return _terms(self.node_selector)

    @staticmethod
    def from_object(body: Mapping[str, Any]) -> Slice:
        spec = _dict(body.get("spec"))
        pool = _dict(spec.get("pool"))
        driver = str(spec.get("driver", ""))
        return Slice(
            name=str(_dict(body.get("metadata")).get("name", "")), driver=driver,
            pool=str(pool.get("name", "")), generation=_int(pool.get("generation"), 0),
            resource_slice_count=_int(pool.get("resourceSliceCount"), 1),
            node_name=str(spec.get("nodeName") or ""),
            node_selector=spec.get("nodeSelector") if isinstance(spec.get("nodeSelector"), dict) else None,
            all_nodes=spec.get("allNodes") is True,
            per_device_node_selection=spec.get("perDeviceNodeSelection") is True,
            devices=tuple(Device.from_object(d, driver) for d in _list(spec.get("devices"))),
            shared_counters=tuple(
                CounterSet(str(_dict(c).get("name", "")),
                           {str(n): quantity(_dict(v).get("value")) for n, v in _dict(_dict(c).get("counters")).items()})
                for c in _list(spec.get("sharedCounters"))))


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


@dataclass(frozen=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...] = ()
    config: tuple[Mapping[str, Any], ...] = ()
    extended_resource_name: str = ""

    @staticmethod
    def from_object(body: Mapping[str, Any]) -> DeviceClass:
        spec = _dict(body.get("spec"))
        return DeviceClass(
            name=str(_dict(body.get("metadata")).get("name", "")),
            selectors=_selectors(spec.get("selectors")),
            config=tuple(c for c in _list(spec.get("config")) if isinstance(c, dict)),
            extended_resource_name=str(spec.get("extendedResourceName") or ""))


def _selectors(value: Any) -> tuple[str, ...]:
    """Selector expressions; a selector without ``cel`` reads as ``""`` (the allocator reports
    it as upstream does: ``CEL expression empty (unsupported selector type?)``)."""
    return tuple(str(_dict(_dict(s).get("cel")).get("expression", "")) for s in _list(value))


@dataclass(frozen=True)
class Request:
    """An ``exactly`` request or a ``firstAvailable`` subrequest (``first_available`` set only
    on a request that has subrequests; then the other fields are unused)."""
    name: str
    device_class_name: str = ""
    selectors: tuple[str, ...] = ()
    allocation_mode: str = "ExactCount"
    count: int = 1
    admin_access: bool | None = None
    tolerations: tuple[Toleration, ...] = ()
    tolerations_raw: tuple[Mapping[str, Any], ...] = ()
    capacity_requests: Mapping[str, Number] | None = None
    first_available: tuple[Request, ...] = ()

    @staticmethod
    def from_object(body: Mapping[str, Any], name: str | None = None) -> Request:
        tolerations = tuple(t for t in _list(body.get("tolerations")) if isinstance(t, dict))
        capacity = body.get("capacity")
        admin = body.get("adminAccess")
        return Request(
            name=name if name is not None else str(body.get("name", "")),
            device_class_name=str(body.get("deviceClassName") or ""),
            selectors=_selectors(body.get("selectors")),
            allocation_mode=str(body.get("allocationMode") or "ExactCount"),
            count=_int(body.get("count"), 1),
            admin_access=admin if isinstance(admin, bool) else None,
            tolerations=tuple(Toleration(str(t.get("key", "")), str(t.get("operator") or "Equal"),
                                         str(t.get("value", "")), str(t.get("effect", "")))
                              for t in tolerations),
            tolerations_raw=tolerations,
            capacity_requests=({str(k): quantity(v) for k, v in _dict(_dict(capacity).get("requests")).items()}
                               if isinstance(capacity, dict) else None))


@dataclass(frozen=True)
class Constraint:
    requests: tuple[str, ...]
    match_attribute: str | None
    distinct_attribute: str | None


@dataclass(frozen=True)
class Claim:
    namespace: str
    name: str
    uid: str
    requests: tuple[Request, ...]
    constraints: tuple[Constraint, ...] = ()
    config: tuple[Mapping[str, Any], ...] = ()
    allocation: Mapping[str, Any] | None = None
    reserved_for: tuple[Mapping[str, Any], ...] = ()

    @functools.cached_property
    def key(self) -> str:
        """``klog.KObj``: ``<namespace>/<name>``."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @staticmethod
    def from_object(body: Mapping[str, Any]) -> Claim:
        meta = _dict(body.get("metadata"))
        devices = _dict(_dict(body.get("spec")).get("devices"))
        status = _dict(body.get("status"))
        return Claim(
            namespace=str(meta.get("namespace", "")), name=str(meta.get("name", "")),
            uid=str(meta.get("uid", "")),
            requests=tuple(_request(r) for r in _list(devices.get("requests")) if isinstance(r, dict)),
            constraints=tuple(Constraint(tuple(str(r) for r in _list(c.get("requests"))),
                                         _opt_str(c.get("matchAttribute")), _opt_str(c.get("distinctAttribute")))
                              for c in _list(devices.get("constraints")) if isinstance(c, dict)),
            config=tuple(c for c in _list(devices.get("config")) if isinstance(c, dict)),
            allocation=status.get("allocation") if isinstance(status.get("allocation"), dict) else None,
            reserved_for=tuple(r for r in _list(status.get("reservedFor")) if isinstance(r, dict)))


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _request(body: dict[str, Any]) -> Request:
    name = str(body.get("name", ""))
    subrequests = _list(body.get("firstAvailable"))
    if subrequests:
        return Request(name=name, first_available=tuple(
            Request.from_object(s) for s in subrequests if isinstance(s, dict)))
    return Request.from_object(_dict(body.get("exactly")), name)

"""The ``resource.k8s.io`` kinds' registry strategies: what kube-apiserver does to a DeviceClass,
ResourceClaim, ResourceClaimTemplate or ResourceSlice beside the structural validation of
``objects.validation_dra``.

From ``pkg/registry/resource/*/strategy.go`` and ``pkg/apis/resource/validation/validation.go``:

- a new ResourceClaim's ``status`` is dropped (``PrepareForCreate``); a user's update keeps the
  stored status, a status write keeps the stored spec (``api_ops``);
- a ResourceClaim's and a ResourceClaimTemplate's ``spec`` is immutable (``spec: Invalid value:
  ...: field is immutable``); a ResourceSlice's ``driver``, ``pool.name`` and ``nodeName`` are;
- a ResourceClaim status write: ``reservedFor`` (at most 256, each with resource, name and uid,
  unique by uid) only with an ``allocation`` (``may not be specified when `allocated` is not
  set``), no new consumer of a claim being deleted; a new allocation's results name requests of
  the claim, drivers, pools and devices (``validateAllocationResult``), and, once set, it is
  immutable;
- a pod's ``status.resourceClaimStatuses`` names claims of its ``spec.resourceClaims``, each
  once, with valid claim names (``validatePodResourceClaimStatuses``);
- CEL selectors (DeviceClass ``spec.selectors``, a claim's requests and sub-requests) must
  compile in the DRA environment on create, and on update when they changed (unchanged ones are
  "stored expressions"): ``<path>.cel.expression: Invalid value: "<expr>": <compile error>``, or
  ``Forbidden: too complex, exceeds cost limit``. The environment is ``gpusched.dra.cel``'s
  ``compile_selector`` (the CEL package below the cluster), looked up at the first check; while
  that package is absent, selectors are checked for their structure only.

Neighbours: ``apiserver.strategy`` (calls in), ``apiserver.write``; ``gpusched.dra.cel``.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Iterator

from gpusched.errors import InvalidError
from gpusched.objects.fieldcheck import Errors
from gpusched.objects.names import dns1123_subdomain_errors
from gpusched.objects.validation_dra import request_names, validate_allocation
from gpusched.objects.validation_meta import FIELD_IMMUTABLE

KINDS = frozenset({"DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"})
RESERVED_FOR_MAX = 256                  # ResourceClaimReservedForMaxSize
COST_LIMIT_MESSAGE = "too complex, exceeds cost limit"
NOT_ALLOCATED = "may not be specified when `allocated` is not set"
NO_NEW_CONSUMERS = "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set"

Compile = Callable[[str], object]
_COMPILER: list[tuple[Compile, type[Exception]] | None] = []


def _compiler() -> tuple[Compile, type[Exception]] | None:
    """``gpusched.dra.cel``'s (compile_selector, CelCompileError), or None while absent."""
    if not _COMPILER:
        try:
            module = importlib.import_module("gpusched.dra.cel")
            _COMPILER.append((module.compile_selector, module.CelCompileError))
        except (ImportError, AttributeError):
            _COMPILER.append(None)
    return _COMPILER[0]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _name(body: dict[str, Any]) -> str:
    return str((body.get("metadata") or {}).get("name", ""))


def _spec(body: dict[str, Any] | None) -> dict[str, Any]:
    spec = (body or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def before_create(body: dict[str, Any]) -> None:
    """``resourceclaimStrategy.PrepareForCreate``: a new claim's status is the cluster's."""
    if body.get("kind") == "ResourceClaim":
        body.pop("status", None)


# ---- CEL selectors ----------------------------------------------------------------------------

def _claim_selectors(spec: dict[str, Any], path: str) -> Iterator[tuple[str, Any]]:
    """(path of ``selectors``, the list) for each request and sub-request of a claim spec."""
    devices = _dict(spec.get("devices"))
    for i, request in enumerate(devices.get("requests") or ()):
        if not isinstance(request, dict):
            continue
        exactly = request.get("exactly")
        if isinstance(exactly, dict):
            yield f"{path}.devices.requests[{i}].exactly.selectors", exactly.get("selectors")
        for j, sub in enumerate(request.get("firstAvailable") or ()):
            if isinstance(sub, dict):
                yield f"{path}.devices.requests[{i}].firstAvailable[{j}].selectors", sub.get("selectors")


def _selector_lists(body: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    kind, spec = body.get("kind"), _spec(body)
    if kind == "DeviceClass":
        yield "spec.selectors", spec.get("selectors")
    elif kind == "ResourceClaim":
        yield from _claim_selectors(spec, "spec")
    elif kind == "ResourceClaimTemplate":
        inner = spec.get("spec")
        yield from _claim_selectors(inner if isinstance(inner, dict) else {}, "spec.spec")


def _compile_errors(body: dict[str, Any], old: dict[str, Any] | None, e: Errors) -> None:
    """Each selector list that is new (or changed) compiled, one error per failing expression."""
    compiler = _compiler()
    if compiler is None:
        return
    compile_selector, compile_error = compiler
    stored = dict(_selector_lists(old)) if old is not None else {}
    for path, selectors in _selector_lists(body):
        if not isinstance(selectors, list) or stored.get(path) == selectors:
            continue
        for i, selector in enumerate(selectors):
            cel = selector.get("cel") if isinstance(selector, dict) else None
            expression = cel.get("expression") if isinstance(cel, dict) else None
            if not isinstance(expression, str):
                continue
            try:
                compile_selector(expression)
            except compile_error as err:
                where = f"{path}[{i}].cel.expression"
                if str(err) == COST_LIMIT_MESSAGE:
                    e.forbidden(where, COST_LIMIT_MESSAGE)
                elif not expression:
                    e.required(where, str(err))
                else:
                    e.invalid(where, expression, str(err))


# ---- updates ----------------------------------------------------------------------------------

def _immutable(body: dict[str, Any], old: dict[str, Any], e: Errors) -> None:
    kind, spec, old_spec = body.get("kind"), _spec(body), _spec(old)
    if kind in ("ResourceClaim", "ResourceClaimTemplate") and spec != old_spec:
        e.invalid("spec", spec, FIELD_IMMUTABLE)
    elif kind == "ResourceSlice":
        pool, old_pool = spec.get("pool") or {}, old_spec.get("pool") or {}
        if isinstance(pool, dict) and isinstance(old_pool, dict) and pool.get("name") != old_pool.get("name"):
            e.invalid("spec.pool.name", pool.get("name"), FIELD_IMMUTABLE)
        for field in ("driver", "nodeName"):
            if spec.get(field) != old_spec.get(field):
                e.invalid(f"spec.{field}", spec.get(field), FIELD_IMMUTABLE)


def prepare(body: dict[str, Any], old: dict[str, Any] | None) -> None:
    """After mutating admission, on the main resource: immutable fields, then CEL."""
    if body.get("kind") not in KINDS:
        return
    e = Errors()
    if old is not None:
        _immutable(body, old, e)
    if not e:
        _compile_errors(body, old, e)
    if e:
        raise InvalidError(str(body.get("kind")), _name(body), e.items)


def status_update(body: dict[str, Any], old: dict[str, Any]) -> None:
    """``ValidateResourceClaimStatusUpdate``'s reservation and allocation rules; a pod's
    ``status.resourceClaimStatuses`` (:func:`pod_claim_statuses`)."""
    if body.get("kind") == "Pod":
        pod_claim_statuses(body)
    if body.get("kind") != "ResourceClaim":
        return
    e = Errors()
    status, old_status = _dict(body.get("status")), _dict(old.get("status"))
    _reservations(status, old_status, bool(_dict(body.get("metadata")).get("deletionTimestamp")), e)
    allocation, old_allocation = status.get("allocation"), old_status.get("allocation")
    if allocation and old_allocation and allocation != old_allocation:
        e.invalid("status.allocation", allocation, FIELD_IMMUTABLE)
    elif allocation and not old_allocation:
        names = request_names(_dict(_dict(body.get("spec")).get("devices")))
        validate_allocation(allocation, names, "status.allocation", e)
    if e:
        raise InvalidError("ResourceClaim", _name(body), e.items)


def _reservations(status: dict[str, Any], old_status: dict[str, Any], deleted: bool, e: Errors) -> None:
    reserved = status.get("reservedFor") or []
    if len(reserved) > RESERVED_FOR_MAX:
        e.too_many("status.reservedFor", len(reserved), RESERVED_FOR_MAX)
    else:
        _consumers(reserved, e)
    if reserved and not status.get("allocation"):
        e.forbidden("status.reservedFor", NOT_ALLOCATED)
    elif reserved and deleted:
        before = {str(_dict(r).get("uid")) for r in old_status.get("reservedFor") or ()}
        if any(str(_dict(r).get("uid")) not in before for r in reserved):
            e.forbidden("status.reservedFor", NO_NEW_CONSUMERS)


def pod_claim_statuses(pod: dict[str, Any]) -> None:
    """``validatePodResourceClaimStatuses``: each entry names a claim of ``spec.resourceClaims``,
    once, and its ``resourceClaimName`` is a valid claim name."""
    statuses = _dict(pod.get("status")).get("resourceClaimStatuses")
    if not statuses:
        return
    e = Errors()
    names = {_dict(c).get("name") for c in _dict(pod.get("spec")).get("resourceClaims") or ()}
    seen: set[str] = set()
    for i, status in enumerate(statuses if isinstance(statuses, list) else ()):
        path, name = f"status.resourceClaimStatuses[{i}].name", str(_dict(status).get("name", ""))
        if name not in names:
            e.invalid(path, name, "must match the name of an entry in `spec.resourceClaims`")
        if name in seen:
            e.duplicate(path, name)
        seen.add(name)
        claim = _dict(status).get("resourceClaimName")
        for msg in dns1123_subdomain_errors(str(claim)) if claim is not None else ():
            e.invalid(path, claim, msg)
    if e:
        raise InvalidError("Pod", _name(pod), e.items)


def _consumers(reserved: list[Any], e: Errors) -> None:
    uids: set[str] = set()
    for i, ref in enumerate(reserved):
        path = f"status.reservedFor[{i}]"
        ref = ref if isinstance(ref, dict) else {}
        for field in ("resource", "name", "uid"):
            if not ref.get(field):
                e.required(f"{path}.{field}")
        uid = str(ref.get("uid") or "")
        if uid in uids:
            e.duplicate(path, uid)
        uids.add(uid)

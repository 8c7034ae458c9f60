"""A PodSpec's DRA parts: ``spec.resourceClaims`` and each container's ``resources.claims``.

From ``pkg/apis/core/validation/validation.go`` (``validatePodResourceClaims``,
``validatePodResourceClaim``, ``validateResourceClaimNames``):

- each pod claim has a unique DNS-label ``name`` and exactly one of ``resourceClaimName`` or
  ``resourceClaimTemplateName`` (DNS subdomains); for a Pod (not a template) whose claim comes
  from a template, ``<pod>-<claim>`` must itself be a valid ResourceClaim name
  (``final ResourceClaim name: ...``);
- a container's ``resources.claims[i]`` names one of the pod's claims (``Not found: ...: must be
  one of the names in pod.spec.resourceClaims``), optionally one ``request`` of it, each
  ``name/request`` once.

The rejected pod claim itself is printed as Go's ``%#v`` prints the internal struct, as
kube-apiserver does (``core.PodResourceClaim{Name:"gpu", ResourceClaimName:(*string)(nil), ...}``).

Neighbours: fieldcheck (Errors), names; used by objects.podspec.
"""

from __future__ import annotations

from typing import Any

from gpusched.errors import FieldError
from gpusched.objects.fieldcheck import Errors
from gpusched.objects.names import dns1123_label_errors, dns1123_subdomain_errors

ONE_SOURCE = "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"
AT_MOST_ONE_SOURCE = "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"
_SOURCES = ("resourceClaimName", "resourceClaimTemplateName")


def _go_pointer(value: Any) -> str:
    """Go's ``%#v`` of a ``*string`` field: nil, or an address (which varies run to run upstream;
    gpusched prints a fixed one)."""
    return "(*string)(nil)" if value is None else "(*string)(0xc000010000)"


def go_pod_resource_claim(claim: dict[str, Any]) -> str:
    return (f'core.PodResourceClaim{{Name:"{claim.get("name", "")}", '
            f'ResourceClaimName:{_go_pointer(claim.get("resourceClaimName"))}, '
            f'ResourceClaimTemplateName:{_go_pointer(claim.get("resourceClaimTemplateName"))}}}')


def _source(claim: dict[str, Any], path: str, e: Errors) -> None:
    chosen = [field for field in _SOURCES if claim.get(field) is not None]
    for field in chosen:
        for msg in dns1123_subdomain_errors(str(claim[field])):
            e.invalid(f"{path}.{field}", claim[field], msg)
    if len(chosen) != 1:
        e.items.append(FieldError(path, "Invalid value", go_pod_resource_claim(claim),
                                  ONE_SOURCE if not chosen else AT_MOST_ONE_SOURCE, quoted=False))


def validate_pod_claims(spec: dict[str, Any], path: str, e: Errors, pod_name: str | None) -> set[str]:
    """``validatePodResourceClaims``; returns the claim names containers may refer to."""
    names: set[str] = set()
    for i, claim in enumerate(e.items_of(spec, "resourceClaims", f"{path}.resourceClaims") or ()):
        p = f"{path}.resourceClaims[{i}]"
        if not isinstance(claim, dict):
            e.invalid(p, claim, "must be an object")
            continue
        name = str(claim.get("name") or "")
        if not name:
            e.required(f"{p}.name")
        elif name in names:
            e.duplicate(f"{p}.name", name)
        else:
            errors = dns1123_label_errors(name)
            for msg in errors:
                e.invalid(f"{p}.name", name, msg)
            if not errors and pod_name and claim.get("resourceClaimTemplateName") is not None:
                final = f"{pod_name}-{name}"
                for msg in dns1123_subdomain_errors(final):
                    e.invalid(f"{p}.name", final, "final ResourceClaim name: " + msg)
            names.add(name)
        _source(claim, p, e)
    return names


def validate_container_claims(resources: dict[str, Any], path: str, pod_claims: set[str], e: Errors) -> None:
    """``validateResourceClaimNames`` for one container's ``resources.claims``."""
    seen: set[str] = set()
    for i, claim in enumerate(e.items_of(resources, "claims", path) or ()):
        p = f"{path}[{i}]"
        name = str(claim.get("name") or "") if isinstance(claim, dict) else ""
        if not name:
            e.required(p)
            continue
        key = name
        request = claim.get("request")
        if request:
            for msg in dns1123_label_errors(str(request)):
                e.invalid(f"{p}.request", request, msg)
            key = f"{name}/{request}"
        if key in seen:
            e.duplicate(p, key)
        seen.add(key)
        if name not in pod_claims:
            known = ": " + ", ".join(sorted(pod_claims)) if pod_claims else " which is empty"
            e.items.append(FieldError(p, "Not found", name,
                                      "must be one of the names in pod.spec.resourceClaims" + known))

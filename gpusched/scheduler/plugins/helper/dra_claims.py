"""PreFilter's part of DynamicResources: a pod's claims found, checked and sorted into those
allocated (with the nodes they can be used on) and those the scheduler must allocate.

Upstream ``dynamicresources.go`` ``foreachPodResourceClaim``/``PreFilter``/``validateDeviceClass``
and ``resourceclaim.go`` ``Name``/``IsForPod``/``CanBeReserved``; the texts are upstream's
(statuses UnschedulableAndUnresolvable, as ``statusUnschedulable`` makes them):

- ``pod "<ns>/<pod>": ResourceClaim not created yet`` (a template's claim not in the status yet);
- ``could not find ResourceClaim "<ns>/<name>"`` (the assume cache's NotFoundError);
- ``resourceclaim "<name>" is being deleted``;
- ``ResourceClaim <ns>/<name> was not created for pod <ns>/<pod> (pod is not owner)``;
- ``resourceclaim in use`` (allocated, reserved for 256 consumers already, not for this pod);
- ``resource claim <ns>/<name> is in the process of being allocated``;
- ``request <req>: device class <class> does not exist`` (``<req>/<sub>`` for a subrequest);
- ``resource claim <ns>/<name>, request <req>: unknown request type``.

Neighbours: ``helper.dra_manager`` (the claims), the plugin.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from gpusched.objects.types import NodeSelectorTerm, PodClaim, PodInfo
from gpusched.objects.selectors import term_from_dict
from gpusched.scheduler.plugins.helper.dra_manager import RESERVED_FOR_MAX, DraManager


class ClaimProblem(Exception):
    """Why the pod cannot be scheduled now (the PreFilter message)."""


@dataclass
class PodClaims:
    """The pod's claims in ``spec.resourceClaims`` order (bodies as read at PreFilter), which
    of them must be allocated, and the node selectors of the allocated ones."""

    bodies: list[dict[str, Any]] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)
    available_on: dict[int, tuple[NodeSelectorTerm, ...]] = field(default_factory=dict)


def claim_ref(body: Mapping[str, Any]) -> str:
    """``klog.KObj(claim)``: ``<namespace>/<name>``."""
    meta = body.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def reserved_for(body: Mapping[str, Any], uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in (body.get("status") or {}).get("reservedFor") or ())


def _owned_by(body: Mapping[str, Any], pod: PodInfo) -> bool:
    """``metav1.IsControlledBy(claim, pod)``: the controller owner reference is the pod's."""
    return any(ref.get("controller") and ref.get("uid") == pod.uid
               for ref in (body.get("metadata") or {}).get("ownerReferences") or ())


def find_claims(pod: PodInfo, manager: DraManager) -> list[dict[str, Any]]:
    """The claims the pod names, in order (upstream ``podResourceClaims``)."""
    found = []
    for entry in pod.resource_claims:
        body = _one_claim(pod, entry, manager)
        if body is not None:
            found.append(body)
    return found


def _one_claim(pod: PodInfo, entry: PodClaim, manager: DraManager) -> dict[str, Any] | None:
    if entry.claim is None:
        return None                        # no claim was generated on purpose
    if not entry.claim:
        raise ClaimProblem(f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet')
    body = manager.claim((pod.namespace, entry.claim))
    if body is None:
        raise ClaimProblem(f'could not find ResourceClaim "{pod.namespace}/{entry.claim}"')
    if (body.get("metadata") or {}).get("deletionTimestamp"):
        raise ClaimProblem(f'resourceclaim "{entry.claim}" is being deleted')
    if entry.template and not _owned_by(body, pod):
        raise ClaimProblem(f"ResourceClaim {pod.namespace}/{entry.claim} was not created for pod "
                           f"{pod.namespace}/{pod.name} (pod is not owner)")
    return body


def sort_claims(pod: PodInfo, bodies: list[dict[str, Any]], manager: DraManager,
                special: dict[str, Any] | None = None) -> PodClaims:
    """Upstream PreFilter's loop over the claims (``special``: KEP-5004's claim, appended last
    and not validated here)."""
    out = PodClaims(list(bodies) + ([special] if special is not None else []))
    for index, body in enumerate(out.bodies):
        allocation = (body.get("status") or {}).get("allocation")
        if allocation:
            _allocated(pod, index, body, allocation, out)
            continue
        out.pending.append(index)
        uid = str((body.get("metadata") or {}).get("uid") or "")
        if uid and uid in manager.in_flight:
            raise ClaimProblem(f"resource claim {claim_ref(body)} is in the process of being allocated")
        if body is not special:
            _check_classes(body, manager)
    return out


def _allocated(pod: PodInfo, index: int, body: Mapping[str, Any], allocation: Mapping[str, Any],
               out: PodClaims) -> None:
    """An allocated claim: it must be reservable for the pod; where it can be used."""
    if (len((body.get("status") or {}).get("reservedFor") or ()) >= RESERVED_FOR_MAX
            and not reserved_for(body, pod.uid)):
        raise ClaimProblem("resourceclaim in use")
    selector = allocation.get("nodeSelector")
    if selector is not None:
        out.available_on[index] = tuple(
            term_from_dict(t) for t in selector.get("nodeSelectorTerms") or ())


def _check_classes(body: Mapping[str, Any], manager: DraManager) -> None:
    for request in ((body.get("spec") or {}).get("devices") or {}).get("requests") or ():
        name = str(request.get("name", ""))
        if request.get("exactly"):
            _class_exists(manager, request["exactly"].get("deviceClassName", ""), name)
        elif request.get("firstAvailable"):
            for sub in request["firstAvailable"]:
                _class_exists(manager, sub.get("deviceClassName", ""), f"{name}/{sub.get('name', '')}")
        else:
            raise ClaimProblem(f"resource claim {claim_ref(body)}, request {name}: unknown request type")


def _class_exists(manager: DraManager, class_name: str, request: str) -> None:
    if not class_name:
        raise ClaimProblem(f"request {request}: unsupported request type")
    if class_name not in manager.classes:
        raise ClaimProblem(f"request {request}: device class {class_name} does not exist")

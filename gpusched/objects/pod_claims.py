"""A pod's ResourceClaims as the scheduler reads them: ``spec.resourceClaims`` resolved to
claim names through ``status.resourceClaimStatuses`` (upstream
``staging/src/k8s.io/dynamic-resource-allocation/resourceclaim/resourceclaim.go`` ``Name``).

- ``resourceClaimName``: that claim, no owner check;
- ``resourceClaimTemplateName``: the name the resourceclaim controller recorded in
  ``status.resourceClaimStatuses`` for this entry (the claim must be owned by the pod); no entry
  yet -> ``""`` (``pod "<ns>/<name>": ResourceClaim not created yet``); an entry without a name
  -> None (no claim was generated on purpose: skipped).

Neighbours: ``objects.pod.pod_info`` (fills ``PodInfo.resource_claims``), read by the
DynamicResources plugin and its helpers.
"""

from __future__ import annotations

from typing import Any, Mapping

from gpusched.objects.types import PodClaim


def pod_claims(pod: Mapping[str, Any]) -> tuple[PodClaim, ...]:
    """``PodInfo.resource_claims`` of a pod body (empty for a pod without claims)."""
    entries = (pod.get("spec") or {}).get("resourceClaims") or ()
    if not entries:
        return ()
    statuses = {str(s.get("name")): s.get("resourceClaimName")
                for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
                if isinstance(s, dict)}
    claims: list[PodClaim] = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        name = str(entry.get("name") or "")
        if entry.get("resourceClaimName"):
            claims.append(PodClaim(name, str(entry["resourceClaimName"])))
        elif entry.get("resourceClaimTemplateName"):
            recorded = statuses.get(name, "")
            claims.append(PodClaim(name, str(recorded) if recorded else
                                   (None if name in statuses else ""), template=True))
        else:
            claims.append(PodClaim(name, ""))
    return tuple(claims)

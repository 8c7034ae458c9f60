"""Matching PersistentVolumeClaims to PersistentVolumes, pure functions as upstream's
``pkg/controller/volume/persistentvolume/index.go`` (``findBestMatchForClaim``: class, access
modes, volume mode, selector, smallest fitting capacity, node affinity under
``WaitForFirstConsumer``) and the PV controller's annotation names.

The rules are spelled out in ``controllers.storage.volumes``' docstring.

Neighbours: ``controllers.storage.volumes`` (the controller and the scheduler side) uses it.
"""

from __future__ import annotations

from typing import Any, Iterable

from gpusched.objects.quantity import QuantityError, canonical
from gpusched.objects.selectors import (matches, node_selector_matches, selector_from_dict,
                                        term_from_dict)

CONTROLLER = "persistentvolume-controller"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
HOSTNAME_LABEL = "kubernetes.io/hostname"
LOCAL_PATH_ROOT = "/var/local-path-provisioner"
NO_CLASS_MESSAGE = "no persistent volumes available for this claim and no storage class is set"
WAIT_MESSAGE = "waiting for first consumer to be created before binding"


# ---- matching (pure) ----------------------------------------------------------------------

def _storage(obj: dict[str, Any], path: tuple[str, ...]) -> int:
    value: object = obj
    for key in path:
        value = (value or {}).get(key) if isinstance(value, dict) else None
    try:
        return canonical("storage", value) if value is not None else 0
    except QuantityError:
        return 0


def claim_request(claim: dict[str, Any]) -> int:
    return _storage(claim, ("spec", "resources", "requests", "storage"))


def volume_capacity(volume: dict[str, Any]) -> int:
    return _storage(volume, ("spec", "capacity", "storage"))


def claim_class(claim: dict[str, Any]) -> str:
    return str((claim.get("spec") or {}).get("storageClassName") or "")


def volume_class(volume: dict[str, Any]) -> str:
    return str((volume.get("spec") or {}).get("storageClassName") or "")


def _modes(obj: dict[str, Any]) -> frozenset[str]:
    return frozenset((obj.get("spec") or {}).get("accessModes") or ())


def _volume_mode(obj: dict[str, Any]) -> str:
    return str((obj.get("spec") or {}).get("volumeMode") or "Filesystem")


def is_bound_to(volume: dict[str, Any], claim: dict[str, Any]) -> bool:
    """IsVolumeBoundToClaim: claimRef names the claim (and its uid, when the ref has one)."""
    ref = (volume.get("spec") or {}).get("claimRef") or {}
    meta = claim["metadata"]
    return (ref.get("name") == meta["name"] and ref.get("namespace") == meta.get("namespace")
            and ref.get("uid") in (None, "", meta.get("uid")))


def volume_fits_node(volume: dict[str, Any], node: dict[str, Any]) -> bool:
    """CheckNodeAffinity: the volume's required node affinity selects the node."""
    required = ((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required")
    if not required:
        return True
    terms = [term_from_dict(t) for t in required.get("nodeSelectorTerms") or ()]
    meta = node.get("metadata") or {}
    return node_selector_matches(terms, meta.get("labels") or {}, meta.get("name", ""))


def volume_mismatch(volume: dict[str, Any], claim: dict[str, Any]) -> str:
    """checkVolumeSatisfyClaim: why ``volume`` cannot serve ``claim`` ("" when it can)."""
    if (volume.get("metadata") or {}).get("deletionTimestamp"):
        return f'the volume is marked for deletion "{volume["metadata"]["name"]}"'
    if volume_capacity(volume) < claim_request(claim):
        return "requested PV is too small"
    if volume_class(volume) != claim_class(claim):
        return "storageClassName does not match"
    if _volume_mode(volume) != _volume_mode(claim):
        return "incompatible volumeMode"
    if not _modes(claim) <= _modes(volume):
        return "incompatible accessMode"
    return ""


def find_best_match(claim: dict[str, Any], volumes: Iterable[dict[str, Any]], delay_binding: bool,
                    node: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """findBestMatchForClaim / FindMatchingVolume (see the module docstring).

    Volumes are grouped by their access-mode set; groups that include every mode the claim
    asks for are tried from the fewest modes up; within a group a volume pre-bound to the claim
    wins, else the smallest Available one that fits (ties: name). With ``delay_binding`` and no
    ``node`` only pre-bound volumes are taken: the scheduler picks the rest.
    """
    wanted = _modes(claim)
    groups: dict[frozenset[str], list[dict[str, Any]]] = {}
    for volume in volumes:
        if wanted <= _modes(volume):
            groups.setdefault(_modes(volume), []).append(volume)
    for modes in sorted(groups, key=lambda m: (len(m), sorted(m))):
        found = _best_in_group(claim, groups[modes], delay_binding, node)
        if found is not None:
            return found
    return None


def _best_in_group(claim: dict[str, Any], volumes: list[dict[str, Any]], delay_binding: bool,
                   node: dict[str, Any] | None) -> dict[str, Any] | None:
    """``findMatchingVolume`` within one access-mode group: the volume pre-bound to the claim,
    else the smallest Available one that fits (ties: name)."""
    request = claim_request(claim)
    selector_raw = (claim.get("spec") or {}).get("selector")
    selector = selector_from_dict(selector_raw) if selector_raw else None
    best: dict[str, Any] | None = None
    for volume in sorted(volumes, key=lambda v: v["metadata"]["name"]):
        if not _usable(claim, volume, request):
            continue
        if is_bound_to(volume, claim):
            return volume                                     # pre-bound: the claim's own
        if not _free_match(claim, volume, selector, delay_binding, node):
            continue
        if best is None or volume_capacity(volume) < volume_capacity(best):
            best = volume
    return best


def _usable(claim: dict[str, Any], volume: dict[str, Any], request: int) -> bool:
    """Large enough, the claim's volumeMode, and not being deleted."""
    if volume_capacity(volume) < request or _volume_mode(volume) != _volume_mode(claim):
        return False
    return not (volume.get("metadata") or {}).get("deletionTimestamp")


def _free_match(claim: dict[str, Any], volume: dict[str, Any], selector: Any, delay_binding: bool,
                node: dict[str, Any] | None) -> bool:
    """An unclaimed Available volume the claim's selector and class accept, fitting ``node``;
    with ``delay_binding`` and no node, none (the scheduler picks)."""
    if (volume.get("spec") or {}).get("claimRef"):
        return False
    if ((volume.get("status") or {}).get("phase") or "Available") != "Available":
        return False
    if selector is not None and not matches(selector, volume["metadata"].get("labels") or {}):
        return False
    if volume_class(volume) != claim_class(claim):
        return False
    if node is not None and not volume_fits_node(volume, node):
        return False
    return not (node is None and delay_binding)

"""Defaulting and validation of the storage kinds stored for stock components, with upstream's
messages: kubernetes ``pkg/apis/storage/v1/defaults.go`` (``SetDefaults_CSIDriver``) and
``pkg/apis/storage/validation/validation.go`` (``ValidateCSINode``, ``ValidateCSIDriver``,
``ValidateCSIStorageCapacity``, ``ValidateVolumeAttachment`` and ``...V1``):

- CSINode: each driver's ``name`` a DNS-1123 subdomain and not repeated, ``nodeID`` required and
  at most 192 characters, ``allocatable.count`` non-negative, topology keys qualified names;
- CSIDriver: ``attachRequired`` true, ``podInfoOnMount``/``storageCapacity``/
  ``requiresRepublish``/``seLinuxMount`` false, ``fsGroupPolicy`` ReadWriteOnceWithFSType and
  ``volumeLifecycleModes`` [Persistent] by default; modes Persistent or Ephemeral, fsGroupPolicy
  one of three, token request audiences distinct and 10 minutes to 2^32 s;
- CSIStorageCapacity: ``storageClassName`` a DNS-1123 subdomain, ``capacity`` non-negative;
- VolumeAttachment: ``attacher`` required (a DNS-1123 subdomain), exactly one of
  ``source.persistentVolumeName`` and ``source.inlineVolumeSpec``, ``nodeName`` a DNS-1123
  subdomain.

Neighbours: ``objects.validation`` (registers ``VALIDATORS``), ``objects.fieldcheck``.
"""

from __future__ import annotations

from typing import Any, Callable

from gpusched.objects.fieldcheck import Errors
from gpusched.objects.names import dns1123_subdomain_errors, qualified_name_errors

CSI_NODE_ID_MAX = 192
FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")
LIFECYCLE_MODES = ("Persistent", "Ephemeral")
TOKEN_SECONDS = (600, 1 << 32)
ONE_SOURCE = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"


def _spec(obj: dict[str, Any], e: Errors) -> dict[str, Any]:
    spec = e.mapping(obj, "spec", "spec")
    return spec if spec is not None else {}


def _subdomain(value: Any, path: str, e: Errors) -> None:
    text = value if isinstance(value, str) else ""
    for msg in dns1123_subdomain_errors(text):
        e.invalid(path, text, msg)


def _csi_node(obj: dict[str, Any], e: Errors) -> None:
    seen: set[str] = set()
    for i, driver in enumerate(e.items_of(_spec(obj, e), "drivers", "spec.drivers") or []):
        path = f"spec.drivers[{i}]"
        if not isinstance(driver, dict):
            continue
        name = driver.get("name")
        _subdomain(name, f"{path}.name", e)
        if name in seen:
            e.duplicate(f"{path}.name", name)
        seen.add(str(name))
        node_id = driver.get("nodeID") if isinstance(driver.get("nodeID"), str) else ""
        if not node_id:
            e.required(f"{path}.nodeID")
        elif len(node_id) > CSI_NODE_ID_MAX:
            e.invalid(f"{path}.nodeID", node_id, f"must be {CSI_NODE_ID_MAX} characters or less")
        allocatable = driver.get("allocatable")
        if isinstance(allocatable, dict):
            e.integer(allocatable, "count", f"{path}.allocatable.count", minimum=0)
        _topology_keys(driver.get("topologyKeys") or [], path, e)


def _topology_keys(keys: Any, path: str, e: Errors) -> None:
    seen: set[str] = set()
    for key in keys if isinstance(keys, list) else []:
        text = key if isinstance(key, str) else ""
        if not text:
            e.required(path)
        elif text in seen:
            e.duplicate(path, text)
        seen.add(text)
        for msg in qualified_name_errors(text) if text else ():
            e.invalid(path, text, msg)


def default_csi_driver(spec: dict[str, Any]) -> None:
    """``SetDefaults_CSIDriver``."""
    spec.setdefault("attachRequired", True)
    for flag in ("podInfoOnMount", "storageCapacity", "requiresRepublish", "seLinuxMount"):
        spec.setdefault(flag, False)
    spec.setdefault("fsGroupPolicy", "ReadWriteOnceWithFSType")
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]


def _csi_driver(obj: dict[str, Any], e: Errors) -> None:
    spec = _spec(obj, e)
    if isinstance(obj.get("spec"), dict):
        default_csi_driver(spec)
    for mode in spec.get("volumeLifecycleModes") or []:
        if mode not in LIFECYCLE_MODES:
            e.unsupported("spec.volumeLifecycleModes", mode, LIFECYCLE_MODES)
    if spec.get("fsGroupPolicy") not in FS_GROUP_POLICIES:
        e.unsupported("spec.fsGroupPolicy", spec.get("fsGroupPolicy"), FS_GROUP_POLICIES)
    audiences: set[str] = set()
    for i, request in enumerate(e.items_of(spec, "tokenRequests", "spec.tokenRequests") or []):
        if not isinstance(request, dict):
            continue
        path = f"spec.tokenRequests[{i}]"
        audience = str(request.get("audience", ""))
        if audience in audiences:
            e.duplicate(f"{path}.audience", audience)
            continue
        audiences.add(audience)
        seconds = e.integer(request, "expirationSeconds", f"{path}.expirationSeconds")
        if seconds is not None and seconds < TOKEN_SECONDS[0]:
            e.invalid(f"{path}.expirationSeconds", seconds, "may not specify a duration less than 10 minutes")
        if seconds is not None and seconds > TOKEN_SECONDS[1]:
            e.invalid(f"{path}.expirationSeconds", seconds, "may not specify a duration larger than 2^32 seconds")


def _csi_storage_capacity(obj: dict[str, Any], e: Errors) -> None:
    _subdomain(obj.get("storageClassName"), "storageClassName", e)
    if obj.get("capacity") is not None:
        e.quantity(obj["capacity"], "capacity")


def _volume_attachment(obj: dict[str, Any], e: Errors) -> None:
    spec = _spec(obj, e)
    attacher = spec.get("attacher")
    if not attacher:
        e.required("spec.attacher")
    _subdomain(attacher, "spec.attacher", e)
    raw = spec.get("source")
    source: dict[str, Any] = raw if isinstance(raw, dict) else {}
    volume, inline = source.get("persistentVolumeName"), source.get("inlineVolumeSpec")
    if volume is None and inline is None:
        e.required("spec.source", ONE_SOURCE)
    elif volume is not None and inline is not None:
        e.forbidden("spec.source", ONE_SOURCE)
    elif volume is not None and not volume:
        e.required("spec.source.persistentVolumeName", "must specify non empty persistentVolumeName")
    _subdomain(spec.get("nodeName"), "spec.nodeName", e)


VALIDATORS: dict[str, Callable[[dict[str, Any], Errors], None]] = {
    "CSINode": _csi_node,
    "CSIDriver": _csi_driver,
    "CSIStorageCapacity": _csi_storage_capacity,
    "VolumeAttachment": _volume_attachment,
}

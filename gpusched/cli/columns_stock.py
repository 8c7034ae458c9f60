"""``get`` columns of the kinds stored for stock components, as kubectl 1.32's printers show them.

kubernetes ``pkg/printers/internalversion/printers.go``: replicationControllerColumnDefinitions,
statefulSetColumnDefinitions, csiNodeColumnDefinitions, csiDriverColumnDefinitions,
csiStorageCapacityColumnDefinitions (no AGE), volumeAttachmentColumnDefinitions,
deviceClassColumnDefinitions, resourceClaimColumnDefinitions (``resourceClaimState``),
resourceClaimTemplateColumnDefinitions, resourceSliceColumnDefinitions; a
CustomResourceDefinition has apiextensions-apiserver's default table (NAME, CREATED AT).
``STOCK_COLUMNS``: kind -> (header, cells, wide header, wide cells), as ``cli.columns_kinds``.

Neighbours: ``cli.columns`` (registers these), ``cli.columns_kinds`` (the shared cell readers).
"""

from __future__ import annotations

from typing import Any, Callable

from gpusched.cli.columns_kinds import NONE, UNSET, _age, _meta, _name, _spec, _status
from gpusched.cli.output import Clock

Row = list[str]
Cells = Callable[[dict[str, Any], Clock], Row]


def _flag(value: Any, default: bool) -> str:
    """A ``*bool`` cell: Go prints ``true``/``false``; unset takes the field's default."""
    return "true" if (default if value is None else bool(value)) else "false"


def _replicas(obj: dict[str, Any]) -> int:
    """``spec.replicas`` as defaulted (1)."""
    value = _spec(obj).get("replicas", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def _template_wide(obj: dict[str, Any]) -> Row:
    containers = ((_spec(obj).get("template") or {}).get("spec") or {}).get("containers") or []
    containers = [c for c in containers if isinstance(c, dict)]
    return [",".join(str(c.get("name", "")) for c in containers) or NONE,
            ",".join(str(c.get("image", "")) for c in containers) or NONE]


def _rc_cells(obj: dict[str, Any], clock: Clock) -> Row:
    status = _status(obj)
    return [_name(obj), str(_replicas(obj)), str(status.get("replicas", 0)),
            str(status.get("readyReplicas", 0)), _age(obj, clock)]


def _rc_wide(obj: dict[str, Any], clock: Clock) -> Row:
    """CONTAINERS, IMAGES, SELECTOR (``labels.FormatLabels`` of the plain label map)."""
    selector = _spec(obj).get("selector") or {}
    shown = ",".join(f"{k}={v}" for k, v in sorted(selector.items())) if isinstance(selector, dict) else ""
    return [*_template_wide(obj), shown or NONE]


def _statefulset_cells(obj: dict[str, Any], clock: Clock) -> Row:
    return [_name(obj), f"{_status(obj).get('readyReplicas', 0)}/{_replicas(obj)}", _age(obj, clock)]


def _statefulset_wide(obj: dict[str, Any], clock: Clock) -> Row:
    return _template_wide(obj)


def _csinode_cells(obj: dict[str, Any], clock: Clock) -> Row:
    return [_name(obj), str(len(_spec(obj).get("drivers") or [])), _age(obj, clock)]


def _csidriver_cells(obj: dict[str, Any], clock: Clock) -> Row:
    """printCSIDriver: attachRequired defaults to true, the other flags to false; TOKENREQUESTS
    lists the audiences (``<unset>`` without any); MODES the volume lifecycle modes."""
    spec = _spec(obj)
    tokens = spec.get("tokenRequests")
    audiences = ",".join(str(t.get("audience", "")) for t in tokens if isinstance(t, dict)) \
        if isinstance(tokens, list) else UNSET
    modes = ",".join(str(m) for m in spec.get("volumeLifecycleModes") or []) or NONE
    return [_name(obj), _flag(spec.get("attachRequired"), True), _flag(spec.get("podInfoOnMount"), False),
            _flag(spec.get("storageCapacity"), False), audiences,
            _flag(spec.get("requiresRepublish"), False), modes, _age(obj, clock)]


def _capacity_cells(obj: dict[str, Any], clock: Clock) -> Row:
    capacity = obj.get("capacity")
    return [_name(obj), str(obj.get("storageClassName", "")),
            str(capacity) if capacity is not None else UNSET]


def _attachment_cells(obj: dict[str, Any], clock: Clock) -> Row:
    spec = _spec(obj)
    volume = (spec.get("source") or {}).get("persistentVolumeName") or ""
    return [_name(obj), str(spec.get("attacher", "")), str(volume), str(spec.get("nodeName", "")),
            _flag(_status(obj).get("attached"), False), _age(obj, clock)]


def claim_state(obj: dict[str, Any]) -> str:
    """``resourceClaimState``: deleted, pending (unallocated), allocated, reserved."""
    states = []
    deleting = bool(_meta(obj).get("deletionTimestamp"))
    if deleting:
        states.append("deleted")
    if not _status(obj).get("allocation"):
        if not deleting:
            states.append("pending")
    else:
        states.append("allocated")
        if _status(obj).get("reservedFor"):
            states.append("reserved")
    return ",".join(states)


def _claim_cells(obj: dict[str, Any], clock: Clock) -> Row:
    return [_name(obj), claim_state(obj), _age(obj, clock)]


def _slice_cells(obj: dict[str, Any], clock: Clock) -> Row:
    spec = _spec(obj)
    return [_name(obj), str(spec.get("nodeName") or ""), str(spec.get("driver", "")),
            str((spec.get("pool") or {}).get("name", "")), _age(obj, clock)]


def _name_age(obj: dict[str, Any], clock: Clock) -> Row:
    return [_name(obj), _age(obj, clock)]


def _created_at(obj: dict[str, Any], clock: Clock) -> Row:
    return [_name(obj), str(_meta(obj).get("creationTimestamp", ""))]


STOCK_COLUMNS: dict[str, tuple[tuple[str, ...], Cells, tuple[str, ...], Cells | None]] = {
    "ReplicationController": (("NAME", "DESIRED", "CURRENT", "READY", "AGE"), _rc_cells,
                              ("CONTAINERS", "IMAGES", "SELECTOR"), _rc_wide),
    "StatefulSet": (("NAME", "READY", "AGE"), _statefulset_cells, ("CONTAINERS", "IMAGES"),
                    _statefulset_wide),
    "CSINode": (("NAME", "DRIVERS", "AGE"), _csinode_cells, (), None),
    "CSIDriver": (("NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY", "TOKENREQUESTS",
                   "REQUIRESREPUBLISH", "MODES", "AGE"), _csidriver_cells, (), None),
    "CSIStorageCapacity": (("NAME", "STORAGECLASSNAME", "CAPACITY"), _capacity_cells, (), None),
    "VolumeAttachment": (("NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"), _attachment_cells,
                         (), None),
    "DeviceClass": (("NAME", "AGE"), _name_age, (), None),
    "ResourceClaim": (("NAME", "STATE", "AGE"), _claim_cells, (), None),
    "ResourceClaimTemplate": (("NAME", "AGE"), _name_age, (), None),
    "ResourceSlice": (("NAME", "NODE", "DRIVER", "POOL", "AGE"), _slice_cells, (), None),
    "CustomResourceDefinition": (("NAME", "CREATED AT"), _created_at, (), None),
}

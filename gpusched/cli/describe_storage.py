"""``describe`` pages of the storage kinds in kubectl's layout: PersistentVolumeClaim,
PersistentVolume and StorageClass.

Each page mirrors one function of kubectl's ``pkg/describe/describe.go`` (named in its
docstring); the storage class and access-mode helpers mirror kubectl's ``pkg/util/storage``.

Neighbours: ``cli.describe_base`` (shared blocks), ``cli.describe`` (dispatch).
"""

from __future__ import annotations

from typing import Any

from gpusched.cli.describe_base import (NONE, Related, annotation_lines, event_lines, go_value,
                                        kube_date, label_lines, meta)
from gpusched.objects.quantity import quantity_string as quantity_text

BETA_CLASS = "volume.beta.kubernetes.io/storage-class"
ACCESS_MODES = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"),
                ("ReadWriteOncePod", "RWOP"))


def storage_class_of(obj: dict[str, Any]) -> str:
    """storage.go GetPersistentVolume(Claim)Class: the beta annotation first, then the field."""
    annotations = meta(obj).get("annotations") or {}
    if BETA_CLASS in annotations:
        return str(annotations[BETA_CLASS])
    return str((obj.get("spec") or {}).get("storageClassName") or "")


def access_modes_text(modes: list[str] | None) -> str:
    """storage.go GetAccessModesAsString: RWO, ROX, RWX, RWOP in that order, once each."""
    return ",".join(short for mode, short in ACCESS_MODES if mode in (modes or []))


def _status_line(obj: dict[str, Any], related: Related) -> str:
    if meta(obj).get("deletionTimestamp"):
        return f"Status:\tTerminating (lasts {related.clock.age(meta(obj)['deletionTimestamp'])})"
    return f"Status:\t{(obj.get('status') or {}).get('phase', '')}"


def describe_pvc(pvc: dict[str, Any], related: Related) -> list[str]:
    """describe.go describePersistentVolumeClaim / printPersistentVolumeClaim, ``Used By`` from
    getPodsForPVC (pods mounting the claim, then pods owning it)."""
    spec, status = pvc.get("spec") or {}, pvc.get("status") or {}
    bound = bool(spec.get("volumeName"))
    lines = [f"Name:\t{meta(pvc).get('name', '')}", f"Namespace:\t{meta(pvc).get('namespace', '')}",
             f"StorageClass:\t{storage_class_of(pvc)}", _status_line(pvc, related),
             f"Volume:\t{spec.get('volumeName', '')}",
             *label_lines("Labels", meta(pvc).get("labels")),
             *annotation_lines("Annotations", meta(pvc).get("annotations")),
             f"Finalizers:\t{go_value(meta(pvc).get('finalizers') or [])}",
             f"Capacity:\t{quantity_text((status.get('capacity') or {}).get('storage', '')) if bound else ''}",
             f"Access Modes:\t{access_modes_text(status.get('accessModes')) if bound else ''}"]
    if spec.get("volumeMode"):
        lines.append(f"VolumeMode:\t{spec['volumeMode']}")
    if spec.get("dataSource"):
        source = spec["dataSource"]
        lines.append("DataSource:")
        if source.get("apiGroup") is not None:
            lines.append(f"  APIGroup:\t{source['apiGroup']}")
        lines += [f"  Kind:\t{source.get('kind', '')}", f"  Name:\t{source.get('name', '')}"]
    lines += _used_by(pvc, related.lookup("Pod", meta(pvc).get("namespace")))
    return lines + _pvc_conditions(status) + event_lines(related.events, related.clock)


def _used_by(pvc: dict[str, Any], pods: list[dict[str, Any]]) -> list[str]:
    """describe.go printPodsMultiline over getPodsForPVC's pods, sorted by name."""
    name, uids = meta(pvc).get("name"), {o.get("uid") for o in meta(pvc).get("ownerReferences") or []
                                         if o.get("kind") == "Pod"}
    users = sorted({meta(p).get("name", "") for p in pods
                    if meta(p).get("uid") in uids or any(
                        (v.get("persistentVolumeClaim") or {}).get("claimName") == name
                        for v in (p.get("spec") or {}).get("volumes") or [])})
    if not users:
        return [f"Used By:\t{NONE}"]
    return [f"Used By:\t{users[0]}"] + [f"\t{user}" for user in users[1:]]


def _pvc_conditions(status: dict[str, Any]) -> list[str]:
    conditions = status.get("conditions") or []
    if not conditions:
        return []
    lines = ["Conditions:", "  Type\tStatus\tLastProbeTime\tLastTransitionTime\tReason\tMessage",
             "  ----\t------\t-----------------\t------------------\t------\t-------"]
    return lines + [f"  {c.get('type', '')} \t{c.get('status', '')} \t{_zero_date(c.get('lastProbeTime'))} \t"
                    f"{_zero_date(c.get('lastTransitionTime'))} \t{c.get('reason', '')} \t{c.get('message', '')}"
                    for c in conditions]


def _zero_date(timestamp: str | None) -> str:
    """A missing metav1.Time formats as Go's zero time in RFC1123Z."""
    return kube_date(timestamp) if timestamp else "Mon, 01 Jan 0001 00:00:00 +0000"


def describe_pv(pv: dict[str, Any], related: Related) -> list[str]:
    """describe.go describePersistentVolume (hostPath and local sources; others ``<unknown>``)."""
    spec, status = pv.get("spec") or {}, pv.get("status") or {}
    claim = spec.get("claimRef") or {}
    lines = [f"Name:\t{meta(pv).get('name', '')}", *label_lines("Labels", meta(pv).get("labels")),
             *annotation_lines("Annotations", meta(pv).get("annotations")),
             f"Finalizers:\t{go_value(meta(pv).get('finalizers') or [])}",
             f"StorageClass:\t{storage_class_of(pv)}", _status_line(pv, related),
             f"Claim:\t{claim.get('namespace', '') + '/' + claim.get('name', '') if claim else ''}",
             f"Reclaim Policy:\t{spec.get('persistentVolumeReclaimPolicy', '')}",
             f"Access Modes:\t{access_modes_text(spec.get('accessModes'))}"]
    if spec.get("volumeMode"):
        lines.append(f"VolumeMode:\t{spec['volumeMode']}")
    lines += [f"Capacity:\t{quantity_text((spec.get('capacity') or {}).get('storage', '0'))}",
              *_node_affinity(spec.get("nodeAffinity")), f"Message:\t{status.get('message', '')}",
              "Source:", *_pv_source(spec)]
    return lines + event_lines(related.events, related.clock)


def _node_affinity(affinity: dict[str, Any] | None) -> list[str]:
    """describe.go printVolumeNodeAffinity / printNodeSelectorTermsMultilineWithIndent."""
    required = (affinity or {}).get("required")
    if required is None:
        return [f"Node Affinity:\t{NONE}"]
    terms = required.get("nodeSelectorTerms") or []
    lines = ["Node Affinity:\t", f"  Required Terms:\t{'' if terms else NONE}"]
    for number, term in enumerate(terms):
        texts = [f"{r.get('key', '')} {str(r.get('operator', '')).lower()}"
                 + (f" [{', '.join(r['values'])}]" if r.get("values") else "")
                 for r in term.get("matchExpressions") or []]
        lines.append(f"    Term {number}:\t{texts[0] if texts else NONE}")
        lines += [f"    \t{text}" for text in texts[1:]]
    return lines


def _pv_source(spec: dict[str, Any]) -> list[str]:
    if spec.get("hostPath") is not None:
        source = spec["hostPath"]
        return ["    Type:\tHostPath (bare host directory volume)", f"    Path:\t{source.get('path', '')}",
                f"    HostPathType:\t{source.get('type') or NONE}"]
    if spec.get("local") is not None:
        return ["    Type:\tLocalVolume (a persistent volume backed by local storage on a node)",
                f"    Path:\t{spec['local'].get('path', '')}"]
    return ["  <unknown>"]


def describe_storageclass(sc: dict[str, Any], related: Related) -> list[str]:
    """describe.go describeStorageClass (annotations and parameters as labels.FormatLabels)."""
    annotations = meta(sc).get("annotations") or {}
    default = any(str(annotations.get(f"storageclass.{p}kubernetes.io/is-default-class")) == "true"
                  for p in ("", "beta."))
    expansion = sc.get("allowVolumeExpansion")
    lines = [f"Name:\t{meta(sc).get('name', '')}", f"IsDefaultClass:\t{'Yes' if default else 'No'}",
             f"Annotations:\t{_format_labels(annotations)}", f"Provisioner:\t{sc.get('provisioner', '')}",
             f"Parameters:\t{_format_labels(sc.get('parameters'))}",
             f"AllowVolumeExpansion:\t{'<unset>' if expansion is None else str(bool(expansion))}"]
    options = sc.get("mountOptions") or []
    lines += [f"MountOptions:\t{NONE}"] if not options else ["MountOptions:", *(f"  {o}" for o in options)]
    for title, field in (("ReclaimPolicy", "reclaimPolicy"), ("VolumeBindingMode", "volumeBindingMode")):
        if sc.get(field) is not None:
            lines.append(f"{title}:\t{sc[field]}")
    return lines + event_lines(related.events, related.clock)


def _format_labels(values: dict[str, Any] | None) -> str:
    """apimachinery labels.FormatLabels: sorted ``k=v`` joined by commas, ``<none>`` if empty."""
    return ",".join(f"{k}={v}" for k, v in sorted((values or {}).items())) or NONE

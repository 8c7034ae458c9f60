"""``kubectl apply``'s half of the write path: strict decoding, the three-way merge, Pod updates.

The verb itself is ``apiserver.write.apply`` (decode here, then create, or merge here and update
through the one write path):

- Decoding first: ``objects.strict`` checks the document against its kind's schema under the
  fieldValidation mode (Strict by default, as kubectl; unknown and duplicate fields fail it, Warn
  returns them as warnings, Ignore drops them); the object goes on without unknown fields.
- Validation is ``objects.validation.validate(manifest)`` (field paths, Kubernetes wording).
- Create: ``write.create`` (admission, validation, store) -> ``created``.
- Update: like ``kubectl apply``, the manifest is kept in the annotation
  ``kubectl.kubernetes.io/last-applied-configuration``; the same manifest again is
  ``unchanged``. Otherwise top-level fields of the manifest replace the stored ones (fields the
  last manifest had and this one drops are removed), labels and annotations merge three-way (keys
  added by ``label`` survive), ``status`` is kept (except a Node's, which the manifest defines);
  -> ``configured``, or ``unchanged`` when nothing differs.
- A Pod's spec is immutable apart from what admission and the scheduler wrote; every object's
  ``metadata.uid`` is (a manifest naming another uid: ``field is immutable``).

Neighbours: ``apiserver.write`` (the verbs), ``apiserver.api_ops`` (``check_pod_update``).
"""

from __future__ import annotations

from typing import Any

import copy
import json

from gpusched.cluster.apiserver.store import dumps
from gpusched.errors import FieldError, InvalidError
from gpusched.objects.manifest import Manifest
from gpusched.objects.strict import STRICT, decode_with_mode
from gpusched.objects.podspec import admission_pending
from gpusched.objects.validation import validate_object

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
SYSTEM_FIELDS = ("apiVersion", "kind", "metadata", "status")
POD_SERVER_SPEC = ("nodeName", "priority", "priorityClassName", "preemptionPolicy")
POD_SPEC_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set "
    "to 1 if it was previously negative)")


def validated(manifest: Manifest, field_validation: str = STRICT) -> tuple[dict[str, Any], list[str]]:
    """(the decoded, defaulted object of a manifest, decoding warnings); see the module doc.
    A Pod's request/limit rules wait for admission, which validates the mutated pod (upstream
    order)."""
    decoded, warnings = decode_with_mode(manifest.obj, field_validation, manifest.where)
    # the decoded object is the decoder's own (``objects.strict`` builds every dict and list
    # anew): validated and defaulted in place, not copied again
    if isinstance(decoded, dict) and decoded.get("kind") == "Pod":
        with admission_pending():
            return _validated_in_place(manifest, decoded), warnings
    return _validated_in_place(manifest, decoded), warnings


def _validated_in_place(manifest: Manifest, decoded: dict[str, Any]) -> dict[str, Any]:
    return validate_object(decoded, where=manifest.where, source=manifest.source,
                           index=manifest.index, owned=True)


def _merge_map(old: dict[str, Any] | None, new: dict[str, Any] | None, last: dict[str, Any] | None) -> dict[str, Any]:
    out = dict(old or {})
    for key in last or {}:
        if key not in (new or {}):
            out.pop(key, None)
    out.update(new or {})
    return out


def merge(old: dict[str, Any], body: dict[str, Any], last: dict[str, Any]) -> dict[str, Any]:
    """kubectl apply's three-way merge of ``body`` into ``old`` (``last`` = the last-applied
    configuration): top-level fields, then the fields the server set on a Pod's spec, a Node's
    reported status, then labels and annotations."""
    merged = copy.deepcopy(old)
    for key, value in body.items():
        if key not in SYSTEM_FIELDS:
            merged[key] = copy.deepcopy(value)
    for key in last:
        if key not in body and key not in SYSTEM_FIELDS:
            merged.pop(key, None)
    if old.get("kind") == "Pod":
        _keep_server_pod_spec(merged, old, last)
    if old.get("kind") == "Node" and "status" in body:
        merged["status"] = {**(old.get("status") or {}), **copy.deepcopy(body["status"])}
    _merge_metadata_maps(merged["metadata"], body.get("metadata") or {}, last.get("metadata") or {})
    return merged


def _keep_server_pod_spec(merged: dict[str, Any], old: dict[str, Any], last: dict[str, Any]) -> None:
    """A Pod's spec fields the server set (``POD_SERVER_SPEC``) and the user never applied stay."""
    spec = merged.setdefault("spec", {})
    for key in POD_SERVER_SPEC:
        if key in (old.get("spec") or {}) and key not in ((last.get("spec") or {})):
            spec.setdefault(key, old["spec"][key])


def _merge_metadata_maps(meta: dict[str, Any], new_meta: dict[str, Any], last_meta: dict[str, Any]) -> None:
    for field in ("labels", "annotations"):
        value = _merge_map(meta.get(field), new_meta.get(field), last_meta.get(field))
        if value:
            meta[field] = value
        else:
            meta.pop(field, None)


def check_pod_update(old: dict[str, Any], new: dict[str, Any]) -> None:
    """ValidatePodUpdate (pkg/apis/core/validation): the spec may change only in container
    images and by additions to tolerations (ValidateTolerationsInPodUpdate: every existing
    toleration stays); the other mutable fields are compared as they are."""
    gates = _added_scheduling_gates(old.get("spec") or {}, new.get("spec") or {}) + \
        _gated_node_selector(old.get("spec") or {}, new.get("spec") or {})
    if gates:
        raise InvalidError("Pod", old["metadata"]["name"], gates)
    munged = _munged_pod_spec(old.get("spec") or {}, copy.deepcopy(new.get("spec") or {}))
    if dumps(old.get("spec") or {}) != dumps(munged):
        raise InvalidError("Pod", old["metadata"]["name"],
                           [FieldError("spec", "Forbidden", None, POD_SPEC_FORBIDDEN)])


def _gate_names(spec: dict[str, Any]) -> list[str]:
    return [g.get("name", "") if isinstance(g, dict) else "" for g in spec.get("schedulingGates") or []]


def _added_scheduling_gates(old: dict[str, Any], new: dict[str, Any]) -> list[FieldError]:
    """``validateOnlyDeletedSchedulingGates`` (pkg/apis/core/validation/validation.go): gates may
    only be removed after create, one error per new gate."""
    before = set(_gate_names(old))
    return [FieldError(f"spec.schedulingGates[{i}].name", "Forbidden", None,
                       f"only deletion is allowed, but found new scheduling gate '{name}'")
            for i, name in enumerate(_gate_names(new)) if name not in before]


def _gated_node_selector(old: dict[str, Any], new: dict[str, Any]) -> list[FieldError]:
    """A pod with scheduling gates may get nodeSelector keys added, never changed or removed
    (ValidatePodUpdate's gated branch, KEP-3838: how Kueue's topology ungater pins a pod)."""
    before, after = old.get("nodeSelector") or {}, new.get("nodeSelector") or {}
    if not old.get("schedulingGates") or before == after or \
            all(after.get(key) == value for key, value in before.items()):
        return []
    return [FieldError("spec.nodeSelector", "Invalid value", dumps(after),
                       "only additions to spec.nodeSelector are allowed (no mutations or deletions)")]


def _restore(old: dict[str, Any], new: dict[str, Any], fields: tuple[str, ...]) -> None:
    """``new``'s ``fields`` set back to ``old``'s: the scheduling gates (removals only) and a
    gated pod's nodeSelector (additions only), both checked before."""
    for field in fields:
        if field in old:
            new[field] = old[field]
        else:
            new.pop(field, None)


def _munged_pod_spec(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``new`` with the fields an update may change set back to ``old``'s (upstream's
    mungedPodSpec): images by container index, scheduling gates, tolerations when none is
    removed."""
    for field in ("containers", "initContainers"):
        olds, news = old.get(field) or [], new.get(field) or []
        if len(olds) == len(news):
            for before, after in zip(olds, news):
                if isinstance(before, dict) and isinstance(after, dict) and "image" in before:
                    after["image"] = before["image"]
    _restore(old, new, ("schedulingGates", "nodeSelector") if old.get("schedulingGates") else ("schedulingGates",))
    old_tolerations = old.get("tolerations") or []
    new_tolerations = new.get("tolerations") or []
    if all(t in new_tolerations for t in old_tolerations):
        if old_tolerations:
            new["tolerations"] = old_tolerations
        else:
            new.pop("tolerations", None)
    return new

"""The parts of ``ObjectMeta`` validation beyond names and labels, with apimachinery's wording.

From apimachinery ``pkg/api/validation/objectmeta.go`` (``validateObjectMetaAccessorWithOptsCommon``):

- annotations: keys are qualified names once lowercased (``ValidateAnnotations``), and keys plus
  values hold at most ``TotalAnnotationSizeLimitB`` = 256 KiB in total (UTF-8 bytes, as Go's
  ``len``): ``metadata.annotations: Too long: must have at most 262144 bytes``;
- finalizers: each a qualified name (``ValidateFinalizerName``, reported at ``metadata.finalizers``
  without an index), and not both ``orphan`` and ``foregroundDeletion``;
- ownerReferences: apiVersion with a version, kind, name and uid non-empty, at most one
  controller (``ValidateOwnerReferences``; paths without an index, as upstream's).

And ``ValidateObjectMetaAccessorUpdate``'s immutable ``metadata.uid`` (:func:`uid_changed`).

Neighbours: fieldcheck (Errors), names; used by objects.validation (``_metadata``) and
cluster.api_ops (updates).
"""

from __future__ import annotations

from typing import Any

from gpusched.errors import FieldError
from gpusched.objects.fieldcheck import Errors
from gpusched.objects.names import qualified_name_errors

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
FIELD_IMMUTABLE = "field is immutable"
_ORPHAN, _FOREGROUND = "orphan", "foregroundDeletion"


def utf8_size(text: str) -> int:
    """Go's ``len(string)``: UTF-8 bytes (a lone surrogate from JSON counts as its 3 bytes)."""
    return len(text.encode("utf-8", "surrogatepass"))


def validate_annotations(annotations: dict[str, str], path: str, e: Errors) -> None:
    """``ValidateAnnotations``: qualified keys (case does not matter) and the 256 KiB total."""
    for key in annotations:
        for msg in qualified_name_errors(key.lower()):
            e.invalid(path, key, msg)
    total = sum(utf8_size(key) + utf8_size(value) for key, value in annotations.items())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        e.too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT)


def validate_finalizers(meta: dict[str, Any], e: Errors) -> None:
    """``ValidateFinalizers``: each a qualified name; orphan and foregroundDeletion exclude each other."""
    finalizers = e.items_of(meta, "finalizers", "metadata.finalizers") or []
    names = [f for f in finalizers if isinstance(f, str)]
    for name in names:
        for msg in qualified_name_errors(name):
            e.invalid("metadata.finalizers", name, msg)
    if _ORPHAN in names and _FOREGROUND in names:
        shown = "[]string{" + ", ".join(f'"{n}"' for n in names) + "}"
        e.items.append(FieldError("metadata.finalizers", "Invalid value", shown,
                                  f"finalizer {_ORPHAN} and {_FOREGROUND} cannot be both set", False))


def validate_owner_references(meta: dict[str, Any], e: Errors) -> None:
    """``ValidateOwnerReferences``: every reference complete, one controller at most."""
    path = "metadata.ownerReferences"
    controller = ""
    refs = e.items_of(meta, "ownerReferences", path) or []
    for ref in refs:
        if not isinstance(ref, dict):
            e.invalid(path, ref, "must be an object")
            continue
        _owner_reference(ref, path, e)
        if ref.get("controller") is True:
            current = f"{ref.get('kind') or ''}/{ref.get('name') or ''}"
            if controller:
                e.invalid(path, refs, 'Only one reference can have Controller set to true. Found "true" '
                          f"in references for {controller} and {current}")
            else:
                controller = current


def _owner_reference(ref: dict[str, Any], path: str, e: Errors) -> None:
    """``validateOwnerReference``: the group/version must have a version; kind, name, uid set."""
    api_version = str(ref.get("apiVersion") or "")
    parts = api_version.split("/")
    version = parts[-1] if len(parts) <= 2 else ""
    if not version:
        e.invalid(f"{path}.apiVersion", api_version, "version must not be empty")
    for field in ("kind", "name", "uid"):
        value = ref.get(field)
        if not value:
            e.invalid(f"{path}.{field}", "" if value is None else value, "must not be empty")


def uid_changed(new: dict[str, Any], old: dict[str, Any]) -> str | None:
    """The new ``metadata.uid`` when an update sets one other than the stored uid, else None
    (an update without a uid keeps the stored one: apiserver ``rest.BeforeUpdate``)."""
    uid = (new.get("metadata") or {}).get("uid")
    if uid in (None, "") or uid == (old.get("metadata") or {}).get("uid"):
        return None
    return str(uid)


def immutable_uid_error(uid: str) -> FieldError:
    """``ValidateImmutableField(newMeta.GetUID(), oldMeta.GetUID(), metadata.uid)``."""
    return FieldError("metadata.uid", "Invalid value", uid, FIELD_IMMUTABLE)

"""DefaultStorageClass (``plugin/pkg/admission/storage/storageclass/setdefault``).

A claim created without ``spec.storageClassName`` (absent, not ``""``) gets the default class
(annotation ``storageclass.kubernetes.io/is-default-class: "true"``, or the beta one; with
several, the newest, then the name, as ``GetDefaultClass``); none -> left unset.

Neighbours: ``admission.registry``; ``controllers.nodes.bootstrap`` installs the default class.
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.plugin import CREATE, Plugin
from gpusched.cluster.apiserver.view import View

NAME = "DefaultStorageClass"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
BETA_DEFAULT_CLASS_ANNOTATION = "storageclass.beta.kubernetes.io/is-default-class"


def is_default_class(storage_class: dict[str, Any]) -> bool:
    annotations = (storage_class.get("metadata") or {}).get("annotations") or {}
    return "true" in (annotations.get(DEFAULT_CLASS_ANNOTATION),
                      annotations.get(BETA_DEFAULT_CLASS_ANNOTATION))


def default_class(view: View) -> dict[str, Any] | None:
    """GetDefaultClass: the newest default class; equal ages -> the name sorting first."""
    defaults = [sc for sc in view.list("StorageClass") if is_default_class(sc)]
    defaults.sort(key=lambda sc: (sc["metadata"].get("creationTimestamp", ""),
                                  _neg(sc["metadata"]["name"])), reverse=True)
    return defaults[0] if defaults else None


def _neg(name: str) -> tuple[Any, ...]:
    return tuple(-ord(c) for c in name)


def _admit(attrs: Attributes) -> None:
    spec = attrs.obj.setdefault("spec", {})
    if spec.get("storageClassName") is not None:
        return
    chosen = default_class(attrs.view)
    if chosen is not None:
        spec["storageClassName"] = chosen["metadata"]["name"]


PLUGIN = Plugin(NAME, frozenset({CREATE}), frozenset({"PersistentVolumeClaim"}), mutate=_admit)

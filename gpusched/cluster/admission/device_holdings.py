"""GpuschedDeviceHoldings (gpusched's own): device holdings are the cluster's state, not a user's.

The annotations ``gpusched.io/assigned-gpus``, ``gpusched.io/assigned-devices`` and
``gpusched.io/start-time`` record which devices a pod holds (written by the scheduler's binding
and the kubelet, ``kubelet.admission``). On a Pod create through the main resource they are
dropped; on an update the stored ones win over whatever the request carried. Writes through a
subresource (``binding``, ``status``: the scheduler and the kubelet) are not touched, as
upstream's NodeRestriction leaves the kubelet's own writes to it.

Neighbours: ``admission.registry`` (after the upstream mutating plugins, before quota).
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.plugin import CREATE, UPDATE, Plugin
from gpusched.objects.types import ANN_ASSIGNED_DEVICES, ANN_ASSIGNED_GPUS, ANN_START_TIME

NAME = "GpuschedDeviceHoldings"
CLUSTER_ANNOTATIONS = (ANN_ASSIGNED_GPUS, ANN_ASSIGNED_DEVICES, ANN_START_TIME)


def drop_cluster_annotations(pod: dict[str, Any]) -> None:
    """A user's ``gpusched.io/assigned-*``/``start-time`` never become device holdings."""
    annotations = (pod.get("metadata") or {}).get("annotations")
    if not annotations:
        return
    for key in CLUSTER_ANNOTATIONS:
        annotations.pop(key, None)


def keep_cluster_annotations(old: dict[str, Any], new: dict[str, Any]) -> None:
    """On update the stored holdings win over whatever the request carried."""
    old_annotations = (old.get("metadata") or {}).get("annotations") or {}
    annotations = new.setdefault("metadata", {}).setdefault("annotations", {})
    for key in CLUSTER_ANNOTATIONS:
        if key in old_annotations:
            annotations[key] = old_annotations[key]
        else:
            annotations.pop(key, None)
    if not annotations:
        new["metadata"].pop("annotations")


def _admit(attrs: Attributes) -> None:
    if attrs.old is None:
        drop_cluster_annotations(attrs.obj)
    else:
        keep_cluster_annotations(attrs.old, attrs.obj)


PLUGIN = Plugin(NAME, frozenset({CREATE, UPDATE}), frozenset({"Pod"}), mutate=_admit)

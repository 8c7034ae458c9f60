"""A pod's device holdings: the one place that writes and reads the assignment annotations.

When a pod is bound, the scheduler records the devices it holds on the pod, as the NVIDIA device
plugin's ``Allocate`` answer would be seen from outside: ``gpusched.io/assigned-gpus`` (the
physical GPU indices, ``"0,1"``) and ``gpusched.io/assigned-devices`` (the device plugin's IDs,
``GPU-<uuid>``, ``GPU-<uuid>::<k>`` for a replica, ``MIG-<uuid>``). Every reader (the kubelet's
admission, the scheduler's snapshot, metrics, describe, top, the VPA recommender, Slurm's job
environment) goes through :func:`read_assignment` or :func:`held_by`, so there is one parse:

- :func:`assignment_annotations` writes an assignment (nothing for no devices);
- :func:`pod_assignment` reads one back exactly (``resource`` from :func:`assignment_resource`,
  the fractional share from the pod's parsed request, ``PodInfo.gpu_milli``, whether it was
  asked for by the annotation ``gpusched.io/gpu-milli`` or by the extended resource of that name)
  and raises ``UsageError`` on a malformed value, which only a hand-edited state file can hold
  (admission strips the annotations from user input); callers on a shared path (the scheduler's
  snapshot, the kubelet) treat such a record as devices gone, never as an error of the pass;
- :func:`held_by` is what a pod holds for readers that need only the devices: the same parse,
  with a malformed value read as holding nothing;
- :func:`assignment_of` is :func:`held_by` with a fractional pod's share, taken from the body
  (``objects.pod.pod_gpu_share``, ``pod_info``'s rule without the rest of the parse): what the
  web page shows, the same record the kubelet reads through :func:`pod_assignment`.

Neighbours: objects.types (``DeviceAssignment``), devices.node (``allocate``/``hold``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, cast

from gpusched.errors import InvalidError, UsageError
from gpusched.objects.pod import pod_gpu_share
from gpusched.objects.types import (ANN_ASSIGNED_DEVICES, ANN_ASSIGNED_GPUS, ANN_GPU_MILLI,
                                    NO_DEVICES, RESOURCE_GPU_MILLI, DeviceAssignment, PodInfo)
from gpusched.objects.digits import is_digits

if TYPE_CHECKING:     # TypedDicts for the type checker alone (casts name them as strings)
    from gpusched.objects import typed_views as k8s

DEVICE_PREFIX = "nvidia.com/"
_NO_STRINGS: Mapping[str, str] = {}


def device_requests(pod: PodInfo) -> dict[str, int]:
    """The ``nvidia.com/*`` device resources a (non-fractional) pod asks for."""
    return {r: n for r, n in sorted(pod.requests.items()) if r.startswith(DEVICE_PREFIX) and n > 0}


def assignment_resource(pod: PodInfo) -> str:
    """The ``DeviceAssignment.resource`` that ``NodeDevices.allocate`` produces for ``pod``."""
    if pod.gpu_milli > 0:
        return RESOURCE_GPU_MILLI
    return ",".join(device_requests(pod))


def assignment_annotations(assignment: DeviceAssignment) -> dict[str, str]:
    """The pod annotations that record ``assignment`` (empty for no devices).

    >>> assignment_annotations(DeviceAssignment("nvidia.com/gpu", ("GPU-a", "GPU-b"), (0, 1), 1000))
    {'gpusched.io/assigned-gpus': '0,1', 'gpusched.io/assigned-devices': 'GPU-a,GPU-b'}
    """
    if assignment.empty:
        return {}
    return {ANN_ASSIGNED_GPUS: ",".join(str(i) for i in assignment.gpu_indices),
            ANN_ASSIGNED_DEVICES: ",".join(assignment.device_ids)}


def pod_assignment(pod: Mapping[str, Any], info: PodInfo) -> DeviceAssignment:
    """What ``pod`` (parsed as ``info``) holds: its record, with a fractional pod's share taken
    from its request. Raises ``UsageError`` on a malformed record."""
    return read_assignment(pod_annotations(pod), assignment_resource(info), info.gpu_milli)


def read_assignment(annotations: Mapping[str, Any], resource: str = "", share: int = 0) -> DeviceAssignment:
    """The assignment :func:`assignment_annotations` recorded (state survives a reload).
    ``share``: a fractional pod's milli-GPU (``PodInfo.gpu_milli``); 0 reads it from the
    annotation ``gpusched.io/gpu-milli``.

    >>> read_assignment({"gpusched.io/assigned-gpus": "1", "gpusched.io/assigned-devices": "GPU-x::2"})
    DeviceAssignment(resource='', device_ids=('GPU-x::2',), gpu_indices=(1,), milli=0)
    """
    ids = tuple(i for i in str(annotations.get(ANN_ASSIGNED_DEVICES, "")).split(",") if i)
    gpus = str(annotations.get(ANN_ASSIGNED_GPUS, ""))
    try:
        indices = tuple(int(i) for i in gpus.split(",") if i)
    except ValueError:
        raise UsageError(f'invalid annotation {ANN_ASSIGNED_GPUS}="{gpus}": expected GPU indices '
                         f'like "0,1"') from None
    if not ids and not indices:
        return NO_DEVICES
    if resource == RESOURCE_GPU_MILLI:
        raw = str(share) if share > 0 else str(annotations.get(ANN_GPU_MILLI, ""))
        if not (is_digits(raw) and 0 < int(raw) < 1000):
            raise UsageError(f'invalid annotation {ANN_GPU_MILLI}="{raw}": expected milli-GPU')
        milli = int(raw)
    else:
        whole = all(i.startswith("GPU-") and "::" not in i for i in ids)
        milli = 1000 if whole else 0
    return DeviceAssignment(resource, ids, indices, milli)


def pod_annotations(pod: Mapping[str, Any]) -> Mapping[str, str]:
    meta = cast("k8s.Pod", pod).get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return annotations if isinstance(annotations, Mapping) else _NO_STRINGS


def held_by(pod: Mapping[str, Any]) -> DeviceAssignment:
    """The devices ``pod`` holds (``NO_DEVICES`` when none, or when the record is malformed).

    >>> held_by({"metadata": {"annotations": {"gpusched.io/assigned-gpus": "x"}}})
    DeviceAssignment(resource='', device_ids=(), gpu_indices=(), milli=0)
    """
    annotations = pod_annotations(pod)
    if ANN_ASSIGNED_DEVICES not in annotations and ANN_ASSIGNED_GPUS not in annotations:
        return NO_DEVICES
    try:
        return read_assignment(annotations)
    except UsageError:
        return NO_DEVICES


def assignment_of(pod: Mapping[str, Any]) -> DeviceAssignment:
    """What ``pod`` holds, from its body alone: a fractional pod's record has resource
    ``gpusched.io/gpu-milli`` and its share as ``milli`` (as :func:`pod_assignment` reads it
    from a ``PodInfo``); any other has resource ``""`` and ``milli`` as :func:`held_by`.
    ``NO_DEVICES`` for a malformed record or a share validation would refuse: the kubelet and
    the scheduler leave such a pod out, so it holds nothing.

    >>> assignment_of({"metadata": {"annotations": {"gpusched.io/gpu-milli": "470",
    ...     "gpusched.io/assigned-gpus": "1", "gpusched.io/assigned-devices": "GPU-x"}}})
    DeviceAssignment(resource='gpusched.io/gpu-milli', device_ids=('GPU-x',), gpu_indices=(1,), milli=470)
    """
    annotations = pod_annotations(pod)
    if ANN_ASSIGNED_DEVICES not in annotations and ANN_ASSIGNED_GPUS not in annotations:
        return NO_DEVICES
    try:
        share = pod_gpu_share(pod)
        return read_assignment(annotations, RESOURCE_GPU_MILLI if share else "", share)
    except (InvalidError, UsageError):
        return NO_DEVICES

"""The web page's view of GPUs that NVIDIA's DRA driver hands out.

A pod on a DRA-managed node holds the devices of its prepared claims
(``cluster.kubelet.dra_prepare``), not device-plugin devices: its :class:`PodEntry` gets their
UUIDs (a whole GPU's and a static MIG device's are the cells' device ids, so those cells show
it as their holder) and the MIG devices it holds. A DynamicMIG device exists only while a claim
holds it, so a GPU carved that way is drawn as its carved instances, each with its holder, and
one free cell for the compute slices left (``<n>g.free``, weighing n in the usage arithmetic of
``server.web.summary``), in place of the whole GPU's cell.

Neighbours: ``server.web.index`` (calls both functions), ``cluster.kubelet.dra_prepare``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gpusched.cluster.kubelet.dra_prepare import has_claims, prepared_devices
from gpusched.devices.advertise import node_gpus
from gpusched.devices.dra_slices import DRIVER
from gpusched.devices.node import DeviceRow
from gpusched.errors import GpuschedError

if TYPE_CHECKING:
    from gpusched.server.web.index import PodEntry


def with_dra_devices(view: Any, pod: dict[str, Any], entry: PodEntry) -> PodEntry:
    """``entry`` with the devices of the pod's prepared claims when it holds no others."""
    if entry.devices or not entry.node or not has_claims(pod):
        return entry
    prepared = prepared_devices(view, pod)
    node = view.get("Node", entry.node) if prepared else None
    if node is None:
        return entry
    try:
        model, _, _ = node_gpus(node)
    except GpuschedError:
        return entry
    uuids = tuple(d.uuid(model) for d in prepared)
    carved = tuple((d.gpu_index, d.uuid(model), d.profile(model)) for d in prepared if d.mig)
    return replace(entry, devices=uuids, gpus=tuple(sorted({d.gpu_index for d in prepared})),
                   carved=carved)


def carved_rows(index: int, on_gpu: list[DeviceRow], pods: list[PodEntry],
                compute_slices: int) -> list[DeviceRow] | None:
    """GPU ``index``'s rows when pods hold DynamicMIG devices on it that are not among its
    advertised rows (``on_gpu``): the carved instances with their holders and the free slices;
    None when nothing is carved there."""
    known = {row.device_id for row in on_gpu}
    held = sorted({(uuid, profile, pod.key) for pod in pods if pod.holds
                   for gpu, uuid, profile in pod.carved if gpu == index and uuid not in known})
    if not held:
        return None
    rows = [DeviceRow(index, uuid, DRIVER, profile, -1, key, 0) for uuid, profile, key in held]
    used = sum(int(profile.split("g.", 1)[0]) for _, profile, _ in held)
    if compute_slices > used:
        rows.append(DeviceRow(index, f"{on_gpu[0].device_id}-free", DRIVER,
                              f"{compute_slices - used}g.free", -1, "", 0))
    return rows

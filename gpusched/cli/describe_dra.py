"""``describe node``'s block for a node whose GPUs NVIDIA's DRA driver publishes: the devices of
the node's pool (whole GPUs, static MIG devices, and the DynamicMIG devices carved for a claim)
with their state and holders, in place of the device plugin's ``GPU Devices`` table
(``cluster.kubelet.dra_prepare.node_device_uses``). kubectl's own describer has no such block:
like ``GPU Devices`` it is gpusched's, after kubectl's page.

Neighbours: ``cli.describe`` (the page), ``devices.dra_classes`` (is the node DRA-managed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpusched.cluster.kubelet.dra_prepare import DeviceUse


def dra_table(uses: list[DeviceUse]) -> list[str]:
    """The block's lines: ``DRA Devices (gpu.nvidia.com):`` and a column-aligned table."""
    if not uses:
        return ["DRA Devices (gpu.nvidia.com):  <none>"]
    header = ("Device", "Type", "Profile", "State", "Claim", "Pods")
    rows: list[tuple[Any, ...]] = [header, *((u.device, u.type, u.profile or "-", u.state,
                                               u.claim, u.pods) for u in uses)]
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(header))]
    lines = ["DRA Devices (gpu.nvidia.com):"]
    lines += ["  " + "   ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return lines

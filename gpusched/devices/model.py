"""``DeviceModel``: what the scheduler may ask of a node's devices, whatever models them.

The scheduler's snapshot keeps one per node (``Snapshot.devices``; None for a node without
GPUs). ``devices.node.NodeDevices`` (whole GPUs, time-slicing and MPS replicas, MIG instances,
milli-GPU shares) is the model every node has today; a DRA driver's devices would be another.
The contract is small on purpose: fit, choose, hold and release devices, and say per GPU how much
is free, which the snapshot turns into its NumPy rows (``Snapshot.gpu_free_milli``).

Neighbours: ``scheduler.snapshot`` (holds them), ``scheduler.plugins.gpu_devices`` (Filter,
Reserve), ``scheduler.runner`` (assume: ``hold``), ``devices.node`` (the implementation).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

    from gpusched.devices.catalog import GpuModel
    from gpusched.devices.mig_profiles import MigGeometry, MigProfile
    from gpusched.devices.node import DeviceRow
    from gpusched.objects.types import DeviceAssignment, PodInfo


class DeviceModel(Protocol):
    """A node's devices and which pod holds which (see the module docstring)."""

    @property
    def gpu_count(self) -> int:
        """Physical GPUs on the node."""

    @property
    def gpu_model(self) -> GpuModel:
        """The node's GPU model (only asked of a node with GPUs)."""

    @property
    def advertised(self) -> dict[str, int]:
        """Extended resource -> devices the device plugin registers."""

    def free_milli(self) -> np.ndarray:
        """Per GPU index, the milli-GPU a fractional pod could still take (0 when it cannot)."""

    def mig_enabled(self, gpu_index: int) -> bool:
        """Whether the GPU is partitioned into MIG instances."""

    def fits(self, pod: PodInfo) -> str | None:
        """None when ``pod``'s device request fits now, else the reason (``Insufficient ...``)."""

    def allocate(self, pod: PodInfo, policy: str = "binpack",
                 gpus: tuple[int, ...] | None = None) -> DeviceAssignment | None:
        """The devices ``pod`` would get under ``policy`` (binpack or spread), restricted to the
        GPU indices ``gpus`` when a score plugin chose them; None when it does not fit. Pure."""

    def hold(self, uid: str, assignment: DeviceAssignment) -> None:
        """Mark ``assignment``'s devices as held by pod ``uid``."""

    def release(self, uid: str) -> DeviceAssignment | None:
        """Free what pod ``uid`` holds; returns it (None when it held nothing)."""

    def mig_profile(self, profile: str) -> tuple[MigGeometry, MigProfile]:
        """The MIG geometry of the node's model and one of its profiles by name."""

    def rows(self) -> list[DeviceRow]:
        """One line per device: index, ID, resource, profile, replica, holder, milli."""

"""GPU samples of this host's real GPUs through NVML (``nvidia-ml-py``, module ``pynvml``).

Conversions to DCGM's units (nvidia-gpu-stack.md 5): power mW -> W (float), energy mJ
unchanged, framebuffer bytes -> MiB with the v2 memory struct (``reserved`` separate from
``used``, as DCGM), clocks MHz, utilization %. MIG-enabled GPUs give one sample per MIG device
(``GPU_I_PROFILE`` from its slice count and memory, ``GPU_I_ID`` its GPU-instance id) with its
framebuffer; the parent keeps temperature, power, energy and clocks. XID errors: an event set
registered for ``nvmlEventTypeXidCriticalError`` is polled (0 ms wait) at every scrape and the
latest code is kept (0 until the first event). A value NVML does not support on this part is
omitted, never reported as 0.

Without a GPU or driver ``nvmlInit`` fails; :class:`NvmlSource` then logs one line quoting
NVML's error once (``no NVIDIA GPU/driver on this machine: NVML Shared Library Not Found``),
``available`` is False, ``samples()`` is empty, and the exporter still serves its own metrics
(``gpusched_exporter_nvml_up 0``).

Neighbours: ``dcgm`` (sample type); ``exporter`` serves it; tests run it where a GPU exists.
"""

from __future__ import annotations

import logging
import socket
from typing import Any, Callable

from gpusched.extras import MissingExtraError, missing
from gpusched.metrics.dcgm import GpuSample

log = logging.getLogger(__name__)
MIB = 1 << 20
NO_GPU_PREFIX = "no NVIDIA GPU/driver on this machine"


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """NVML value or None when this part does not support it (or it fails)."""
    import pynvml
    try:
        return fn(*args)
    except pynvml.NVMLError:
        return None


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class NvmlSource:
    """``GpuSource`` over NVML; see the module docstring."""

    def __init__(self, hostname: str | None = None) -> None:
        self.hostname = hostname or socket.gethostname()
        self.error = ""
        self._xid: dict[int, int] = {}
        self._events = None
        self._no_bindings = bool(missing("gpu"))
        if self._no_bindings:           # the [gpu] extra is not installed
            self.error = str(MissingExtraError("gpusched exporter", "gpu", missing("gpu")))
            log.warning("%s", self.error)
            return
        try:
            import pynvml
            pynvml.nvmlInit()
        except Exception as error:   # NVMLError_LibraryNotFound, DriverNotLoaded, ImportError
            self.error = str(error) or type(error).__name__
            log.warning("%s: %s", NO_GPU_PREFIX, self.error)
            return
        self._register_xid_events()

    @property
    def available(self) -> bool:
        return not self.error

    @property
    def message(self) -> str:
        if self._no_bindings:
            return self.error
        return f"{NO_GPU_PREFIX}: {self.error}" if self.error else ""

    def _register_xid_events(self) -> None:
        import pynvml
        events = _call(pynvml.nvmlEventSetCreate)
        if events is None:
            return
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            _call(pynvml.nvmlDeviceRegisterEvents, handle, pynvml.nvmlEventTypeXidCriticalError,
                  events)
        self._events = events

    def _poll_xid(self) -> None:
        import pynvml
        while self._events is not None:
            try:
                event = pynvml.nvmlEventSetWait(self._events, 0)
            except pynvml.NVMLError:     # NVML_ERROR_TIMEOUT: nothing pending
                return
            index = _call(pynvml.nvmlDeviceGetIndex, event.device)
            if index is not None:
                self._xid[int(index)] = int(event.eventData)

    def samples(self) -> list[GpuSample]:
        if not self.available:
            return []
        import pynvml
        self._poll_xid()
        driver = _text(_call(pynvml.nvmlSystemGetDriverVersion) or "")
        out = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            base: dict[str, Any] = dict(gpu=index, uuid=_text(pynvml.nvmlDeviceGetUUID(handle)),
                        model_name=_text(pynvml.nvmlDeviceGetName(handle)),
                        pci_bus_id=_text(pynvml.nvmlDeviceGetPciInfo(handle).busId),
                        hostname=self.hostname, driver_version=driver)
            values = device_values(handle)
            values["DCGM_FI_DEV_XID_ERRORS"] = self._xid.get(index, 0)
            out.append(GpuSample(**base, values=values))
            out += mig_samples(handle, base)
        return out


def device_values(handle: Any) -> dict[str, float]:     # handle: pynvml's (untyped) device handle
    """DCGM field -> value for one GPU handle (unsupported fields left out)."""
    import pynvml
    values: dict[str, float] = {}

    def put(name: str, value: float | None, scale: float = 1.0) -> None:
        if value is not None:
            values[name] = value * scale if scale != 1.0 else value

    put("DCGM_FI_DEV_SM_CLOCK", _call(pynvml.nvmlDeviceGetClockInfo, handle, pynvml.NVML_CLOCK_SM))
    put("DCGM_FI_DEV_MEM_CLOCK", _call(pynvml.nvmlDeviceGetClockInfo, handle, pynvml.NVML_CLOCK_MEM))
    put("DCGM_FI_DEV_GPU_TEMP",
        _call(pynvml.nvmlDeviceGetTemperature, handle, pynvml.NVML_TEMPERATURE_GPU))
    field = _call(pynvml.nvmlDeviceGetFieldValues, handle, [pynvml.NVML_FI_DEV_MEMORY_TEMP])
    if field and field[0].nvmlReturn == pynvml.NVML_SUCCESS and field[0].value.uiVal:
        values["DCGM_FI_DEV_MEMORY_TEMP"] = field[0].value.uiVal
    put("DCGM_FI_DEV_POWER_USAGE", _call(pynvml.nvmlDeviceGetPowerUsage, handle), 1 / 1000)
    put("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        _call(pynvml.nvmlDeviceGetTotalEnergyConsumption, handle))
    put("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", _call(pynvml.nvmlDeviceGetPcieReplayCounter, handle))
    rates = _call(pynvml.nvmlDeviceGetUtilizationRates, handle)
    if rates is not None:
        values["DCGM_FI_DEV_GPU_UTIL"] = rates.gpu
        values["DCGM_FI_DEV_MEM_COPY_UTIL"] = rates.memory
    for name, fn in (("DCGM_FI_DEV_ENC_UTIL", pynvml.nvmlDeviceGetEncoderUtilization),
                     ("DCGM_FI_DEV_DEC_UTIL", pynvml.nvmlDeviceGetDecoderUtilization)):
        got = _call(fn, handle)
        if got is not None:
            values[name] = got[0]
    values.update(memory_values(handle))
    rows = _call(pynvml.nvmlDeviceGetRemappedRows, handle)
    if rows is not None:
        values["DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"] = rows[0]
        values["DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"] = rows[1]
        values["DCGM_FI_DEV_ROW_REMAP_FAILURE"] = int(bool(rows[3]))
    return values


def memory_values(handle: Any) -> dict[str, float]:
    """FB free/used/reserved in MiB from the v2 struct (v1 fallback: reserved unknown)."""
    import pynvml
    info = _call(pynvml.nvmlDeviceGetMemoryInfo, handle, pynvml.nvmlMemory_v2)
    if info is not None:
        return {"DCGM_FI_DEV_FB_FREE": info.free // MIB, "DCGM_FI_DEV_FB_USED": info.used // MIB,
                "DCGM_FI_DEV_FB_RESERVED": info.reserved // MIB}
    info = _call(pynvml.nvmlDeviceGetMemoryInfo, handle)
    if info is None:
        return {}
    return {"DCGM_FI_DEV_FB_FREE": info.free // MIB, "DCGM_FI_DEV_FB_USED": info.used // MIB}


def mig_samples(handle: Any, base: dict[str, Any]) -> list[GpuSample]:
    """One sample per MIG device of a MIG-enabled GPU (none otherwise)."""
    import pynvml
    mode = _call(pynvml.nvmlDeviceGetMigMode, handle)
    if not mode or mode[0] != 1:
        return []
    out = []
    for j in range(_call(pynvml.nvmlDeviceGetMaxMigDeviceCount, handle) or 0):
        mig = _call(pynvml.nvmlDeviceGetMigDeviceHandleByIndex, handle, j)
        if mig is None:
            continue
        attributes = _call(pynvml.nvmlDeviceGetAttributes, mig)
        profile = (f"{attributes.gpuInstanceSliceCount}g."
                   f"{round(attributes.memorySizeMB / 1024)}gb") if attributes else ""
        instance = _call(pynvml.nvmlDeviceGetGpuInstanceId, mig)
        out.append(GpuSample(**base, gpu_instance_profile=profile,
                             gpu_instance_id=str(instance if instance is not None else j),
                             values=memory_values(mig)))
    return out

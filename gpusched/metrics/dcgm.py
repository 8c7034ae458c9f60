"""DCGM-compatible GPU metrics: dcgm-exporter's default counter set, one sample type, one renderer.

``FIELDS`` is dcgm-exporter's ``etc/default-counters.csv`` (nvidia-gpu-stack.md 4.2): name, type
and HELP text, in the file's order. A :class:`GpuSource` (``nvml_source.NvmlSource`` for this
host's GPUs, ``cluster_source.ClusterSource`` for the gpusched cluster) returns one
:class:`GpuSample` per GPU or MIG instance (and per pod holding it: time-sliced GPUs repeat their
line once per pod, as dcgm-exporter's Kubernetes mapping does). :func:`render` writes them the
way dcgm-exporter does (4.3): ``# HELP``/``# TYPE`` per family, labels in the order
``gpu, UUID, pci_bus_id, device, modelName[, GPU_I_PROFILE, GPU_I_ID], Hostname,
DCGM_FI_DRIVER_VERSION[, namespace, pod, container]``, integers as ``%d``, doubles as ``%f``, and
a value the source does not have is **omitted** (no line), never written as 0.

This renderer is used instead of ``prometheus_client``'s because ``prometheus_client`` appends
``_total`` to every counter family, while dcgm-exporter's counters
(``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`` ...) keep their names; ``exposition`` appends the
``prometheus_client`` text of every other family to this one.

Pod attribution (:class:`PodMapping`) follows dcgm-exporter's Kubernetes pod mapper
(``internal/pkg/transformation/kubernetes.go`` ``toDeviceToPod``/``iterateGPUDevices``): a device
the kubelet's pod-resources API lists for a container is mapped to the pod only when its resource
name is ``nvidia.com/gpu`` (``appconfig.NvidiaResourceName``), starts with ``nvidia.com/mig-``
(``NvidiaMigResourcePrefix``), or is listed in ``--nvidia-resource-names`` (env
``NVIDIA_RESOURCE_NAMES``). Anything else - e.g. the ``nvidia.com/gpu.shared`` resource of
time-slicing with ``renameByDefault`` - gets GPU lines **without** ``namespace``/``pod``/
``container``. ``--kubernetes-gpu-id-type`` (env ``DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE``) is
``uid`` (default: whole-GPU lines are keyed by GPU UUID, which is what NVIDIA's device plugin
reports) or ``device-name`` (keyed by ``nvidia<N>``, which NVIDIA's device plugin never reports, so
whole and time-sliced GPUs lose their pods; MIG lines are keyed by GPU and instance either way).

Neighbours: ``nvml_source``, ``cluster_source`` produce samples; ``exposition`` and ``exporter``
serve them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Protocol

# (name, prometheus type, help) -- dcgm-exporter etc/default-counters.csv, enabled lines only.
FIELDS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
     "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB)."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter",
     "Total number of NVLink bandwidth counters for all lanes."),
    ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status"),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for uncorrectable errors"),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for correctable errors"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
     "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
     "Ratio of cycles the device memory interface is active sending or receiving data."),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
     "The rate of data transmitted over the PCIe bus - including both protocol headers and "
     "data payloads - in bytes per second."),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
     "The rate of data received over the PCIe bus - including both protocol headers and "
     "data payloads - in bytes per second."),
)
FIELD_NAMES = tuple(name for name, _, _ in FIELDS)
# Integer-valued fields are written with %d, the rest with %f (dcgm-exporter's formatting).
INTEGER_FIELDS = frozenset({
    "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP",
    "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL", "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_RESERVED",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE"})
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"   # the text format Prometheus 2.x reads
HOSTNAME_LABEL = "Hostname"       # released dcgm-exporter spelling (4.3); configurable in render


@dataclass(frozen=True, slots=True)
class PodRef:
    """The pod holding a device (dcgm-exporter's ``--kubernetes`` mapping)."""

    namespace: str
    pod: str
    container: str


@dataclass(frozen=True, slots=True)
class GpuSample:
    """One GPU (or MIG instance) and its field values; a field absent from ``values`` is omitted.

    ``gpu`` is the (parent) GPU index, ``uuid`` the parent GPU's UUID, ``pci_bus_id`` the
    8-hex-digit-domain form. ``pods`` are the pods holding it (several under time-slicing).
    ``xid_code``/``xid_message`` become ``err_code``/``err_msg`` on the XID line.
    """

    gpu: int
    uuid: str
    model_name: str
    pci_bus_id: str
    hostname: str
    driver_version: str = ""
    values: Mapping[str, float] = field(default_factory=dict)
    gpu_instance_profile: str = ""
    gpu_instance_id: str = ""
    pods: tuple[PodRef, ...] = ()
    xid_message: str = ""

    def base_labels(self, hostname_label: str = HOSTNAME_LABEL) -> list[tuple[str, str]]:
        labels = [("gpu", str(self.gpu)), ("UUID", self.uuid), ("pci_bus_id", self.pci_bus_id),
                  ("device", f"nvidia{self.gpu}"), ("modelName", self.model_name)]
        if self.gpu_instance_profile:
            labels += [("GPU_I_PROFILE", self.gpu_instance_profile),
                       ("GPU_I_ID", self.gpu_instance_id)]
        labels.append((hostname_label, self.hostname))
        if self.driver_version:
            labels.append(("DCGM_FI_DRIVER_VERSION", self.driver_version))
        return labels


NVIDIA_RESOURCE_NAME = "nvidia.com/gpu"          # appconfig.NvidiaResourceName
NVIDIA_MIG_RESOURCE_PREFIX = "nvidia.com/mig-"    # appconfig.NvidiaMigResourcePrefix
GPU_ID_TYPES = ("uid", "device-name")             # appconfig.GPUUID, appconfig.DeviceName
FLAG_RESOURCE_NAMES = "--nvidia-resource-names"   # pkg/cmd/app.go CLINvidiaResourceNames
FLAG_GPU_ID_TYPE = "--kubernetes-gpu-id-type"     # pkg/cmd/app.go CLIKubernetesGPUIDType
ENV_RESOURCE_NAMES = "NVIDIA_RESOURCE_NAMES"
ENV_GPU_ID_TYPE = "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE"
_MAX_FLAG_TEXT = 4096


@dataclass(frozen=True, slots=True)
class PodMapping:
    """dcgm-exporter's pod mapping options (see the module docstring)."""

    resource_names: tuple[str, ...] = ()
    gpu_id_type: str = "uid"

    def maps(self, resource: str, mig: bool) -> bool:
        """Does the exporter attribute a device of ``resource`` (a MIG instance or not) to its pod?

        >>> PodMapping().maps("nvidia.com/gpu", False), PodMapping().maps("nvidia.com/gpu.shared", False)
        (True, False)
        >>> PodMapping(("nvidia.com/gpu.shared",)).maps("nvidia.com/gpu.shared", False)
        True
        >>> PodMapping(gpu_id_type="device-name").maps("nvidia.com/gpu", False)
        False
        """
        named = (resource == NVIDIA_RESOURCE_NAME or resource in self.resource_names
                 or resource.startswith(NVIDIA_MIG_RESOURCE_PREFIX))
        return named and (mig or self.gpu_id_type == "uid")


def mapping_from_container(args: list[str], env: Mapping[str, str]) -> PodMapping:
    """The mapping a dcgm-exporter container runs with: its flags, else its environment (urfave/cli
    precedence). A string-slice flag may repeat and takes comma-separated values; an unknown
    ``--kubernetes-gpu-id-type`` makes dcgm-exporter map nothing, as its ``GetIDOfType`` errors.

    >>> mapping_from_container(["--nvidia-resource-names=nvidia.com/a100,nvidia.com/gpu.shared"], {})
    PodMapping(resource_names=('nvidia.com/a100', 'nvidia.com/gpu.shared'), gpu_id_type='uid')
    >>> mapping_from_container(["-k"], {"DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE": "device-name"}).gpu_id_type
    'device-name'
    """
    names: list[str] = []
    id_type: str | None = None
    values = [str(a)[:_MAX_FLAG_TEXT] for a in args[:256]]
    for i, arg in enumerate(values):
        for flag in (FLAG_RESOURCE_NAMES, FLAG_GPU_ID_TYPE):
            if arg == flag and i + 1 < len(values):
                value = values[i + 1]
            elif arg.startswith(flag + "="):
                value = arg[len(flag) + 1:]
            else:
                continue
            if flag == FLAG_RESOURCE_NAMES:
                names += [n.strip() for n in value.split(",") if n.strip()]
            else:
                id_type = value.strip()
    if not names:
        names = [n.strip() for n in str(env.get(ENV_RESOURCE_NAMES, ""))[:_MAX_FLAG_TEXT].split(",")
                 if n.strip()]
    if id_type is None:
        id_type = str(env.get(ENV_GPU_ID_TYPE) or "uid").strip()
    return PodMapping(tuple(names), id_type)


class GpuSource(Protocol):
    """Where GPU samples come from (real GPUs through NVML, or the gpusched cluster model)."""

    def samples(self) -> list[GpuSample]: ...


def pci_bus_id(domain: int, bus: int, device: int = 0, function: int = 0) -> str:
    """NVML's bus id with the 8-hex-digit domain: ``pci_bus_id(0, 7) == '00000000:07:00.0'``."""
    return f"{domain:08X}:{bus:02X}:{device:02X}.{function:X}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def format_value(name: str, value: float) -> str:
    """dcgm-exporter's formatting: ``%d`` for integer fields, ``%f`` for doubles.

    >>> format_value("DCGM_FI_DEV_GPU_UTIL", 61.7), format_value("DCGM_FI_DEV_POWER_USAGE", 61.234)
    ('61', '61.234000')
    """
    return f"{int(value)}" if name in INTEGER_FIELDS else f"{float(value):f}"


def render(samples: list[GpuSample], hostname_label: str = HOSTNAME_LABEL) -> str:
    """The exposition text of every field some sample has (families without samples omitted)."""
    out: list[str] = []
    for name, kind, help_text in FIELDS:
        lines = []
        for sample in samples:
            if name not in sample.values:
                continue
            value = format_value(name, sample.values[name])
            base = sample.base_labels(hostname_label)
            if name == "DCGM_FI_DEV_XID_ERRORS":
                base = base + [("err_code", value), ("err_msg", sample.xid_message)]
            for pod in sample.pods or (None,):
                labels = base if pod is None else base + [
                    ("namespace", pod.namespace), ("pod", pod.pod), ("container", pod.container)]
                text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
                lines.append(f"{name}{{{text}}} {value}")
        if lines:
            out += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *lines]
    return "\n".join(out) + ("\n" if out else "")

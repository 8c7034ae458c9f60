"""The node labels GPU Feature Discovery (plus the GPU Operator's ``gpu.present``) would write.

``gfd_labels(model, gpu_count, config, mig_layout, mig_strategy)`` follows nvidia-gpu-stack.md
section 2:

- every GPU node: ``nvidia.com/gpu.present=true``, ``gpu.count`` (physical GPUs),
  ``gpu.replicas`` (replicas **per GPU**: 1 without sharing), ``gpu.sharing-strategy``,
  ``gpu.product``, ``gpu.memory`` (MiB), ``gpu.family`` and ``gpu.compute.major/minor`` (left
  out when the compute major is 0, as for the undisclosed trace parts G2/G3), ``mig.capable``,
  ``mps.capable`` and ``mig.strategy`` (only when not ``none``);
- a shared resource that keeps its name gets ``-SHARED`` on its product; with
  ``renameByDefault`` there is no suffix (the resource name carries ``.shared`` instead);
- MIG none: MIG-enabled GPUs are labelled as whole GPUs without sharing (replicas 0, sharing
  ``none``, no ``-SHARED``; GPUs of the model running without MIG override that with the sharing
  config), no ``mig.strategy`` and no MIG labels (``internal/lm/mig-strategy.go``);
- MIG single (valid): the ``gpu.*`` labels describe the MIG devices (count of MIG devices,
  ``<product>-MIG-<profile>``, MIG memory, multiprocessors, slices, engines); invalid (a
  MIG-enabled GPU without MIG devices, MIG-enabled and disabled GPUs together, or more than one
  MIG profile; ``single_strategy_gfd_reason``): ``<product>-MIG-INVALID`` with count/replicas/memory
  0 and an empty sharing strategy, over the full-GPU labels (family and compute stay);
- MIG mixed: one ``nvidia.com/mig-<profile>.*`` set per profile present (``+`` as ``.``), and
  ``gpu.*`` still describes the GPUs (replicas 0 / sharing none when every GPU is MIG-enabled).

No ``gfd.timestamp`` label: labels must be deterministic. Driver/CUDA/machine labels are not
modelled.

Neighbours: reads ``devices.catalog``, ``devices.mig`` and ``devices.plugin_config``; called by
``devices.advertise``.
"""

from __future__ import annotations

import re
from collections import Counter

from gpusched.devices.catalog import GpuModel
from gpusched.devices.mig import profile_of
from gpusched.devices.mig_profiles import MigProfile
from gpusched.devices.plugin_config import DEFAULT_CONFIG, DevicePluginConfig
from gpusched.objects.digits import is_digits

PREFIX = "nvidia.com/"
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9\-_. ]")


def sanitize_product(name: str) -> str:
    """GFD's product sanitising: drop characters outside ``[A-Za-z0-9-_. ]``, spaces -> ``-``.

    >>> sanitize_product("NVIDIA A100-SXM4-40GB"), sanitize_product("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb+me")
    ('NVIDIA-A100-SXM4-40GB', 'NVIDIA-A100-SXM4-40GB-MIG-1g.5gbme')
    """
    return "-".join(_NOT_ALLOWED.sub("", name).split())


def gfd_labels(model: GpuModel | None, gpu_count: int, config: DevicePluginConfig | None = None,
               mig_layout: list[list[str] | None] | None = None,
               mig_strategy: str | None = None) -> dict[str, str]:
    """GFD labels for a node with ``gpu_count`` GPUs of ``model`` (empty for CPU-only nodes).

    ``mig_strategy`` applies when the config does not set ``flags.migStrategy``.
    """
    if model is None or gpu_count <= 0:
        return {}
    config = config or DEFAULT_CONFIG
    strategy = config.mig_strategy or mig_strategy or "none"
    layout: list[list[str] | None] = list(mig_layout) if mig_layout is not None else [None] * gpu_count
    any_mig = any(entry is not None for entry in layout)
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/mig.capable": _bool(model.mig_capable),
        "nvidia.com/mps.capable": _bool(config.sharing_strategy == "mps" and not any_mig),
    }
    if strategy != "none":
        labels["nvidia.com/mig.strategy"] = strategy
    if model.compute_major:
        labels["nvidia.com/gpu.family"] = model.family
        labels["nvidia.com/gpu.compute.major"] = str(model.compute_major)
        labels["nvidia.com/gpu.compute.minor"] = str(model.compute_minor)
    if not any_mig:
        labels.update(_full_gpu_labels(model, gpu_count, config))
    elif strategy == "none":        # newGPULabelers only: MIG-enabled GPUs as whole, unshared GPUs
        labels.update(_gpu_part(model, layout, config))
    elif strategy == "single":
        labels.update(_single_labels(model, layout, config))
    else:
        labels.update(_mixed_labels(model, layout, config))
    return dict(sorted(labels.items()))


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _sharing(config: DevicePluginConfig, resource: str) -> tuple[str, str, bool]:
    """(replicas, sharing-strategy, -SHARED suffix?) for an un-renamed resource."""
    entry = config.replicated(resource)
    if entry is None:
        return "1", "none", False
    return str(entry.replicas), config.sharing_strategy, not entry.rename


def _full_gpu_labels(model: GpuModel, gpu_count: int, config: DevicePluginConfig) -> dict[str, str]:
    replicas, sharing, suffix = _sharing(config, "nvidia.com/gpu")
    return {
        "nvidia.com/gpu.count": str(gpu_count),
        "nvidia.com/gpu.replicas": replicas,
        "nvidia.com/gpu.sharing-strategy": sharing,
        "nvidia.com/gpu.product": model.product + ("-SHARED" if suffix else ""),
        "nvidia.com/gpu.memory": str(model.memory_mib),
    }


def _mig_set(prefix: str, model: GpuModel, profile: MigProfile, count: int, resource: str,
             config: DevicePluginConfig) -> dict[str, str]:
    replicas, sharing, suffix = _sharing(config, resource)
    product = sanitize_product(f"{model.product}-MIG-{profile.name}") + ("-SHARED" if suffix else "")
    return {
        f"{prefix}.count": str(count),
        f"{prefix}.replicas": replicas,
        f"{prefix}.sharing-strategy": sharing,
        f"{prefix}.product": product,
        f"{prefix}.memory": str(profile.memory_mib),
        f"{prefix}.multiprocessors": str(profile.sms),
        f"{prefix}.slices.gi": str(profile.compute_slices),
        f"{prefix}.slices.ci": str(profile.compute_slices),
        f"{prefix}.engines.copy": str(profile.copy_engines),
        f"{prefix}.engines.decoder": str(profile.decoders),
        f"{prefix}.engines.encoder": str(profile.encoders),
        f"{prefix}.engines.jpeg": str(profile.jpeg),
        f"{prefix}.engines.ofa": str(profile.ofa),
    }


def _single_labels(model: GpuModel, layout: list[list[str] | None],
                   config: DevicePluginConfig) -> dict[str, str]:
    if single_strategy_gfd_reason(layout):
        return {
            "nvidia.com/gpu.count": "0",
            "nvidia.com/gpu.replicas": "0",
            "nvidia.com/gpu.sharing-strategy": "",
            "nvidia.com/gpu.product": f"{model.product}-MIG-INVALID",
            "nvidia.com/gpu.memory": "0",
        }
    profiles = [p for entry in layout for p in entry or ()]
    profile = profile_of(model, profiles[0])
    return _mig_set("nvidia.com/gpu", model, profile, len(profiles), "nvidia.com/gpu", config)


def _gpu_part(model: GpuModel, layout: list[list[str] | None],
              config: DevicePluginConfig) -> dict[str, str]:
    """The ``nvidia.com/gpu.*`` labels of GFD's full-GPU labeler (``internal/lm/mig-strategy.go``
    ``newGPULabelers``), run under every strategy: MIG-enabled GPUs are labelled without sharing
    (``NewGPUResourceLabelerWithoutSharing``: replicas 0, sharing none, no ``-SHARED``); when GPUs
    of the model also run without MIG, the full-GPU labeler overrides them with the sharing
    config. ``count`` is every GPU of the model either way."""
    gpu_count = len(layout)
    if any(entry is None for entry in layout):
        return _full_gpu_labels(model, gpu_count, config)
    return {
        "nvidia.com/gpu.count": str(gpu_count),
        "nvidia.com/gpu.replicas": "0",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/gpu.product": model.product,
        "nvidia.com/gpu.memory": str(model.memory_mib),
    }


def single_strategy_gfd_reason(layout: list[list[str] | None]) -> str | None:
    """GFD's reason for the ``-MIG-INVALID`` labels under the single strategy, in its order of
    checks (``newMigStrategySingleLabeler``; logged as ``Invalid configuration detected for
    mig-strategy=single: <reason>``), or None when the node is valid or has no MIG-enabled GPU.

    >>> single_strategy_gfd_reason([["1g.5gb"], [], None])
    'at least one MIG device is enabled but empty'
    >>> single_strategy_gfd_reason([["1g.5gb"], None])
    'devices with MIG enabled and disable detected'
    """
    enabled = [entry for entry in layout if entry is not None]
    if not enabled:
        return None
    if any(not entry for entry in enabled):
        return "at least one MIG device is enabled but empty"
    if len(enabled) != len(layout):
        return "devices with MIG enabled and disable detected"
    if len({p.replace("+", ".") for entry in enabled for p in entry}) != 1:
        return "more than one MIG device type present on node"
    return None


def _mixed_labels(model: GpuModel, layout: list[list[str] | None],
                  config: DevicePluginConfig) -> dict[str, str]:
    labels = _gpu_part(model, layout, config)
    counts = Counter(profile_of(model, p).name for entry in layout for p in entry or ())
    for name, count in sorted(counts.items()):
        profile = profile_of(model, name)
        labels.update(_mig_set(f"nvidia.com/mig-{profile.dotted}", model, profile, count,
                               profile.resource, config))
    return labels


# ---- node-wide labelers: versions, machine type, GPU mode (internal/lm/nvml.go, machine-type.go)

DEFAULT_DRIVER_VERSION = "550.54.15"     # the driver metrics.gpu_model (nvidia-smi, DCGM) models
# The CUDA driver API version NVML reports per driver branch (CUDA release notes, table 3).
CUDA_OF_DRIVER_BRANCH = {535: (12, 2), 550: (12, 4), 560: (12, 6), 565: (12, 7), 570: (12, 8),
                         575: (12, 9), 580: (13, 0)}


def version_labels(driver_version: str) -> dict[str, str]:
    """``newVersionLabeler``: the deprecated ``cuda.driver.*``/``cuda.runtime.*`` and the new
    ``cuda.driver-version.*``/``cuda.runtime-version.*`` labels for a driver ``X.Y[.Z]``
    (``rev`` empty without ``Z``). The CUDA version is the branch's (the newest branch at or
    below ``X`` in ``CUDA_OF_DRIVER_BRANCH``).

    >>> version_labels("550.107")["nvidia.com/cuda.driver.rev"], version_labels("550.107")["nvidia.com/cuda.runtime-version.full"]
    ('', '12.4')
    """
    parts = driver_version.split(".")
    major, minor = parts[0], parts[1]
    rev = parts[2] if len(parts) > 2 else ""
    branch = max((b for b in CUDA_OF_DRIVER_BRANCH if b <= int(major)), default=min(CUDA_OF_DRIVER_BRANCH))
    cuda_major, cuda_minor = (str(v) for v in CUDA_OF_DRIVER_BRANCH[branch])
    return {
        "nvidia.com/cuda.driver.major": major, "nvidia.com/cuda.driver.minor": minor,
        "nvidia.com/cuda.driver.rev": rev,
        "nvidia.com/cuda.runtime.major": cuda_major, "nvidia.com/cuda.runtime.minor": cuda_minor,
        "nvidia.com/cuda.driver-version.major": major, "nvidia.com/cuda.driver-version.minor": minor,
        "nvidia.com/cuda.driver-version.revision": rev,
        "nvidia.com/cuda.driver-version.full": driver_version,
        "nvidia.com/cuda.runtime-version.major": cuda_major,
        "nvidia.com/cuda.runtime-version.minor": cuda_minor,
        "nvidia.com/cuda.runtime-version.full": f"{cuda_major}.{cuda_minor}",
    }


def driver_version_problem(driver_version: str) -> str:
    """GFD's refusal of a malformed driver version (``newVersionLabeler``), or ``""``."""
    parts = driver_version.split(".")
    if not 2 <= len(parts) <= 3 or not is_digits(parts[0]):
        return (f'error getting driver version: Version "{driver_version}" does not match '
                'format "X.Y[.Z]"')
    return ""


def machine_label(machine_type: str) -> dict[str, str]:
    """``newMachineTypeLabeler``: spaces -> ``-``; ``unknown`` when there is none."""
    return {"nvidia.com/gpu.machine": (machine_type.strip() or "unknown").replace(" ", "-")}


def mode_label(model: GpuModel) -> dict[str, str]:
    """``newGPUModeLabeler``: PCI class 0x030200 (3D controller: data-centre GPUs) -> ``compute``,
    0x030000 (VGA: GeForce and workstation RTX boards) -> ``graphics``."""
    graphics = any(word in model.product for word in ("GeForce", "RTX"))
    return {"nvidia.com/gpu.mode": "graphics" if graphics else "compute"}


# GPUs attached to an NVLink fabric (NVLink switch trays across nodes), for which NVML reports
# fabric info and GFD writes ``nvidia.com/gpu.clique``: GB200 NVL72 compute trays.
FABRIC_MODELS = frozenset({"GB200"})


def clique_label(model: GpuModel, fabric: str) -> dict[str, str]:
    """GFD's ``nvidia.com/gpu.clique`` (``<clusterUUID>.<cliqueID>``, nvidia-gpu-stack.md 2.2):
    only for a model attached to an NVLink fabric whose node reports one (``fabric``, the
    node's ``gpusched.io/gpu-clique``: NVML's GPU fabric info); none otherwise.

    >>> from gpusched.devices.catalog import CATALOG
    >>> clique_label(CATALOG["GB200"], "8c1f.1"), clique_label(CATALOG["H100-80GB"], "8c1f.1")
    ({'nvidia.com/gpu.clique': '8c1f.1'}, {})
    """
    return {"nvidia.com/gpu.clique": fabric} if fabric and model.name in FABRIC_MODELS else {}


# ---- which node labels GFD (and the operator's stand-ins) own ---------------------------------

# Written by users or the operator's ClusterPolicy, never by GFD: kept whatever GFD computes.
USER_SET_LABELS = frozenset({"nvidia.com/device-plugin.config", "nvidia.com/mig.config"})
_OWNED_EXACT = frozenset({"nvidia.com/gfd.timestamp", "nvidia.com/mig.capable",
                          "nvidia.com/mig.strategy", "nvidia.com/mps.capable",
                          "nvidia.com/gpu.present", "nvidia.com/mig.config.state"})
_OWNED_PREFIXES = ("nvidia.com/cuda.", "nvidia.com/vgpu.")
_GPU_OWNED = re.compile(r"^nvidia\.com/(gpu|mig-[0-9a-z.+-]+)\."
                        r"(count|replicas|sharing-strategy|product|memory|family|machine|mode|"
                        r"compute\.(major|minor)|multiprocessors|slices\.(gi|ci)|clique|"
                        r"engines\.(copy|decoder|encoder|jpeg|ofa))$")


def is_gfd_label(key: str) -> bool:
    """A label key GFD writes (``internal/lm``), as opposed to one a user or the operator sets.

    >>> [is_gfd_label(k) for k in ("nvidia.com/gpu.product", "nvidia.com/gpu", "nvidia.com/mig.config",
    ...                            "nvidia.com/mig-1g.5gb.count", "nvidia.com/gpu.deploy.dcgm")]
    [True, False, False, True, False]
    """
    return key in _OWNED_EXACT or key.startswith(_OWNED_PREFIXES) or bool(_GPU_OWNED.match(key))

"""NVIDIA GPU Operator: the ``ClusterPolicy`` (``nvidia.com/v1``) read as the operator reads it.

``policy_config(policy)`` turns a ClusterPolicy dict into a frozen :class:`PolicyConfig` with the
fields gpusched acts on (field names from NVIDIA/gpu-operator api/nvidia/v1/clusterpolicy_types.go):

- ``spec.devicePlugin.enabled`` / ``.config.name`` / ``.config.default``: the ConfigMap (in the
  operator's namespace ``gpu-operator``) the device plugin and GFD read, and its default key.
  The operator runs config-manager with ``DEFAULT_CONFIG=<default>`` and
  ``FALLBACK_STRATEGIES=empty`` (controllers/object_controls.go
  ``transformConfigManagerInitContainer``): a node without the label
  ``nvidia.com/device-plugin.config`` and no default gets the empty config (no sharing), never
  "the only key" as the standalone Helm chart's ``named,single`` fallbacks would;
- ``spec.mig.strategy``: passed as ``MIG_STRATEGY`` to the plugin and GFD
  (``applyMIGConfiguration``); an environment variable is "set" for urfave/cli, so it wins over
  the config file's ``flags.migStrategy`` (k8s-device-plugin api/config/v1/flags.go
  ``updateFromCLIFlag``);
- ``spec.migManager.enabled`` / ``.config.name``: the mig-parted ConfigMap (default
  ``default-mig-parted-config``);
- ``spec.driver.version``: what nvidia-smi reports as the driver (``metrics.container``);
- ``spec.<component>.enabled`` (default true; ``dcgm`` default false): which operand
  DaemonSets exist.

:data:`COMPONENTS` lists the operand DaemonSets as the operator's ``assets/state-*`` manifests
name and label them, images as the Helm chart's values.yaml defaults (``app: <name>``; node selector ``nvidia.com/gpu.deploy.<operand>=true``;
toleration ``nvidia.com/gpu:NoSchedule``; priority class ``system-node-critical``).

Neighbours: ``devices.plugin_config`` (which ConfigMap and key), ``devices.advertise``; the
cluster's ``gpu_operator`` controller builds the DaemonSets; imports nothing from the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

OPERATOR_NAMESPACE = "gpu-operator"
POLICY_NAME = "cluster-policy"
DEFAULT_MIG_PARTED_CONFIG = "default-mig-parted-config"
DEPLOY_LABEL = "nvidia.com/gpu.deploy."
MIG_STRATEGIES = ("none", "single", "mixed")


@dataclass(frozen=True, slots=True)
class Component:
    """One operand DaemonSet."""

    spec_key: str            # the ClusterPolicy section: devicePlugin, gfd, ...
    name: str                # DaemonSet name and its ``app`` label
    operand: str             # nvidia.com/gpu.deploy.<operand>
    container: str           # main container name
    image: str               # default repository/image:version
    mig_only: bool = False   # only on MIG-capable nodes (mig-manager)
    default_enabled: bool = True


COMPONENTS = (
    Component("driver", "nvidia-driver-daemonset", "driver", "nvidia-driver-ctr",
              "nvcr.io/nvidia/driver:595.91.07"),
    Component("toolkit", "nvidia-container-toolkit-daemonset", "container-toolkit",
              "nvidia-container-toolkit-ctr", "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0"),
    Component("devicePlugin", "nvidia-device-plugin-daemonset", "device-plugin",
              "nvidia-device-plugin", "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"),
    Component("gfd", "gpu-feature-discovery", "gpu-feature-discovery", "gpu-feature-discovery",
              "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"),
    Component("dcgmExporter", "nvidia-dcgm-exporter", "dcgm-exporter", "nvidia-dcgm-exporter",
              "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless"),
    Component("migManager", "nvidia-mig-manager", "mig-manager", "nvidia-mig-manager",
              "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.15.0", mig_only=True),
    Component("validator", "nvidia-operator-validator", "operator-validator",
              "nvidia-operator-validator", "nvcr.io/nvidia/gpu-operator:main-latest"),
)
DEVICE_PLUGIN = next(c for c in COMPONENTS if c.spec_key == "devicePlugin")


@dataclass(frozen=True, slots=True)
class PolicyConfig:
    """What gpusched reads from the ClusterPolicy."""

    name: str = POLICY_NAME
    enabled: Mapping[str, bool] | None = None       # spec key -> enabled
    device_plugin_config: str = ""                   # ConfigMap name in gpu-operator
    device_plugin_default: str = ""
    mig_strategy: str = ""                           # "" = not set (plugin default none)
    mig_parted_config: str = DEFAULT_MIG_PARTED_CONFIG
    driver_version: str = ""
    images: Mapping[str, str] | None = None          # spec key -> image

    def is_enabled(self, spec_key: str) -> bool:
        return bool((self.enabled or {}).get(spec_key, True))


def _section(spec: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = spec.get(key)
    return value if isinstance(value, Mapping) else {}


def _image(section: Mapping[str, Any], default: str) -> str:
    repo, image, version = (str(section.get(k) or "") for k in ("repository", "image", "version"))
    if not image:
        return default
    ref = f"{repo}/{image}" if repo else image
    return f"{ref}:{version}" if version and not version.startswith("sha256:") else \
        f"{ref}@{version}" if version else ref


def policy_config(policy: Mapping[str, Any] | None) -> PolicyConfig | None:
    """The :class:`PolicyConfig` of a ClusterPolicy dict (None for no policy)."""
    if not policy:
        return None
    spec = policy.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    enabled, images = {}, {}
    for component in COMPONENTS:
        section = _section(spec, component.spec_key)
        flag = section.get("enabled")
        enabled[component.spec_key] = component.default_enabled if flag is None else bool(flag)
        images[component.spec_key] = _image(section, component.image)
    plugin_config = _section(_section(spec, "devicePlugin"), "config")
    mig_config = _section(_section(spec, "migManager"), "config")
    strategy = str(_section(spec, "mig").get("strategy") or "")
    return PolicyConfig(
        name=str((policy.get("metadata") or {}).get("name", POLICY_NAME)), enabled=enabled,
        device_plugin_config=str(plugin_config.get("name") or ""),
        device_plugin_default=str(plugin_config.get("default") or ""),
        mig_strategy=strategy if strategy in MIG_STRATEGIES else "",
        mig_parted_config=str(mig_config.get("name") or DEFAULT_MIG_PARTED_CONFIG),
        driver_version=str(_section(spec, "driver").get("version") or ""), images=images)


def active_policy(policies: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The ClusterPolicy the operator acts on: the one it already acts on (state ready or
    notReady), else the oldest; ties by name. Later ones get state ``ignored``."""
    if not policies:
        return None
    return min(policies, key=lambda p: (
        (p.get("status") or {}).get("state") not in ("ready", "notReady"),
        (p.get("metadata") or {}).get("creationTimestamp", ""),
        (p.get("metadata") or {}).get("name", "")))

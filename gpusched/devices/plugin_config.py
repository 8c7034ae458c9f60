"""NVIDIA device-plugin config file v1: parsing, the active sharing strategy, per-node selection.

``parse_config(text_or_dict)`` reads the YAML/JSON config the device plugin and GFD read
(nvidia-gpu-stack.md section 1): ``version`` (absent -> ``v1``, else ``unknown version: <v>``),
``flags.migStrategy``, ``flags.plugin.sharedDevicesAllocationPolicy``, ``sharing.timeSlicing`` /
``sharing.mps``. As upstream's ``DisableResourceNamingInConfig`` does, custom ``resources``,
``rename`` and ``devices`` are ignored with upstream's warnings: replicas apply to every device of
a named resource, and a resource is either renamed to ``<name>.shared`` (``renameByDefault``) or
keeps its name.

Which config a node gets (``select_config``), in this order:

1. the ConfigMap key named by the node label ``nvidia.com/device-plugin.config``;
2. the default key (Helm ``config.default``; gpusched reads it from the ConfigMap annotation
   ``gpusched.io/device-plugin-config-default`` or from the caller);
3. config-manager's fallbacks: without a ClusterPolicy the Helm chart's ``named,single`` (a key
   called ``default``, else the only key; this is also what makes the tutorials' single-key
   ConfigMaps such as ``time-slicing-config`` with key ``any`` work unchanged); with a
   ClusterPolicy the operator's ``empty``;
4. otherwise no config: whole GPUs, no sharing.

Which ConfigMap gpusched reads (``config_source``): with a ClusterPolicy, its
``devicePlugin.config.name`` in namespace ``gpu-operator``. Without one
(``find_device_plugin_configmap``): the ConfigMap annotated ``gpusched.io/device-plugin-config:
"true"`` (the stand-in for ClusterPolicy ``devicePlugin.config.name``; several -> first by
namespace/name), else the first existing of ``DEVICE_PLUGIN_CONFIGMAP_NAMES`` searched in
``DEVICE_PLUGIN_NAMESPACES`` order (namespace first, then name order), else the standalone Helm
chart's own ConfigMap ``<release>-nvidia-device-plugin-configs`` (any namespace).

Neighbours: used by ``devices.node`` (replicas, allocation policy), ``devices.gfd`` (labels),
``devices.advertise`` (selection); imports only ``gpusched.errors`` and PyYAML.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Mapping

import yaml

from gpusched.errors import UsageError
from gpusched.objects import limits
from gpusched.objects.names import dns1123_subdomain_errors

log = logging.getLogger(__name__)

CONFIG_LABEL = "nvidia.com/device-plugin.config"
CONFIGMAP_ANNOTATION = "gpusched.io/device-plugin-config"
DEFAULT_KEY_ANNOTATION = "gpusched.io/device-plugin-config-default"
DEVICE_PLUGIN_NAMESPACES = ("gpu-operator", "kube-system", "nvidia-device-plugin", "default")
DEVICE_PLUGIN_CONFIGMAP_NAMES = ("device-plugin-config", "nvidia-device-plugin-config",
                                 "time-slicing-config", "time-slicing-config-all",
                                 "time-slicing-config-fine", "nvidia-device-plugin",
                                 "nvidia-plugin-configs")
# The standalone Helm chart's own ConfigMap (``config.map``): "<fullname>-configs", where
# fullname is the release name when it contains the chart name, else "<release>-nvidia-device-
# plugin" (deployments/helm/nvidia-device-plugin/templates/_helpers.tpl ``configMapName``).
HELM_CONFIGMAP_SUFFIX = "nvidia-device-plugin-configs"
NAMED_FALLBACK = "default"        # config-manager's FallbackStrategyNamedConfig key

MIG_STRATEGIES = ("none", "single", "mixed")
ALLOCATION_POLICIES = ("distributed", "packed")
DEVICE_LIST_STRATEGIES = ("envvar", "volume-mounts", "cdi-annotations", "cdi-cri")
MPS_MAX_CLIENTS_VOLTA_PLUS = 48     # compute capability >= 7.5 (upstream compares with v7.5)
MPS_MAX_CLIENTS_OLDER = 16


class DevicePluginConfigError(UsageError):
    """A config the device plugin would refuse to start with (the pod would crash-loop)."""


@dataclass(frozen=True, slots=True)
class ReplicatedResource:
    name: str            # fully qualified, e.g. "nvidia.com/gpu"
    replicas: int        # >= 2
    rename: str = ""     # "<name>.shared" under renameByDefault, else ""

    @property
    def advertised(self) -> str:
        return self.rename or self.name


@dataclass(frozen=True, slots=True)
class ReplicatedResources:
    rename_by_default: bool = False
    fail_requests_greater_than_one: bool = False
    resources: tuple[ReplicatedResource, ...] = ()


@dataclass(frozen=True, slots=True)
class Sharing:
    time_slicing: ReplicatedResources | None = None
    mps: ReplicatedResources | None = None

    @property
    def strategy(self) -> str:
        """``Sharing.SharingStrategy()``: mps > time-slicing > none."""
        if self.mps and any(r.replicas > 1 for r in self.mps.resources):
            return "mps"
        if self.time_slicing and any(r.replicas > 1 for r in self.time_slicing.resources):
            return "time-slicing"
        return "none"

    @property
    def active(self) -> ReplicatedResources | None:
        return {"mps": self.mps, "time-slicing": self.time_slicing}.get(self.strategy)


@dataclass(frozen=True, slots=True)
class DevicePluginConfig:
    version: str = "v1"
    mig_strategy: str | None = None          # None: not set in the file (caller's default applies)
    fail_on_init_error: bool = True
    allocation_policy: str = "distributed"   # flags.plugin.sharedDevicesAllocationPolicy
    device_list_strategy: tuple[str, ...] = ("envvar",)
    device_id_strategy: str = "uuid"
    sharing: Sharing = Sharing()

    @property
    def sharing_strategy(self) -> str:
        return self.sharing.strategy

    def replicated(self, resource: str) -> ReplicatedResource | None:
        """The active sharing entry for ``resource`` (un-renamed name), or None."""
        active = self.sharing.active
        if active is None:
            return None
        return next((r for r in active.resources if r.name == resource), None)

    def replicas_for(self, resource: str) -> int:
        entry = self.replicated(resource)
        return entry.replicas if entry else 1

    def advertised_name(self, resource: str) -> str:
        entry = self.replicated(resource)
        return entry.advertised if entry else resource

    @property
    def fail_requests_greater_than_one(self) -> bool:
        active = self.sharing.active
        return bool(active and active.fail_requests_greater_than_one)


DEFAULT_CONFIG = DevicePluginConfig()


def _where(where: str, message: str) -> str:
    return f"{where}: {message}" if where else message


def _fail(where: str, message: str) -> DevicePluginConfigError:
    return DevicePluginConfigError(_where(where, message))


def parse_config(source: str | Mapping[str, Any] | None, where: str = "") -> DevicePluginConfig:
    """Parse a device-plugin config file (YAML or JSON text, or an already-loaded dict).

    Errors carry upstream's message, prefixed with ``where`` when given:

    >>> try:
    ...     parse_config("version: v2")
    ... except DevicePluginConfigError as err:
    ...     print(err)
    unknown version: v2
    """
    if source is None or (isinstance(source, str) and not source.strip()):
        return DEFAULT_CONFIG
    data = _load(source, where)
    version = data.get("version") or "v1"
    if version != "v1":
        raise _fail(where, f"unknown version: {version}")
    if data.get("resources"):
        log.warning("Customizing the 'resources' field is not yet supported in the config. "
                    "Ignoring...")
    flags = _mapping(data.get("flags"), "flags", where)
    plugin = _mapping(flags.get("plugin"), "flags.plugin", where)
    sharing_raw = _mapping(data.get("sharing"), "sharing", where)
    mig_strategy, policy, list_strategy = _plugin_flags(flags, plugin, where)
    sharing = Sharing(
        time_slicing=_replicated(sharing_raw.get("timeSlicing"), "timeSlicing", False, where),
        mps=_replicated(sharing_raw.get("mps"), "mps", True, where),
    )
    return DevicePluginConfig(
        version="v1", mig_strategy=mig_strategy,
        fail_on_init_error=bool(flags.get("failOnInitError", True)),
        allocation_policy=policy, device_list_strategy=list_strategy,
        device_id_strategy=str(plugin.get("deviceIDStrategy") or "uuid"), sharing=sharing)


def _load(source: str | Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """The config file's top-level mapping (YAML or JSON text, or a loaded dict)."""
    try:
        data = limits.safe_load(source) if isinstance(source, str) else source
    except limits.LimitError as err:
        raise limits.LimitError(_where(where, f"unable to parse config file: {err}")) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise _fail(where, f"unable to parse config file: invalid YAML{at}") from None
    if not isinstance(data, Mapping):
        raise _fail(where, "unable to parse config file: expected a mapping")
    return data


def _plugin_flags(flags: Mapping[str, Any], plugin: Mapping[str, Any], where: str
                  ) -> tuple[str | None, str, tuple[str, ...]]:
    """``flags.migStrategy``, ``flags.plugin.sharedDevicesAllocationPolicy`` and
    ``flags.plugin.deviceListStrategy``, checked in that order."""
    mig_strategy = flags.get("migStrategy")
    if mig_strategy is not None and mig_strategy not in MIG_STRATEGIES:
        raise _fail(where, f"invalid --mig-strategy option: {mig_strategy}")
    policy = plugin.get("sharedDevicesAllocationPolicy") or "distributed"
    if policy not in ALLOCATION_POLICIES:
        raise _fail(where, f"invalid sharedDevicesAllocationPolicy: {policy}")
    list_strategy = plugin.get("deviceListStrategy") or ["envvar"]
    list_strategy = [list_strategy] if isinstance(list_strategy, str) else list(list_strategy)
    for strategy in list_strategy:
        if strategy not in DEVICE_LIST_STRATEGIES:
            raise _fail(where, f"invalid strategy: {strategy}")
    return mig_strategy, policy, tuple(list_strategy)


def _mapping(value: Any, path: str, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _fail(where, f"unable to parse config file: {path} must be a mapping")
    return value


def _replicated(raw: Any, sharing_id: str, is_mps: bool, where: str) -> ReplicatedResources | None:
    if raw is None:
        return None
    raw = _mapping(raw, f"sharing.{sharing_id}", where)
    rename_by_default = bool(raw.get("renameByDefault", False))
    fail_flag = raw.get("failRequestsGreaterThanOne")
    # MPS: unset is forced to true at load; an explicit false is honoured (v0.20.0 and later).
    fail = (True if is_mps else False) if fail_flag is None else bool(fail_flag)
    items = raw.get("resources")
    if not items:
        raise _fail(where, "no resources specified")
    if not isinstance(items, list):
        raise _fail(where, f"unable to parse config file: sharing.{sharing_id}.resources must be a list")
    resources = tuple(_resource(item, sharing_id, rename_by_default, where) for item in items)
    return ReplicatedResources(rename_by_default, fail, resources)


def _resource(item: Any, sharing_id: str, rename_by_default: bool, where: str) -> ReplicatedResource:
    """One ``sharing.<id>.resources[]`` entry: name, replicas, devices (the rest is ignored)."""
    item = _mapping(item, f"sharing.{sharing_id}.resources[]", where)
    name = _resource_name(item, where)
    if "replicas" not in item or item["replicas"] is None:
        raise _fail(where, "no replicas specified")
    replicas = item["replicas"]
    if isinstance(replicas, bool) or not isinstance(replicas, int):
        raise _fail(where, f"unable to parse config file: replicas must be an integer, got {replicas!r}")
    if replicas < 2:
        raise _fail(where, "number of replicas must be >= 2")
    if replicas > limits.MAX_SHARING_REPLICAS:
        raise limits.LimitError(_where(where, f"number of replicas must be <= "
                                              f"{limits.MAX_SHARING_REPLICAS}, got {replicas}"))
    devices = item.get("devices")
    if isinstance(devices, str) and devices != "all":
        raise _fail(where, f"devices set as '{devices}' but the only valid string input is 'all'")
    if item.get("rename"):
        log.warning("Setting the 'rename' field in sharing.%s.resources is not yet supported in "
                    "the config. Ignoring...", sharing_id)
    if devices not in (None, "all"):
        log.warning("Customizing the 'devices' field in sharing.%s.resources is not yet supported "
                    "in the config. Ignoring...", sharing_id)
    return ReplicatedResource(name, replicas, f"{name}.shared" if rename_by_default else "")


def _resource_name(item: Mapping[str, Any], where: str) -> str:
    """NewResourceName (k8s-device-plugin api/config/v1/resources.go): ``nvidia.com/`` is put in
    front of any name that does not start with it, the whole must be at most 63 characters and the
    part after the first ``/`` a DNS-1123 subdomain (so any other prefix is refused)."""
    name = item.get("name")
    if not name:
        raise _fail(where, "no resource name specified")
    full = str(name) if str(name).startswith("nvidia.com/") else f"nvidia.com/{name}"
    if len(full) > 63:
        raise _fail(where, f"fully-qualified resource name must be 63 characters or less: {full}")
    invalid = dns1123_subdomain_errors(full.split("/", 1)[1])
    if invalid:
        raise _fail(where, f"incorrect format for resource name '{full}': [{' '.join(invalid)}]")
    return full


def mps_max_clients(compute_major: int, compute_minor: int) -> int:
    """48 MPS clients per device from compute capability 7.5, else 16."""
    at_least = (compute_major, compute_minor) >= (7, 5)
    return MPS_MAX_CLIENTS_VOLTA_PLUS if at_least else MPS_MAX_CLIENTS_OLDER


def check_for_node(config: DevicePluginConfig, compute: tuple[int, int],
                   mig_enabled: bool) -> None:
    """Checks that need the node's GPUs: the MPS client limit and no MPS on MIG."""
    if config.sharing_strategy != "mps" or config.sharing.mps is None:
        return
    limit = mps_max_clients(*compute)
    for entry in config.sharing.mps.resources:
        if entry.replicas > limit:
            raise DevicePluginConfigError(
                f"invalid device maximum allowed replicas exceeded: {entry.replicas} > {limit}")
        if entry.name.startswith("nvidia.com/mig-"):
            raise DevicePluginConfigError(
                f"MPS sharing is not supported for MIG devices: {entry.name}")
    if mig_enabled:
        raise DevicePluginConfigError("MPS sharing is not supported on MIG-enabled GPUs")


# ---- choosing the ConfigMap and the key -----------------------------------------------------


def find_device_plugin_configmap(configmaps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The ConfigMap the device plugin reads (see the module docstring), or None."""
    def meta(cm: dict[str, Any]) -> dict[str, Any]:
        return cm.get("metadata") or {}

    marked = [cm for cm in configmaps
              if str((meta(cm).get("annotations") or {}).get(CONFIGMAP_ANNOTATION, "")).lower() == "true"]
    if marked:
        return min(marked, key=lambda cm: (meta(cm).get("namespace", "default"), meta(cm).get("name", "")))
    by_place = {(meta(cm).get("namespace", "default"), meta(cm).get("name")): cm for cm in configmaps}
    for namespace in DEVICE_PLUGIN_NAMESPACES:
        for name in DEVICE_PLUGIN_CONFIGMAP_NAMES:
            if (namespace, name) in by_place:
                return by_place[(namespace, name)]
    helm = sorted(place for place in by_place if str(place[1]).endswith(HELM_CONFIGMAP_SUFFIX))
    return by_place[helm[0]] if helm else None


@dataclass(frozen=True, slots=True)
class ConfigSource:
    """Where a node's device-plugin config comes from."""

    configmap: dict[str, Any] | None
    default_key: str | None
    fallbacks: tuple[str, ...]
    where: str = ""
    error: str = ""


def config_source(configmaps: list[dict[str, Any]], policy: Any = None,
                  default_key: str | None = None) -> ConfigSource:
    """The ConfigMap, default key and fallbacks of the device plugin.

    With a ClusterPolicy (``devices.operator.PolicyConfig``): ``devicePlugin.config.name`` in the
    operator's namespace, its ``default``, fallback ``empty``; no name -> no config. Without
    one: :func:`find_device_plugin_configmap`, the default from the caller or the ConfigMap's
    annotation, fallbacks ``named,single`` (the Helm chart's).
    """
    if policy is not None:
        name = policy.device_plugin_config
        if not name:
            return ConfigSource(None, None, ("empty",))
        namespace = "gpu-operator"
        found = next((cm for cm in configmaps
                      if (cm.get("metadata") or {}).get("name") == name
                      and (cm.get("metadata") or {}).get("namespace") == namespace), None)
        where = f"ConfigMap {namespace}/{name}"
        if found is None:
            return ConfigSource(None, None, ("empty",), where,
                                f'ClusterPolicy {policy.name}: spec.devicePlugin.config.name: '
                                f'configmap "{name}" not found in namespace {namespace}')
        return ConfigSource(found, policy.device_plugin_default or None, ("empty",), where)
    configmap = find_device_plugin_configmap(configmaps)
    where = ""
    if configmap:
        meta = configmap.get("metadata") or {}
        where = f"ConfigMap {meta.get('namespace', 'default')}/{meta.get('name', '')}"
    return ConfigSource(configmap, default_key or default_key_of(configmap), ("named", "single"),
                        where)


def default_key_of(configmap: dict[str, Any] | None) -> str | None:
    """The default config key a ConfigMap names in its annotation, if any."""
    if not configmap:
        return None
    value = ((configmap.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_KEY_ANNOTATION)
    return str(value) if value else None


def select_config(configmap_data: Mapping[str, str] | None, node_labels: Mapping[str, str],
                  default_key: str | None = None, where: str = "",
                  fallbacks: tuple[str, ...] = ("named", "single")
                  ) -> tuple[str, DevicePluginConfig]:
    """The (key, config) a node gets, as config-manager's ``updateConfigName`` chooses: node
    label, else default key, else the fallback strategies in order: ``named`` (a key called
    ``default``), ``single`` (the only key), ``empty`` (no config). The standalone Helm chart
    passes ``named,single``; the GPU Operator ``empty``.

    Returns ``("", DEFAULT_CONFIG)`` when nothing selects a key. A label or default naming a
    missing key raises ``DevicePluginConfigError`` (the config-manager would fail too).
    """
    data = dict(configmap_data or {})
    label = node_labels.get(CONFIG_LABEL, "")
    key, origin = "", ""
    if label:
        key = label
        origin = f"node label {CONFIG_LABEL}={label}"
    elif default_key:
        key, origin = default_key, f"default config {default_key!r}"
    else:
        for fallback in fallbacks:
            if fallback == "named" and NAMED_FALLBACK in data:
                key = NAMED_FALLBACK
                break
            if fallback == "single" and len(data) == 1:
                key = next(iter(data))
                break
            if fallback == "empty":
                break
    if not key:
        return "", DEFAULT_CONFIG
    if key not in data:
        known = ", ".join(sorted(data)) or "none"
        raise _fail(where, f'config "{key}" selected by {origin} not found (keys: {known})')
    return key, parse_config(data[key], where=f"{where} key {key!r}".strip() if where else "")

"""Scheduling profiles: a KubeSchedulerConfiguration-style YAML over the default profile.

::

    apiVersion: kubescheduler.config.k8s.io/v1
    kind: KubeSchedulerConfiguration
    percentageOfNodesToScore: 50            # optional; 0 or absent = adaptive (below)
    profiles:
    - schedulerName: gpu-binpack
      plugins:
        score:
          enabled: [{name: NodeResourcesFit, weight: 5}]
          disabled: [{name: NodeResourcesBalancedAllocation}]   # or [{name: "*"}]
      pluginConfig:
      - name: NodeResourcesFit
        args: {scoringStrategy: {type: MostAllocated}}

Resolution follows upstream's multiPoint expansion. The default profile is kube-scheduler
v1.35's: the multiPoint list ``DEFAULT_PLUGINS`` is upstream's ``getDefaultPlugins`` with
``applyFeatureGates`` applied (``pkg/scheduler/apis/config/v1/default_plugins.go``; the in-tree
EBS/GCE PD/Azure disk limit plugins left the defaults in v1.31, kubernetes PR #124500; DRA is GA,
so DynamicResources sits before DefaultPreemption), same order, same weights. Entries gpusched
does not model (``NOT_MODELLED``, with the reason each changes no outcome here) are left out.
Scoring is therefore upstream's: NodeResourcesFit LeastAllocated over cpu and memory (weights
1/1) - GPUs are not scored.

gpusched's own plugin ``GpuDevices`` (device-level fit of MIG/shared/fractional GPUs and, at
Reserve, the device plugin's choice of devices) is appended to every profile's multiPoint list
with its PreScore/Score disabled by default (``DEFAULT_DISABLED``, upstream's default
``Disabled`` set mechanism), so it never ranks nodes unless a profile enables it at ``score``.
GPU-aware scoring is opt-in: ``build_frameworks`` adds gpusched's named profiles
``GPUSCHED_PROFILES`` - ``gpusched-binpack`` (GpuDevices scores, strategy binpack) and
``gpusched-spread`` - which pods select with ``spec.schedulerName``; a configuration that names
one of them itself replaces it.

``plugins.multiPoint`` edits the multiPoint list; each
extension point then takes the multiPoint plugins that implement it, and its own
``enabled``/``disabled`` apply on top: per point, plugins enabled at the point and also in
multiPoint come first (their weight wins), then the other multiPoint plugins, then plugins
enabled only at that point. ``disabled: [{name: "*"}]`` drops every multiPoint plugin at that
point. Any registered plugin takes any positive integer weight; weight 0 or absent means the
default weight (or 1). Unknown plugin names, points a plugin does not implement, and bad values
raise ``UsageError`` naming the field.

``percentageOfNodesToScore`` (``num_feasible_nodes_to_find``): upstream's adaptive default is
``50 - nodes/125`` percent, at least 5%; at least 100 nodes are always searched.

Neighbours: builds plugins from ``scheduler.plugins.REGISTRY``; used by ``scheduler.runner``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import yaml

from gpusched.errors import UsageError
from gpusched.scheduler.plugins import REGISTRY, Factory

API_VERSIONS = ("kubescheduler.config.k8s.io/v1", "kubescheduler.config.k8s.io/v1beta3")
DEFAULT_SCHEDULER_NAME = "default-scheduler"
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
DEFAULT_PERCENTAGE_BASE = 50

# kube-scheduler v1.35's default multiPoint list, in its order, with score weights (0 = no
# weight given): pkg/scheduler/apis/config/v1/default_plugins.go getDefaultPlugins +
# applyFeatureGates (DynamicResourceAllocation on by default since v1.34).
UPSTREAM_DEFAULT_PLUGINS: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 0),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
)
# Upstream defaults gpusched leaves out, and why no scheduling outcome here depends on them.
NOT_MODELLED: Mapping[str, str] = {
    "SchedulingGates": "PreEnqueue: gated pods are held by the caller (never queued)",
    "VolumeRestrictions": "no in-tree/CSI volume sources are modelled (PVC binding is VolumeBinding's)",
    "NodeVolumeLimits": "no CSINode attach limits are modelled",
    "VolumeZone": "PersistentVolumes carry no zone labels here",
    "ImageLocality": "nodes report no images, so upstream scores every node 0",
    "DefaultBinder": "Bind: the caller binds (store or API) after Reserve/Permit",
}
GPU_DEVICES = "GpuDevices"
# Every profile's multiPoint list: upstream's defaults gpusched implements, then GpuDevices.
DEFAULT_PLUGINS: tuple[tuple[str, int], ...] = tuple(
    (n, w) for n, w in UPSTREAM_DEFAULT_PLUGINS if n not in NOT_MODELLED) + ((GPU_DEVICES, 1),)
# Per extension point, the multiPoint plugins disabled unless a profile enables them there.
DEFAULT_DISABLED: Mapping[str, tuple[str, ...]] = {"preScore": (GPU_DEVICES,), "score": (GPU_DEVICES,)}
DEFAULT_WEIGHTS = {name: weight for name, weight in DEFAULT_PLUGINS if weight}

# gpusched's own named profiles (opt in with spec.schedulerName): GPU-aware device scoring.
GPUSCHED_BINPACK = "gpusched-binpack"
GPUSCHED_SPREAD = "gpusched-spread"
GPUSCHED_PROFILES: Mapping[str, Mapping[str, Any]] = {
    name: {"schedulerName": name,
           "plugins": {"preScore": {"enabled": [{"name": GPU_DEVICES}]},
                       "score": {"enabled": [{"name": GPU_DEVICES, "weight": 1}]}},
           "pluginConfig": [{"name": GPU_DEVICES, "args": {"strategy": strategy}}]}
    for name, strategy in ((GPUSCHED_BINPACK, "binpack"), (GPUSCHED_SPREAD, "spread"))
}

# extension point (config key) -> the method a plugin needs to serve it, in cycle order.
POINTS: dict[str, str] = {
    "queueSort": "sort_key",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
}
IGNORED_POINTS = ("preEnqueue", "preBind", "bind", "postBind")   # done by the caller


@dataclass(frozen=True, slots=True)
class PluginSpec:
    name: str
    weight: int = 0


@dataclass(frozen=True)
class ProfileConfig:
    """One resolved profile: per extension point, the plugins in order (with score weights)."""

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    points: Mapping[str, tuple[PluginSpec, ...]] = field(default_factory=dict)
    plugin_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    percentage_of_nodes_to_score: int = 0      # 0 = adaptive
    registry: Mapping[str, Factory] = field(default_factory=lambda: REGISTRY, compare=False,
                                            repr=False)   # what the plugin names resolve to


class Framework:
    """A profile's instantiated plugins, one instance per plugin name, listed per point."""

    def __init__(self, config: ProfileConfig) -> None:
        self.config = config
        self.scheduler_name = config.scheduler_name
        self.percentage_of_nodes_to_score = config.percentage_of_nodes_to_score
        self.plugins: dict[str, Any] = {}
        for specs in config.points.values():
            for spec in specs:
                if spec.name not in self.plugins:
                    self.plugins[spec.name] = config.registry[spec.name](dict(config.plugin_args.get(spec.name, {})))
        listed = {point: [self.plugins[s.name] for s in config.points.get(point, ())] for point in POINTS}
        sort = listed["queueSort"]
        self.queue_sort = sort[0] if sort else None
        self.pre_filter = tuple(listed["preFilter"])
        self.filter = tuple(listed["filter"])
        self.post_filter = tuple(listed["postFilter"])
        self.pre_score = tuple(listed["preScore"])
        self.score = tuple((self.plugins[s.name], s.weight or DEFAULT_WEIGHTS.get(s.name, 1),
                            getattr(self.plugins[s.name], "normalize", None))
                           for s in config.points.get("score", ()))
        self.reserve = tuple(listed["reserve"])
        self.permit = tuple(listed["permit"])

    def __repr__(self) -> str:
        return f"Framework({self.scheduler_name!r}, plugins={list(self.plugins)})"


def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int) -> int:
    """How many feasible nodes a cycle looks for (upstream ``numFeasibleNodesToFind``).

    >>> num_feasible_nodes_to_find(50, 0), num_feasible_nodes_to_find(1000, 0), num_feasible_nodes_to_find(5000, 0)
    (50, 420, 500)
    """
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND or percentage >= 100:
        return num_all_nodes
    adaptive = percentage
    if adaptive <= 0:
        adaptive = DEFAULT_PERCENTAGE_BASE - num_all_nodes // 125
        if adaptive < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            adaptive = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    num_nodes = num_all_nodes * adaptive // 100
    return max(num_nodes, MIN_FEASIBLE_NODES_TO_FIND)


def _implements(name: str, point: str, registry: Mapping[str, Factory]) -> bool:
    factory = registry.get(name)
    return factory is not None and hasattr(_plugin_type(name, factory), POINTS[point])


_TYPES: dict[Factory, type] = {}


def _plugin_type(name: str, factory: Factory) -> type:
    """The class of a registered plugin (built once with default args)."""
    if factory not in _TYPES:
        try:
            _TYPES[factory] = type(factory(None))
        except Exception as exc:   # a factory that needs args: config errors name it later
            raise UsageError(f"plugin {name}: cannot be built with default args: {exc}") from None
    return _TYPES[factory]


def default_profile(scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> ProfileConfig:
    return resolve_profile({"schedulerName": scheduler_name}, 0, 0)


def _specs(entries: Any, where: str, registry: Mapping[str, Factory]) -> list[PluginSpec]:
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise UsageError(f"{where}: must be a list of {{name, weight}}")
    specs = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise UsageError(f"{where}[{i}].name: Required value")
        name = entry["name"]
        if name != "*" and name not in registry:
            raise UsageError(f'{where}[{i}].name: Invalid value: "{name}": unknown plugin; '
                             f"registered: {', '.join(sorted(registry))}")
        weight = entry.get("weight", 0)
        if not isinstance(weight, int) or isinstance(weight, bool) or weight < 0:
            raise UsageError(f"{where}[{i}].weight: Invalid value: {weight!r}: must be a "
                             f"non-negative integer")
        specs.append(PluginSpec(name, weight))
    return specs


def resolve_profile(profile: Mapping[str, Any], index: int, percentage: int,
                    registry: Mapping[str, Factory] = REGISTRY) -> ProfileConfig:
    """Resolve one ``profiles[index]`` entry over the defaults (see module docstring) against
    ``registry`` (the in-tree plugins unless a caller merges more in)."""
    where = f"profiles[{index}]"
    plugins = profile.get("plugins") or {}
    if not isinstance(plugins, Mapping):
        raise UsageError(f"{where}.plugins: must be a mapping of extension points")
    for point in plugins:
        if point not in POINTS and point not in IGNORED_POINTS and point != "multiPoint":
            raise UsageError(f'{where}.plugins: unknown extension point "{point}"')
    multi = [PluginSpec(n, w) for n, w in DEFAULT_PLUGINS if n in registry]
    multi_cfg = plugins.get("multiPoint") or {}
    disabled = _specs(multi_cfg.get("disabled"), f"{where}.plugins.multiPoint.disabled", registry)
    if any(s.name == "*" for s in disabled):
        multi = []
    off = {s.name for s in disabled}
    multi = [s for s in multi if s.name not in off]
    for spec in _specs(multi_cfg.get("enabled"), f"{where}.plugins.multiPoint.enabled", registry):
        multi = [s for s in multi if s.name != spec.name] + [spec]
    points: dict[str, tuple[PluginSpec, ...]] = {}
    for point in POINTS:
        cfg = plugins.get(point) or {}
        enabled = _specs(cfg.get("enabled"), f"{where}.plugins.{point}.enabled", registry)
        for i, spec in enumerate(enabled):
            if not _implements(spec.name, point, registry):
                raise UsageError(f'{where}.plugins.{point}.enabled[{i}].name: Invalid value: '
                                 f'"{spec.name}": plugin does not extend {point}')
        point_disabled = _specs(cfg.get("disabled"), f"{where}.plugins.{point}.disabled", registry)
        drop_all = any(s.name == "*" for s in point_disabled)
        drop = {s.name for s in point_disabled} | set(DEFAULT_DISABLED.get(point, ()))
        from_multi = [] if drop_all else [s for s in multi if _implements(s.name, point, registry)
                                          and s.name not in drop]
        explicit = {s.name for s in enabled}
        in_multi = {s.name for s in from_multi}
        ordered = ([s for s in enabled if s.name in in_multi]
                   + [s for s in from_multi if s.name not in explicit]
                   + [s for s in enabled if s.name not in in_multi])
        if point == "score":
            ordered = [PluginSpec(s.name, s.weight or DEFAULT_WEIGHTS.get(s.name, 1)) for s in ordered]
        points[point] = tuple(ordered)
    if len(points["queueSort"]) > 1:
        raise UsageError(f"{where}.plugins.queueSort: only one queue sort plugin can be enabled")
    args: dict[str, Mapping[str, Any]] = {}
    for i, entry in enumerate(profile.get("pluginConfig") or []):
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if name not in registry:
            raise UsageError(f'{where}.pluginConfig[{i}].name: Invalid value: "{name}": unknown plugin')
        args[str(name)] = entry.get("args") or {}
    own = profile.get("percentageOfNodesToScore")
    pct = percentage if own is None else own
    if not isinstance(pct, int) or isinstance(pct, bool) or not 0 <= pct <= 100:
        raise UsageError(f"{where}.percentageOfNodesToScore: Invalid value: {pct!r}: "
                         f"not in valid range [0-100]")
    return ProfileConfig(profile.get("schedulerName") or DEFAULT_SCHEDULER_NAME, points, args, pct,
                         registry)


def parse_config(config: Mapping[str, Any] | str,
                 registry: Mapping[str, Factory] = REGISTRY) -> list[ProfileConfig]:
    """Profiles from a KubeSchedulerConfiguration (a dict or YAML text). No profiles = default."""
    if isinstance(config, str):
        try:
            config = yaml.safe_load(config) or {}
        except yaml.YAMLError as exc:
            raise UsageError(f"scheduler config: invalid YAML: {exc}".splitlines()[0]) from None
    if not isinstance(config, Mapping):
        raise UsageError("scheduler config: expected a KubeSchedulerConfiguration mapping")
    api_version = config.get("apiVersion", API_VERSIONS[0])
    if api_version not in API_VERSIONS:
        raise UsageError(f'scheduler config: apiVersion: Unsupported value: "{api_version}": '
                         f'supported values: "{API_VERSIONS[0]}"')
    if config.get("kind", "KubeSchedulerConfiguration") != "KubeSchedulerConfiguration":
        raise UsageError(f'scheduler config: kind: Unsupported value: "{config.get("kind")}": '
                         f'supported values: "KubeSchedulerConfiguration"')
    percentage = config.get("percentageOfNodesToScore") or 0
    profiles = config.get("profiles") or [{}]
    resolved = [resolve_profile(p or {}, i, percentage, registry) for i, p in enumerate(profiles)]
    names = [p.scheduler_name for p in resolved]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise UsageError(f'profiles[{i}].schedulerName: Duplicate value: "{name}"')
    return resolved


def load_config(path: str, registry: Mapping[str, Factory] = REGISTRY) -> list[ProfileConfig]:
    """``parse_config`` of a file; a missing file is a ``UsageError``."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise UsageError(f"scheduler config {path}: {exc.strerror}") from None
    return parse_config(text, registry)


def gpusched_profiles(percentage: int = 0) -> list[ProfileConfig]:
    """gpusched's named GPU-scoring profiles (``GPUSCHED_PROFILES``), resolved."""
    return [resolve_profile(p, i, percentage) for i, p in enumerate(GPUSCHED_PROFILES.values())]


def build_frameworks(configs: list[ProfileConfig] | None = None) -> dict[str, Framework]:
    """Scheduler name -> Framework; ``None`` gives the default profile. gpusched's named
    profiles are added after the given ones unless a given profile already has their name."""
    configs = list(configs or [default_profile()])
    names = {c.scheduler_name for c in configs}
    configs += [c for c in gpusched_profiles() if c.scheduler_name not in names]
    return {c.scheduler_name: Framework(c) for c in configs}

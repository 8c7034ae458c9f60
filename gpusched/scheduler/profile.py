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

Resolution (``resolve_profile``) runs the steps of ``scheduler.profile_steps``, each upstream's:
read and validate, merge the defaults (``mergePluginSet``), expand multiPoint per extension
point (``expandMultiPointPlugins``), weigh the score plugins. ``plugins.multiPoint`` edits the
multiPoint list (a re-configured default keeps its place); each extension point then takes the
multiPoint plugins that implement it, and its own ``enabled``/``disabled`` apply on top: per
point, plugins enabled at the point and also in multiPoint come first (their weight wins),
then the other multiPoint plugins, then plugins enabled only at that point.
``disabled: [{name: "*"}]`` drops every multiPoint plugin at that point. Any registered plugin
takes any positive integer weight; weight 0 or absent means the default weight (or 1).
Unknown plugin names, points a plugin does not implement (read off its class), and bad values
raise ``UsageError`` naming the field.

``percentageOfNodesToScore`` (``num_feasible_nodes_to_find``): upstream's adaptive default is
``50 - nodes/125`` percent, at least 5%; at least 100 nodes are always searched.

Neighbours: ``scheduler.profile_steps`` (the resolution steps); builds plugins from a registry
(``scheduler.plugins.default_registry()`` unless the caller passes one); used by
``scheduler.runner``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

import yaml

from gpusched.errors import UsageError
from gpusched.objects import limits
from gpusched.scheduler.framework import (POINT_KEYS, FilterPlugin, PermitPlugin, PostFilterPlugin,
                                          PreFilterPlugin, PreScorePlugin, QueueSortPlugin,
                                          ReservePlugin, ScoreExtensions, ScorePlugin)
from gpusched.scheduler.plugins import default_registry
from gpusched.scheduler.profile_steps import (MULTI_POINT, PluginSet, PluginSpec, check_implemented,
                                              check_queue_sort, expand_multi_point,
                                              merge_plugin_set, read_percentage, read_plugin_args,
                                              read_plugins, with_weights)
from gpusched.scheduler.registry import Registry

__all__ = ["PluginSpec", "ProfileConfig", "Framework", "resolve_profile", "parse_config",
           "load_config", "build_frameworks", "default_profile", "gpusched_profiles",
           "num_feasible_nodes_to_find"]
Normalize = Callable[[Any, Any, np.ndarray, np.ndarray], np.ndarray]

API_VERSIONS = ("kubescheduler.config.k8s.io/v1", "kubescheduler.config.k8s.io/v1beta3")
DEFAULT_SCHEDULER_NAME = "default-scheduler"
# The fields of KubeSchedulerConfiguration and KubeSchedulerProfile (staging/src/k8s.io/
# kube-scheduler/config/v1/types.go); kube-scheduler decodes its --config strictly (since 1.16),
# so any other key is an error.
CONFIG_FIELDS = frozenset({"apiVersion", "kind", "parallelism", "leaderElection",
                           "clientConnection", "enableProfiling", "enableContentionProfiling",
                           "percentageOfNodesToScore", "podInitialBackoffSeconds",
                           "podMaxBackoffSeconds", "profiles", "extenders",
                           "delayCacheUntilActive"})
PROFILE_FIELDS = frozenset({"schedulerName", "percentageOfNodesToScore", "plugins",
                            "pluginConfig"})
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

# scheduler-plugins' second scheduler (its Helm chart ``as-a-second-scheduler``: scheduler name
# ``scheduler-plugins-scheduler``) with Coscheduling as ``manifests/coscheduling/
# scheduler-config.yaml`` enables it: in multiPoint, and the only queue sort.
SCHEDULER_PLUGINS_SCHEDULER = "scheduler-plugins-scheduler"
COSCHEDULING_PROFILE: Mapping[str, Any] = {
    "schedulerName": SCHEDULER_PLUGINS_SCHEDULER,
    "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}},
}
NAMED_PROFILES: Mapping[str, Mapping[str, Any]] = {
    **GPUSCHED_PROFILES, SCHEDULER_PLUGINS_SCHEDULER: COSCHEDULING_PROFILE}

# The default plugin sets: upstream's multiPoint list, and per point the plugins it leaves off.
DEFAULT_SETS: Mapping[str, PluginSet] = {
    MULTI_POINT: PluginSet(tuple(PluginSpec(n, w) for n, w in DEFAULT_PLUGINS)),
    **{point: PluginSet(disabled=frozenset(names)) for point, names in DEFAULT_DISABLED.items()},
}


@dataclass(frozen=True)
class ProfileConfig:
    """One resolved profile: per extension point, the plugins in order (with score weights)."""

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    points: Mapping[str, tuple[PluginSpec, ...]] = field(default_factory=dict)
    plugin_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    percentage_of_nodes_to_score: int = 0      # 0 = adaptive
    registry: Registry = field(default_factory=default_registry, compare=False, repr=False)


class Framework:
    """A profile's instantiated plugins, one instance per plugin name, listed per point and
    typed by the point's Protocol (upstream ``frameworkImpl``'s per-point plugin slices)."""

    def __init__(self, config: ProfileConfig) -> None:
        self.config = config
        self.scheduler_name = config.scheduler_name
        self.percentage_of_nodes_to_score = config.percentage_of_nodes_to_score
        names = dict.fromkeys(s.name for specs in config.points.values() for s in specs)
        self.plugins: dict[str, Any] = {
            name: config.registry[name].new(dict(config.plugin_args.get(name, {}))) for name in names}
        sort: tuple[QueueSortPlugin, ...] = self._listed("queueSort", QueueSortPlugin)
        self.queue_sort = sort[0] if sort else None
        self.pre_filter: tuple[PreFilterPlugin, ...] = self._listed("preFilter", PreFilterPlugin)
        self.filter: tuple[FilterPlugin, ...] = self._listed("filter", FilterPlugin)
        self.post_filter: tuple[PostFilterPlugin, ...] = self._listed("postFilter", PostFilterPlugin)
        self.pre_score: tuple[PreScorePlugin, ...] = self._listed("preScore", PreScorePlugin)
        scores: tuple[ScorePlugin, ...] = self._listed("score", ScorePlugin)
        self.score: tuple[tuple[ScorePlugin, int, Normalize | None], ...] = tuple(
            (plugin, spec.weight or DEFAULT_WEIGHTS.get(spec.name, 1),
             plugin.normalize if isinstance(plugin, ScoreExtensions) else None)
            for plugin, spec in zip(scores, config.points.get("score", ())))
        self.reserve: tuple[ReservePlugin, ...] = self._listed("reserve", ReservePlugin)
        self.permit: tuple[PermitPlugin, ...] = self._listed("permit", PermitPlugin)

    def _listed(self, point: str, protocol: Any) -> tuple[Any, ...]:
        """The point's plugins, each checked against the point's Protocol (``protocol`` is typed
        ``Any``: mypy takes no Protocol class for a ``type[T]`` parameter, python/mypy#4717).
        An instance of the registered class is not checked again: the profile lists it at the
        point because its class implements it (``PluginEntry.points``), and Python 3.11's
        ``isinstance`` against a Protocol with a data member lists the Protocol's members at each
        call (about 20 us; 180 checks, 4 ms of a command, over the four profiles)."""
        listed = []
        for spec in self.config.points.get(point, ()):
            plugin = self.plugins[spec.name]
            if type(plugin) is not self.config.registry[spec.name].cls \
                    and not isinstance(plugin, protocol):     # a factory built another class
                raise UsageError(f"plugin {spec.name}: the object its factory built does not "
                                 f"implement {point}")
            listed.append(plugin)
        return tuple(listed)

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


def default_profile(scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> ProfileConfig:
    return resolve_profile({"schedulerName": scheduler_name}, 0, 0)


def resolve_profile(profile: Mapping[str, Any], index: int, percentage: int,
                    registry: Registry | None = None) -> ProfileConfig:
    """Resolve one ``profiles[index]`` entry over the defaults (see module docstring) against
    ``registry`` (``default_registry()`` unless a caller merges more in)."""
    registry = default_registry() if registry is None else registry
    where = f"profiles[{index}]"
    check_fields(profile, PROFILE_FIELDS, f"{where}.")
    custom = read_plugins(profile.get("plugins"), f"{where}.plugins", registry)
    known = PluginSet(tuple(s for s in DEFAULT_SETS[MULTI_POINT].enabled if s.name in registry))
    multi = merge_plugin_set(known, custom[MULTI_POINT])
    points: dict[str, tuple[PluginSpec, ...]] = {}
    for point in POINT_KEYS:
        def implements(name: str, point: str = point) -> bool:
            return point in registry[name].points
        check_implemented(point, custom[point], f"{where}.plugins", implements)
        at_point = merge_plugin_set(DEFAULT_SETS.get(point, PluginSet()), custom[point])
        points[point] = expand_multi_point(at_point, multi, implements)
    points["score"] = with_weights(points["score"], DEFAULT_WEIGHTS)
    check_queue_sort(points, f"{where}.plugins")
    args = read_plugin_args(profile.get("pluginConfig"), f"{where}.pluginConfig", registry)
    pct = read_percentage(profile.get("percentageOfNodesToScore"), percentage,
                          f"{where}.percentageOfNodesToScore")
    return ProfileConfig(profile.get("schedulerName") or DEFAULT_SCHEDULER_NAME, points, args, pct,
                         registry)


def check_fields(mapping: Mapping[str, Any], known: frozenset[str], where: str) -> None:
    """Strict decoding: the first key outside ``known`` (in the file's order) is an error, as
    kube-scheduler's ``strict decoding error: unknown field "profiles[0].x"``."""
    unknown = [str(key) for key in mapping if key not in known]
    if unknown:
        raise UsageError(f'scheduler config: strict decoding error: unknown field "{where}{unknown[0]}"')


def parse_config(config: Mapping[str, Any] | str,
                 registry: Registry | None = None) -> list[ProfileConfig]:
    """Profiles from a KubeSchedulerConfiguration (a dict or YAML text). No profiles = default."""
    if isinstance(config, str):
        try:
            config = limits.safe_load(config) or {}
        except limits.LimitError as exc:
            raise UsageError(f"scheduler config: {exc}") from None
        except yaml.YAMLError as exc:
            raise UsageError(f"scheduler config: invalid YAML: {exc}".splitlines()[0]) from None
    if not isinstance(config, Mapping):
        raise UsageError("scheduler config: expected a KubeSchedulerConfiguration mapping")
    check_fields(config, CONFIG_FIELDS, "")
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


def load_config(path: str, registry: Registry | None = None) -> list[ProfileConfig]:
    """``parse_config`` of a file; a missing file is a ``UsageError``."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise UsageError(f"scheduler config {path}: {exc.strerror}") from None
    return parse_config(text, registry)


def gpusched_profiles(percentage: int = 0) -> list[ProfileConfig]:
    """gpusched's named profiles, resolved: the GPU-scoring ones (``GPUSCHED_PROFILES``) and
    scheduler-plugins' Coscheduling scheduler (``COSCHEDULING_PROFILE``)."""
    return [resolve_profile(p, i, percentage) for i, p in enumerate(NAMED_PROFILES.values())]


def build_frameworks(configs: list[ProfileConfig] | None = None) -> dict[str, Framework]:
    """Scheduler name -> Framework; ``None`` gives the default profile. gpusched's named
    profiles are added after the given ones unless a given profile already has their name."""
    configs = list(configs or [default_profile()])
    names = {c.scheduler_name for c in configs}
    configs += [c for c in gpusched_profiles() if c.scheduler_name not in names]
    return {c.scheduler_name: Framework(c) for c in configs}

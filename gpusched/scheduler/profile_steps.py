"""The steps of resolving one scheduler profile, each small and tested on its own.

Upstream resolves a ``KubeSchedulerProfile`` in three places, and so does this module:

1. **Read and validate** the ``plugins:`` mapping: known extension points, ``enabled`` /
   ``disabled`` lists of known plugin names with non-negative integer weights
   (``read_plugins``), ``pluginConfig`` (``read_plugin_args``), ``percentageOfNodesToScore``
   (``read_percentage``) - ``pkg/scheduler/apis/config/validation``.
2. **Merge the defaults** into each extension point's set (``merge_plugin_set``): upstream's
   ``mergePluginSet`` in ``pkg/scheduler/apis/config/v1/default_plugins.go`` (called by
   ``mergePlugins`` for MultiPoint and every point): the custom ``disabled`` plus the default
   ``disabled``; the default ``enabled`` plugins in their order unless disabled (``*`` disables
   all), a re-configured default replaced *in place*, then the other custom plugins.
3. **Expand multiPoint** per extension point (``expand_multi_point``): upstream's
   ``frameworkImpl.expandMultiPointPlugins`` (``pkg/scheduler/framework/runtime/framework.go``):
   a point disabled with ``*`` keeps only its own ``enabled``; otherwise the multiPoint plugins
   that implement the point and are not disabled there; ordering: plugins enabled at the point
   that are also in multiPoint (the point's entry wins: an override), then the other
   multiPoint plugins, then plugins enabled only at the point. ``with_weights`` gives each score
   plugin its weight (the configured one, else the default profile's, else 1).

Whether a plugin implements a point comes from its class (``registry.PluginEntry.points``);
enabling a plugin at a point it does not implement is an error (upstream ``updatePluginList``:
"plugin %q does not extend %s plugin"), and so is a name enabled twice in one list ("plugin %q
already registered as %q").

Neighbours: ``scheduler.framework`` (point keys), ``scheduler.registry``; used by
``scheduler.profile``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from gpusched.errors import UsageError
from gpusched.scheduler.framework import CALLER_POINTS, POINT_KEYS
from gpusched.scheduler.registry import Registry

MULTI_POINT = "multiPoint"
ALL = "*"


@dataclass(frozen=True, slots=True)
class PluginSpec:
    name: str
    weight: int = 0


@dataclass(frozen=True, slots=True)
class PluginSet:
    """One extension point's configuration (upstream ``v1.PluginSet``)."""

    enabled: tuple[PluginSpec, ...] = ()
    disabled: frozenset[str] = field(default_factory=frozenset)   # names; "*" = all


EMPTY = PluginSet()


def _unique(specs: list[PluginSpec], where: str, point: str) -> tuple[PluginSpec, ...]:
    """The list as given; a name enabled twice is refused as upstream's ``updatePluginList``
    refuses it (``plugin %q already registered as %q``, the point's plugin interface)."""
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise UsageError(f'{where}: plugin "{spec.name}" already registered as '
                             f'"{point[:1].upper() + point[1:]}Plugin"')
        seen.add(spec.name)
    return tuple(specs)


def read_specs(entries: Any, where: str, registry: Registry) -> list[PluginSpec]:
    """An ``enabled`` / ``disabled`` list: ``[{name, weight}]`` of registered names (or ``*``)."""
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise UsageError(f"{where}: must be a list of {{name, weight}}")
    specs = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise UsageError(f"{where}[{i}].name: Required value")
        name = entry["name"]
        if name != ALL and name not in registry:
            raise UsageError(f'{where}[{i}].name: Invalid value: "{name}": unknown plugin; '
                             f"registered: {', '.join(sorted(registry))}")
        weight = entry.get("weight", 0)
        if not isinstance(weight, int) or isinstance(weight, bool) or weight < 0:
            raise UsageError(f"{where}[{i}].weight: Invalid value: {weight!r}: must be a "
                             f"non-negative integer")
        specs.append(PluginSpec(name, weight))
    return specs


def read_plugin_set(config: Any, where: str, registry: Registry) -> PluginSet:
    """One point's ``{enabled, disabled}``; absent = empty."""
    if not config:
        return EMPTY
    if not isinstance(config, Mapping):
        raise UsageError(f"{where}: must be a mapping with enabled and disabled lists")
    enabled = read_specs(config.get("enabled"), f"{where}.enabled", registry)
    disabled = read_specs(config.get("disabled"), f"{where}.disabled", registry)
    return PluginSet(_unique(enabled, f"{where}.enabled", where.rsplit(".", 1)[-1]), frozenset(s.name for s in disabled))


def read_plugins(plugins: Any, where: str, registry: Registry) -> dict[str, PluginSet]:
    """A profile's ``plugins:`` mapping -> its multiPoint and per-point sets (validated)."""
    plugins = plugins or {}
    if not isinstance(plugins, Mapping):
        raise UsageError(f"{where}: must be a mapping of extension points")
    for point in plugins:
        if point not in POINT_KEYS and point not in CALLER_POINTS and point != MULTI_POINT:
            raise UsageError(f'{where}: unknown extension point "{point}"')
    return {point: read_plugin_set(plugins.get(point), f"{where}.{point}", registry)
            for point in (MULTI_POINT, *POINT_KEYS)}


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """The custom set merged into the default one (upstream ``mergePluginSet``)."""
    disabled = custom.disabled | default.disabled
    overrides = {s.name: s for s in custom.enabled}
    enabled: list[PluginSpec] = []
    if ALL not in disabled:
        enabled = [overrides.get(s.name, s) for s in default.enabled if s.name not in disabled]
    replaced = {s.name for s in enabled}
    enabled += [s for s in custom.enabled if s.name not in replaced]
    return PluginSet(tuple(enabled), disabled)


def check_implemented(point: str, at_point: PluginSet, where: str,
                      implements: Callable[[str], bool]) -> None:
    """Every plugin enabled at ``point`` implements it (upstream ``updatePluginList``)."""
    for i, spec in enumerate(at_point.enabled):
        if not implements(spec.name):
            raise UsageError(f'{where}.{point}.enabled[{i}].name: Invalid value: '
                             f'"{spec.name}": plugin does not extend {point}')


def expand_multi_point(at_point: PluginSet, multi: PluginSet,
                       implements: Callable[[str], bool]) -> tuple[PluginSpec, ...]:
    """One point's plugins in order (upstream ``expandMultiPointPlugins``, one extension point)."""
    if ALL in at_point.disabled:
        return at_point.enabled
    from_multi = [s for s in multi.enabled if implements(s.name) and s.name not in at_point.disabled]
    in_multi = {s.name for s in from_multi}
    explicit = {s.name for s in at_point.enabled}
    return (tuple(s for s in at_point.enabled if s.name in in_multi)
            + tuple(s for s in from_multi if s.name not in explicit)
            + tuple(s for s in at_point.enabled if s.name not in in_multi))


def with_weights(specs: tuple[PluginSpec, ...],
                 defaults: Mapping[str, int]) -> tuple[PluginSpec, ...]:
    """Score plugins with their weight: configured, else the default profile's, else 1."""
    return tuple(PluginSpec(s.name, s.weight or defaults.get(s.name, 1)) for s in specs)


def check_queue_sort(points: Mapping[str, tuple[PluginSpec, ...]], where: str) -> None:
    if len(points.get("queueSort", ())) > 1:
        raise UsageError(f"{where}.queueSort: only one queue sort plugin can be enabled")


def read_plugin_args(entries: Any, where: str, registry: Registry) -> dict[str, Mapping[str, Any]]:
    """``pluginConfig``: plugin name -> its args mapping."""
    if entries is not None and not isinstance(entries, list):
        raise UsageError(f"{where}: must be a list of {{name, args}}")
    args: dict[str, Mapping[str, Any]] = {}
    for i, entry in enumerate(entries or []):
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str) or name not in registry:
            raise UsageError(f'{where}[{i}].name: Invalid value: "{name}": unknown plugin')
        value = entry.get("args") or {}
        if not isinstance(value, Mapping):
            raise UsageError(f"{where}[{i}].args: must be a mapping")
        args[name] = value
    return args


def read_percentage(own: Any, inherited: int, where: str) -> int:
    """The profile's ``percentageOfNodesToScore`` (else the configuration's), 0..100."""
    pct = inherited if own is None else own
    if not isinstance(pct, int) or isinstance(pct, bool) or not 0 <= pct <= 100:
        raise UsageError(f"{where}: Invalid value: {pct!r}: not in valid range [0-100]")
    return int(pct)

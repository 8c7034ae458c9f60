"""Plugin registries: plugin name -> ``PluginEntry`` (the plugin's class and how to build it).

kube-scheduler keeps a ``runtime.Registry`` (name -> factory) of its in-tree plugins and merges
an out-of-tree one into it (``Registry.Merge``: a name in both is an error, "a plugin named X
already exists"); which extension points a plugin serves Go proves at compile time
(``var _ framework.FilterPlugin = &NodeName{}``). Here an entry keeps the plugin's class, and
its extension points are read off the class (``framework.extension_points``), never by building
an instance.

Out-of-tree plugins come from installed distributions that declare them in the entry-point
group ``gpusched.plugins`` (``name = "package.module:PluginClass"``): the entry point's name is
the plugin name (it must equal the class's ``name``), and the class is built as
``PluginClass(args)`` with the profile's ``pluginConfig`` args (or ``None``). A broken entry
point is a one-line ``UsageError`` naming it. ``examples/out-of-tree-plugin/`` is a tiny one.

Neighbours: ``scheduler.framework`` (extension points); used by ``scheduler.plugins`` (the
in-tree registry) and ``scheduler.profile``.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from gpusched.errors import UsageError
from gpusched.scheduler.framework import contract_problems, extension_points

ENTRY_POINT_GROUP = "gpusched.plugins"
Factory = Callable[[dict[str, Any] | None], object]


@dataclass(frozen=True, slots=True)
class PluginEntry:
    """A registered plugin: its class (what it implements) and its factory (args -> instance)."""

    cls: type
    new: Factory

    @property
    def name(self) -> str:
        return str(getattr(self.cls, "name", ""))

    @property
    def points(self) -> tuple[str, ...]:
        return extension_points(self.cls)


Registry = Mapping[str, PluginEntry]


def registry_of(*entries: PluginEntry) -> dict[str, PluginEntry]:
    """A registry from entries keyed by each class's ``name``; a name twice is an error."""
    return merged(*({e.name: e} for e in entries))


def merged(*registries: Registry) -> dict[str, PluginEntry]:
    """One registry from several (upstream ``Registry.Merge``): a name in two is an error."""
    out: dict[str, PluginEntry] = {}
    for registry in registries:
        for name, entry in registry.items():
            if name in out:
                raise UsageError(f"a plugin named {name} already exists")
            out[name] = entry
    return out


def _entry_point_entry(point: importlib.metadata.EntryPoint, group: str) -> PluginEntry:
    dist = getattr(point, "dist", None)
    where = (f"plugin entry point {point.name} = {point.value} (group {group}"
             + (f", distribution {dist.name})" if dist is not None else ")"))
    try:
        cls = point.load()
    except Exception as exc:          # any import-time failure of third-party code: one line
        raise UsageError(f"{where}: cannot load: {type(exc).__name__}: {exc}") from None
    if not isinstance(cls, type):
        raise UsageError(f"{where}: not a class")
    if getattr(cls, "name", None) != point.name:
        raise UsageError(f"{where}: the class's name is {getattr(cls, 'name', None)!r}, "
                         f"not {point.name!r}")
    problems = contract_problems(cls) or ([] if extension_points(cls) else
                                          ["implements no extension point"])
    if problems:
        raise UsageError(f"{where}: {problems[0]}")
    return PluginEntry(cls, cls)


def entry_point_plugins(group: str = ENTRY_POINT_GROUP) -> dict[str, PluginEntry]:
    """The plugins installed distributions declare in ``group``, by name."""
    found = {(p.name, p.value): p for p in importlib.metadata.entry_points(group=group)}
    points = sorted(found.values(), key=lambda p: p.name)    # one dist seen twice on sys.path
    return merged(*({p.name: _entry_point_entry(p, group)} for p in points))

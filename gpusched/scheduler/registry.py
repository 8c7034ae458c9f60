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
``importlib.metadata`` (about 20 ms of CPU to import, a third of a one-pod ``apply``'s scheduler
imports) is imported only when some installed distribution's ``entry_points.txt`` names the
group, or where the distributions cannot be listed cheaply (``_may_declare``).

Neighbours: ``scheduler.framework`` (extension points); used by ``scheduler.plugins`` (the
in-tree registry) and ``scheduler.profile``.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from importlib.machinery import PathFinder
from typing import TYPE_CHECKING, Any, Callable, Mapping

from gpusched.errors import UsageError
from gpusched.scheduler.framework import contract_problems, extension_points

if TYPE_CHECKING:
    import importlib.metadata

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


def _declares(folder: str, group: str) -> bool:
    """Whether a ``*.dist-info`` / ``*.egg-info`` folder's ``entry_points.txt`` mentions ``group``."""
    try:
        with open(os.path.join(folder, "entry_points.txt"), encoding="utf-8") as text:
            return group in text.read()
    except (OSError, UnicodeDecodeError):
        return False


def _may_declare(group: str) -> bool:
    """False only when no installed distribution can declare ``group``: the one finder of
    distributions is the path finder, and no metadata folder in a folder on ``sys.path`` has an
    ``entry_points.txt`` naming it (``importlib.metadata``'s ``FastPath`` reads these folders:
    names ending ``.dist-info``/``.egg-info``, an egg's ``EGG-INFO``). A zip or egg file on
    ``sys.path``, or another finder of distributions, answers True: the full scan decides."""
    finders = [f for f in sys.meta_path if hasattr(f, "find_distributions")]
    if any(f is not PathFinder for f in finders):
        return True
    for entry in sys.path:
        root = entry or "."
        if not os.path.isdir(root):
            if os.path.exists(root):
                return True          # a zip file: importlib.metadata lists its members
            continue
        try:
            with os.scandir(root) as children:
                if any(child.name.lower().endswith(("dist-info", "egg-info"))
                       and _declares(child.path, group) for child in children):
                    return True
        except OSError:
            return True
    return False


def entry_point_plugins(group: str = ENTRY_POINT_GROUP) -> dict[str, PluginEntry]:
    """The plugins installed distributions declare in ``group``, by name."""
    if not _may_declare(group):
        return {}
    import importlib.metadata
    found = {(p.name, p.value): p for p in importlib.metadata.entry_points(group=group)}
    points = sorted(found.values(), key=lambda p: p.name)    # one dist seen twice on sys.path
    return merged(*({p.name: _entry_point_entry(p, group)} for p in points))

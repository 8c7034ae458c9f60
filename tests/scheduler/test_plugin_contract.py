"""The plugin contract: every registered plugin implements the extension points its profile
entries claim, read off its class - the table upstream writes as Go compile-time assertions
(``var _ framework.FilterPlugin = &NodeName{}`` in each pkg/scheduler/framework/plugins/*
file; interfaces in staging/src/k8s.io/kube-scheduler/framework/interface.go) - and the built
instance is the point's Protocol (``scheduler.framework``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gpusched import policies
from gpusched.errors import UsageError
from gpusched.scheduler.framework import (EXTENSION_POINTS, SUCCESS, FilterPlugin, ScorePlugin,
                                          contract_problems, extension_points)
from gpusched.scheduler.plugins import DECLARED, IN_TREE
from gpusched.scheduler.profile import Framework, default_profile, gpusched_profiles, resolve_profile
from gpusched.scheduler.registry import PluginEntry, merged, registry_of
from gpusched.sim.experiment import POLICIES, TIE_BREAKS
from gpusched.sim.experiment_profile import REGISTRY as EXPERIMENT_REGISTRY, experiment_profile

PROTOCOL = {p.key: p.protocol for p in EXTENSION_POINTS}


def _claims() -> list[tuple[str, str, str]]:
    """(profile, point, plugin) for every entry of every profile gpusched ships."""
    profiles = [("default-scheduler", default_profile())]
    profiles += [(p.scheduler_name, p) for p in gpusched_profiles()]
    profiles += [(f"experiment-{name}",
                  experiment_profile(plugin, {"seed": 1, "target_workload": []}, TIE_BREAKS.get(name, ())))
                 for name, (_, plugin) in POLICIES.items()]
    return [(label, point, spec.name) for label, config in profiles
            for point, specs in config.points.items() for spec in specs]


CLAIMS = _claims()


@pytest.mark.parametrize("profile,point,plugin", CLAIMS, ids=[f"{a}-{b}-{c}" for a, b, c in CLAIMS])
def test_profile_entry_is_implemented_by_the_plugin_class(profile: str, point: str, plugin: str) -> None:
    entry = EXPERIMENT_REGISTRY[plugin]
    assert point in extension_points(entry.cls)
    assert contract_problems(entry.cls) == []


def test_every_registered_plugin_is_claimed_somewhere_and_built_as_its_protocols() -> None:
    claimed = {(point, plugin) for _, point, plugin in CLAIMS}
    for name, entry in EXPERIMENT_REGISTRY.items():
        assert entry.name == name
        assert any(p == name for _, p in claimed), f"{name} is in no shipped profile"
        instance = entry.new({"target_workload": []} if name == "PolicyFGD" else None)
        for point in entry.points:
            assert isinstance(instance, PROTOCOL[point]), (name, point)


# ---- the contract read off classes, never instances ------------------------------------------


class Unbuildable:
    """Implements Filter; building it needs args the class check never passes."""

    name = "Unbuildable"

    def __init__(self, args: dict[str, Any] | None) -> None:
        if not args:
            raise ValueError("needs args")

    def filter(self, state: Any, pod: Any, snapshot: Any, candidates: np.ndarray) -> list[Any]:
        return []


class Scorer:
    name = "Scorer"

    def score(self, state: Any, pod: Any, snapshot: Any, nodes: np.ndarray) -> np.ndarray:
        return np.zeros(len(nodes), dtype=np.int64)


class HalfReserve:
    name = "HalfReserve"

    def reserve(self, state: Any, pod: Any, snapshot: Any, node: int) -> Any:
        return SUCCESS


class ShortFilter:
    name = "ShortFilter"

    def filter(self, state: Any, pod: Any) -> list[Any]:
        return []


class NormalizeOnly:
    name = "NormalizeOnly"

    def normalize(self, state: Any, pod: Any, nodes: Any, scores: Any) -> Any:
        return scores


def test_points_come_from_the_class_so_an_unbuildable_default_does_not_matter() -> None:
    registry = merged(IN_TREE, registry_of(PluginEntry(Unbuildable, Unbuildable)))
    config = resolve_profile({"plugins": {"filter": {"enabled": [{"name": "Unbuildable"}]}},
                              "pluginConfig": [{"name": "Unbuildable", "args": {"x": 1}}]},
                             0, 0, registry)
    assert [s.name for s in config.points["filter"]][-1] == "Unbuildable"
    assert isinstance(Framework(config).filter[-1], FilterPlugin)


@pytest.mark.parametrize("cls,points,problem", [
    (Scorer, ("score",), None),
    (Unbuildable, ("filter",), None),
    (HalfReserve, (), "does not implement reserve: needs reserve(self + 4 arguments), "
                      "unreserve(self + 4 arguments)"),
    (ShortFilter, (), "does not implement filter: needs filter(self + 4 arguments)"),
    (NormalizeOnly, (), "normalize needs score and (self + 4 arguments)"),
], ids=["score", "filter", "reserve-without-unreserve", "filter-wrong-arity", "normalize-alone"])
def test_extension_points_and_problems_of_a_class(cls: type, points: tuple[str, ...],
                                                   problem: str | None) -> None:
    assert extension_points(cls) == points
    assert contract_problems(cls) == ([] if problem is None else [problem])


def test_a_factory_that_builds_another_class_is_checked_against_the_point() -> None:
    """The class says Filter; the factory builds a Scorer: the built object is checked against
    the point's Protocol (an instance of the registered class is not checked again)."""
    registry = merged(IN_TREE, registry_of(PluginEntry(Unbuildable, lambda _args: Scorer())))
    config = resolve_profile({"plugins": {"filter": {"enabled": [{"name": "Unbuildable"}]}}},
                             0, 0, registry)
    with pytest.raises(UsageError, match="^plugin Unbuildable: the object its factory built does "
                                         "not implement filter$"):
        Framework(config)


def test_scorer_is_a_score_plugin_instance() -> None:
    assert isinstance(Scorer(), ScorePlugin)


def test_enabling_a_point_the_class_lacks_names_the_field() -> None:
    registry = merged(IN_TREE, registry_of(PluginEntry(Scorer, lambda _args: Scorer())))
    with pytest.raises(UsageError, match=r'^profiles\[0\]\.plugins\.filter\.enabled\[0\]\.name: '
                                         r'Invalid value: "Scorer": plugin does not extend filter$'):
        resolve_profile({"plugins": {"filter": {"enabled": [{"name": "Scorer"}]}}}, 0, 0, registry)


def test_a_name_in_two_registries_is_an_error() -> None:
    # upstream runtime.Registry.Merge: "a plugin named %v already exists"
    with pytest.raises(UsageError, match="^a plugin named NodeName already exists$"):
        merged(IN_TREE, registry_of(IN_TREE["NodeName"]))


def test_policies_stay_out_of_the_in_tree_registry() -> None:
    assert not set(policies.REGISTRY) & set(IN_TREE)


@pytest.mark.parametrize("point", [*PROTOCOL, "normalize"])
def test_declared_lists_are_what_the_classes_implement(point: str) -> None:
    # scheduler/plugins/__init__.py DECLARED: the typed lists mypy checks against the Protocols
    if point == "normalize":
        implementing = {e.cls for e in IN_TREE.values() if hasattr(e.cls, "normalize")}
    else:
        implementing = {e.cls for e in IN_TREE.values() if point in e.points}
    assert set(DECLARED[point]) == implementing

"""Each step of profile resolution on its own (``scheduler.profile_steps``), against upstream:
mergePluginSet (pkg/scheduler/apis/config/v1/default_plugins.go), expandMultiPointPlugins
(pkg/scheduler/framework/runtime/framework.go), and the validation messages."""

from __future__ import annotations

import pytest

from gpusched.errors import UsageError
from gpusched.scheduler.plugins import IN_TREE
from gpusched.scheduler.profile_steps import (PluginSet, PluginSpec, check_implemented,
                                              check_queue_sort, expand_multi_point,
                                              merge_plugin_set, read_percentage, read_plugin_args,
                                              read_plugin_set, read_plugins, with_weights)


def ps(*enabled: str | tuple[str, int], disabled: tuple[str, ...] = ()) -> PluginSet:
    specs = tuple(PluginSpec(e) if isinstance(e, str) else PluginSpec(*e) for e in enabled)
    return PluginSet(specs, frozenset(disabled))


def names(specs: tuple[PluginSpec, ...]) -> list[str]:
    return [s.name for s in specs]


DEFAULTS = ps("A", ("B", 3), "C")


@pytest.mark.parametrize("custom,expected,disabled", [
    (ps(), [("A", 0), ("B", 3), ("C", 0)], set()),
    (ps(disabled=("B",)), [("A", 0), ("C", 0)], {"B"}),
    (ps(disabled=("*",)), [], {"*"}),
    (ps("D", disabled=("*",)), [("D", 0)], {"*"}),
    # "Update the default plugin in place to preserve order."
    (ps(("B", 7)), [("A", 0), ("B", 7), ("C", 0)], set()),
    # "Append all the custom plugins which haven't replaced any default plugins."
    (ps("D", ("A", 2)), [("A", 2), ("B", 3), ("C", 0), ("D", 0)], set()),
    # disabled then enabled again: not a replacement, appended at the end
    (ps(("B", 5), disabled=("B",)), [("A", 0), ("C", 0), ("B", 5)], {"B"}),
], ids=["nothing", "disable-one", "disable-all", "disable-all-enable-one", "reconfigure-in-place",
        "append-and-reconfigure", "disable-then-enable"])
def test_merge_plugin_set(custom: PluginSet, expected: list[tuple[str, int]], disabled: set[str]) -> None:
    merged = merge_plugin_set(DEFAULTS, custom)
    assert [(s.name, s.weight) for s in merged.enabled] == expected
    assert merged.disabled == disabled


def test_merge_keeps_the_defaults_disabled_set() -> None:
    # "With MultiPoint, we may now have some disabledPlugins in the default registry"
    assert merge_plugin_set(ps(disabled=("GpuDevices",)), ps("X")).disabled == {"GpuDevices"}


MULTI = ps("A", "B", "C", "D")
ALL_IMPLEMENT = {"A", "B", "C", "D", "E"}


@pytest.mark.parametrize("at_point,implemented,expected", [
    (ps(), ALL_IMPLEMENT, ["A", "B", "C", "D"]),
    (ps(), {"B", "D"}, ["B", "D"]),                                  # skip what does not implement
    (ps(disabled=("C",)), ALL_IMPLEMENT, ["A", "B", "D"]),
    (ps("E", disabled=("*",)), ALL_IMPLEMENT, ["E"]),                 # "*": no expansion at all
    # part 1 overrides in the point's order, part 2 the other multiPoint plugins, part 3 the rest
    (ps("E", "C", "A"), ALL_IMPLEMENT, ["C", "A", "B", "D", "E"]),
    (ps("C", disabled=("C",)), ALL_IMPLEMENT, ["A", "B", "D", "C"]),   # disabled in multi, own entry last
], ids=["all", "implemented-only", "disabled", "star", "override-order", "disabled-and-enabled"])
def test_expand_multi_point(at_point: PluginSet, implemented: set[str], expected: list[str]) -> None:
    assert names(expand_multi_point(at_point, MULTI, implemented.__contains__)) == expected


def test_override_weight_wins_and_weights_default() -> None:
    specs = expand_multi_point(ps(("B", 9)), ps(("A", 0), ("B", 2)), lambda _: True)
    assert [(s.name, s.weight) for s in with_weights(specs, {"A": 4})] == [("B", 9), ("A", 4)]
    assert with_weights((PluginSpec("Z"),), {}) == (PluginSpec("Z", 1),)


@pytest.mark.parametrize("config,message", [
    (["enabled"], r"^p\.filter: must be a mapping with enabled and disabled lists$"),
    ({"enabled": {"name": "NodeName"}}, r"^p\.filter\.enabled: must be a list of \{name, weight\}$"),
    ({"enabled": [{"weight": 1}]}, r"^p\.filter\.enabled\[0\]\.name: Required value$"),
    ({"enabled": [{"name": "Nope"}]},
     r'^p\.filter\.enabled\[0\]\.name: Invalid value: "Nope": unknown plugin; registered: '),
    ({"enabled": [{"name": "NodeName", "weight": -1}]},
     r"^p\.filter\.enabled\[0\]\.weight: Invalid value: -1: must be a non-negative integer$"),
    ({"disabled": [{"name": "NodeName", "weight": True}]},
     r"^p\.filter\.disabled\[0\]\.weight: Invalid value: True: must be a non-negative integer$"),
], ids=["not-mapping", "enabled-not-list", "no-name", "unknown", "negative-weight", "bool-weight"])
def test_read_plugin_set_rejects(config: object, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        read_plugin_set(config, "p.filter", IN_TREE)


def test_read_plugin_set_refuses_a_name_twice() -> None:
    # kubernetes pkg/scheduler/framework/runtime/framework.go updatePluginList
    with pytest.raises(UsageError, match=r'^p.filter.enabled: plugin "NodeName" already registered as "FilterPlugin"$'):
        read_plugin_set({"enabled": [{"name": "NodeName", "weight": 1}, {"name": "NodePorts"},
                                     {"name": "NodeName", "weight": 4}]}, "p.filter", IN_TREE)


@pytest.mark.parametrize("plugins,message", [
    (["filter"], r"^p: must be a mapping of extension points$"),
    ({"filters": {}}, r'^p: unknown extension point "filters"$'),
], ids=["not-mapping", "unknown-point"])
def test_read_plugins_rejects(plugins: object, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        read_plugins(plugins, "p", IN_TREE)


def test_read_plugins_accepts_points_the_caller_does() -> None:
    got = read_plugins({"bind": {"enabled": [{"name": "NodeName"}]}}, "p", IN_TREE)
    assert "bind" not in got and got["filter"] == PluginSet()


def test_check_implemented_and_queue_sort() -> None:
    check_implemented("filter", ps("NodeName"), "p", {"NodeName"}.__contains__)
    with pytest.raises(UsageError, match=r'^p\.score\.enabled\[0\]\.name: Invalid value: "NodeName": '
                                         r"plugin does not extend score$"):
        check_implemented("score", ps("NodeName"), "p", set().__contains__)
    with pytest.raises(UsageError, match=r"^p\.queueSort: only one queue sort plugin can be enabled$"):
        check_queue_sort({"queueSort": (PluginSpec("A"), PluginSpec("B"))}, "p")


@pytest.mark.parametrize("entries,message", [
    ({"name": "NodeName"}, r"^c: must be a list of \{name, args\}$"),
    ([{"name": "Nope"}], r'^c\[0\]\.name: Invalid value: "Nope": unknown plugin$'),
    (["NodeName"], r'^c\[0\]\.name: Invalid value: "None": unknown plugin$'),
    ([{"name": "NodeName", "args": [1]}], r"^c\[0\]\.args: must be a mapping$"),
], ids=["not-list", "unknown", "not-mapping-entry", "args-not-mapping"])
def test_read_plugin_args_rejects(entries: object, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        read_plugin_args(entries, "c", IN_TREE)


def test_read_plugin_args_and_percentage() -> None:
    assert read_plugin_args([{"name": "NodeName", "args": {"a": 1}}, {"name": "NodePorts"}], "c",
                            IN_TREE) == {"NodeName": {"a": 1}, "NodePorts": {}}
    assert (read_percentage(None, 30, "p"), read_percentage(70, 30, "p"), read_percentage(0, 30, "p")) == (30, 70, 0)
    for bad in (101, -1, "50", True):
        with pytest.raises(UsageError, match=r"^p: Invalid value: .*: not in valid range \[0-100\]$"):
            read_percentage(bad, 0, "p")

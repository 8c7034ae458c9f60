"""MIG placement (nvidia-gpu-stack.md 3.9), named layouts (3.10), mig-parted configs, names."""

from __future__ import annotations

import pytest

from gpusched.devices.catalog import CATALOG
from gpusched.devices.mig import (fill_count, layout_for, mig_resource_name,
                                  parse_mig_parted_config, place, single_strategy_problem)
from gpusched.errors import UsageError

A100 = CATALOG["A100-40GB"]

VALID = [  # (id, profiles, expected starts by profile in creation order)
    ("7x1g", ["1g.5gb"] * 7, [("1g.5gb", s) for s in range(7)]),
    ("3x2g+1g", ["2g.10gb"] * 3 + ["1g.5gb"],
     [("2g.10gb", 0), ("2g.10gb", 2), ("2g.10gb", 4), ("1g.5gb", 6)]),
    ("4g+3g", ["3g.20gb", "4g.20gb"], [("4g.20gb", 0), ("3g.20gb", 4)]),
    ("4g+2g+1g", ["1g.5gb", "2g.10gb", "4g.20gb"], [("4g.20gb", 0), ("2g.10gb", 4), ("1g.5gb", 6)]),
    ("4g+3x1g", ["4g.20gb"] + ["1g.5gb"] * 3,
     [("4g.20gb", 0), ("1g.5gb", 4), ("1g.5gb", 5), ("1g.5gb", 6)]),
    ("3g+3g", ["3g.20gb"] * 2, [("3g.20gb", 0), ("3g.20gb", 4)]),
    ("all-balanced-3g-at-4", ["1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"],
     [("3g.20gb", 4), ("2g.10gb", 0), ("1g.5gb", 2), ("1g.5gb", 3)]),
    ("4x1g.10gb", ["1g.10gb"] * 4, [("1g.10gb", s) for s in (0, 2, 4, 6)]),
    ("1g.10gb+6x1g", ["1g.10gb"] + ["1g.5gb"] * 6,
     [("1g.10gb", 6)] + [("1g.5gb", s) for s in range(6)]),
]


@pytest.mark.parametrize("profiles,expected", [(p, e) for _, p, e in VALID], ids=[i for i, _, _ in VALID])
def test_valid_mixes_fit(profiles, expected):
    placed = place(A100, profiles)
    assert placed == expected
    assert _no_overlap(placed)


def test_balanced_layout_places_3g_at_4():
    placed = dict((p, s) for p, s in place(A100, ["1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"]))
    assert placed["3g.20gb"] == 4 and placed["2g.10gb"] == 0


def _no_overlap(placed):
    used = []
    for name, start in placed:
        size = A100.mig.find(name).memory_slices
        assert start in A100.mig.find(name).starts
        used += range(start, start + size)
    return len(used) == len(set(used)) and max(used) < 8


INVALID = [  # (id, profiles, profile named in the message)
    ("3g+3g+1g", ["3g.20gb", "3g.20gb", "1g.5gb"], "1g.5gb"),
    ("4g+4g", ["4g.20gb", "4g.20gb"], "4g.20gb"),
    ("2x7g", ["7g.40gb", "7g.40gb"], "7g.40gb"),
    ("2x+me", ["1g.5gb+me", "1g.5gb+me"], "1g.5gb+me"),
    ("4x2g", ["2g.10gb"] * 4, "2g.10gb"),
    ("5x1g.10gb", ["1g.10gb"] * 5, "1g.10gb"),
    ("3g+3g+2g", ["3g.20gb", "3g.20gb", "2g.10gb"], "2g.10gb"),
]


@pytest.mark.parametrize("profiles,culprit", [(p, c) for _, p, c in INVALID], ids=[i for i, _, _ in INVALID])
def test_invalid_mixes_name_the_profile(profiles, culprit):
    with pytest.raises(UsageError) as err:
        place(A100, profiles)
    assert f"MIG profile {culprit} does not fit on A100-40GB" in str(err.value)


def test_3g_at_0_with_2g_and_two_1g_needs_backtracking():
    """3g at 0 + 2g + 2 x 1g fails; the search must move the 3g to 4 (and does)."""
    placed = place(A100, ["3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"])
    assert ("3g.20gb", 4) in placed


@pytest.mark.parametrize("name,profiles", [
    ("unknown-profile", ["9g.99gb"]),
    ("other-model-profile", ["1g.10gb+me"]),
], ids=["unknown", "a100-80gb-profile-on-40gb"])
def test_unknown_profile(name, profiles):
    with pytest.raises(UsageError, match="unknown MIG profile"):
        place(A100, profiles)


def test_non_mig_model_rejected():
    with pytest.raises(UsageError, match="T4 .*does not support MIG"):
        place(CATALOG["T4"], ["1g.5gb"])


LAYOUTS = [  # (model, config, per-GPU sorted profiles or None)
    ("A100-40GB", "all-disabled", None),
    ("A100-40GB", "all-enabled", []),
    ("A100-40GB", "all-1g.5gb", ["1g.5gb"] * 7),
    ("A100-40GB", "all-1g.5gb.me", ["1g.5gb+me"]),
    ("A100-40GB", "all-1g.10gb", ["1g.10gb"] * 4),
    ("A100-40GB", "all-2g.10gb", ["2g.10gb"] * 3),
    ("A100-40GB", "all-3g.20gb", ["3g.20gb"] * 2),
    ("A100-40GB", "all-4g.20gb", ["4g.20gb"]),
    ("A100-40GB", "all-7g.40gb", ["7g.40gb"]),
    ("A100-40GB", "all-balanced", ["1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"]),
    ("A100-80GB", "all-1g.10gb", ["1g.10gb"] * 7),
    ("A100-80GB", "all-1g.20gb", ["1g.20gb"] * 4),
    ("A100-80GB", "all-balanced", ["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"]),
    ("H100-80GB", "all-3g.40gb", ["3g.40gb"] * 2),
    ("H100-80GB", "all-balanced", ["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"]),
    ("H100-NVL", "all-balanced", ["1g.12gb", "1g.12gb", "2g.24gb", "3g.47gb"]),
    ("H200-141GB", "all-1g.18gb", ["1g.18gb"] * 7),
    ("H200-141GB", "all-1g.35gb", ["1g.35gb"] * 4),
    ("H200-141GB", "all-balanced", ["1g.18gb", "1g.18gb", "2g.35gb", "3g.71gb"]),
    ("B200", "all-balanced", ["1g.23gb", "1g.23gb", "2g.45gb", "3g.90gb"]),
    ("B200", "all-7g.180gb", ["7g.180gb"]),
    ("A30", "all-1g.6gb", ["1g.6gb"] * 4),
    ("A30", "all-2g.12gb", ["2g.12gb"] * 2),
    ("A30", "all-4g.24gb", ["4g.24gb"]),
    ("A30", "all-balanced", ["1g.6gb", "1g.6gb", "2g.12gb"]),
    ("T4", "all-disabled", None),
]


@pytest.mark.parametrize("model,config,expected", LAYOUTS, ids=[f"{m}-{c}" for m, c, _ in LAYOUTS])
def test_named_layouts(model, config, expected):
    layout = layout_for(CATALOG[model], config, 2)
    assert len(layout) == 2
    for gpu in layout:
        assert (None if gpu is None else sorted(gpu)) == expected


@pytest.mark.parametrize("model,config", [("A100-40GB", "all-3g.40gb"), ("T4", "all-balanced"),
                                          ("A100-40GB", "half-balanced")],
                         ids=["wrong-model-profile", "non-mig-model", "unknown-name"])
def test_unknown_layouts(model, config):
    with pytest.raises(UsageError):
        layout_for(CATALOG[model], config, 1)


def test_fill_count_matches_max_instances_or_placement():
    assert fill_count(A100, "1g.10gb") == 4
    assert fill_count(A100, "3g.20gb") == 2


@pytest.mark.parametrize("profile,resource", [
    ("1g.5gb", "nvidia.com/mig-1g.5gb"),
    ("1g.5gb+me", "nvidia.com/mig-1g.5gb.me"),
    ("3g.20gb", "nvidia.com/mig-3g.20gb"),
], ids=["plain", "plus-me", "3g"])
def test_mixed_resource_names(profile, resource):
    assert mig_resource_name(profile) == resource
    assert A100.mig.find(profile).resource == resource


CUSTOM = """
version: v1
mig-configs:
  two-halves:
    - devices: all
      mig-enabled: true
      mig-devices: {"3g.20gb": 2}
  first-two:
    - devices: all
      mig-enabled: false
    - devices: [0, 1]
      mig-enabled: true
      mig-devices: {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}
  too-much:
    - devices: all
      mig-enabled: true
      mig-devices: {"3g.20gb": 2, "1g.5gb": 1}
"""


def test_custom_layouts():
    custom = parse_mig_parted_config(CUSTOM)
    assert layout_for(A100, "two-halves", 2, custom) == [["3g.20gb"] * 2] * 2
    layout = layout_for(A100, "first-two", 3, custom)
    assert layout[2] is None and sorted(layout[0]) == ["1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"]
    with pytest.raises(UsageError, match="MIG profile 1g.5gb does not fit"):
        layout_for(A100, "too-much", 1, custom)


@pytest.mark.parametrize("text,message", [
    ("version: v2\nmig-configs: {a: [{devices: all, mig-enabled: false}]}", "unknown version"),
    ("mig-configs: {a: [{devices: all, mig-enabled: false}]}", "unknown version"),
    ("version: v1\nmig-configs: {a: [{mig-enabled: false}]}", "missing required field: devices"),
    ("version: v1\nmig-configs: {a: [{devices: all}]}", "missing required field: mig-enabled"),
    ("version: v1\nextra: 1\nmig-configs: {}", "unexpected field: extra"),
    ("version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true, bogus: 1}]}",
     "unexpected field: bogus"),
], ids=["bad-version", "no-version", "no-devices", "no-mig-enabled", "top-level-extra", "entry-extra"])
def test_mig_parted_errors(text, message):
    with pytest.raises(UsageError) as err:
        parse_mig_parted_config(text)
    assert str(err.value) == message


@pytest.mark.parametrize("layout,problem", [
    ([None, None], None),
    ([["1g.5gb"] * 7] * 2, None),
    ([["1g.5gb"], None], "all devices on the node must be configured with the same migEnabled value"),
    ([["1g.5gb"], []], "device 1 has no MIG devices configured"),
    ([["1g.5gb"], ["2g.10gb"]], "more than one MIG device type present on node"),
], ids=["disabled", "uniform", "mixed-enabled", "empty-gpu", "two-types"])
def test_single_strategy_rules(layout, problem):
    assert single_strategy_problem(layout) == problem

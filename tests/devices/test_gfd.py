"""GFD labels (nvidia-gpu-stack.md section 2) for whole, shared, MIG single and MIG mixed nodes."""

from __future__ import annotations

import pytest

from gpusched.devices.catalog import CATALOG
from gpusched.devices.gfd import clique_label, gfd_labels
from gpusched.devices.mig import layout_for

from tests.devices.builders import sharing_config

A100, T4 = CATALOG["A100-40GB"], CATALOG["T4"]


def _subset(labels: dict[str, str], expected: dict[str, str]) -> dict[str, str]:
    return {k: labels.get(k, "<absent>") for k in expected}


CASES = [
    ("whole-a100", gfd_labels(A100, 8), {
        "nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.replicas": "1", "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.memory": "40960",
        "nvidia.com/gpu.family": "ampere", "nvidia.com/gpu.compute.major": "8",
        "nvidia.com/gpu.compute.minor": "0", "nvidia.com/mig.capable": "true",
        "nvidia.com/mps.capable": "false", "nvidia.com/mig.strategy": "<absent>",
        "nvidia.com/gfd.timestamp": "<absent>"}),
    ("whole-t4", gfd_labels(T4, 2), {
        "nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.memory": "15360",
        "nvidia.com/gpu.family": "turing", "nvidia.com/mig.capable": "false"}),
    ("time-sliced", gfd_labels(T4, 2, sharing_config(4)), {
        "nvidia.com/gpu.count": "2", "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "nvidia.com/gpu.product": "Tesla-T4-SHARED"}),
    ("time-sliced-renamed", gfd_labels(T4, 2, sharing_config(4, rename=True)), {
        "nvidia.com/gpu.count": "2", "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.product": "Tesla-T4"}),
    ("mps", gfd_labels(T4, 2, sharing_config(4, kind="mps")), {
        "nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/mps.capable": "true",
        "nvidia.com/gpu.product": "Tesla-T4-SHARED"}),
    ("mig-single", gfd_labels(A100, 8, None, layout_for(A100, "all-1g.5gb", 8), "single"), {
        "nvidia.com/mig.strategy": "single", "nvidia.com/gpu.count": "56",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",
        "nvidia.com/gpu.memory": "4864", "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.multiprocessors": "14", "nvidia.com/gpu.slices.gi": "1",
        "nvidia.com/gpu.slices.ci": "1", "nvidia.com/gpu.engines.copy": "1",
        "nvidia.com/gpu.family": "ampere", "nvidia.com/gpu.compute.major": "8"}),
    ("mig-single-shared", gfd_labels(A100, 1, sharing_config(2), layout_for(A100, "all-3g.20gb", 1),
                                     "single"), {
        "nvidia.com/gpu.count": "2", "nvidia.com/gpu.replicas": "2",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-3g.20gb-SHARED"}),
    ("mig-single-invalid", gfd_labels(A100, 2, None, [["1g.5gb"], ["2g.10gb"]], "single"), {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-INVALID", "nvidia.com/gpu.count": "0",
        "nvidia.com/gpu.replicas": "0", "nvidia.com/gpu.sharing-strategy": "",
        "nvidia.com/gpu.memory": "0"}),
    ("mig-mixed", gfd_labels(A100, 2, None, layout_for(A100, "all-1g.5gb", 2), "mixed"), {
        "nvidia.com/mig.strategy": "mixed", "nvidia.com/gpu.count": "2",
        "nvidia.com/gpu.replicas": "0", "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
        "nvidia.com/mig-1g.5gb.count": "14", "nvidia.com/mig-1g.5gb.replicas": "1",
        "nvidia.com/mig-1g.5gb.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",
        "nvidia.com/mig-1g.5gb.memory": "4864", "nvidia.com/mig-1g.5gb.multiprocessors": "14",
        "nvidia.com/mig-1g.5gb.slices.gi": "1", "nvidia.com/mig-1g.5gb.engines.ofa": "0"}),
    ("mig-mixed-balanced", gfd_labels(A100, 1, None, layout_for(A100, "all-balanced", 1), "mixed"), {
        "nvidia.com/mig-1g.5gb.count": "2", "nvidia.com/mig-2g.10gb.count": "1",
        "nvidia.com/mig-3g.20gb.count": "1", "nvidia.com/mig-3g.20gb.multiprocessors": "42"}),
    ("mig-mixed-partly", gfd_labels(A100, 2, sharing_config(3), [["7g.40gb"], None], "mixed"), {
        "nvidia.com/gpu.replicas": "3", "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-SHARED",
        "nvidia.com/mig-7g.40gb.count": "1", "nvidia.com/mig-7g.40gb.engines.decoder": "5"}),
    ("mig-mixed-me", gfd_labels(A100, 1, None, [["1g.5gb+me"]], "mixed"), {
        "nvidia.com/mig-1g.5gb.me.count": "1",
        "nvidia.com/mig-1g.5gb.me.engines.jpeg": "1"}),
    ("mig-none-is-whole", gfd_labels(A100, 2, None, layout_for(A100, "all-1g.5gb", 2), "none"), {
        "nvidia.com/gpu.count": "2", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
        "nvidia.com/mig.strategy": "<absent>", "nvidia.com/mig-1g.5gb.count": "<absent>"}),
    ("trace-g2-no-family", gfd_labels(CATALOG["G2"], 8), {
        "nvidia.com/gpu.family": "<absent>", "nvidia.com/gpu.compute.major": "<absent>",
        "nvidia.com/gpu.memory": "20000", "nvidia.com/gpu.count": "8"}),
]


# k8s-device-plugin internal/lm/mig-strategy.go newGPULabelers / newMigStrategySingleLabeler /
# newInvalidMigStrategyLabeler; cases after internal/lm/mig-strategy_test.go
# TestMigStrategyNoneLabels and TestMigStrategySingleLabels.
INVALID = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-INVALID", "nvidia.com/gpu.count": "0",
           "nvidia.com/gpu.replicas": "0", "nvidia.com/gpu.sharing-strategy": "",
           "nvidia.com/gpu.memory": "0", "nvidia.com/mig.strategy": "single",
           "nvidia.com/gpu.family": "ampere", "nvidia.com/gpu.compute.major": "8",
           "nvidia.com/gpu.multiprocessors": "<absent>"}
CASES += [
    # TestMigStrategyNoneLabels "sharing is not applied to multiple MIG device; replicas is zero"
    ("none-mig-enabled-not-shared", gfd_labels(A100, 2, sharing_config(2), [["1g.5gb"], ["1g.5gb"]], "none"), {
        "nvidia.com/gpu.count": "2", "nvidia.com/gpu.replicas": "0",
        "nvidia.com/gpu.sharing-strategy": "none", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
        "nvidia.com/gpu.memory": "40960", "nvidia.com/mig.strategy": "<absent>",
        "nvidia.com/mig-1g.5gb.count": "<absent>"}),
    # TestMigStrategyNoneLabels "sharing is applied to MIG device and non-MIG device"
    ("none-mig-and-full-gpu-shared", gfd_labels(A100, 2, sharing_config(2), [["1g.5gb"], None], "none"), {
        "nvidia.com/gpu.count": "2", "nvidia.com/gpu.replicas": "2",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-SHARED"}),
    # TestMigStrategySingleLabels "empty mig devices returns MIG invalid label"
    ("single-invalid-enabled-but-empty", gfd_labels(A100, 2, None, [[], []], "single"), INVALID),
    # "mixed mig config returns MIG invalid label"
    ("single-invalid-two-profiles", gfd_labels(A100, 1, None, [["1g.5gb", "2g.10gb"]], "single"), INVALID),
    # "mixed mig enabled and disabled returns invalid config"
    ("single-invalid-enabled-and-disabled", gfd_labels(A100, 2, None, [["1g.5gb"], None], "single"), INVALID),
    # "enabled, disabled, and empty returns invalid config"
    ("single-invalid-enabled-disabled-empty", gfd_labels(A100, 3, sharing_config(2), [["1g.5gb"], None, []],
                                                         "single"), INVALID),
    # no MIG-enabled GPU under single: "equivalent to the none MIG strategy"
    ("single-without-mig-is-none", gfd_labels(A100, 2, None, [None, None], "single"), {
        "nvidia.com/gpu.count": "2", "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/mig.strategy": "single"}),
]


@pytest.mark.parametrize("labels,expected", [(l, e) for _, l, e in CASES], ids=[i for i, _, _ in CASES])
def test_gfd_labels(labels, expected):
    assert _subset(labels, expected) == expected


GFD_REASONS = [   # newMigStrategySingleLabeler's order of checks
    ("valid", [["1g.5gb"], ["1g.5gb"]], None),
    ("no-mig", [None, None], None),
    ("empty-first", [["1g.5gb", "2g.10gb"], [], None], "at least one MIG device is enabled but empty"),
    ("enabled-and-disabled", [["1g.5gb"], ["2g.10gb"], None], "devices with MIG enabled and disable detected"),
    ("two-types", [["1g.5gb"], ["2g.10gb"]], "more than one MIG device type present on node"),
]


@pytest.mark.parametrize("layout,reason", [c[1:] for c in GFD_REASONS], ids=[c[0] for c in GFD_REASONS])
def test_single_strategy_gfd_reason(layout, reason):
    from gpusched.devices.gfd import single_strategy_gfd_reason
    assert single_strategy_gfd_reason(layout) == reason


def test_cpu_node_has_no_labels():
    assert gfd_labels(None, 0) == {}
    assert gfd_labels(A100, 0) == {}


def test_every_value_is_a_string_and_sorted():
    labels = gfd_labels(A100, 1, None, layout_for(A100, "all-balanced", 1), "mixed")
    assert all(isinstance(v, str) for v in labels.values())
    assert list(labels) == sorted(labels)


@pytest.mark.parametrize("model,fabric,expected", [
    ("GB200", "1f0e2c4a-7d1b-4f5e-9a2b-3c4d5e6f7a8b.1", {"nvidia.com/gpu.clique": "1f0e2c4a-7d1b-4f5e-9a2b-3c4d5e6f7a8b.1"}),
    ("GB200", "", {}),                       # no fabric reported: no label
    ("H100-80GB", "abc.1", {}),              # NVSwitch inside the node only: NVML reports no fabric
], ids=["gb200-tray", "gb200-no-fabric", "hgx-h100"])
def test_clique_label(model, fabric, expected):
    """nvidia.com/gpu.clique, <clusterUUID>.<cliqueID>, only on GPUs attached to an NVLink fabric
    (nvidia-gpu-stack.md 2.2; GFD's internal/lm from NVML's GPU fabric info)."""
    assert clique_label(CATALOG[model], fabric) == expected

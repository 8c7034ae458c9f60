"""mig-manager's state machine (NVIDIA/mig-parted pkg/mig/reconfigure/reconfigure.go Reconfigure.Run)
and what the node advertises after it (devices.advertise over the annotation gpusched.io/mig-layout).

Each case names the upstream step it reproduces.
"""

from __future__ import annotations

import pytest

from gpusched.devices.advertise import node_device_state
from gpusched.devices.catalog import CATALOG
from gpusched.devices.mig import parse_mig_parted_config
from gpusched.devices.mig_manager import (APPLY_FAILED, MIG_LAYOUT_ANNOTATION, VALIDATE_FAILED,
                                          reconfigure)
from gpusched.devices.nodepool import expand_nodepool

A100 = CATALOG["A100-40GB"]
SEVEN = ["1g.5gb"] * 7
BALANCED = ["3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"]
FAILED_LINE = "Changing the 'nvidia.com/mig.config.state' node label to 'failed'"
CUSTOM = parse_mig_parted_config({"version": "v1", "mig-configs": {
    "halves": [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.20gb": 2}}],
    "too-much": [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.20gb": 2, "1g.5gb": 1}}],
    "alien": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.12gb": 1}}],
}})

CASES = [
    # validateMigConfig -> `mig-parted assert --valid-config` fails: setState(failed), GPUs untouched
    ("unknown-config-leaves-gpus", "bogus", [SEVEN, SEVEN], None, None,
     "failed", [SEVEN, SEVEN],
     ("Error selecting MIG config: selected mig-config not present: bogus", VALIDATE_FAILED, FAILED_LINE)),
    # a custom ConfigMap replaces the default file: a built-in name is no longer present
    ("custom-file-replaces-built-ins", "all-1g.5gb", [None, None], CUSTOM, None,
     "failed", [None, None],
     ("Error selecting MIG config: selected mig-config not present: all-1g.5gb", VALIDATE_FAILED,
      FAILED_LINE)),
    # ParseConfigFile fails (assert.go): "Error parsing config file: unmarshal error: ..."
    ("unparsable-config-file-leaves-gpus", "halves", [BALANCED], None, "unknown version",
     "failed", [BALANCED],
     ("Error parsing config file: unmarshal error: unknown version", VALIDATE_FAILED, FAILED_LINE)),
    # isConfigAlreadyApplied: success, nothing done
    ("already-applied", "all-balanced", [BALANCED, BALANCED], None, None, "success",
     [BALANCED, BALANCED], ()),
    # applyMigConfig succeeds: success
    ("apply-built-in", "all-1g.5gb", [None, BALANCED], None, None, "success", [SEVEN, SEVEN], ()),
    ("disable-mig", "all-disabled", [SEVEN, SEVEN], None, None, "success", [None, None], ()),
    ("apply-custom", "halves", [None], CUSTOM, None, "success", [["3g.20gb", "3g.20gb"]], ()),
    # SetMigConfig: every ordering fails -> ClearMigConfig: the GPU keeps MIG on with no devices;
    # ApplyMigConfig returns at the first failing GPU, the next ones are not touched
    ("unplaceable-clears-first-gpu", "too-much", [SEVEN, SEVEN], CUSTOM, None, "failed", [[], SEVEN],
     ("Error applying MIG configuration with hooks: error attempting multiple config orderings: "
      "error creating GPU instance for '1g.5gb': Insufficient Resources", APPLY_FAILED, FAILED_LINE)),
    # resolveMigProfileOnDevice: a profile this GPU does not have
    ("profile-not-on-this-gpu", "alien", [None], CUSTOM, None, "failed", [[]],
     ("Error applying MIG configuration with hooks: error attempting multiple config orderings: "
      'MIG profile "1g.12gb" not found on this GPU', APPLY_FAILED, FAILED_LINE)),
]


@pytest.mark.parametrize("selected,current,custom,custom_error,state,layout,log",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_reconfigure(selected, current, custom, custom_error, state, layout, log):
    outcome = reconfigure(A100, len(current), selected, current, custom, custom_error)
    assert (outcome.state, outcome.layout, outcome.log) == (state, layout, log)


def _node(mig_config: str, annotations: dict | None = None) -> dict:
    pool = {"kind": "NodePool", "metadata": {"name": "mig"},
            "spec": {"names": ["mig-node-1"], "gpu": {"model": "A100-40GB", "count": 1},
                     "migConfig": mig_config, "migStrategy": "mixed"}}
    node = expand_nodepool(pool)[0]
    node["metadata"].setdefault("annotations", {}).update(annotations or {})
    return node


def test_failed_config_keeps_advertising_the_current_devices():
    applied = node_device_state(_node("all-balanced"), [])
    assert applied.labels["nvidia.com/mig.config.state"] == "success" and applied.mig_log == ()
    assert applied.annotations == {MIG_LAYOUT_ANNOTATION: '[["3g.20gb","2g.10gb","1g.5gb","1g.5gb"]]'}
    bogus = node_device_state(_node("bogus", applied.annotations), [])
    assert bogus.labels["nvidia.com/mig.config.state"] == "failed"
    assert bogus.capacity == applied.capacity == {
        "nvidia.com/mig-1g.5gb": 2, "nvidia.com/mig-2g.10gb": 1, "nvidia.com/mig-3g.20gb": 1}
    assert bogus.labels["nvidia.com/mig-3g.20gb.count"] == "1"
    assert bogus.annotations == applied.annotations and bogus.error is None
    assert bogus.mig_log[0] == "Error selecting MIG config: selected mig-config not present: bogus"


def test_node_without_recorded_state_starts_with_mig_disabled():
    state = node_device_state(_node("bogus"), [])
    assert state.labels["nvidia.com/mig.config.state"] == "failed"
    assert state.capacity == {"nvidia.com/gpu": 1}        # MIG never enabled: one whole GPU

"""mig-manager's state machine: what happens to a node's GPUs when ``nvidia.com/mig.config`` names
a layout, and the ``nvidia.com/mig.config.state`` it leaves.

NVIDIA/mig-parted ``pkg/mig/reconfigure/reconfigure.go`` ``Reconfigure.Run`` (called by
``cmd/nvidia-mig-manager/main.go`` for every change of the label), in order:

1. ``validateMigConfig`` (``nvidia-mig-parted assert --valid-config``): the config file must parse
   and contain the selected name. If not, ``setState("failed")`` and return: **the GPUs are not
   touched** (the device plugin and GFD keep advertising the current layout). mig-parted prints
   ``Error selecting MIG config: selected mig-config not present: <name>`` (or ``Error parsing
   config file: ...``) and mig-manager logs ``Error: failed to validate MIG configuration: exit
   status 1``.
2. ``isConfigAlreadyApplied``: nothing to do, state ``success``.
3. state ``pending`` while GPU clients are paused; a MIG mode change that needs a reboot sets
   ``rebooting`` and reboots the node (``-r``). gpusched applies mode changes at once (GPUs whose
   mode change takes effect without a reboot), so ``rebooting`` is never left on a node.
   GPUs in use by pods (``busy``: a whole GPU, a replica, a share or a MIG instance held): NVML
   refuses to destroy a compute instance with processes on it (``nvmlComputeInstanceDestroy``
   ``NVML_ERROR_IN_USE``, "In use by another client", which ``ClearMigConfig`` returns) and a
   MIG mode change stays pending until the GPU can be reset, so upstream's apply fails on such a
   GPU with the pods still running on their devices. gpusched holds the whole change instead:
   state ``pending``, no GPU touched, one line per GPU in use naming its pods, and the change
   applies once those GPUs are free (``kubelet.device_plugin`` re-runs it when pods leave).
   So no pod is ever left on a device that is gone.
4. ``applyMigConfig`` (``nvidia-mig-parted apply``): GPU by GPU (``config.go``
   ``ApplyMigConfig`` over ``WalkSelectedMigConfigForEachGPU``); each GPU is cleared first and its
   instances created (``pkg/mig/config/config.go`` ``SetMigConfig``). A GPU whose layout cannot be
   created (a profile this model does not have, or no placement) is **cleared** (MIG enabled, no
   devices: ``ClearMigConfig`` after the last failed ordering) and apply stops there: GPUs before
   it have the new layout, GPUs after it keep theirs. mig-manager logs ``Error: failed to apply
   MIG configuration: exit status 1``; state ``failed``.
5. otherwise state ``success`` (``Successfully updated to MIG config: <name>``).

The GPUs' actual MIG state is kept on the Node in the annotation ``MIG_LAYOUT_ANNOTATION``
(gpusched's stand-in for the hardware, JSON: one entry per GPU, ``null`` = MIG disabled); a node
without it has MIG disabled everywhere.

Neighbours: ``devices.mig`` (layouts, placement, config files); used by ``devices.advertise``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Mapping

from gpusched.devices.catalog import GpuModel
from gpusched.devices.mig import (ALL_DISABLED, Layout, MIG_CONFIG_STATE_LABEL, MigConfigEntry,
                                  _apply_entries, per_gpu_profiles, place, profile_of)
from gpusched.errors import GpuschedError
from gpusched.objects import limits

MIG_LAYOUT_ANNOTATION = "gpusched.io/mig-layout"
STATE_SUCCESS, STATE_FAILED, STATE_PENDING = "success", "failed", "pending"
IN_USE = "In use by another client"        # nvmlErrorString(NVML_ERROR_IN_USE)
VALIDATE_FAILED = "Error: failed to validate MIG configuration: exit status 1"
APPLY_FAILED = "Error: failed to apply MIG configuration: exit status 1"
_MAX_LAYOUT_TEXT = 65536


@dataclass(frozen=True)
class MigOutcome:
    """The GPUs after mig-manager ran, the state label it leaves and its log (error lines)."""

    layout: Layout
    state: str
    log: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.state == STATE_FAILED


def current_layout(annotation: str | None, gpu_count: int) -> Layout:
    """The GPUs' MIG state recorded on the node (``MIG_LAYOUT_ANNOTATION``); absent or unreadable
    (or recorded for another GPU count): MIG disabled on every GPU.

    >>> current_layout('[["1g.5gb"], null]', 2), current_layout(None, 2), current_layout("x", 1)
    ([['1g.5gb'], None], [None, None], [None])
    """
    if annotation and len(annotation) <= _MAX_LAYOUT_TEXT:
        try:
            value = limits.json_loads(annotation)
        except ValueError:
            value = None
        if (isinstance(value, list) and len(value) == gpu_count
                and all(e is None or (isinstance(e, list) and all(isinstance(p, str) for p in e))
                        for e in value)):
            return [None if e is None else list(e) for e in value]
    return [None] * gpu_count


def layout_annotation(layout: Layout) -> str:
    return json.dumps(layout, separators=(",", ":"))


def reconfigure(model: GpuModel, gpu_count: int, selected: str, current: Layout,
                custom: dict[str, list[MigConfigEntry]] | None = None,
                custom_error: str | None = None,
                busy: Mapping[int, str] | None = None) -> MigOutcome:
    """mig-manager's ``Reconfigure.Run`` for ``nvidia.com/mig.config=<selected>`` on GPUs whose MIG
    state is ``current`` (see the module docstring). ``custom``: the parsed mig-parted ConfigMap,
    which replaces the built-in file; ``custom_error``: why that ConfigMap does not parse;
    ``busy``: GPU index -> the pods holding devices on it."""
    desired, problem = _desired(model, gpu_count, selected, custom, custom_error)
    if desired is None:
        return MigOutcome(list(current), STATE_FAILED, (problem, VALIDATE_FAILED,
                                                        _state_line(STATE_FAILED)))
    if desired == current:
        return MigOutcome(list(current), STATE_SUCCESS)
    in_use = [(i, (busy or {})[i]) for i in range(len(desired))
              if desired[i] != current[i] and i in (busy or {})]
    if in_use:
        return MigOutcome(list(current), STATE_PENDING,
                          tuple(f"GPU {i}: {IN_USE} (pods {pods}): waiting for them to finish"
                                for i, pods in in_use) + (_state_line(STATE_PENDING),))
    result = list(current)
    for index, wanted in enumerate(desired):
        if wanted == current[index]:
            continue
        error = _creation_error(model, wanted)
        if error:
            result[index] = []                   # SetMigConfig cleared it before failing
            line = (f"Error applying MIG configuration with hooks: error attempting multiple "
                    f"config orderings: {error}")
            return MigOutcome(result, STATE_FAILED, (line, APPLY_FAILED, _state_line(STATE_FAILED)))
        result[index] = None if wanted is None else list(wanted)
    return MigOutcome(result, STATE_SUCCESS)


def _state_line(state: str) -> str:
    return f"Changing the '{MIG_CONFIG_STATE_LABEL}' node label to '{state}'"


def _desired(model: GpuModel, gpu_count: int, selected: str,
             custom: dict[str, list[MigConfigEntry]] | None, custom_error: str | None
             ) -> tuple[Layout | None, str]:
    """The layout the config file asks for (profile names as written), or None and mig-parted's
    ``assert --valid-config`` error."""
    if custom_error:
        return None, f"Error parsing config file: unmarshal error: {custom_error}"
    not_present = f"Error selecting MIG config: selected mig-config not present: {selected}"
    if custom is not None:
        if selected not in custom:
            return None, not_present
        try:
            return _apply_entries(model, selected, custom[selected], gpu_count, resolve=False), ""
        except GpuschedError as err:
            return None, f"Error parsing config file: unmarshal error: {err}"
    if selected in ("", ALL_DISABLED):
        return [None] * gpu_count, ""
    try:
        one = per_gpu_profiles(model, selected)
    except GpuschedError:
        return None, not_present
    return [None if one is None else list(one) for _ in range(gpu_count)], ""


def _creation_error(model: GpuModel, profiles: list[str] | None) -> str:
    """Why one GPU's MIG devices cannot be created on ``model`` ("" when they can), in
    ``SetMigConfig``'s words: ``MIG profile "<p>" not found on this GPU``
    (``resolveMigProfileOnDevice``) or ``error creating GPU instance for '<p>': Insufficient
    Resources`` (NVML's
    ``ERROR_INSUFFICIENT_RESOURCES`` for the first profile no placement leaves room for)."""
    if not profiles:
        return ""
    for name in profiles:
        try:
            profile_of(model, name)
        except GpuschedError:
            return f'MIG profile "{name}" not found on this GPU'
    try:
        place(model, profiles)
    except GpuschedError as err:
        culprit = _CULPRIT.match(str(err))
        name = culprit.group(1) if culprit else profiles[-1]
        return f"error creating GPU instance for '{name}': Insufficient Resources"
    return ""


_CULPRIT = re.compile(r"MIG profile (\S+) does not fit")

"""MIG placement, named layouts and mig-parted configs: which MIG devices each GPU carries.

- ``place(model, profiles)`` finds start positions for a set of GPU-instance profiles on one GPU,
  or raises ``UsageError`` naming the profile that does not fit. MIG fit is a placement problem
  over memory slices (nvidia-gpu-stack.md 3.1/3.9), not a sum of compute slices.
- ``layout_for(model, config_name, gpu_count, custom=None)`` turns the ``nvidia.com/mig.config``
  label value into a per-GPU layout: ``all-disabled``, ``all-enabled``, ``all-<profile>``,
  ``all-balanced`` or a custom config from a mig-parted style file (``parse_mig_parted_config``).

A *layout* is ``list[list[str] | None]``, one entry per GPU: ``None`` = MIG disabled on that
GPU, ``[]`` = MIG enabled without devices, otherwise the profiles of its MIG devices.

Worked examples on an A100-40GB (8 memory slices; 1g starts {0..6} size 1, 2g {0,2,4} size 2,
3g {0,4} size 4):

- 3g + 3g + 1g does not fit: the two 3g take slices 0-3 and 4-7 and nothing is left for the 1g,
  although the compute total is 7.
- all-balanced (3g + 2g + 1g + 1g) needs the 3g at **4**: with the 3g at 0 the 2g goes to 4,
  one 1g to 6, and the second 1g has no start (slice 7 is not a 1g start). With the 3g at 4 the
  2g goes to 0 and the 1g to 2 and 3.

The search is backtracking in mig-parted's creation order (larger g first, then larger memory,
then name), trying starts in ascending order; identical profiles take non-decreasing starts so
symmetric permutations are not retried.

Neighbours: data from ``devices.mig_profiles`` via ``devices.catalog``; used by ``devices.node``,
``devices.gfd`` and ``devices.advertise``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import yaml

from gpusched.devices.catalog import GpuModel
from gpusched.devices.mig_profiles import MigGeometry, MigProfile
from gpusched.errors import UsageError
from gpusched.objects import limits

log = logging.getLogger(__name__)

Layout = list[list[str] | None]  # see the module docstring

ALL_DISABLED = "all-disabled"
ALL_ENABLED = "all-enabled"
ALL_BALANCED = "all-balanced"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
MIG_CONFIG_STATE_LABEL = "nvidia.com/mig.config.state"


def geometry_of(model: GpuModel) -> MigGeometry:
    if model.mig is None:
        raise UsageError(f"GPU model {model.name} ({model.product}) does not support MIG")
    return model.mig


def profile_of(model: GpuModel, name: str) -> MigProfile:
    """The profile ``name`` (``1g.5gb+me`` or ``1g.5gb.me``) of ``model``, else ``UsageError``."""
    geometry = geometry_of(model)
    profile = geometry.find(name)
    if profile is None:
        raise UsageError(f'unknown MIG profile "{name}" for {model.name}; valid profiles: '
                         f'{", ".join(geometry.names)}')
    return profile


def mig_resource_name(profile: str) -> str:
    """The mixed-strategy resource for a profile: ``1g.5gb+me`` -> ``nvidia.com/mig-1g.5gb.me``."""
    return "nvidia.com/mig-" + profile.replace("+", ".")


def _creation_order(profiles: list[MigProfile]) -> list[MigProfile]:
    return sorted(profiles, key=lambda p: (-p.compute_slices, -p.memory_slices, p.name))


def place(model: GpuModel, profiles: list[str]) -> list[tuple[str, int]]:
    """Start positions for ``profiles`` on one GPU of ``model``, in creation order.

    >>> from gpusched.devices.catalog import CATALOG
    >>> place(CATALOG["A100-40GB"], ["1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"])
    [('3g.20gb', 4), ('2g.10gb', 0), ('1g.5gb', 2), ('1g.5gb', 3)]
    """
    geometry = geometry_of(model)
    wanted = _creation_order([profile_of(model, name) for name in profiles])
    for profile in {p.name: p for p in wanted}.values():
        count = sum(1 for p in wanted if p.name == profile.name)
        if count > profile.max_instances:
            raise UsageError(f"MIG profile {profile.name} does not fit on {model.name}: {count} "
                             f"instances requested, at most {profile.max_instances} allowed")
    used = [False] * geometry.memory_slices
    starts: list[int] = []
    deepest = [0]

    def search(i: int) -> bool:
        deepest[0] = max(deepest[0], i)
        if i == len(wanted):
            return True
        profile = wanted[i]
        floor = starts[i - 1] if i and wanted[i - 1].name == profile.name else -1
        for start in profile.starts:
            span = range(start, start + profile.memory_slices)
            if start < floor or span.stop > len(used) or any(used[s] for s in span):
                continue
            for s in span:
                used[s] = True
            starts.append(start)
            if search(i + 1):
                return True
            starts.pop()
            for s in span:
                used[s] = False
        return False

    if not search(0):
        culprit = wanted[deepest[0]]
        others = ", ".join(p.name for p in wanted[:deepest[0]]) or "nothing"
        raise UsageError(f"MIG profile {culprit.name} does not fit on {model.name} together with "
                         f"{others}: no free start among {list(culprit.starts)} "
                         f"(requested: {', '.join(p.name for p in wanted)})")
    return [(p.name, s) for p, s in zip(wanted, starts)]


def fits(model: GpuModel, profiles: list[str]) -> bool:
    try:
        place(model, profiles)
    except UsageError:
        return False
    return True


def fill_count(model: GpuModel, profile: str) -> int:
    """How many instances of ``profile`` an ``all-<profile>`` layout puts on one GPU."""
    spec = profile_of(model, profile)
    for count in range(spec.max_instances, 0, -1):
        if fits(model, [spec.name] * count):
            return count
    return 0


def named_layouts(model: GpuModel) -> list[str]:
    """The built-in config names valid for ``model`` (mig-parted's default config file)."""
    if model.mig is None:
        return [ALL_DISABLED]
    return [ALL_DISABLED, ALL_ENABLED, ALL_BALANCED] + [f"all-{p.dotted}" for p in model.mig.profiles]


def per_gpu_profiles(model: GpuModel, config_name: str) -> list[str] | None:
    """One GPU's layout under a built-in config name, or ``None`` when MIG is disabled."""
    if config_name == ALL_DISABLED:
        return None
    geometry = geometry_of(model)
    if config_name == ALL_ENABLED:
        return []
    if config_name == ALL_BALANCED:
        return list(geometry.balanced)
    if config_name.startswith("all-"):
        profile = geometry.find(config_name[4:])
        if profile is not None:
            return [profile.name] * fill_count(model, profile.name)
    raise UsageError(f'unknown MIG config "{config_name}" for {model.name}; known configs: '
                     f'{", ".join(named_layouts(model))}')


def layout_for(model: GpuModel | None, config_name: str, gpu_count: int,
               custom: dict[str, list["MigConfigEntry"]] | None = None) -> Layout:
    """The per-GPU layout for the ``nvidia.com/mig.config`` value ``config_name``.

    A custom config (from ``parse_mig_parted_config``) with the same name wins over a built-in
    one, as a custom mig-parted ConfigMap replaces the default file. Every GPU's layout is
    validated with ``place``.
    """
    if model is None or gpu_count == 0:
        if config_name not in ("", ALL_DISABLED):
            raise UsageError(f'MIG config "{config_name}" set on a node without GPUs')
        return [None] * gpu_count
    if custom and config_name in custom:
        layout = _apply_entries(model, config_name, custom[config_name], gpu_count)
    elif config_name in ("", ALL_DISABLED):
        return [None] * gpu_count
    else:
        layout = [per_gpu_profiles(model, config_name)] * gpu_count
    for gpu in layout:
        if gpu:
            place(model, gpu)
    return [None if gpu is None else list(gpu) for gpu in layout]


def single_strategy_problem(layout: Layout) -> str | None:
    """Why the device plugin's single strategy rejects a node's layout, or None if valid.

    Upstream wraps it as ``invalid MIG configuration: <problem>``. A node without MIG-enabled
    GPUs is valid (plain whole GPUs).
    """
    if all(entry is None for entry in layout):
        return None
    if any(entry is None for entry in layout):
        return "all devices on the node must be configured with the same migEnabled value"
    for index, entry in enumerate(layout):
        if not entry:
            return f"device {index} has no MIG devices configured"
    if len({p.replace("+", ".") for entry in layout if entry for p in entry}) > 1:
        return "more than one MIG device type present on node"
    return None


# ---- mig-parted config files ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MigConfigEntry:
    """One item of a mig-parted config: which devices, MIG on/off, profile -> count per GPU."""

    devices: str | tuple[int, ...]            # "all" or GPU indices
    mig_enabled: bool
    mig_devices: tuple[tuple[str, int], ...] = ()
    device_filter: tuple[str, ...] = ()       # accepted, not matched (gpusched has no PCI IDs)


_ENTRY_FIELDS = {"devices", "mig-enabled", "mig-devices", "device-filter"}


def parse_mig_parted_config(source: str | dict[str, Any]) -> dict[str, list[MigConfigEntry]]:
    """Parse a mig-parted ``config.yaml`` (``version: v1``, ``mig-configs: {...}``).

    Messages follow mig-parted's spec parser: ``unknown version``, ``unexpected field: <k>``,
    ``missing required field: devices`` / ``mig-enabled``.
    """
    try:
        data = limits.safe_load(source) if isinstance(source, str) else source
    except limits.LimitError as err:
        raise limits.LimitError(f"unable to parse MIG config: {err}") from None
    except yaml.YAMLError:
        raise UsageError("unable to parse MIG config: invalid YAML") from None
    if not isinstance(data, dict):
        raise UsageError("unable to parse MIG config: expected a mapping")
    for key in data:
        if key not in ("version", "mig-configs"):
            raise UsageError(f"unexpected field: {key}")
    if data.get("version") != "v1":
        raise UsageError("unknown version")
    configs = data.get("mig-configs")
    if not isinstance(configs, dict) or not configs:
        raise UsageError("missing required field: mig-configs")
    parsed: dict[str, list[MigConfigEntry]] = {}
    for name, entries in configs.items():
        if not isinstance(entries, list) or not entries:
            raise UsageError(f"mig-configs.{name}: expected a non-empty list")
        parsed[str(name)] = [_parse_entry(str(name), entry) for entry in entries]
    return parsed


def _parse_entry(name: str, entry: Any) -> MigConfigEntry:
    """One item of ``mig-configs.<name>``: known fields, the required ones, then each value."""
    if not isinstance(entry, dict):
        raise UsageError(f"mig-configs.{name}: each entry must be a mapping")
    for key in entry:
        if key not in _ENTRY_FIELDS:
            raise UsageError(f"unexpected field: {key}")
    for key in ("devices", "mig-enabled"):
        if key not in entry:
            raise UsageError(f"missing required field: {key}")
    devices = _entry_devices(name, entry["devices"])
    if not isinstance(entry["mig-enabled"], bool):
        raise UsageError(f"mig-configs.{name}: mig-enabled must be true or false")
    mig_devices = _mig_devices(name, entry.get("mig-devices") or {})
    filters = entry.get("device-filter") or ()
    filters = (filters,) if isinstance(filters, str) else tuple(str(f) for f in filters)
    return MigConfigEntry(devices, entry["mig-enabled"],
                          tuple((str(p), int(c)) for p, c in mig_devices.items()), filters)


def _mig_devices(name: str, mig_devices: Any) -> dict[Any, int]:
    """``mig-devices``: profile -> count, at most ``MAX_MIG_DEVICES_PER_GPU`` in all (mig-parted
    ``MigConfig.Flatten`` appends one profile per count; no GPU holds more than 7)."""
    if not isinstance(mig_devices, dict) or not all(_is_count(c) for c in mig_devices.values()):
        raise UsageError(f"mig-configs.{name}: mig-devices must map profiles to counts")
    total = sum(mig_devices.values())
    if total > limits.MAX_MIG_DEVICES_PER_GPU:
        raise limits.LimitError(f"mig-configs.{name}: mig-devices: at most "
                                f"{limits.MAX_MIG_DEVICES_PER_GPU} MIG devices fit on one GPU, "
                                f"got {total}")
    return mig_devices


def _is_count(value: Any) -> bool:
    """A non-negative integer (YAML's booleans are not)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _entry_devices(name: str, devices: Any) -> str | tuple[int, ...]:
    """``devices``: ``all`` or a list of GPU indices."""
    if devices == "all":
        return "all"
    if not isinstance(devices, list) or not all(_is_count(d) for d in devices):
        raise UsageError(f"mig-configs.{name}: devices must be 'all' or a list of GPU indices")
    return tuple(devices)


def _apply_entries(model: GpuModel, name: str, entries: list[MigConfigEntry],
                   gpu_count: int, resolve: bool = True) -> Layout:
    """Later entries override earlier ones on the GPUs they select (mig-parted applies in order).
    ``resolve=False`` keeps the profile names as written (mig-manager resolves them per GPU when
    it applies them, ``devices.mig_manager``)."""
    layout: Layout = [None] * gpu_count
    for entry in entries:
        if entry.device_filter:
            log.warning("mig config %s: device-filter %s is not matched by gpusched; the entry "
                        "applies to the selected devices of every model", name, entry.device_filter)
        selected = range(gpu_count) if isinstance(entry.devices, str) else entry.devices
        profiles: list[str] | None = None
        if entry.mig_enabled:
            profiles = []
            for profile, count in entry.mig_devices:
                profiles += [profile_of(model, profile).name if resolve else profile] * count
        elif entry.mig_devices:
            raise UsageError(f"mig config {name}: mig-devices given with mig-enabled: false")
        for index in selected:
            if index >= gpu_count:
                raise UsageError(f"mig config {name}: device {index} does not exist "
                                 f"(the node has {gpu_count} GPUs)")
            layout[index] = profiles
    return layout

"""MIG GPU-instance profiles per MIG-capable GPU model: the data behind ``devices.mig``.

One ``MigGeometry`` per model: memory slices, compute slices, and the GPU-instance profiles with
their placement (allowed starts on the memory-slice axis and size in memory slices, as
``nvidia-smi mig -lgipp`` prints them), instance limit, memory and SMs. Source: the tables in
``nvidia-gpu-stack.md`` section 3 (A100/H100 placements from ``-lgipp`` transcripts).

Memory (MiB) follows the doc's rule "nvidia-smi GiB figure x 1024" for A100-40GB and H100-80GB,
the go-nvml mock values for A100-80GB and A30, and "profile GB x 1024" (which is what the H200
mock uses) for H100-NVL, H200 and B200. SM counts for H100-NVL, H200 and B200 are assumed equal
to H100 SXM (unverified upstream).

Neighbours: ``devices.catalog`` attaches a geometry to each ``GpuModel``; ``devices.mig`` places
profiles; ``devices.gfd`` reads SMs, slices and engines for the MIG labels. Imports nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Placements shared by every 8-memory-slice / 7-compute-slice part (A100, H100, H200, B200):
#   ID 19 (1g)        {0,1,2,3,4,5,6}:1      ID 14 (2g) {0,2,4}:2     ID 5 (4g) {0}:4
#   ID 20 (1g+me)     {0,1,2,3,4,5,6}:1 x1   ID  9 (3g) {0,4}:4       ID 0 (7g) {0}:8
#   ID 15 (1g, 2 mem) {0,2,4,6}:2
# Memory slice 7 is reachable only by a size-2 GI at 6, a 3g at 4, or the 7g.
_STARTS_1 = (0, 1, 2, 3, 4, 5, 6)


@dataclass(frozen=True, slots=True)
class MigProfile:
    """One GPU-instance profile, e.g. ``1g.5gb`` on A100-40GB (C == G for every profile here)."""

    name: str                 # as nvidia-smi writes it: "1g.5gb", "1g.5gb+me"
    profile_id: int           # nvidia-smi profile ID (19, 20, 15, 14, 9, 5, 0 on A100/H100)
    compute_slices: int       # g
    memory_slices: int        # placement size on the memory-slice axis
    starts: tuple[int, ...]   # allowed start positions
    max_instances: int
    memory_mib: int
    sms: int
    copy_engines: int = 1
    decoders: int = 0
    encoders: int = 0
    jpeg: int = 0
    ofa: int = 0

    @property
    def dotted(self) -> str:
        """The name with ``+`` as ``.``, as used in resource names and mig-parted config names."""
        return self.name.replace("+", ".")

    @property
    def resource(self) -> str:
        """The mixed-strategy resource: ``nvidia.com/mig-1g.5gb.me`` for ``1g.5gb+me``."""
        return f"nvidia.com/mig-{self.dotted}"


@dataclass(frozen=True, slots=True)
class MigGeometry:
    """The MIG geometry of one GPU model."""

    memory_slices: int
    compute_slices: int
    profiles: tuple[MigProfile, ...]
    balanced: tuple[str, ...]     # the "all-balanced" layout per GPU (mig-parted default config)

    def find(self, name: str) -> MigProfile | None:
        """The profile named ``name`` (``1g.5gb+me`` or the dotted ``1g.5gb.me``), or None."""
        for profile in self.profiles:
            if name in (profile.name, profile.dotted):
                return profile
        return None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.profiles)


_ROLES_8X7 = {  # role: (g, nvidia-smi id, size in memory slices, starts, max instances)
    "1g": (1, 19, 1, _STARTS_1, 7),
    "1g+me": (1, 20, 1, _STARTS_1, 1),
    "1g2": (1, 15, 2, (0, 2, 4, 6), 4),
    "2g": (2, 14, 2, (0, 2, 4), 3),
    "3g": (3, 9, 4, (0, 4), 2),
    "4g": (4, 5, 4, (0,), 1),
    "7g": (7, 0, 8, (0,), 1),
}
_PROFILE_NAME = re.compile(r"^([1-7])g\.(\d+)gb(\+me)?$")


def geometry_from_names(names: list[str]) -> MigGeometry:
    """An 8-memory / 7-compute geometry (A100/H100/H200/B200 placements) from profile names
    as nvidia-smi writes them, for a GPU model a user defines (memory = the name's GB x 1024,
    SMs and engines as H100 SXM). Of the 1g profiles without ``+me`` the smaller is the
    1-slice one and the larger the 2-memory-slice one. Raises ``ValueError`` naming the profile.

    >>> g = geometry_from_names(["1g.24gb", "2g.48gb", "4g.96gb", "1g.12gb"])
    >>> [(p.name, p.memory_slices, p.starts) for p in g.profiles][:2]
    [('1g.12gb', 1, (0, 1, 2, 3, 4, 5, 6)), ('1g.24gb', 2, (0, 2, 4, 6))]
    """
    parsed = _parsed_names(names)
    plain_1g = sorted({mem for g, mem, me, _ in parsed if g == 1 and not me})
    if len(plain_1g) > 2:
        raise ValueError("at most two 1g profiles without +me (1 and 2 memory slices)")
    profiles = [_user_profile(g, mem, me, name, plain_1g)
                for g, mem, me, name in sorted(parsed, key=lambda p: (p[0], p[1], p[2]))]
    return MigGeometry(8, 7, tuple(profiles), _user_balanced(profiles))


def _parsed_names(names: list[str]) -> list[tuple[int, int, bool, str]]:
    """(compute slices, GB, +me, name) of each profile name; distinct names only."""
    parsed = []
    for name in names:
        match = _PROFILE_NAME.match(str(name))
        if not match:
            raise ValueError(f'invalid MIG profile "{name}": expected <g>g.<memory>gb[+me]')
        parsed.append((int(match.group(1)), int(match.group(2)), bool(match.group(3)), str(name)))
    if len({p[3] for p in parsed}) != len(parsed):
        raise ValueError("duplicate MIG profile names")
    return parsed


def _user_profile(g: int, mem: int, me: bool, name: str, plain_1g: list[int]) -> MigProfile:
    """The profile of one parsed name, in the 8x7 role it takes (``plain_1g``: the GB of the 1g
    profiles without ``+me``, smallest first)."""
    role = "1g+me" if me else f"{g}g" if g != 1 or mem == plain_1g[0] else "1g2"
    if role not in _ROLES_8X7 or (me and g != 1):
        raise ValueError(f'invalid MIG profile "{name}": no {g}g{"+me" if me else ""} '
                         f"profile on an 8-slice GPU")
    _g, pid, size, starts, max_inst = _ROLES_8X7[role]
    copy, dec, jpg, ofa = _H100_ENGINES[role]
    return MigProfile(name, pid, g, size, starts, max_inst, mem * 1024,
                      _H100_SMS[role], copy, dec, 0, jpg, ofa)


def _user_balanced(profiles: list[MigProfile]) -> tuple[str, ...]:
    """``all-balanced``: 3g, 2g and twice the smallest 1-slice 1g, when the GPU has all three."""
    by_g = {p.compute_slices: p.name for p in profiles if "+" not in p.name}
    smallest = min((p for p in profiles if p.compute_slices == 1 and p.memory_slices == 1
                    and "+" not in p.name), key=lambda p: p.memory_mib, default=None)
    if 3 in by_g and 2 in by_g and smallest is not None:
        return (by_g[3], by_g[2], smallest.name, smallest.name)
    return ()


def _geometry_8x7(mem_gb: dict[str, str], mem_mib: dict[str, int], sms: dict[str, int],
                  engines: dict[str, tuple[int, int, int, int]]) -> MigGeometry:
    """An 8-memory / 7-compute geometry from per-role names, memory, SMs and engines.

    Roles: ``1g`` (1 slice), ``1g+me``, ``1g2`` (1g with 2 memory slices), ``2g``, ``3g``, ``4g``,
    ``7g``. ``mem_gb`` gives the "<mem>gb" part of each role's name; engines are
    (copy, decoders, jpeg, ofa).
    """
    table = _ROLES_8X7
    profiles = []
    for role, (g, pid, size, starts, max_inst) in table.items():
        suffix = "+me" if role == "1g+me" else ""
        name = f"{g}g.{mem_gb[role]}gb{suffix}"
        copy, dec, jpg, ofa = engines[role]
        profiles.append(MigProfile(name, pid, g, size, starts, max_inst, mem_mib[role], sms[role],
                                   copy, dec, 0, jpg, ofa))
    by_role = {role: p.name for role, p in zip(table, profiles)}
    balanced = (by_role["3g"], by_role["2g"], by_role["1g"], by_role["1g"])
    return MigGeometry(8, 7, tuple(profiles), balanced)


def _gb_names(one: int, two: int, three: int, seven: int) -> dict[str, str]:
    return {"1g": str(one), "1g+me": str(one), "1g2": str(two), "2g": str(two),
            "3g": str(three), "4g": str(three), "7g": str(seven)}


def _mib(one: int, two: int, three: int, seven: int) -> dict[str, int]:
    return {"1g": one, "1g+me": one, "1g2": two, "2g": two, "3g": three, "4g": three, "7g": seven}


_A100_SMS = {"1g": 14, "1g+me": 14, "1g2": 14, "2g": 28, "3g": 42, "4g": 56, "7g": 98}
_A100_ENGINES = {"1g": (1, 0, 0, 0), "1g+me": (1, 1, 1, 1), "1g2": (1, 1, 0, 0), "2g": (2, 1, 0, 0),
                 "3g": (3, 2, 0, 0), "4g": (4, 2, 0, 0), "7g": (7, 5, 1, 1)}
_H100_SMS = {"1g": 16, "1g+me": 16, "1g2": 26, "2g": 32, "3g": 60, "4g": 64, "7g": 132}
_H100_ENGINES = {"1g": (1, 1, 1, 0), "1g+me": (1, 1, 1, 1), "1g2": (1, 1, 1, 0), "2g": (2, 2, 2, 0),
                 "3g": (3, 3, 3, 0), "4g": (4, 4, 4, 0), "7g": (8, 7, 7, 1)}

# A100-40GB: nvidia-smi 4.75 / 9.75 / 19.62 / 39.50 GiB, x 1024.
A100_40GB = _geometry_8x7(_gb_names(5, 10, 20, 40), _mib(4864, 9984, 20091, 40448),
                          _A100_SMS, _A100_ENGINES)
# A100-80GB: go-nvml mock memorySizeMB.
A100_80GB = _geometry_8x7(_gb_names(10, 20, 40, 80), _mib(9856, 19968, 40192, 80384),
                          _A100_SMS, _A100_ENGINES)
# H100 80GB HBM3: 9.75 / 19.62 / 39.50 / 79.25 GiB, x 1024.
H100_80GB = _geometry_8x7(_gb_names(10, 20, 40, 80), _mib(9984, 20091, 40448, 81152),
                          _H100_SMS, _H100_ENGINES)
H100_NVL = _geometry_8x7(_gb_names(12, 24, 47, 94), _mib(12288, 24576, 48128, 96256),
                         _H100_SMS, _H100_ENGINES)
H200_141GB = _geometry_8x7(_gb_names(18, 35, 71, 141), _mib(18432, 35840, 72704, 144384),
                           _H100_SMS, _H100_ENGINES)
B200 = _geometry_8x7(_gb_names(23, 45, 90, 180), _mib(23552, 46080, 92160, 184320),
                     _H100_SMS, _H100_ENGINES)
# GB200 (186 GB per GPU): mig-parted config-default.yaml names 1g.23gb .. 7g.186gb; memory is
# "profile GB x 1024" and SMs as H100 SXM (unverified upstream, as for B200).
GB200 = _geometry_8x7(_gb_names(23, 47, 93, 186), _mib(23552, 48128, 95232, 190464),
                      _H100_SMS, _H100_ENGINES)

# A30: 4 memory slices, 4 compute slices; 1g {0,1,2,3}:1, 2g {0,2}:2, 4g {0}:4.
A30 = MigGeometry(4, 4, (
    MigProfile("1g.6gb", 14, 1, 1, (0, 1, 2, 3), 4, 5836, 14, 1, 0, 0, 0, 0),
    MigProfile("1g.6gb+me", 21, 1, 1, (0, 1, 2, 3), 1, 5836, 14, 1, 1, 0, 1, 1),
    MigProfile("2g.12gb", 5, 2, 2, (0, 2), 2, 11672, 28, 2, 2, 0, 0, 0),
    MigProfile("2g.12gb+me", 6, 2, 2, (0, 2), 1, 11672, 28, 2, 2, 0, 1, 1),
    MigProfile("4g.24gb", 0, 4, 4, (0,), 1, 23344, 56, 4, 4, 0, 1, 1),
), balanced=("2g.12gb", "1g.6gb", "1g.6gb"))

"""How a node's GPUs talk to each other, and which whole GPUs a multi-GPU pod gets.

Each catalog model has one ``Interconnect``: the NVLink domains of a board (groups of GPU
indices in which every GPU reaches every other over NVLink), by how NVIDIA builds the part:

- ``nvswitch``: HGX/DGX boards of SXM parts (A100 SXM4, H100 SXM5, H200, B200, GB200 trays):
  every GPU is wired to NVSwitch chips, so the whole board is one all-to-all domain (NVIDIA
  HGX A100/H100/H200/B200 platform pages, DGX A100/H100 user guides: "NVSwitch, all-to-all");
- ``nvlink-mesh``: V100 SXM2 on DGX-1's hybrid cube-mesh: GPUs 0-3 and 4-7 are each fully
  connected, the two quads only by single cross links (NVIDIA DGX-1 System Architecture white
  paper, Figure 4), so a domain is one quad;
- ``nvlink-bridge``: PCIe cards sold with NVLink bridges (A30, H100 PCIe, H100 NVL): bridged in
  pairs, GPUs 2k and 2k+1 (the product briefs: "NVLink bridge connecting two GPUs"); gpusched
  assumes every pair is bridged, as the bridge is an option on these cards;
- ``none``: cards without NVLink (T4, L4, L40S, A10, A10G, RTX parts, P100 PCIe), parts whose
  board is not published (the trace's G2/G3), and the Alibaba trace's V100M16/V100M32, which keep
  the reference simulator's flat GPUs so trace replays stay comparable: PCIe only, no domain.

A catalog model stands for all its aliases: the A100 PCIe aliases resolve to the SXM4 model and
are treated as NVSwitch boards (a node labelled with the PCIe product gets the SXM entry).

Choice (``pick_whole_gpus``): NVIDIA's device plugin asks go-gpuallocator's best-effort policy
(``gpuallocator/besteffort_policy.go``) for the set of free GPUs with the best pairwise link score
(NVLink links score 100 each, PCIe paths 10-60). On these boards that is a set inside one NVLink
domain whenever one has room; gpusched takes the same rule in its exact form: among the domains
with at least ``count`` free GPUs, the one with the **fewest** free GPUs (tightest fit, which
keeps larger domains whole for larger pods), ties to the lowest domain; inside it the lowest free
indices. When no domain has room the lowest free indices are taken (spanning domains, as the
device plugin does when nothing better exists), and ``placement_note`` says so.

Worked example: an 8-GPU V100 SXM2 node with GPUs 0, 1, 4, 5, 6 free and a 2-GPU pod: domain
{0-3} has 2 free, {4-7} has 3, so the pod gets 0,1 and {4-7} keeps three for a 3-GPU pod.

Neighbours: ``catalog`` (the models); ``node.NodeDevices._pick`` calls ``pick_whole_gpus``;
``cluster.explain_facts`` prints ``placement_note``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

NVSWITCH = "nvswitch"
NVLINK_MESH = "nvlink-mesh"
NVLINK_BRIDGE = "nvlink-bridge"
NONE = "none"

_DESCRIPTION = {NVSWITCH: "NVSwitch, all GPUs of the board all-to-all",
                NVLINK_MESH: "NVLink hybrid cube-mesh, GPUs fully connected in quads",
                NVLINK_BRIDGE: "NVLink bridges, GPUs in bridged pairs",
                NONE: "PCIe only, no NVLink"}


@dataclass(frozen=True)
class Interconnect:
    """A board's NVLink layout: ``kind`` and the GPUs per domain (0 = the whole board)."""

    kind: str
    domain_size: int = 0

    @property
    def description(self) -> str:
        return _DESCRIPTION[self.kind]

    def domains(self, gpu_count: int) -> tuple[tuple[int, ...], ...]:
        """The NVLink domains of a board of ``gpu_count`` GPUs (none without NVLink).

        >>> Interconnect(NVLINK_BRIDGE, 2).domains(4), Interconnect(NVSWITCH).domains(3)
        (((0, 1), (2, 3)), ((0, 1, 2),))
        """
        if self.kind == NONE or gpu_count < 2:
            return ()
        size = self.domain_size or gpu_count
        return tuple(tuple(range(start, min(start + size, gpu_count))) for start in range(0, gpu_count, size))


_BY_MODEL = {
    **dict.fromkeys(("A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB", "B200", "GB200"), Interconnect(NVSWITCH)),
    **dict.fromkeys(("V100-16GB", "V100-32GB"), Interconnect(NVLINK_MESH, 4)),
    **dict.fromkeys(("A30", "H100-PCIE", "H100-NVL"), Interconnect(NVLINK_BRIDGE, 2)),
}


def interconnect_of(model_name: str) -> Interconnect:
    """The interconnect of a catalog model (``none`` for models without NVLink)."""
    return _BY_MODEL.get(model_name, Interconnect(NONE))


def domain_of(domains: Sequence[tuple[int, ...]], index: int) -> int:
    """The position of the domain holding GPU ``index`` (-1 when none does)."""
    return next((n for n, domain in enumerate(domains) if index in domain), -1)


def pick_whole_gpus(interconnect: Interconnect, gpu_count: int, free: Sequence[int], count: int) -> list[int]:
    """``count`` of the ``free`` GPU indices (``count <= len(free)``), inside one NVLink domain
    when one has room (tightest domain, ties lowest), else the lowest free indices."""
    ordered = sorted(free)
    domains = interconnect.domains(gpu_count)
    if count < 2 or not domains:
        return ordered[:count]
    room = [(sum(1 for i in ordered if i in domain), n) for n, domain in enumerate(domains)]
    fitting = [(have, n) for have, n in room if have >= count]
    if not fitting:
        return ordered[:count]
    _, best = min(fitting)
    return [i for i in ordered if i in domains[best]][:count]


def placement_note(interconnect: Interconnect, gpu_count: int, indices: Sequence[int]) -> str:
    """One sentence on the NVLink placement of a pod's whole GPUs ("" for fewer than two or
    a board without NVLink)."""
    domains = interconnect.domains(gpu_count)
    if len(indices) < 2 or not domains:
        return ""
    held = ",".join(str(i) for i in sorted(indices))
    spanned = sorted({domain_of(domains, i) for i in indices})
    if len(spanned) == 1:
        members = domains[spanned[0]]
        return (f"GPUs {held} share one NVLink domain (GPUs {members[0]}-{members[-1]}; "
                f"{interconnect.description})")
    return (f"GPUs {held} span {len(spanned)} NVLink domains ({interconnect.description}): no single "
            f"domain had {len(indices)} free GPUs when the pod was placed")

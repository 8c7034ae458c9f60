"""VolumeBinding for node-local volumes: a pod goes where its PersistentVolumeClaims' data is.

gpusched models what matters for data locality, not the whole PV controller: each claim the pod
names (``PodInfo.pvc_names``) must be known; a claim bound to a volume with node affinity (a
local PV on one node, or a PV whose ``nodeAffinity`` selects a set of nodes) restricts the pod
to those nodes. Upstream's messages:

- PreFilter: a claim that does not exist -> ``persistentvolumeclaim "<name>" not found``,
  UnschedulableAndUnresolvable (the whole cycle fails with that message); an unbound claim whose
  StorageClass binds immediately -> ``pod has unbound immediate PersistentVolumeClaims``.
- Filter: a node outside a bound volume's node affinity ->
  ``node(s) had volume node affinity conflict``, UnschedulableAndUnresolvable.
- Unbound ``WaitForFirstConsumer`` claims (``bound=False, immediate=False``): with
  ``candidate_terms=None`` the class provisions, so any node will do; otherwise (a
  ``kubernetes.io/no-provisioner`` class: local volumes) a node must be selected by the node
  affinity of one of the volumes that could bind (``None`` in the tuple: a volume without
  affinity), else ``node(s) didn't find available persistent volumes to bind``
  (``ErrReasonBindConflict``), UnschedulableAndUnresolvable.

**How claims reach the plugin.** The caller describes each claim as a ``ClaimInfo`` and passes
them either as plugin args (``{"claims": [ClaimInfo, ...]}`` in the profile's pluginConfig) or,
as the embedded cluster does before each scheduling pass, with ``VolumeBinding.set_claims(...)``
on the plugin instance of the profile (both replace the whole set). Claims are keyed by
``namespace/name``.

Neighbours: node-set helpers from ``pod_topology_spread``; registered in ``plugins/__init__``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import numpy as np

from gpusched.objects.types import NodeSelectorTerm, PodInfo
from gpusched.scheduler.framework import Code, CycleState, Rejection, SKIP, SUCCESS, Status
from gpusched.scheduler.plugins.helper.node_affinity import terms_mask

if TYPE_CHECKING:
    from gpusched.scheduler.snapshot import Snapshot

NAME = "VolumeBinding"
REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
_PRE_FILTER_KEY = "PreFilter" + NAME


@dataclass(frozen=True, slots=True)
class ClaimInfo:
    """A PVC as the scheduler sees it: where its bound volume can be used.

    ``node_name``: the single node of a local volume (``""`` = not pinned to one node);
    ``node_terms``: the bound PV's ``spec.nodeAffinity.required.nodeSelectorTerms`` (ORed;
    None = no node affinity). ``bound=False`` with ``immediate=True`` blocks scheduling.
    ``candidate_terms``: for an unbound delayed claim, the node affinities of the static
    volumes that could bind it (None = it is provisioned, any node).
    """

    namespace: str
    name: str
    node_name: str = ""
    node_terms: tuple[NodeSelectorTerm, ...] | None = None
    bound: bool = True
    immediate: bool = False
    candidate_terms: tuple[tuple[NodeSelectorTerm, ...] | None, ...] | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def claim_not_found(name: str) -> str:
    return f'persistentvolumeclaim "{name}" not found'


class VolumeBinding:
    """PreFilter (claims exist and are usable) + Filter (volume node affinity)."""

    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        self.claims: dict[str, ClaimInfo] = {}
        self.set_claims((args or {}).get("claims", ()))

    def set_claims(self, claims: Iterable[ClaimInfo]) -> None:
        """Replace the known claims (the cluster calls this when PVCs or PVs change)."""
        self.claims = {claim.key: claim for claim in claims}

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        if not pod.pvc_names:
            return SKIP
        restricting: list[ClaimInfo] = []
        for name in pod.pvc_names:
            claim = self.claims.get(f"{pod.namespace}/{name}")
            if claim is None:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (claim_not_found(name),))
            if not claim.bound and claim.immediate:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_UNBOUND_IMMEDIATE,))
            if claim.bound and (claim.node_name or claim.node_terms is not None):
                restricting.append(claim)
            if not claim.bound and claim.candidate_terms is not None:
                restricting.append(claim)
        if not restricting:
            return SKIP
        state.write(_PRE_FILTER_KEY, tuple(restricting))
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, candidates: np.ndarray) -> list[Rejection]:
        candidates = snapshot.mask(candidates)     # row indices -> bool per row
        restricting = state.read(_PRE_FILTER_KEY)
        if not restricting:
            return []
        allowed = np.ones(snapshot.num_nodes, dtype=bool)
        bindable = np.ones(snapshot.num_nodes, dtype=bool)
        names = np.asarray(snapshot.names, dtype=object)
        for claim in restricting:
            if not claim.bound:
                bindable &= _any_volume_mask(snapshot, claim.candidate_terms or ())
                continue
            if claim.node_name:
                allowed &= names == claim.node_name
            if claim.node_terms is not None:
                allowed &= terms_mask(snapshot, claim.node_terms)
        rejections = []
        conflict = candidates & ~allowed
        if conflict.any():
            rejections.append(Rejection(conflict, REASON_NODE_CONFLICT,
                                        Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
        unbindable = candidates & allowed & ~bindable
        if unbindable.any():
            rejections.append(Rejection(unbindable, REASON_BIND_CONFLICT,
                                        Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
        return rejections


def _any_volume_mask(snapshot: Snapshot, candidates: tuple[tuple[NodeSelectorTerm, ...] | None, ...]) -> np.ndarray:
    """Nodes where at least one candidate volume's node affinity holds."""
    mask = np.zeros(snapshot.num_nodes, dtype=bool)
    for terms in candidates:
        mask |= np.ones(snapshot.num_nodes, dtype=bool) if terms is None else terms_mask(snapshot, terms)
    return mask


def new(args: Mapping[str, Any] | None = None) -> VolumeBinding:
    return VolumeBinding(args)

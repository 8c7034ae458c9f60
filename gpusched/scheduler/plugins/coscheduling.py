"""Coscheduling: scheduler-plugins' all-or-nothing gangs (``scheduling.x-k8s.io`` PodGroup).

An optional plugin (not in the default profile): a KubeSchedulerConfiguration profile enables it
as scheduler-plugins' ``as-a-second-scheduler`` config does (queueSort, preFilter, postFilter,
reserve, permit). Pods join a group with the label ``scheduling.x-k8s.io/pod-group: <name>``;
upstream ``pkg/coscheduling/coscheduling.go`` and ``core/core.go``:

- **PreFilter** (``PodGroupManager.PreFilter``), UnschedulableAndUnresolvable (no preemption):
  ``podGroup <ns>/<pg> failed recently`` while the group backs off; ``pre-filter pod <pod>
  cannot find enough sibling pods, current pods number: <n>, minMember of group: <m>``;
  ``pre-filter pod <pod> cannot proceed due to gated pods in the same PodGroup`` when its
  pods without ``schedulingGates`` are fewer than ``minMember``;
  ``resource gap: <ResourceList>`` when ``minResources`` plus ``pods: minMember`` exceed what
  the nodes have left (the group's own pods not counted, ``CheckClusterResource``); a group that
  passed is not checked again for the plugin's wait time (``permittedPG``). A pod naming no
  PodGroup that exists passes.
- **Permit**: no label passes; a missing PodGroup is Unschedulable ``PodGroup not found``; if the
  group's assigned pods (bound or assumed, this one included) reach ``minMember`` every waiting
  sibling is allowed and the pod passes, else Wait for ``scheduleTimeoutSeconds`` (else the
  plugin's ``permitWaitingTimeSeconds``, 60); the group's first waiting pod moves its siblings
  to activeQ (``ActivateSiblings``: ``framework.PODS_TO_ACTIVATE_KEY``).
- **PostFilter** (the pod fits nowhere): nothing when the group already has ``minMember``
  assigned or the missing share ``(minMember - assigned) / minMember`` is at most
  ``podGroupRejectPercentage`` %; else every waiting sibling is rejected with ``optimistic
  rejection in PostFilter``, the group backs off ``podGroupBackoffSeconds`` (when set and the
  group has its pods) and the status is ``PodGroup <ns>/<pg> gets rejected due to Pod <pod> is
  unschedulable even after PostFilter``.
- **Unreserve** (the pod was rejected or timed out): every waiting sibling is rejected with
  ``rejection in Unreserve``; so a time-out releases the whole group.
- **QueueSort**: PrioritySort's order (the embedded queue keeps pods in priority, creation
  order; upstream's group creation time is not modelled).

The PodGroups and their member pods come from the host (``set_pod_groups``, as the plugin's
informers would); the waiting pods from the cycle state (``framework.WAITING_PODS_KEY``).

Neighbours: ``scheduler.waiting`` (the map it allows and rejects in); registered in
``plugins/__init__``; the embedded cluster feeds it in ``cluster.scheduling.profiles``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from gpusched.objects.quantity import canonical, quantity_format
from gpusched.objects.types import PodInfo
from gpusched.scheduler.framework import (PODS_TO_ACTIVATE_KEY, SUCCESS, WAITING_PODS_KEY, Code,
                                          CycleState, Diagnosis, PostFilterResult, Status)
from gpusched.scheduler.snapshot import PODS, Snapshot

NAME = "Coscheduling"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
GroupKey = tuple[str, str]                 # (namespace, name)


@dataclass(frozen=True)
class PodGroupInfo:
    """What the plugin reads of one PodGroup: ``spec.minMember``, ``spec.minResources`` (raw
    quantities), ``spec.scheduleTimeoutSeconds`` (None: the plugin's wait time)."""

    min_member: int
    min_resources: Mapping[str, Any] = field(default_factory=dict)
    schedule_timeout: float | None = None


def pod_group_info(body: dict[str, Any]) -> PodGroupInfo:
    spec = body.get("spec") or {}
    timeout = spec.get("scheduleTimeoutSeconds")
    return PodGroupInfo(int(spec.get("minMember") or 0), dict(spec.get("minResources") or {}),
                        float(timeout) if timeout else None)


def _go_quantity(resource: str, amount: int, form: str) -> str:
    """Go's ``%v`` of a ``resource.Quantity`` left from ``Sub`` (its struct fields: the int64
    amount and scale, no inf.Dec, no cached string, the format)."""
    scale = -3 if resource == "cpu" else 0
    return f"{{{{{amount} {scale}}} {{<nil>}}  {form}}}"


class Coscheduling:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        args = args or {}
        self.permit_waiting_seconds = float(args.get("permitWaitingTimeSeconds", 60))
        self.backoff_seconds = float(args.get("podGroupBackoffSeconds", 0))
        self.reject_percentage = float(args.get("podGroupRejectPercentage", 10))
        self.groups: dict[GroupKey, PodGroupInfo] = {}
        self.members: dict[GroupKey, tuple[str, ...]] = {}     # pod uids carrying the label
        self.gated: dict[GroupKey, int] = {}                   # of those, with schedulingGates
        self.backed_off: dict[GroupKey, float] = {}            # group -> back-off end
        self.permitted: dict[GroupKey, float] = {}             # group -> minResources checked until
        self.now = 0.0

    def set_pod_groups(self, groups: Mapping[GroupKey, PodGroupInfo],
                       members: Mapping[GroupKey, tuple[str, ...]], now: float,
                       gated: Mapping[GroupKey, int] | None = None) -> None:
        """The PodGroups, the pods labelled for each (and how many of them are gated), and the
        clock (the host's informers)."""
        self.groups, self.members, self.now = dict(groups), dict(members), now
        self.gated = dict(gated or {})

    # ---- helpers -------------------------------------------------------------------------

    @staticmethod
    def _group_key(pod: PodInfo) -> GroupKey | None:
        name = pod.labels.get(POD_GROUP_LABEL, "")
        return (pod.namespace, name) if name else None

    def _assigned(self, key: GroupKey, snapshot: Snapshot) -> int:
        """``CalculateAssignedPods``: the group's pods bound or assumed in the snapshot."""
        return sum(1 for uid in self.members.get(key, ()) if uid in snapshot.pod_node)

    def _wait_time(self, group: PodGroupInfo) -> float:
        """``util.GetWaitTimeDuration``: the group's scheduleTimeoutSeconds, else the default."""
        return group.schedule_timeout if group.schedule_timeout else self.permit_waiting_seconds

    # ---- QueueSort -----------------------------------------------------------------------

    def sort_key(self, pod: PodInfo) -> tuple[Any, ...]:
        return (-pod.priority, pod.creation_seq, pod.namespace, pod.name)

    # ---- PreFilter -----------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        key = self._group_key(pod)
        group = self.groups.get(key) if key is not None else None
        if key is None or group is None:
            return SUCCESS
        state.write(NAME, snapshot)              # Permit counts the assigned pods in it
        full = f"{key[0]}/{key[1]}"
        if self.backed_off.get(key, float("-inf")) > self.now:
            return _unresolvable(f"podGroup {full} failed recently")
        count = len(self.members.get(key, ()))
        if count < group.min_member:
            return _unresolvable(f"pre-filter pod {pod.name} cannot find enough sibling pods, "
                                 f"current pods number: {count}, minMember of group: {group.min_member}")
        if count - self.gated.get(key, 0) < group.min_member:
            return _unresolvable(f"pre-filter pod {pod.name} cannot proceed due to gated pods in the "
                                 "same PodGroup")
        if not group.min_resources or self.permitted.get(key, float("-inf")) > self.now:
            return SUCCESS
        gap = self._resource_gap(key, group, snapshot)
        if gap:
            return _unresolvable(f"resource gap: {gap}")
        self.permitted[key] = self.now + self.permit_waiting_seconds
        return SUCCESS

    def _resource_gap(self, key: GroupKey, group: PodGroupInfo, snapshot: Snapshot) -> str:
        """``CheckClusterResource``: minResources and ``pods: minMember`` taken node by node from
        what each node has left (its group pods given back); the rest, as Go prints it."""
        wanted = {name: canonical(name, value) for name, value in group.min_resources.items()}
        wanted["pods"] = group.min_member
        forms = {name: quantity_format(value) for name, value in group.min_resources.items()}
        forms["pods"] = "DecimalSI"
        free = snapshot.free.copy()
        for uid in self.members.get(key, ()):
            row = snapshot.pod_node.get(uid)
            info = snapshot.pod(uid)
            if row is not None and info is not None:
                free[row] += snapshot.request_vector(info)[: free.shape[1]]
        for row in range(snapshot.num_nodes):
            for name in list(wanted):
                column = snapshot.resources.get(name)
                left = int(free[row, column]) if column is not None else 0
                if name == "pods":
                    left = int(free[row, PODS])
                wanted[name] -= left
                if wanted[name] <= 0:
                    del wanted[name]
            if not wanted:
                return ""
        parts = " ".join(f"{name}:{_go_quantity(name, amount, forms[name])}"
                         for name, amount in sorted(wanted.items()))
        return f"map[{parts}]"

    # ---- PostFilter ----------------------------------------------------------------------

    def post_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                    diagnosis: Diagnosis) -> PostFilterResult:
        key = self._group_key(pod)
        group = self.groups.get(key) if key is not None else None
        if key is None or group is None:
            return PostFilterResult(Status(Code.UNSCHEDULABLE, ("can not find pod group",)))
        assigned = self._assigned(key, snapshot)
        if assigned >= group.min_member:
            return PostFilterResult(Status(Code.UNSCHEDULABLE))
        missing = (group.min_member - assigned) / group.min_member
        if missing <= self.reject_percentage / 100:
            return PostFilterResult(Status(Code.UNSCHEDULABLE))
        self._reject_siblings(state, key, "optimistic rejection in PostFilter")
        if self.backoff_seconds and len(self.members.get(key, ())) >= group.min_member:
            self.backed_off[key] = self.now + self.backoff_seconds
        self.permitted.pop(key, None)
        return PostFilterResult(Status(Code.UNSCHEDULABLE, (
            f"PodGroup {key[0]}/{key[1]} gets rejected due to Pod {pod.name} is unschedulable "
            "even after PostFilter",)))

    def _reject_siblings(self, state: CycleState, key: GroupKey, message: str) -> None:
        waiting = state.read(WAITING_PODS_KEY)
        for sibling in list(waiting or ()):
            if self._group_key(sibling.pod) == key:
                waiting.reject(sibling.pod.uid, NAME, message)

    # ---- Reserve / Permit ----------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, node: int) -> Status:
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, node: int) -> None:
        key = self._group_key(pod)
        if key is None or key not in self.groups:
            return
        self._reject_siblings(state, key, "rejection in Unreserve")
        self.permitted.pop(key, None)

    def permit(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        key = self._group_key(pod)
        if key is None:
            return SUCCESS
        group = self.groups.get(key)
        if group is None:
            return Status(Code.UNSCHEDULABLE, ("PodGroup not found",))
        waiting = state.read(WAITING_PODS_KEY)
        snapshot: Snapshot | None = state.read(NAME)
        assigned = 1 if snapshot is None else (     # the pod itself is assumed before Permit
            self._assigned(key, snapshot) + (0 if pod.uid in snapshot.pod_node else 1))
        if assigned >= group.min_member:
            for sibling in list(waiting or ()):
                if self._group_key(sibling.pod) == key:
                    waiting.allow(sibling.pod.uid, NAME)
            return SUCCESS
        activate = state.read(PODS_TO_ACTIVATE_KEY)
        if assigned == 1 and activate is not None:      # ActivateSiblings, by the first one only
            activate.update(uid for uid in self.members.get(key, ()) if uid != pod.uid)
        return Status.wait(self._wait_time(group))


def _unresolvable(message: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,))


def new(args: dict[str, Any] | None = None) -> Coscheduling:
    return Coscheduling(args)


__all__ = ["Coscheduling", "NAME", "POD_GROUP_LABEL", "PodGroupInfo", "pod_group_info", "new"]

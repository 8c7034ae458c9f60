"""Extension points, statuses and per-cycle state of the scheduling framework.

This module is the contract between the framework runner (``scheduler.runner``) and plugins
(``scheduler.plugins.*``, ``gpusched.policies``, out-of-tree ones). It mirrors kube-scheduler's
plugin interfaces (``staging/src/k8s.io/kube-scheduler/framework/interface.go``: Plugin,
QueueSortPlugin, PreFilterPlugin, FilterPlugin, PostFilterPlugin, PreScorePlugin, ScorePlugin
with ScoreExtensions, ReservePlugin, PermitPlugin) as typed Protocols, listed with their config
keys in ``EXTENSION_POINTS``; ``extension_points(cls)`` reads the points a plugin class
implements off the class. PreEnqueue, PreBind, Bind and PostBind are done by the caller
(``CALLER_POINTS``). One change
that makes large clusters fast: **Filter and Score are vectorised**. A Filter plugin looks at all
candidate nodes at once and returns ``Rejection`` groups (a boolean mask over snapshot rows plus
one reason string); a Score plugin returns an integer array for an array of node indices.

Legal results per extension point (a plugin returns a Status; raising means a bug):

- PreFilter: SUCCESS; SKIP (its Filter is skipped this cycle); UNSCHEDULABLE /
  UNSCHEDULABLE_AND_UNRESOLVABLE (the whole cycle fails, the message is the PreFilter message);
  ERROR. A successful PreFilter may also name the only nodes worth filtering
  (``narrow_nodes``, upstream's ``PreFilterResult.NodeNames``): the cycle then filters those
  nodes only, and every other node is rejected, unresolvable, with ``node(s) didn't satisfy
  plugin(s) [<plugins>]`` (upstream ``schedule_one.go`` ``findNodesThatFitPod``).
- Filter: a list of Rejections; nodes in no rejection pass. Code UNSCHEDULABLE means preemption
  might help on that node, UNSCHEDULABLE_AND_UNRESOLVABLE means it cannot (taints, affinity ...).
  The runner narrows the candidates after each plugin, as upstream stops at a node's first
  failing plugin; ``explain`` runs every plugin on every node instead.
- PostFilter: runs only when no node is feasible; returns a PostFilterResult (a nominated node
  and victims, or a status whose reasons become the " preemption: ..." part of the message).
- PreScore: SUCCESS or SKIP (its Score is skipped) or ERROR.
- Score: int64 array, same length as ``nodes``; NormalizeScore maps it to 0..100
  (MaxNodeScore). The runner multiplies by the profile weight and sums.
- Reserve: SUCCESS or a failure (then every Reserve plugin's Unreserve runs, in reverse order).
- Permit: SUCCESS, UNSCHEDULABLE (rejected) or WAIT with ``Status.timeout`` seconds: the pod
  stays assumed (it holds its node's room) in the scheduler's waiting pods
  (``scheduler.waiting``) until every waiting plugin allows it (then it binds), one rejects it,
  or the time-out passes on the cluster's clock (then it is unreserved and fails).
- PreBind / Bind: done by the caller when it applies the ScheduleResult (the store, the API).
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Callable, Protocol, runtime_checkable

import numpy as np

from gpusched.objects.types import DeviceAssignment, NO_DEVICES, PodInfo

if TYPE_CHECKING:
    from gpusched.scheduler.snapshot import Snapshot

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


class Code(IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5


@dataclass(frozen=True, slots=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""
    timeout: float = 0.0         # WAIT from Permit: how long the pod may wait (seconds)

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    @staticmethod
    def unschedulable(*reasons: str, resolvable: bool = True) -> "Status":
        code = Code.UNSCHEDULABLE if resolvable else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        return Status(code, reasons)

    def with_plugin(self, plugin: str) -> "Status":
        return Status(self.code, self.reasons, plugin, self.timeout)

    @staticmethod
    def wait(timeout: float) -> "Status":
        """Permit's Wait for ``timeout`` seconds (upstream returns ``(Status{Wait}, timeout)``)."""
        return Status(Code.WAIT, timeout=timeout)


SUCCESS = Status()
SKIP = Status(Code.SKIP)


@dataclass(frozen=True, slots=True)
class Rejection:
    """The nodes (mask over snapshot rows) one plugin rejects for one reason."""

    nodes: np.ndarray          # bool, shape (snapshot.num_nodes,)
    reason: str                # kube-scheduler's text, e.g. "Insufficient nvidia.com/gpu"
    code: Code = Code.UNSCHEDULABLE
    plugin: str = ""           # stamped by the runner


# Cycle-state keys the framework itself defines (a plugin's own state goes under its name):
# device assignment is a framework concept, as the assumed pod's devices are the runner's to hold.
DEVICE_ASSIGNMENT_KEY = "device-assignment"   # Reserve writes the devices chosen on the node;
#                                               the runner assumes the pod holding them
GPU_SELECTION_KEY = "gpu-selection"           # a Score plugin's GPU choice: node row -> GPU
#                                               indices, honoured when devices are chosen
PRE_FILTER_NODES_KEY = "pre-filter-nodes"     # PreFilterNodes: what the PreFilter plugins
#                                               narrowed the nodes to (``narrow_nodes``)
PODS_TO_ACTIVATE_KEY = "pods-to-activate"     # set[str] of pod uids a plugin asks the queue to
#                                               move to activeQ after this cycle (upstream
#                                               ``framework.PodsToActivateKey``)
WAITING_PODS_KEY = "waiting-pods"             # the scheduler's WaitingPods (``scheduler.waiting``):
#                                               upstream's IterateOverWaitingPods / GetWaitingPod
DRA_DELEGATED_KEY = "dra-delegated"           # extended resources a DeviceClass backs (KEP-5004):
#                                               on a node without them in allocatable they are
#                                               DynamicResources', not NodeResourcesFit's
NODE_DETAILS_KEY = "node-details"             # plugin name -> ``NodeDetail``: node name -> why
#                                               in more words than the rejection's reason
#                                               (explain calls it for the nodes it shows)
NodeDetail = Callable[[str], str]


class CycleState:
    """Per-cycle plugin data under keys named after plugins; ``clone()`` for what-if checks."""

    __slots__ = ("_data",)

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}

    def read(self, key: str) -> Any:
        return self._data.get(key)

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def clone(self) -> "CycleState":
        copy = CycleState()
        copy._data = {k: (v.clone() if hasattr(v, "clone") else v) for k, v in self._data.items()}
        return copy


@dataclass(frozen=True, slots=True)
class PreFilterNodes:
    """Upstream's merged ``PreFilterResult``: the node names every narrowing PreFilter plugin
    allows (their intersection; names of no node are ignored) and those plugins."""

    names: frozenset[str]
    plugins: frozenset[str]


def narrow_nodes(state: CycleState, plugin: str, names: frozenset[str]) -> None:
    """A PreFilter plugin's ``PreFilterResult{NodeNames}``, merged as upstream's
    ``PreFilterResult.Merge``: the intersection with what earlier plugins allowed."""
    seen: PreFilterNodes | None = state.read(PRE_FILTER_NODES_KEY)
    if seen is None:
        state.write(PRE_FILTER_NODES_KEY, PreFilterNodes(names, frozenset((plugin,))))
    else:
        state.write(PRE_FILTER_NODES_KEY,
                    PreFilterNodes(seen.names & names, seen.plugins | {plugin}))


@dataclass
class Diagnosis:
    """Why a pod fits nowhere: every Rejection of the cycle, in plugin order.

    ``node_reasons(i)`` gives the reasons recorded for node i; ``fit_error()`` (in
    ``scheduler.messages``) turns a Diagnosis into kube-scheduler's FailedScheduling message.
    """

    num_nodes: int
    rejections: list[Rejection] = field(default_factory=list)
    pre_filter_status: Status | None = None      # set when a PreFilter rejected the pod
    post_filter_message: str = ""                # e.g. "preemption: 0/4 nodes are available: ..."

    def node_reasons(self, node: int) -> list[str]:
        return [r.reason for r in self.rejections if r.nodes[node]]

    def unresolvable(self) -> np.ndarray:
        mask = np.zeros(self.num_nodes, dtype=bool)
        for r in self.rejections:
            if r.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                mask |= r.nodes
        return mask


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    status: Status
    nominated_node: str = ""
    victims: tuple[PodInfo, ...] = ()


@dataclass(frozen=True, slots=True)
class ScheduleResult:
    """What one scheduling cycle decided; the caller applies it (bind, evict, events, conditions)."""

    pod: PodInfo
    node: str = ""                                   # bound node, "" if not scheduled
    assignment: DeviceAssignment = NO_DEVICES        # devices chosen at Reserve
    status: Status = SUCCESS
    message: str = ""                                # FailedScheduling message when not scheduled
    nominated_node: str = ""                         # set by preemption
    victims: tuple[PodInfo, ...] = ()                # pods preemption evicts
    diagnosis: Diagnosis | None = None
    feasible_nodes: int = 0
    evaluated_nodes: int = 0
    scores: dict[str, int] | None = None             # total score per scored node (explain/debug)

    @property
    def scheduled(self) -> bool:
        return bool(self.node)


# ---- extension-point protocols ------------------------------------------------------------


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def sort_key(self, pod: PodInfo) -> tuple[Any, ...]: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: "Snapshot") -> Status: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: PodInfo, snapshot: "Snapshot",
               candidates: np.ndarray) -> list[Rejection]: ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(self, state: CycleState, pod: PodInfo, snapshot: "Snapshot",
                    diagnosis: Diagnosis) -> PostFilterResult: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: "Snapshot",
                  nodes: np.ndarray) -> Status: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: PodInfo, snapshot: "Snapshot",
              nodes: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class ScoreExtensions(Protocol):
    """Upstream's ``ScoreExtensions.NormalizeScore``: a Score plugin that has ``normalize`` gets
    its raw scores mapped (to 0..100) before the weight is applied."""

    def normalize(self, state: CycleState, pod: PodInfo, nodes: np.ndarray,
                  scores: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: PodInfo, snapshot: "Snapshot", node: int) -> Status: ...

    def unreserve(self, state: CycleState, pod: PodInfo, snapshot: "Snapshot", node: int) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    def permit(self, state: CycleState, pod: PodInfo, node: str) -> Status: ...


# ---- extension points: config key -> protocol, in cycle order --------------------------------


@dataclass(frozen=True, slots=True)
class ExtensionPoint:
    """One extension point gpusched runs: its ``plugins:`` key in a KubeSchedulerConfiguration,
    the Protocol a plugin serving it implements, that Protocol's methods and how many
    positional arguments (after ``self``) the framework passes each."""

    key: str
    protocol: type
    methods: tuple[tuple[str, int], ...]


EXTENSION_POINTS: tuple[ExtensionPoint, ...] = (
    ExtensionPoint("queueSort", QueueSortPlugin, (("sort_key", 1),)),
    ExtensionPoint("preFilter", PreFilterPlugin, (("pre_filter", 3),)),
    ExtensionPoint("filter", FilterPlugin, (("filter", 4),)),
    ExtensionPoint("postFilter", PostFilterPlugin, (("post_filter", 4),)),
    ExtensionPoint("preScore", PreScorePlugin, (("pre_score", 4),)),
    ExtensionPoint("score", ScorePlugin, (("score", 4),)),
    ExtensionPoint("reserve", ReservePlugin, (("reserve", 4), ("unreserve", 4))),
    ExtensionPoint("permit", PermitPlugin, (("permit", 3),)),
)
POINT_KEYS: tuple[str, ...] = tuple(p.key for p in EXTENSION_POINTS)
NORMALIZE = ("normalize", 4)          # ScoreExtensions, optional beside Score
# Upstream extension points the caller does instead of plugins (they are accepted in a
# configuration and change nothing): PreEnqueue (gated pods are never queued), PreBind, Bind,
# PostBind (the store or the API binds after Reserve/Permit).
CALLER_POINTS: tuple[str, ...] = ("preEnqueue", "preBind", "bind", "postBind")


@functools.lru_cache(maxsize=4096)
def _accepts(cls: type, method: str, positional: int) -> bool:
    """Whether ``cls.method`` exists and takes ``positional`` arguments after ``self``.
    Memoized per class: every scheduling pass resolves its profiles again, and
    ``inspect.signature`` was most of a pass's CPU at 1,000 nodes through the API."""
    function = getattr(cls, method, None)
    if not callable(function):
        return False
    try:
        inspect.signature(function).bind(*([None] * (positional + 1)))
    except (TypeError, ValueError):
        return False
    return True


@functools.lru_cache(maxsize=4096)
def extension_points(cls: type) -> tuple[str, ...]:
    """The extension points (config keys) a plugin class implements, read off the class (its
    methods and their arity), never by building an instance: what upstream's Go compiler
    proves with ``var _ framework.FilterPlugin = &NodeName{}``. Memoized per class: resolving
    the profiles asks it about 450 times per command."""
    return tuple(p.key for p in EXTENSION_POINTS
                 if all(_accepts(cls, m, n) for m, n in p.methods))


def contract_problems(cls: type) -> list[str]:
    """Why ``cls`` is not a usable plugin class: no string ``name``, a point's method present
    but with the wrong arity (a half-implemented point), ``normalize`` without ``score``."""
    problems = [] if isinstance(getattr(cls, "name", None), str) else ["has no string name"]
    for point in EXTENSION_POINTS:
        present = [m for m, _ in point.methods if hasattr(cls, m)]
        broken = [m for m, n in point.methods if hasattr(cls, m) and not _accepts(cls, m, n)]
        if broken or (present and len(present) < len(point.methods)):
            wanted = ", ".join(f"{m}(self + {n} arguments)" for m, n in point.methods)
            problems.append(f"does not implement {point.key}: needs {wanted}")
    if hasattr(cls, NORMALIZE[0]) and not (_accepts(cls, *NORMALIZE) and hasattr(cls, "score")):
        problems.append("normalize needs score and (self + 4 arguments)")
    return problems

"""The DRA objects the DynamicResources plugin reads, kept between cycles: upstream's
``SharedDRAManager`` (``pkg/scheduler/framework/plugins/dynamicresources/dra_manager.go``: the
claim assume cache, the in-flight allocations, the slice and class listers).

- :class:`DraObjects`: what a scheduling pass hands the plugin (``DynamicResources.set_objects``):
  the stored ResourceClaims, ResourceSlices and DeviceClasses, and the pod bodies (KEP-5004 reads
  a pod's containers);
- :class:`DraManager`: the parsed views (``gpusched.dra.model``, parsed once per stored version),
  slices indexed by node, the devices in use per node (``gpusched.dra.allocator.InUse``) and
  the claims whose allocation is in flight (Reserve to PreBind): upstream's
  ``SignalClaimPendingAllocation``; a device they hold counts as in use for the next pod, and a
  pod asking for a claim in flight waits (``resource claim <ns>/<name> is in the process of
  being allocated``). PreBind's written claims replace the stored ones (``assume``), as
  upstream's ``AssumeClaimAfterAPICall``.

Each node has an epoch, bumped whenever the devices held on it change, with a short log of
what each change took (or that it freed something), so the plugin's per-node allocation
outcomes (``helper.dra_allocate``) are reused when nothing they depend on changed. A claim counts
on the node its ``status.allocation.nodeSelector`` names (``matchFields metadata.name``, as the
allocator writes it for node-local devices); any other allocation counts on every node (the
global epoch, which new slices or classes also end).

``gpusched.dra`` (the model, its CEL selectors, the allocator) is imported at the first DRA object
parsed or allocation made: every pass runs the plugin, and a cluster without DRA objects and
pods without claims never needs it (it is most of a one-pod ``apply``'s imports otherwise).

Neighbours: ``plugins.dynamic_resources`` (the plugin), ``helper.dra_allocate``;
``cluster.scheduling.dra`` builds the DraObjects from the view.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

if TYPE_CHECKING:     # the DRA model and allocator are imported at the first DRA object
    from gpusched.dra.in_use import InUse
    from gpusched.dra.model import Claim, DeviceClass, Number, Slice
    from gpusched.dra.pools import SliceSet

ClaimKey = tuple[str, str]          # (namespace, name)
DeviceId = tuple[str, str, str]     # (driver, pool, device)
CounterSetId = tuple[str, str, str]   # (driver, pool, counter set)
CounterKey = tuple[str, str, str, str]   # (driver, pool, counter set, counter)
FINALIZER = "resource.kubernetes.io/delete-protection"     # resourceapi.Finalizer
GLOBAL = ""                         # the "node" of allocations not bound to one node
RESERVED_FOR_MAX = 256              # resourceapi.ResourceClaimReservedForMaxSize


@dataclass
class ClaimWrite:
    """One write PreBind or PostFilter asks of the host: ``body`` updated (``status`` included),
    created (``create``: KEP-5004's claim, then ``pod_uid``'s status records it with
    ``mappings``) or deleted (``delete``)."""

    body: dict[str, Any]
    create: bool = False
    delete: bool = False
    pod_uid: str = ""
    mappings: list[dict[str, str]] = field(default_factory=list)


def _no_pod(uid: str) -> dict[str, Any] | None:
    return None


@dataclass
class DraObjects:
    """The DRA objects of one pass, as stored (bodies are read, never changed)."""

    claims: Mapping[ClaimKey, dict[str, Any]] = field(default_factory=dict)
    slices: Sequence[dict[str, Any]] = ()
    classes: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    pods: Callable[[str], dict[str, Any] | None] = _no_pod


def claim_key(body: Mapping[str, Any]) -> ClaimKey:
    meta = body.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def allocation_node(allocation: Mapping[str, Any] | None) -> str:
    """The one node an allocation's nodeSelector names by ``metadata.name``, else GLOBAL."""
    terms: list[dict[str, Any]] = list(
        ((allocation or {}).get("nodeSelector") or {}).get("nodeSelectorTerms") or ())
    if len(terms) != 1 or (terms[0].get("matchExpressions") or ()):
        return GLOBAL
    fields: list[dict[str, Any]] = list(terms[0].get("matchFields") or ())
    if (len(fields) == 1 and fields[0].get("key") == "metadata.name"
            and fields[0].get("operator") == "In" and len(fields[0].get("values") or ()) == 1):
        return str(fields[0]["values"][0])
    return GLOBAL


def _version(body: Mapping[str, Any]) -> tuple[str, str]:
    meta = body.get("metadata") or {}
    return str(meta.get("uid") or meta.get("name") or ""), str(meta.get("resourceVersion") or "")


def _from_object(kind: str) -> Callable[[dict[str, Any]], Any]:
    """``gpusched.dra.model``'s ``kind.from_object``, the model imported at the first call (a
    cluster without DRA objects never imports it)."""
    def parse(body: dict[str, Any]) -> Any:
        from gpusched.dra import model
        return getattr(model, kind).from_object(body)
    return parse


class _Parsed:
    """``X.from_object`` once per stored version (uid, resourceVersion)."""

    def __init__(self, parse: Callable[[dict[str, Any]], Any]) -> None:
        self.parse = parse
        self.kept: dict[tuple[str, str], Any] = {}

    def __call__(self, body: dict[str, Any]) -> Any:
        version = _version(body)
        if not version[1]:                 # unstored (a test's or the bench's body): parse each time
            return self.parse(body)
        parsed = self.kept.get(version)
        if parsed is None:
            parsed = self.kept[version] = self.parse(body)
        return parsed

    def keep_only(self, bodies: Sequence[dict[str, Any]]) -> None:
        live = {_version(b) for b in bodies}
        for version in [v for v in self.kept if v not in live]:
            del self.kept[version]


def held_devices(body: Mapping[str, Any]) -> list[DeviceId]:
    """The devices a claim's allocation names (every result, admin access included)."""
    results = (((body.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
    return [(str(r.get("driver", "")), str(r.get("pool", "")), str(r.get("device", "")))
            for r in results or () if isinstance(r, dict)]


class DraManager:
    """See the module docstring."""

    LOG_LENGTH = 64                  # changes kept per node for ``added_since``
    BUMPED_LENGTH = 100_000          # nodes kept for ``take_bumped`` (past it: "everything")

    def __init__(self) -> None:
        self.objects = DraObjects()
        self.claims: dict[ClaimKey, dict[str, Any]] = {}
        self.classes: dict[str, DeviceClass] = {}
        self.in_flight: dict[str, tuple[str, dict[str, Any]]] = {}   # claim uid -> (node, claim)
        self._claim = _Parsed(_from_object("Claim"))
        self._slice = _Parsed(_from_object("Slice"))
        self._class = _Parsed(_from_object("DeviceClass"))
        self.slices: tuple[Slice, ...] = ()
        self._local: dict[str, list[Slice]] = {}
        self._shared: list[Slice] = []
        self._node_slices: dict[str, SliceSet] = {}
        self._counters: tuple[dict[DeviceId, dict[CounterKey, Number]],
                              dict[CounterKey, Number]] | None = None
        self._used: dict[str, tuple[tuple[int, int], dict[CounterKey, Number]]] = {}
        self._allocated: dict[str, dict[ClaimKey, dict[str, Any]]] = {}   # node -> claims
        self._held: dict[str, Counter[DeviceId]] = {}
        self._log: dict[str, list[tuple[int, frozenset[DeviceId] | None]]] = {}
        self.epochs: dict[str, int] = {}
        self._bumped: list[str] = []                  # nodes bumped since ``take_bumped``
        self._bumped_lost = False
        self._in_use: dict[str, tuple[int, int, InUse]] = {}

    # ---- a pass's objects ----------------------------------------------------------------

    def refresh(self, objects: DraObjects) -> None:
        """Take a pass's objects; bump the epoch of every node whose devices in use changed."""
        self.objects = objects
        self.claims = dict(objects.claims)
        classes = {name: self._class(body) for name, body in objects.classes.items()}
        if classes.keys() != self.classes.keys() or any(
                classes[n] is not self.classes[n] for n in classes):
            self.bump(GLOBAL)          # a class's selectors decide what every node can offer
        self.classes = classes
        self._index_slices(objects.slices)
        allocated: dict[str, dict[ClaimKey, dict[str, Any]]] = {}
        for key, body in self.claims.items():
            allocation = (body.get("status") or {}).get("allocation")
            if allocation:
                allocated.setdefault(allocation_node(allocation), {})[key] = body
        changed = [node for node in set(allocated) | set(self._allocated)
                   if allocated.get(node, {}).keys() != self._allocated.get(node, {}).keys()
                   or any(body is not self._allocated[node].get(key)
                          for key, body in allocated.get(node, {}).items())]
        self._allocated = allocated
        for node in changed:
            self._recount(node)
        self._claim.keep_only(list(self.claims.values()))

    def _index_slices(self, slices: Sequence[dict[str, Any]]) -> None:
        """Parse the slices (once per stored version); new slices end every node's epoch."""
        parsed = [self._slice(body) for body in
                  sorted(slices, key=lambda b: str((b.get("metadata") or {}).get("name")))]
        if [id(s) for s in parsed] != [id(s) for s in self.slices]:
            self.slices = tuple(parsed)
            self._local = {}
            for one in parsed:
                if one.node_name:
                    self._local.setdefault(one.node_name, []).append(one)
            self._shared = [one for one in parsed if not one.node_name]
            self._node_slices = {}
            self._counters = None
            self.bump(GLOBAL)
        self._slice.keep_only(list(slices))

    def node_slices(self, node: str) -> SliceSet:
        """The slices a node may see: those naming it (its devices and its pool's counter
        sets) and those naming no node (all nodes, a node selector, per-device selection; the
        allocator checks them against the node). One ``SliceSet`` per node, which keeps that
        node's pools: each node's allocation looks at its own few slices, not at every node's."""
        found = self._node_slices.get(node)
        if found is None:
            from gpusched.dra.pools import SliceSet
            found = self._node_slices[node] = SliceSet([*self._local.get(node, ()), *self._shared])
        return found

    # ---- reads ---------------------------------------------------------------------------

    def claim(self, key: ClaimKey) -> dict[str, Any] | None:
        return self.claims.get(key)

    def parsed(self, body: dict[str, Any]) -> Claim:
        claim: Claim = self._claim(body)
        return claim

    def epoch(self, node: str) -> tuple[int, int]:
        return self.epochs.get(node, 0), self.epochs.get(GLOBAL, 0)

    def added_since(self, node: str, epoch: int) -> frozenset[DeviceId] | None:
        """The devices taken on ``node`` since its ``epoch``; None when a device was freed
        meanwhile (or the log no longer reaches back that far)."""
        log = self._log.get(node, [])
        if not log or log[0][0] > epoch + 1:
            return None
        added: set[DeviceId] = set()
        for at, devices in log:
            if at <= epoch:
                continue
            if devices is None:
                return None
            added |= devices
        return frozenset(added)

    def _index_counters(self) -> tuple[dict[DeviceId, dict[CounterKey, Number]],
                                       dict[CounterKey, Number]]:
        """Per device, what it consumes from its pool's counter sets; per counter, the capacity."""
        if self._counters is None:
            consumes: dict[DeviceId, dict[CounterKey, Number]] = {}
            capacity: dict[CounterKey, Number] = {}
            for one in self.slices:
                for counter_set in one.shared_counters:
                    for name, value in counter_set.counters.items():
                        capacity[(one.driver, one.pool, counter_set.name, name)] = value
                for device in one.devices:
                    consumes[(one.driver, one.pool, device.name)] = {
                        (one.driver, one.pool, c.counter_set, name): value
                        for c in device.consumes_counters for name, value in c.counters.items()}
            self._counters = (consumes, capacity)
        return self._counters

    def consumption(self, device: DeviceId) -> Mapping[CounterKey, Number]:
        return self._index_counters()[0].get(device, {})

    def counter_capacity(self, key: CounterKey) -> Number | None:
        return self._index_counters()[1].get(key)

    def counter_sets(self, device: DeviceId) -> frozenset[CounterSetId]:
        """The counter sets a device consumes from, as (driver, pool, counter set)."""
        return frozenset(key[:3] for key in self.consumption(device))

    def holds(self, node: str, device: DeviceId) -> bool:
        """Whether a claim allocated (or in flight) on ``node`` or globally holds ``device``."""
        return any(device in self._held.get(where, ()) for where in (node, GLOBAL))

    def counters_used(self, node: str) -> dict[CounterKey, Number]:
        """What the devices held on ``node`` (and globally) consume, per counter."""
        epoch = self.epoch(node)
        kept = self._used.get(node)
        if kept is not None and kept[0] == epoch:
            return kept[1]
        used: dict[CounterKey, Number] = {}
        for where in (node, GLOBAL):
            for device in self._held.get(where, ()):
                for key, value in self.consumption(device).items():
                    used[key] = used.get(key, 0) + value
        self._used[node] = (epoch, used)
        return used

    def in_use(self, node: str) -> InUse:
        """The devices in use for ``node``: claims allocated there or globally, and those in
        flight there or globally (upstream: the assume cache's allocated devices)."""
        epoch = self.epoch(node)
        kept = self._in_use.get(node)
        if kept is not None and kept[:2] == epoch:
            return kept[2]
        from gpusched.dra.in_use import InUse
        bodies = [*self._bodies_on(node), *self._bodies_on(GLOBAL)]
        in_use = InUse.from_claims([self.parsed(b) for b in bodies])
        self._in_use[node] = (*epoch, in_use)
        return in_use

    def _bodies_on(self, node: str) -> list[dict[str, Any]]:
        return [*self._allocated.get(node, {}).values(),
                *(body for where, body in self.in_flight.values() if where == node)]

    # ---- writes (Reserve, Unreserve, PreBind) ---------------------------------------------

    def bump(self, node: str, added: frozenset[DeviceId] | None = None) -> None:
        """A new epoch for ``node``: ``added`` the devices taken, None when anything else
        changed (a device freed, new slices or classes)."""
        epoch = self.epochs[node] = self.epochs.get(node, 0) + 1
        if len(self._bumped) < self.BUMPED_LENGTH:
            self._bumped.append(node)
        else:
            self._bumped_lost = True
        log = self._log.setdefault(node, [])
        log.append((epoch, added))
        if len(log) > self.LOG_LENGTH:
            del log[0]

    def take_bumped(self) -> list[str] | None:
        """The nodes whose epoch moved since the last call (None: too many to keep; any)."""
        bumped, lost = self._bumped, self._bumped_lost
        self._bumped, self._bumped_lost = [], False
        return None if lost else bumped

    def _recount(self, node: str) -> None:
        """The claims on ``node`` changed: a new epoch if the devices held there did."""
        held = Counter(d for body in self._bodies_on(node) for d in held_devices(body))
        old = self._held.get(node, Counter())
        if held == old:
            return
        self._held[node] = held
        self.bump(node, None if old - held else frozenset(held - old))

    def signal_pending(self, uid: str, body: dict[str, Any]) -> None:
        """A claim allocated at Reserve (the body carries its allocation) until PreBind."""
        node = allocation_node((body.get("status") or {}).get("allocation"))
        self.in_flight[uid] = (node, body)
        self._recount(node)

    def remove_pending(self, uid: str) -> bool:
        entry = self.in_flight.pop(uid, None)
        if entry is not None:
            self._recount(entry[0])
        return entry is not None

    def assume(self, body: dict[str, Any], pending: str = "") -> None:
        """A claim as PreBind wrote it, its allocation no longer in flight (``pending``: the
        uid it was in flight under): held devices move, nothing is freed."""
        key = claim_key(body)
        self.claims[key] = body
        nodes = set()
        entry = self.in_flight.pop(pending, None)
        if entry is not None:
            nodes.add(entry[0])
        for node, claims in self._allocated.items():
            if claims.pop(key, None) is not None:
                nodes.add(node)
        allocation = (body.get("status") or {}).get("allocation")
        if allocation:
            node = allocation_node(allocation)
            self._allocated.setdefault(node, {})[key] = body
            nodes.add(node)
        for node in nodes:
            self._recount(node)

    def forget(self, key: ClaimKey) -> None:
        """A claim deleted (PostFilter's, Unreserve's)."""
        self.claims.pop(key, None)
        for node, claims in list(self._allocated.items()):
            if claims.pop(key, None) is not None:
                self._recount(node)

"""gpusched as a secondary scheduler of a Kubernetes cluster, through the official client.

The only module in gpusched that imports the ``kubernetes`` package. The scheduling itself is
``backends.secondary.SchedulerState`` (the same ``Scheduler`` and snapshot helpers as the
embedded cluster); this module talks to the API server:

1. (``--leader-elect``) acquire the coordination.k8s.io/v1 Lease ``<namespace>/<name>`` before
   doing anything, renew it while running, stop when it is lost (as kube-scheduler does), and
   release it on a clean stop (``ReleaseOnCancel``). A server without leases (404 "the server
   could not find the requested resource" on create) gets a warning and the scheduler runs
   unelected; a missing namespace is logged and retried.
2. List nodes, pods and ConfigMaps (raw JSON: every field survives), then watch each kind from
   the list's resourceVersion on its own thread; a 410 Gone relists that kind.
3. After every batch of watch events, act on ``SchedulerState.decisions()``:
   - bind: patch the device assignment annotations onto the pod (``gpusched.io/assigned-gpus``,
     ``gpusched.io/assigned-devices``) *before* binding, then create the ``binding``
     subresource (the response is read raw: the client cannot deserialize the Status a server
     answers to a Binding), then a Normal ``Scheduled`` event;
   - unschedulable: the PodScheduled=False condition (reason Unschedulable, kube-scheduler's
     FitError message) through the ``status`` subresource, and a Warning ``FailedScheduling``;
   - preempt: each victim gets the DisruptionTarget condition and a ``Preempted`` event and is
     deleted; the preemptor gets ``status.nominatedNodeName``.
   Events are core/v1 Events with ``source.component`` and ``reportingComponent`` ``gpusched``.
4. SIGTERM (or Ctrl-C) sets the stop flag; the loop returns after the current batch and, when
   leading, releases the lease so a standby replica takes over at once.

Wall-clock time enters only here, through the ``clock`` argument (event and condition
timestamps, lease expiry), which the CLI sets to ``time.time``.

Neighbours: ``backends.secondary`` (state, decisions); used by ``cli.scheduler_cmd``.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import queue
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator, TypeVar

from kubernetes import client, config, watch
from kubernetes.config import incluster_config
from kubernetes.client.exceptions import ApiException

from gpusched.backends.secondary import BIND, KINDS, PREEMPT, UNSCHEDULABLE, Decision, SchedulerState
from gpusched.cluster.scheduling.binder import PREEMPT_MESSAGE, set_condition
from gpusched.objects.assignment import assignment_annotations
from gpusched.errors import UsageError

log = logging.getLogger(__name__)

COMPONENT = "gpusched"
WATCH_SECONDS = 60          # server-side timeout of one watch request, then it is re-opened
MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True)
class ServiceAccount:
    """Where a pod finds its ServiceAccount's credentials (the client's in-cluster defaults)."""

    token: str = incluster_config.SERVICE_TOKEN_FILENAME
    ca_cert: str = incluster_config.SERVICE_CERT_FILENAME


def connect(kubeconfig: str | None, service_account: ServiceAccount = ServiceAccount()
            ) -> client.ApiClient:
    """An API client for the kubeconfig's current context; without one, the in-cluster
    configuration (``config.load_incluster_config``'s loader: ``https://$KUBERNETES_SERVICE_HOST:
    $KUBERNETES_SERVICE_PORT``, the pod's ServiceAccount token and CA), as kube-scheduler does
    when ``--kubeconfig`` is empty. A bad file, or neither, is a ``UsageError``."""
    if kubeconfig:
        try:
            api_client: client.ApiClient = config.new_client_from_config(config_file=kubeconfig)
            return api_client
        except (config.ConfigException, OSError, ValueError, TypeError) as exc:
            raise UsageError(f"kubeconfig {kubeconfig}: {exc}".splitlines()[0]) from None
    if not os.environ.get("KUBERNETES_SERVICE_HOST"):
        raise UsageError("no --kubeconfig, and not running in a pod (KUBERNETES_SERVICE_HOST is "
                         "not set): pass --kubeconfig PATH")
    configuration = client.Configuration()
    try:
        incluster_config.InClusterConfigLoader(
            token_filename=service_account.token, cert_filename=service_account.ca_cert,
        ).load_and_set(configuration)
    except (config.ConfigException, OSError) as exc:
        raise UsageError(f"in-cluster configuration: {exc}".splitlines()[0]) from None
    return client.ApiClient(configuration)


def timestamp(seconds: float, micro: bool = False) -> str:
    """RFC 3339 in UTC, as the API writes it (MicroTime with ``micro``)."""
    moment = dt.datetime.fromtimestamp(seconds, dt.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def _raw(response: Any) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(response.data or b"{}")
    return body


_T = TypeVar("_T")


def _built(model: _T | None) -> _T:
    """A client model from ``from_dict``, which returns None only for a None input."""
    if model is None:
        raise ValueError("from_dict returned None for a dict")
    return model


class KubeApi:
    """The few calls the secondary scheduler makes, with dicts in and out."""

    def __init__(self, api_client: client.ApiClient, clock: Callable[[], float]) -> None:
        self.core = client.CoreV1Api(api_client)
        self.coordination = client.CoordinationV1Api(api_client)
        self.clock = clock

    # ---- reading ------------------------------------------------------------------------------

    def _lister(self, kind: str) -> Callable[..., Any]:
        listers: dict[str, Callable[..., Any]] = {
            "Node": self.core.list_node, "Pod": self.core.list_pod_for_all_namespaces,
            "ConfigMap": self.core.list_config_map_for_all_namespaces}
        return listers[kind]

    def list(self, kind: str) -> tuple[list[dict[str, Any]], str]:
        """Every object of ``kind`` (with kind/apiVersion filled in) and the list's resourceVersion."""
        body = _raw(self._lister(kind)(_preload_content=False))
        items = body.get("items") or []
        for item in items:
            item.setdefault("kind", kind)
            item.setdefault("apiVersion", "v1")
        return items, str((body.get("metadata") or {}).get("resourceVersion") or "")

    def watch(self, kind: str, resource_version: str, stop: threading.Event
              ) -> Iterator[tuple[str, dict[str, Any]]]:
        """(type, object) events from ``resource_version`` for one watch request; BOOKMARKs and
        the request's end are silent. A 410 raises ``ApiException`` with status 410."""
        stream = watch.Watch()
        for event in stream.stream(self._lister(kind), resource_version=resource_version,
                                   timeout_seconds=WATCH_SECONDS, allow_watch_bookmarks=True,
                                   deserialize=False, _request_timeout=WATCH_SECONDS + 10):
            if stop.is_set():
                stream.stop()
                return
            obj = event.get("object") or {}
            if event.get("type") == "ERROR":
                raise ApiException(status=int(obj.get("code", 500)), reason=obj.get("message", ""))
            yield str(event.get("type")), obj

    # ---- writing ------------------------------------------------------------------------------

    def patch_annotations(self, pod: dict[str, Any], annotations: dict[str, str]) -> None:
        meta = pod["metadata"]
        self.core.patch_namespaced_pod(meta["name"], meta["namespace"],
                                       {"metadata": {"annotations": annotations}},
                                       _content_type=MERGE_PATCH, _preload_content=False)

    def bind(self, pod: dict[str, Any], node: str) -> None:
        meta = pod["metadata"]
        body = _built(client.V1Binding.from_dict({
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}))
        # Raw response: the server answers a Status, which V1Binding cannot deserialize.
        self.core.create_namespaced_pod_binding(meta["name"], meta["namespace"], body,
                                                _preload_content=False)

    def patch_status(self, pod: dict[str, Any], status: dict[str, Any]) -> None:
        meta = pod["metadata"]
        self.core.patch_namespaced_pod_status(meta["name"], meta["namespace"], {"status": status},
                                              _content_type=MERGE_PATCH, _preload_content=False)

    def set_condition(self, pod: dict[str, Any], condition: dict[str, Any], **fields: Any) -> None:
        """Replace one condition (others kept) and set other status fields (None deletes)."""
        status = {"conditions": list((pod.get("status") or {}).get("conditions") or [])}
        set_condition(status, {**condition, "lastTransitionTime": timestamp(self.clock())})
        status.update(fields)
        self.patch_status(pod, status)

    def delete_pod(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        self.core.delete_namespaced_pod(meta["name"], meta["namespace"], _preload_content=False)

    def record_event(self, pod: dict[str, Any], reason: str, message: str, type_: str = "Normal") -> None:
        meta = pod["metadata"]
        now = self.clock()
        body = _built(client.CoreV1Event.from_dict({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{int(now * 1e9):x}", "namespace": meta["namespace"]},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                               "namespace": meta["namespace"], "uid": meta.get("uid", ""),
                               "resourceVersion": meta.get("resourceVersion", "")},
            "reason": reason, "message": message, "type": type_, "count": 1,
            "source": {"component": COMPONENT},
            "firstTimestamp": timestamp(now), "lastTimestamp": timestamp(now),
            "reportingComponent": COMPONENT, "reportingInstance": COMPONENT}))
        try:
            self.core.create_namespaced_event(meta["namespace"], body, _preload_content=False)
        except ApiException as exc:       # events are best effort, as upstream's recorder
            log.warning("event %s for pod %s/%s not recorded: %s", reason, meta["namespace"],
                        meta["name"], exc.reason)


def act(api: KubeApi, state: SchedulerState, decision: Decision) -> None:
    """Carry out one decision through the API (see step 3 of the module docstring)."""
    pod, meta = decision.pod, decision.pod["metadata"]
    key = f"{meta['namespace']}/{meta['name']}"
    try:
        if decision.action == BIND:
            annotations = assignment_annotations(decision.assignment)
            if annotations:
                api.patch_annotations(pod, annotations)
            api.bind(pod, decision.node)
            api.record_event(pod, "Scheduled", f"Successfully assigned {key} to {decision.node}")
            log.info("bound %s to %s", key, decision.node)
        elif decision.action == UNSCHEDULABLE:
            api.set_condition(pod, {"type": "PodScheduled", "status": "False",
                                    "reason": "Unschedulable", "message": decision.message})
            api.record_event(pod, "FailedScheduling", decision.message, "Warning")
        elif decision.action == PREEMPT:
            preempt(api, state, decision)
    except ApiException as exc:
        log.warning("%s of pod %s failed: %s %s", decision.action, key, exc.status, exc.reason)
        if decision.action == BIND:
            state.forget(meta["uid"])


def preempt(api: KubeApi, state: SchedulerState, decision: Decision) -> None:
    by_uid = {p["metadata"]["uid"]: p for p in state.cache.list("Pod")}
    for victim in decision.victims:
        body = by_uid.get(victim.uid)
        if body is None:
            continue
        api.set_condition(body, {"type": "DisruptionTarget", "status": "True",
                                 "reason": "PreemptionByScheduler",
                                 "message": PREEMPT_MESSAGE.replace("default-scheduler", COMPONENT)})
        api.record_event(body, "Preempted", f"Preempted by pod {decision.pod['metadata']['uid']} "
                         f"on node {decision.node}")
        api.delete_pod(body)
    api.set_condition(decision.pod, {"type": "PodScheduled", "status": "False",
                                     "reason": "Unschedulable", "message": decision.message},
                      nominatedNodeName=decision.node)
    api.record_event(decision.pod, "FailedScheduling", decision.message, "Warning")


# ---- watching -------------------------------------------------------------------------------

def watch_kind(api: KubeApi, kind: str, resource_version: str, events: queue.Queue[Any],
               stop: threading.Event) -> None:
    """Thread body: feed ``(kind, type, obj)`` into ``events`` until ``stop``; a 410 Gone (or a
    broken connection) relists the kind and sends ``(kind, "RELIST", items)``."""
    rv = resource_version
    while not stop.is_set():
        try:
            for type_, obj in api.watch(kind, rv, stop):
                rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                if type_ != "BOOKMARK":
                    obj.setdefault("kind", kind)
                    obj.setdefault("apiVersion", "v1")
                    events.put((kind, type_, obj))
        except Exception as exc:  # noqa: BLE001 - any failure of the stream: relist, go on
            if stop.is_set():
                return
            gone = isinstance(exc, ApiException) and exc.status == 410
            log.log(logging.INFO if gone else logging.WARNING, "watch %s ended (%s); relisting",
                    kind, "410 Gone" if gone else exc)
            try:
                items, rv = api.list(kind)
            except Exception as list_exc:  # noqa: BLE001 - server away: try again later
                log.warning("list %s failed: %s", kind, list_exc)
                stop.wait(1.0)
                continue
            events.put((kind, "RELIST", items))


# ---- leader election ------------------------------------------------------------------------

NO_SUCH_RESOURCE = "the server could not find the requested resource"


class LeaderElector:
    """A coordination.k8s.io/v1 Lease held by ``identity``, as client-go's leaderelection does.

    Timing (kube-scheduler's defaults with the 15 s lease): the leader renews every
    ``retry_seconds`` (2 s) and gives up when it could not renew within ``renew_deadline``
    (two thirds of the lease, 10 s), before any follower may take over; followers try every
    ``retry_seconds`` and take the lease once ``renewTime + leaseDurationSeconds`` has passed
    or its holder is empty. :meth:`release` (client-go's ``ReleaseOnCancel``) clears the holder
    and sets ``leaseDurationSeconds: 1``, so a follower takes over at its next try. Every write
    is a PUT carrying the resourceVersion read, so of two candidates only one wins (409 for the
    other). Expiry compares the holder's ``renewTime`` with this process's clock: replicas on
    hosts with skewed clocks need a lease longer than the skew.
    """

    def __init__(self, api: KubeApi, namespace: str, name: str, identity: str,
                 lease_seconds: int = 15, retry_seconds: float | None = None) -> None:
        self.api, self.namespace, self.name, self.identity = api, namespace, name, identity
        self.lease_seconds = lease_seconds
        self.retry_seconds = retry_seconds if retry_seconds is not None else min(2.0, lease_seconds / 3)
        self.renew_deadline = lease_seconds * 2 / 3
        self.supported = True
        self.renewed_at = float("-inf")
        self.leading = False

    def _spec(self, now: float, transitions: int, acquired: str | None) -> dict[str, Any]:
        stamp = timestamp(now, micro=True)
        return {"holderIdentity": self.identity, "leaseDurationSeconds": self.lease_seconds,
                "acquireTime": acquired or stamp, "renewTime": stamp,
                "leaseTransitions": transitions}

    def _read(self) -> dict[str, Any] | None:
        try:
            return _raw(self.api.coordination.read_namespaced_lease(
                self.name, self.namespace, _preload_content=False))
        except ApiException as exc:
            if exc.status != 404:
                raise
            return None

    def _write(self, lease: dict[str, Any], create: bool) -> bool:
        """Create or replace (with the resourceVersion read); False when another write won."""
        coord, body = self.api.coordination, _built(client.V1Lease.from_dict(lease))
        try:
            if create:
                coord.create_namespaced_lease(self.namespace, body, _preload_content=False)
            else:
                coord.replace_namespaced_lease(self.name, self.namespace, body,
                                               _preload_content=False)
        except ApiException as exc:
            if exc.status == 409:           # AlreadyExists / Conflict: someone else wrote first
                return False
            if exc.status == 404 and NO_SUCH_RESOURCE not in str(exc.body or ""):
                log.error("lease %s/%s: %s; retrying", self.namespace, self.name,
                          _message(exc))    # e.g. namespaces "kube-system" not found
                return False
            raise
        return True

    def try_acquire(self) -> bool:
        """One attempt to take or renew the lease; True when this process holds it."""
        if not self.supported:
            return True
        now = self.api.clock()
        lease = self._read()
        if lease is None:
            lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                     "metadata": {"name": self.name, "namespace": self.namespace},
                     "spec": self._spec(now, 0, None)}
            try:
                won = self._write(lease, create=True)
            except ApiException as exc:
                if exc.status != 404:
                    raise
                log.warning("the server has no coordination.k8s.io/v1 leases: running "
                            "without leader election")
                self.supported = False
                return True
        else:
            spec = lease.get("spec") or {}
            holder = spec.get("holderIdentity") or ""
            if holder and holder != self.identity and not self._expired(spec, now):
                self.leading = False
                return False
            transitions = int(spec.get("leaseTransitions") or 0) + (holder != self.identity)
            lease["spec"] = self._spec(now, transitions,
                                       spec.get("acquireTime") if holder == self.identity else None)
            won = self._write(lease, create=False)
        if won:
            self.renewed_at, self.leading = now, True
        return won

    def _expired(self, spec: dict[str, Any], now: float) -> bool:
        renew = spec.get("renewTime") or spec.get("acquireTime")
        if not renew:
            return True
        when = dt.datetime.fromisoformat(str(renew).replace("Z", "+00:00")).timestamp()
        return when + float(spec.get("leaseDurationSeconds") or self.lease_seconds) < now

    def acquire(self, stop: threading.Event) -> bool:
        """Block until the lease is held (True) or ``stop`` is set (False)."""
        while not stop.is_set():
            if self.try_acquire():
                log.info("acquired lease %s/%s as %s", self.namespace, self.name, self.identity)
                return True
            stop.wait(self.retry_seconds)
        return False

    def keep(self) -> bool:
        """Renew when due; False once the lease could not be renewed within the renew deadline."""
        now = self.api.clock()
        if not self.supported or now - self.renewed_at < self.retry_seconds:
            return True
        try:
            if self.try_acquire():
                return True
        except ApiException as exc:
            log.warning("lease renewal failed: %s %s", exc.status, exc.reason)
        if not self.leading:        # someone else holds it now
            return False
        return now - self.renewed_at < self.renew_deadline

    def release(self) -> bool:
        """Give the lease up (holder cleared) if this process holds it; True when released."""
        if not self.supported or not self.leading:
            return False
        self.leading = False
        try:
            lease = self._read()
            spec = (lease or {}).get("spec") or {}
            if lease is None or spec.get("holderIdentity") != self.identity:
                return False
            stamp = timestamp(self.api.clock(), micro=True)
            lease["spec"] = {"holderIdentity": "", "leaseDurationSeconds": 1,
                             "acquireTime": stamp, "renewTime": stamp,
                             "leaseTransitions": int(spec.get("leaseTransitions") or 0)}
            released = self._write(lease, create=False)
        except ApiException as exc:
            log.warning("lease release failed: %s %s", exc.status, exc.reason)
            return False
        if released:
            log.info("released lease %s/%s", self.namespace, self.name)
        return released


def _message(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body or "{}").get("message") or exc.reason)
    except (TypeError, ValueError):
        return str(exc.reason)


# ---- the loop -------------------------------------------------------------------------------

def run(api: KubeApi, state: SchedulerState, stop: threading.Event, once: bool = False,
        elector: LeaderElector | None = None) -> int:
    """List, schedule, then watch and schedule until ``stop``; see the module docstring.
    Returns the exit code (1 when leadership was lost). A held lease is released on the way
    out, however the loop ended (a lost lease is no longer held, so nothing is written)."""
    if elector is None:
        return _serve(api, state, stop, once, None)
    if not elector.acquire(stop):
        return 0
    try:
        return _serve(api, state, stop, once, elector)
    finally:
        elector.release()


def _serve(api: KubeApi, state: SchedulerState, stop: threading.Event, once: bool,
           elector: LeaderElector | None) -> int:
    versions = {}
    for kind in KINDS:
        items, versions[kind] = api.list(kind)
        state.replace(kind, items)
    _schedule(api, state)
    if once:
        return 0
    events: queue.Queue[Any] = queue.Queue()
    for kind in KINDS:
        threading.Thread(target=watch_kind, args=(api, kind, versions[kind], events, stop),
                         name=f"watch-{kind}", daemon=True).start()
    while not stop.is_set():
        if elector is not None and not elector.keep():
            log.error("lost lease %s/%s: stopping", elector.namespace, elector.name)
            stop.set()
            return 1
        try:
            batch = [events.get(timeout=0.5)]
        except queue.Empty:
            continue
        while True:                 # take everything already there, then schedule once
            try:
                batch.append(events.get_nowait())
            except queue.Empty:
                break
        for kind, type_, obj in batch:
            if type_ == "RELIST":
                state.replace(kind, obj)
            else:
                state.observe(kind, type_, obj)
        _schedule(api, state)
    return 0


def _schedule(api: KubeApi, state: SchedulerState) -> None:
    for decision in state.decisions():
        act(api, state, decision)

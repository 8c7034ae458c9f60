"""The kubelet's DRA manager for NVIDIA's driver: which GPUs and MIG devices a pod's prepared
claims hand each container.

Upstream, the kubelet's DRA manager (``pkg/kubelet/cm/dra/manager.go``) calls the driver's
``NodePrepareResources`` for every claim of a pod before its containers start, and the driver
(``cmd/gpu-kubelet-plugin/device_state.go``) answers with CDI devices per claim request; a
container gets the devices of the claims (or, with ``resources.claims[].request``, of the one
request) it lists, so ``NVIDIA_VISIBLE_DEVICES`` and ``nvidia-smi`` in it show exactly those.
Here a pod's devices are read back from its claims, never stored twice:

- the pod's claims: ``spec.resourceClaims`` by ``resourceClaimName``, or for a template the
  claim ``status.resourceClaimStatuses`` names; plus the extended-resource claim of
  ``status.extendedResourceClaimStatus`` (KEP-5004), whose ``requestMappings`` say which
  container gets which request;
- a claim counts once it is allocated and reserved for the pod (``status.reservedFor``);
- each ``status.allocation.devices.results`` entry of driver ``gpu.nvidia.com`` is a device of
  the pool (the node): ``gpu-<minor>`` a whole GPU, ``gpu-<minor>-mig-...`` a MIG device
  (static, or carved on demand under DynamicMIG; ``devices.dra_slices.parse_device_name``);
- sharing (the driver's ``GpuConfig`` / ``MigDeviceConfig`` opaque parameters, from the
  allocation's ``config`` or else the claim's ``spec.devices.config``): ``TimeSlicing`` with its
  interval, ``MPS``; an invalid one is the driver's error text (``api/nvidia.com/resource/
  v1beta1/validate.go``). gpusched treats the driver's TimeSlicingSettings and MPSSupport gates
  as enabled (the quickstart's ``gpu-test5`` needs both).

Neighbours: ``devices.dra_slices`` (device names, UUIDs), ``metrics.container`` (``exec``),
``metrics.cluster_source`` (DCGM attribution), ``cli.describe`` (``describe node``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from gpusched.cluster.apiserver.view import ObjectSource
from gpusched.devices.catalog import GpuModel
from gpusched.devices.dra_slices import DRIVER, parse_device_name
from gpusched.devices.node import gpu_uuid, mig_uuid

_EMPTY: dict[str, Any] = {}
INTERVALS = ("Default", "Short", "Medium", "Long")
STRATEGIES = ("TimeSlicing", "MPS")


@dataclass(frozen=True, slots=True)
class PreparedDevice:
    """One device a prepared claim hands a pod."""

    claim: str              # <namespace>/<claim name>
    request: str            # the result's request ("gpu", "gpu/large" for a subrequest)
    node: str               # the pool: the node's name
    device: str             # gpu-0, gpu-0-mig-3g20gb-9-4
    gpu_index: int
    profile_id: int         # -1 for a whole GPU
    start: int              # -1 for a whole GPU
    sharing: str = ""       # "", "TimeSlicing", "MPS"

    @property
    def mig(self) -> bool:
        return self.profile_id >= 0

    def profile(self, model: GpuModel | None) -> str:
        """The MIG profile name (``3g.20gb``) on ``model``; "" for a whole GPU."""
        if not self.mig or model is None or model.mig is None:
            return ""
        return next((p.name for p in model.mig.profiles if p.profile_id == self.profile_id), "")

    def uuid(self, model: GpuModel | None) -> str:
        """What ``NVIDIA_VISIBLE_DEVICES`` lists for it: the GPU's or the MIG device's UUID."""
        if not self.mig:
            return gpu_uuid(self.node, self.gpu_index)
        return mig_uuid(self.node, self.gpu_index, self.profile(model), self.start)


def pod_claim_names(pod: dict[str, Any]) -> dict[str, str]:
    """Pod claim name -> ResourceClaim name (``resourceclaim.Name``): a template's claim only
    once the resourceclaim controller recorded it in ``status.resourceClaimStatuses``."""
    spec, status = pod.get("spec") or _EMPTY, pod.get("status") or _EMPTY
    generated = {str(s.get("name", "")): s.get("resourceClaimName")
                 for s in status.get("resourceClaimStatuses") or [] if isinstance(s, dict)}
    names: dict[str, str] = {}
    for entry in spec.get("resourceClaims") or []:
        if not isinstance(entry, dict):
            continue
        name = str(entry.get("name", ""))
        claim = entry.get("resourceClaimName") or generated.get(name)
        if claim:
            names[name] = str(claim)
    return names


def _reserved_for(claim: dict[str, Any], uid: str) -> bool:
    status = claim.get("status") or _EMPTY
    return bool(status.get("allocation")) and any(
        isinstance(r, dict) and r.get("uid") == uid for r in status.get("reservedFor") or [])


def _container_wants(pod: dict[str, Any], container: str | None) -> dict[str, set[str] | None] | None:
    """Pod claim name -> the requests ``container`` lists (None: all of them); None when no
    container is named (the whole pod)."""
    if container is None:
        return None
    wanted: dict[str, set[str] | None] = {}
    spec = pod.get("spec") or _EMPTY
    for entry in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        if not isinstance(entry, dict) or entry.get("name") != container:
            continue
        for ref in (entry.get("resources") or _EMPTY).get("claims") or []:
            if not isinstance(ref, dict):
                continue
            name, request = str(ref.get("name", "")), ref.get("request")
            if request:
                current = wanted.setdefault(name, set())
                if current is not None:
                    current.add(str(request))
            else:
                wanted[name] = None
    return wanted


def _request_matches(result_request: str, wanted: set[str] | None) -> bool:
    """A result of request ``req`` or subrequest ``req/sub`` serves a container listing ``req``."""
    return wanted is None or result_request.split("/")[0] in wanted


def has_claims(pod: dict[str, Any]) -> bool:
    """Whether the pod names ResourceClaims (its own, or the scheduler's extended-resource one)."""
    return bool((pod.get("spec") or _EMPTY).get("resourceClaims")) or \
        bool((pod.get("status") or _EMPTY).get("extendedResourceClaimStatus"))


def prepared_devices(view: ObjectSource, pod: dict[str, Any],
                     container: str | None = None) -> list[PreparedDevice]:
    """The NVIDIA devices the pod's prepared claims give ``container`` (None: the whole pod),
    in claim order, then result order."""
    if not has_claims(pod):
        return []
    meta = pod.get("metadata") or _EMPTY
    namespace, uid = str(meta.get("namespace") or "default"), str(meta.get("uid", ""))
    wants = _container_wants(pod, container)
    claims = {c["metadata"]["name"]: c for c in view.list("ResourceClaim", namespace)}
    out: list[PreparedDevice] = []
    for pod_claim, claim_name in pod_claim_names(pod).items():
        wanted: set[str] | None = None
        if wants is not None:
            if pod_claim not in wants:
                continue
            wanted = wants[pod_claim]
        claim = claims.get(claim_name)
        if claim is not None and _reserved_for(claim, uid):
            out.extend(_claim_devices(claim, namespace, wanted))
    out.extend(_extended_devices(pod, claims, namespace, uid, container))
    return out


def _extended_devices(pod: dict[str, Any], claims: dict[str, dict[str, Any]], namespace: str,
                      uid: str, container: str | None) -> list[PreparedDevice]:
    """The devices of the extended-resource claim (KEP-5004) mapped to ``container``."""
    record = (pod.get("status") or _EMPTY).get("extendedResourceClaimStatus") or _EMPTY
    claim = claims.get(str(record.get("resourceClaimName", "")))
    if claim is None or not _reserved_for(claim, uid):
        return []
    requests = {str(m.get("requestName", "")) for m in record.get("requestMappings") or []
                if isinstance(m, dict) and (container is None or m.get("containerName") == container)}
    return _claim_devices(claim, namespace, requests) if requests else []


def _results(claim: dict[str, Any]) -> list[dict[str, Any]]:
    """The claim's allocated results of NVIDIA's driver."""
    allocation = (claim.get("status") or _EMPTY).get("allocation") or _EMPTY
    return [r for r in (allocation.get("devices") or _EMPTY).get("results") or []
            if isinstance(r, dict) and r.get("driver") == DRIVER]


def _configs(claim: dict[str, Any]) -> list[Any]:
    """The allocation's device config (class and claim config as the scheduler copied it), else
    the claim's own ``spec.devices.config``."""
    allocation = (claim.get("status") or _EMPTY).get("allocation") or _EMPTY
    return list((allocation.get("devices") or _EMPTY).get("config") or []) or \
        list(((claim.get("spec") or _EMPTY).get("devices") or _EMPTY).get("config") or [])


def _claim_devices(claim: dict[str, Any], namespace: str,
                   wanted: set[str] | None) -> list[PreparedDevice]:
    configs = _configs(claim)
    out = []
    for result in _results(claim):
        request = str(result.get("request", ""))
        parsed = parse_device_name(str(result.get("device", "")))
        if parsed is None or not _request_matches(request, wanted):
            continue
        out.append(PreparedDevice(f"{namespace}/{claim['metadata']['name']}", request,
                                  str(result.get("pool", "")), str(result.get("device", "")),
                                  *parsed, sharing=_sharing(configs, request)))
    return out


def _sharing(configs: Iterable[Any], request: str) -> str:
    """The sharing strategy the driver's opaque config gives ``request`` (the last config that
    names it, or names no request, wins, as the driver applies them in order)."""
    strategy = ""
    for config in configs:
        if not isinstance(config, dict):
            continue
        requests = config.get("requests") or []
        if requests and request not in requests and request.split("/")[0] not in requests:
            continue
        opaque = config.get("opaque") or _EMPTY
        if opaque.get("driver") != DRIVER:
            continue
        sharing = (opaque.get("parameters") or _EMPTY).get("sharing") or _EMPTY
        strategy = str(sharing.get("strategy", "")) or strategy
    return strategy if strategy in STRATEGIES else ""


def sharing_problem(parameters: Any) -> str | None:
    """The driver's refusal of a ``GpuConfig``'s ``sharing`` (``validate.go``), or None."""
    sharing = (parameters or _EMPTY).get("sharing") if isinstance(parameters, dict) else None
    if not isinstance(sharing, dict):
        return None
    strategy = str(sharing.get("strategy", ""))
    if strategy not in STRATEGIES:
        return (f"unknown GPU sharing strategy: {strategy}, supported GPU sharing strategies: "
                f"{', '.join(STRATEGIES)}")
    if strategy == "TimeSlicing":
        interval = str((sharing.get("timeSlicingConfig") or _EMPTY).get("interval", "Default"))
        if interval not in INTERVALS:
            return (f"unknown time-slice interval: {interval}, supported time-slice intervals: "
                    f"{', '.join(INTERVALS)}")
        return None
    percentage = (sharing.get("mpsConfig") or _EMPTY).get("defaultActiveThreadPercentage")
    if isinstance(percentage, int) and percentage < 0:
        return "active thread percentage must not be negative"
    if isinstance(percentage, int) and percentage > 100:
        return "active thread percentage must not be greater than 100"
    return None


PREPARE_FAILED = "FailedPrepareDynamicResources"


def prepare_problem(view: ObjectSource, pod: dict[str, Any]) -> str | None:
    """Why the kubelet cannot prepare the pod's claims before its containers start (the DRA
    manager's ``prepareResources``, then NVIDIA's ``NodePrepareResources`` checking its config),
    as the event ``FailedPrepareDynamicResources`` words it; None when there is nothing to
    prepare or every claim is ready. A template's claim the resourceclaim controller has not
    recorded yet is ``resourceclaim.Name``'s ``pod "<ns>/<name>": ResourceClaim not created
    yet``."""
    meta = pod.get("metadata") or _EMPTY
    namespace, uid = str(meta.get("namespace") or "default"), str(meta.get("uid", ""))
    if _template_claim_missing(pod):
        return (f'Failed to prepare dynamic resources: prepare dynamic resources: pod '
                f'"{namespace}/{meta.get("name", "")}": ResourceClaim not created yet')
    names = list(pod_claim_names(pod).values())
    record = (pod.get("status") or _EMPTY).get("extendedResourceClaimStatus") or _EMPTY
    if record.get("resourceClaimName"):
        names.append(str(record["resourceClaimName"]))
    if not names:
        return None
    claims = {c["metadata"]["name"]: c for c in view.list("ResourceClaim", namespace)}
    for name in names:
        problem = _claim_problem(claims.get(name), name, namespace, str(meta.get("name", "")), uid)
        if problem:
            return f"Failed to prepare dynamic resources: prepare dynamic resources: {problem}"
    return None


def _template_claim_missing(pod: dict[str, Any]) -> bool:
    """A template claim of the pod without its ``status.resourceClaimStatuses`` entry (an entry
    without a claim name means no claim is needed)."""
    recorded = {str(s.get("name", "")) for s in
                (pod.get("status") or _EMPTY).get("resourceClaimStatuses") or []
                if isinstance(s, dict)}
    return any(isinstance(e, dict) and not e.get("resourceClaimName")
               and e.get("resourceClaimTemplateName") and str(e.get("name", "")) not in recorded
               for e in (pod.get("spec") or _EMPTY).get("resourceClaims") or [])


def _claim_problem(claim: dict[str, Any] | None, name: str, namespace: str, pod: str,
                   uid: str) -> str | None:
    """The kubelet's or the driver's error for one claim of the pod."""
    if claim is None:
        return (f'fetch ResourceClaim {name}: resourceclaims.resource.k8s.io "{name}" '
                "not found")
    claim_uid = str(claim["metadata"].get("uid", ""))
    if not _reserved_for(claim, uid):
        return f"pod {pod} ({uid}) is not allowed to use ResourceClaim {name} ({claim_uid})"
    for config in _configs(claim):
        opaque = (config.get("opaque") or _EMPTY) if isinstance(config, dict) else _EMPTY
        problem = sharing_problem(opaque.get("parameters")) if opaque.get("driver") == DRIVER \
            and _results(claim) else None
        if problem:
            return (f"NodePrepareResources failed for ResourceClaim {name}: error preparing "
                    f"devices for claim {namespace}/{name}:{claim_uid}: prepare devices failed: "
                    f"error validating GPU config: {problem}")
    return None


def node_prepared(view: ObjectSource, node: str) -> list[tuple[dict[str, Any], PreparedDevice]]:
    """Every (pod, device) of the driver's devices on ``node`` held by a pod's prepared claims:
    what ``describe node`` and DCGM attribute."""
    out: list[tuple[dict[str, Any], PreparedDevice]] = []
    for pod in view.list("Pod"):
        if (pod.get("spec") or _EMPTY).get("nodeName") != node:
            continue
        if (pod.get("status") or _EMPTY).get("phase") in ("Succeeded", "Failed"):
            continue
        out.extend((pod, device) for device in prepared_devices(view, pod) if device.node == node)
    return out


@dataclass(frozen=True, slots=True)
class DeviceUse:
    """One row of ``describe node``'s DRA block: a device of the node's pool and who has it."""

    device: str
    type: str               # gpu, mig
    profile: str
    state: str              # allocated, free, or blocked (its counters are taken)
    claim: str              # <namespace>/<name> or "-"
    pods: str               # the pods the claim is reserved for, or "-"


def node_device_uses(slices: list[dict[str, Any]], claims: list[dict[str, Any]],
                     node: str) -> list[DeviceUse]:
    """The driver's devices in ``node``'s pool and their holders: every device that is not a
    DynamicMIG placement, and the placements that are allocated (the carved MIG devices); a
    device whose counters an allocated one takes is ``blocked``."""
    devices = _pool_devices(slices, node)
    holders = _holders(claims, node)
    taken = {key for name in holders for key in _counter_keys(devices.get(name, _EMPTY))}
    rows = []
    for name in sorted(devices):
        device = devices[name]
        kind, profile = _string(device, "type"), _string(device, "profile")
        if kind == "mig" and device.get("consumesCounters") and name not in holders:
            continue            # a DynamicMIG placement nobody carved
        claim, pods = holders.get(name, ("-", "-"))
        state = "allocated" if name in holders else \
            "blocked" if set(_counter_keys(device)) & taken else "free"
        rows.append(DeviceUse(name, kind, profile, state, claim, pods))
    return rows


def _pool_devices(slices: list[dict[str, Any]], node: str) -> dict[str, dict[str, Any]]:
    """Name -> device of the driver's pool named after ``node``."""
    out: dict[str, dict[str, Any]] = {}
    for body in slices:
        spec = body.get("spec") or _EMPTY
        if spec.get("driver") == DRIVER and (spec.get("pool") or _EMPTY).get("name") == node:
            out.update((str(d.get("name", "")), d) for d in spec.get("devices") or [])
    return out


def _string(device: dict[str, Any], attribute: str) -> str:
    return str(((device.get("attributes") or _EMPTY).get(attribute) or _EMPTY).get("string", ""))


def _holders(claims: list[dict[str, Any]], node: str) -> dict[str, tuple[str, str]]:
    """Device name -> (claims, reserved pods) for the allocated results in ``node``'s pool,
    comma-joined when several claims share a device (the driver's consumable shares)."""
    out: dict[str, tuple[str, str]] = {}
    for claim in claims:
        status = claim.get("status") or _EMPTY
        meta = claim.get("metadata") or _EMPTY
        pods = ",".join(str(r.get("name", "")) for r in status.get("reservedFor") or []
                        if isinstance(r, dict)) or "-"
        held = (f"{meta.get('namespace', 'default')}/{meta.get('name', '')}", pods)
        for result in _results(claim):
            if result.get("pool") != node:
                continue
            name = str(result.get("device", ""))
            before = out.get(name)   # consumable shares: several claims on one device
            out[name] = held if before is None else \
                (f"{before[0]},{held[0]}", f"{before[1]},{held[1]}")
    return out


def _counter_keys(device: dict[str, Any]) -> list[tuple[str, str]]:
    """The memory-slice counters a device consumes: two devices sharing one overlap."""
    return [(str(use.get("counterSet", "")), name) for use in device.get("consumesCounters") or []
            if isinstance(use, dict) for name in use.get("counters") or _EMPTY
            if str(name).startswith("memory-slice-")]

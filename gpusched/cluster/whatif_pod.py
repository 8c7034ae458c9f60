"""``gpusched whatif pod -f job.yaml``: would this pod (or each pod of a workload's template) run
on the cluster as it is now, where, on which devices, and if not, what would have to give way.

``answer(view, manifests)`` works on a view inside a transaction the caller rolls back
(``Cluster.whatif_pods``): every pod is admitted as ``apply`` would admit it (defaults, the
PriorityClass's priority, quota/LimitRange checks), then asked through ``explain_facts.explain_pod``
(the scheduler's own filters and PostFilter dry run, ``scheduler.explain``) and, when it fits now,
one real scheduling cycle (``Scheduler.schedule_one``) picks the node and the devices, which are
bound in the throw-away view so the next pod of the same workload sees them taken. Verdicts:

- ``fits-now``: node and devices (GPU index, device ID or MIG instance, resource, slot);
- ``fits-after-preemption``: DefaultPreemption's choice (``scheduler.preemption``, after
  kube-scheduler's ``pkg/scheduler/framework/preemption/preemption.go``): nominated node and
  victims; the scheduler would evict them when the pod is created; then, with the victims gone,
  the devices the pod would get on that node (its next cycle, nominated node first);
- ``fits-after-finishing``: explain's "room frees up" suggestion: the node, the pods that have to
  finish (from ``gpusched.io/duration``, ``sleep N`` or deadlines) and when on the virtual clock;
- ``gated``: ``spec.schedulingGates`` keep it out of the scheduling queue, wherever it would fit;
- ``does-not-fit``: none of these; the reasons are explain's facts (``too-large`` names the largest
  node) and the scheduler's FailedScheduling message.

Pods after the first of a workload see the earlier ones bound (and their victims gone); a wait
for finishing pods is not assumed: such a pod is judged on the cluster as it is now. Nothing is written: the caller rolls the transaction back.

Neighbours: ``cluster.cluster.Cluster.whatif_pods`` (the transaction), ``cluster.explain_facts``
(finish times, device rows), ``cli.whatif`` (output).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.view import View
from gpusched.errors import ManifestError

if TYPE_CHECKING:
    from gpusched.objects.manifest import Manifest

TEMPLATE_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "Job", "DaemonSet")
MAX_PODS = 100       # pods asked about per command: more is refused in one line
WHATIF_SUFFIX = "-whatif"


@dataclass(frozen=True)
class PodAnswer:
    pod: str                          # namespace/name of the pod asked about
    verdict: str                      # fits-now | fits-after-preemption | fits-after-finishing | gated | does-not-fit
    text: str                         # the one-line human answer
    node: str = ""
    devices: tuple[dict[str, Any], ...] = ()    # fits-now: {gpu, device, resource, slot}
    victims: tuple[str, ...] = ()     # fits-after-preemption: pod keys
    waits_for: tuple[str, ...] = ()   # fits-after-finishing: pod keys
    at: float | None = None           # fits-after-finishing: virtual seconds
    at_time: str = ""                 # the same as RFC 3339
    message: str = ""                 # the scheduler's FailedScheduling message ("" when it fits)
    reasons: tuple[str, ...] = ()     # explain's facts, one line each

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pod": self.pod, "verdict": self.verdict, "answer": self.text,
                               "node": self.node, "devices": list(self.devices),
                               "victims": list(self.victims), "waitsFor": list(self.waits_for),
                               "message": self.message, "reasons": list(self.reasons)}
        if self.at is not None:
            out["at"], out["atTime"] = self.at, self.at_time
        return out


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def pod_bodies(manifest: Manifest, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The pods a validated ``body`` stands for: itself (a Pod) or ``replicas`` / ``parallelism``
    copies of its pod template (one for a DaemonSet or a Job without parallelism)."""
    kind = body.get("kind", "")
    if kind == "Pod":
        return [body]
    if kind not in TEMPLATE_KINDS:
        raise ManifestError(manifest.source, manifest.index, "kind",
                            f"whatif pod takes a Pod or a kind with a pod template "
                            f"({', '.join(TEMPLATE_KINDS)}), not {kind}")
    spec = body.get("spec") or {}
    template = spec.get("template") or {}
    if not template.get("spec"):
        raise ManifestError(manifest.source, manifest.index, "spec.template.spec", "Required value")
    count = spec.get("parallelism", 1) if kind == "Job" else spec.get("replicas", 1)
    count = 1 if kind == "DaemonSet" or count is None else int(count)
    if count > MAX_PODS:
        field = "spec.parallelism" if kind == "Job" else "spec.replicas"
        raise ManifestError(manifest.source, manifest.index, field,
                            f"{count} pods: whatif pod asks about at most {MAX_PODS} pods")
    name, ns = _meta(body).get("name", ""), _meta(body).get("namespace")
    pods = []
    for i in range(max(count, 0)):
        meta = {"name": f"{name}-{i}", "labels": dict(_meta(template).get("labels") or {}),
                "annotations": dict(_meta(template).get("annotations") or {})}
        if ns:
            meta["namespace"] = ns
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                     "spec": copy.deepcopy(template["spec"])})
    return pods


def _free_name(view: View, body: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The pod under its own name, or ``<name>-whatif`` when a pod of that name exists."""
    name = _meta(body).get("name", "")
    while view.get("Pod", name, namespace) is not None:
        name += WHATIF_SUFFIX
    return {**body, "metadata": {**_meta(body), "name": name, "namespace": namespace}}


def _admit(view: View, manifest: Manifest, body: dict[str, Any], default_ns: str) -> dict[str, Any]:
    from gpusched.errors import InvalidError

    namespace = _meta(body).get("namespace") or default_ns
    body = _free_name(view, body, namespace)
    try:
        return write.create(view, body)
    except InvalidError as err:
        raise InvalidError(err.kind, err.name, err.errors, where=manifest.where) from None


def _schedule(view: View, pod: dict[str, Any]) -> tuple[Any, tuple[dict[str, Any], ...]]:
    """One real scheduling cycle for ``pod``; when it is scheduled, bind it in ``view`` and return
    the devices it holds (``explain_facts.running_fact``'s rows)."""
    from gpusched.cluster.scheduling.binder import bind
    from gpusched.cluster.scheduling.cache import build_snapshot
    from gpusched.cluster.scheduling.profiles import make_scheduler
    from gpusched.cluster.explain_facts import running_fact
    from gpusched.objects.pod import pod_info

    snapshot, order = build_snapshot(view)
    scheduler = make_scheduler(snapshot, view, order)
    result = scheduler.schedule_one(pod_info(pod, order.get(_meta(pod)["uid"], 0)))
    if not result.scheduled:
        return result, ()
    bind(view, pod, result.node, result.assignment)
    bound = view.get("Pod", _meta(pod)["name"], _meta(pod)["namespace"])
    assert bound is not None            # bound just above
    held = dict(running_fact(view, bound).fields)
    return result, tuple(held["devices"])


def _held(devices: tuple[dict[str, Any], ...]) -> str:
    return ", ".join(f"GPU {d['gpu']} ({d['device']}, {d['resource']}, {d['slot']})" for d in devices)


def _fits_now(view: View, pod: dict[str, Any], explanation: Any) -> PodAnswer:
    key = explanation.pod
    result, devices = _schedule(view, pod)
    if not result.scheduled:        # explain said feasible; Reserve/Permit said no
        return PodAnswer(key, "does-not-fit", f"{key} does not fit now: {result.message}",
                         message=result.message)
    text = f"{key} fits now on {result.node}" + (f": {_held(devices)}" if devices else " (no GPU devices)")
    return PodAnswer(key, "fits-now", text, result.node, devices)


def _after_preemption(view: View, pod: dict[str, Any], answer: PodAnswer) -> PodAnswer:
    """What the cluster does next: the victims go, the pod, nominated to the node, is scheduled
    there (the nominated node is tried first, as upstream's ``evaluateNominatedNode``); its devices
    are then the ones it would get. Bound in ``view`` so a later pod of the workload sees it."""
    for victim in answer.victims:
        namespace, _, name = victim.partition("/")
        write.delete(view, "Pod", name, namespace)
    nominated = {**pod, "status": {**(pod.get("status") or {}), "nominatedNodeName": answer.node}}
    write.update_status(view, nominated)
    current = view.get("Pod", _meta(pod)["name"], _meta(pod)["namespace"])
    assert current is not None          # updated just above
    result, devices = _schedule(view, current)
    if not result.scheduled or result.node != answer.node:
        return answer
    text = answer.text + (f"; then holds {_held(devices)}" if devices else "")
    return replace(answer, text=text, devices=devices)


def _does_not_fit(explanation: Any) -> PodAnswer:
    reasons = tuple(f.text for f in explanation.facts)
    found = {s.kind: s for s in explanation.suggestions}
    key = explanation.pod
    gated = [f for f in explanation.facts if f.kind == "gated"]
    if gated:                 # the SchedulingGates PreEnqueue plugin keeps it out of the queue
        gates = " ".join(dict(gated[0].fields)["gates"])
        return PodAnswer(key, "gated", f"{key} does not run now: waiting for scheduling gates: [{gates}]",
                         reasons=reasons)
    preempt, finish = found.get("preemption"), found.get("finishing")
    if preempt is not None:
        text = (f"{key} fits on {preempt.nodes[0]} after preempting {len(preempt.pods)} lower-priority "
                f"pod(s): {', '.join(preempt.pods)}")
        return PodAnswer(key, "fits-after-preemption", text, preempt.nodes[0], victims=preempt.pods,
                         message=explanation.message, reasons=reasons)
    if finish is not None and finish.at is not None:
        text = f"{key} does not fit now; {finish.change}: {', '.join(finish.pods)}"
        return PodAnswer(key, "fits-after-finishing", text, finish.nodes[0], waits_for=finish.pods,
                         at=float(finish.at), at_time=_stamp_of(finish.change),
                         message=explanation.message, reasons=reasons)
    why = "; ".join(reasons) or explanation.message
    return PodAnswer(key, "does-not-fit", f"{key} does not fit now and nothing that ends on its own "
                     f"makes room: {why}", message=explanation.message, reasons=reasons)


def _stamp_of(change: str) -> str:
    """The RFC 3339 time in explain's ``room frees up ... (at T)`` wording."""
    head, _, rest = change.partition("(at ")
    return rest.partition(")")[0] if rest else ""


def answer(view: View, manifests: list[Any], default_ns: str,
           explain_pod: Callable[[View, dict[str, Any]], Any]) -> list[PodAnswer]:
    """One ``PodAnswer`` per pod the manifests stand for (see the module docstring);
    ``explain_pod(view, pod)`` is ``explain_facts.explain_pod``. Mutates ``view``: roll it back."""
    from gpusched.cluster.apiserver.apply import validated

    bodies: list[tuple[Manifest, dict[str, Any]]] = []
    for manifest in manifests:
        body, _warnings = validated(manifest, "Strict")
        bodies.extend((manifest, pod) for pod in pod_bodies(manifest, body))
    if not bodies:
        raise ManifestError(manifests[0].source if manifests else "-", 0, "", "no objects passed to whatif")
    if len(bodies) > MAX_PODS:
        raise ManifestError(manifests[0].source, None, "", f"{len(bodies)} pods: whatif pod asks about "
                            f"at most {MAX_PODS} pods")
    out = []
    for manifest, body in bodies:
        pod = _admit(view, manifest, body, default_ns)
        explanation = explain_pod(view, pod)
        fits = not explanation.message and explanation.feasible \
            and not any(f.kind == "gated" for f in explanation.facts)
        found = _fits_now(view, pod, explanation) if fits else _does_not_fit(explanation)
        if found.verdict == "fits-after-preemption":
            found = _after_preemption(view, pod, found)
        out.append(found)
    return out

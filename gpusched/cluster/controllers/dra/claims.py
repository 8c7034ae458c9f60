"""The resourceclaim controller: ResourceClaims generated from templates for the pods that ask
for them, and the reservations of pods that are gone or done.

As kube-controller-manager's ``resource-claim-controller`` (``pkg/controller/resourceclaim/
controller.go``: ``syncPod``, ``handleClaim``, ``findPodResourceClaim``, ``syncClaim``):

- a pod (not being deleted, not finished) with a ``spec.resourceClaims`` entry naming a
  ``resourceClaimTemplateName`` gets a ResourceClaim created from the template: its spec, its
  labels, its annotations plus ``resource.kubernetes.io/pod-claim-name: <claim>``, owned by the
  pod (``controller`` and ``blockOwnerDeletion``), named from ``generateName: <pod>-<claim>-``
  (both parts cut in proportion when longer than 57 characters) and a 5-character suffix,
  deterministic from the cluster's seed where upstream's is random;
- the pod's ``status.resourceClaimStatuses`` records ``{name, resourceClaimName}`` for each claim
  generated (in the order of ``spec.resourceClaims``); a claim found owned by the pod with that
  annotation is adopted instead of creating a second one;
- a missing template, or a create refused by admission (quota), is a Warning
  ``FailedResourceClaimCreation`` on the pod (``PodResourceClaim <claim>: resource claim template
  "<t>": resourceclaimtemplate.resource.k8s.io "<t>" not found``) and is retried when the
  template (or anything the claim's admission reads) changes;
- a claim's ``status.reservedFor`` loses the pods that no longer exist (or were replaced by a pod
  of the same name) and those that will not run (finished, or deleted before being scheduled);
  when the last one goes and the claim carries ``resource.kubernetes.io/delete-protection``,
  its allocation is cleared and the finalizer removed;
- a generated claim that is reserved for no pod while its pod is finished is deleted; when the
  pod is deleted, the garbage collector removes the claims it owns.

Neighbours: ``controllers.registry`` runs :func:`reconcile`; ``controllers.base`` (informers);
the DynamicResources plugin reserves and allocates claims (``scheduler/plugins``).
"""

from __future__ import annotations

import copy
from typing import Any, Iterable

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.apiserver.view import Key, View
from gpusched.cluster.controllers.base import Informer, WorkQueue, controller, itself
from gpusched.cluster.controllers.common import is_terminal
from gpusched.errors import GpuschedError

POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
FINALIZER = "resource.kubernetes.io/delete-protection"
FAILED_CREATION = "FailedResourceClaimCreation"
COMPONENT = "resource_claim"
MAX_BASE_LENGTH = 57    # 63 minus "-" and the 5 random characters


def _pods_of_templates(changes: Changes, keys: list[Key]) -> Iterable[Key]:
    """A new or changed template enqueues its namespace's pods that name it and still lack the
    claim (a pod created before its template retries then)."""
    for key in keys:
        for pod in changes.view.list("Pod", key[1]):
            if any(c.get("resourceClaimTemplateName") == key[2]
                   for c in (pod.get("spec") or {}).get("resourceClaims") or ()):
                yield ("Pod", key[1], pod["metadata"]["name"])


def _claims_of_pods(changes: Changes, keys: list[Key]) -> Iterable[Key]:
    """A changed or deleted pod enqueues the claims it uses (generated ones from its status)."""
    for key in keys:
        pod = changes.body(key) or {}
        for name in _claim_names(pod).values():
            yield ("ResourceClaim", key[1], name)


def _pods_waiting_in_namespace(changes: Changes, keys: list[Key]) -> Iterable[Key]:
    """A changed quota (its usage went down, its limit up) enqueues its namespace's pods whose
    template claims are not all created yet, as a refused create is retried upstream."""
    for namespace in sorted({key[1] for key in keys}):
        for pod in changes.view.list("Pod", namespace):
            if _waiting(pod):
                yield ("Pod", namespace, pod["metadata"]["name"])


def _waiting(pod: dict[str, Any]) -> bool:
    recorded = {s.get("name") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
                if isinstance(s, dict)}
    return any(c.get("resourceClaimTemplateName") and c.get("name") not in recorded
               for c in (pod.get("spec") or {}).get("resourceClaims") or ())


POD_QUEUE = WorkQueue("Pod", (itself("Pod"), controller("ResourceClaim", "Pod"),
                              Informer("ResourceClaimTemplate", _pods_of_templates),
                              Informer("ResourceQuota", _pods_waiting_in_namespace)),
                      pod_creator=False)
CLAIM_QUEUE = WorkQueue("ResourceClaim", (itself("ResourceClaim"), Informer("Pod", _claims_of_pods)),
                        pod_creator=False)


def reconcile(view: View, changes: Changes | None = None) -> None:
    """The pods (and claims) that changed, or every one of them."""
    for pod in POD_QUEUE.objects(view, changes):
        if (pod.get("spec") or {}).get("resourceClaims"):
            sync_pod(view, pod)
    for claim in CLAIM_QUEUE.objects(view, changes):
        sync_claim(view, claim)


# ---- pods -------------------------------------------------------------------------------------

def _claim_names(pod: dict[str, Any]) -> dict[str, str]:
    """Pod claim name -> ResourceClaim name (``resourceclaim.Name``): the claim named in the spec,
    or the one recorded in ``status.resourceClaimStatuses`` for a template."""
    recorded = {s.get("name"): s.get("resourceClaimName")
                for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
                if isinstance(s, dict)}
    out = {}
    for claim in (pod.get("spec") or {}).get("resourceClaims") or ():
        name = claim.get("resourceClaimName") or recorded.get(claim.get("name"))
        if name:
            out[str(claim.get("name"))] = str(name)
    return out


def generate_name(pod_name: str, claim_name: str) -> str:
    """``<pod>-<claim>-``, or, past 57 characters, both cut in proportion to their lengths (no
    trailing dash then, as upstream's ``handleClaim``)."""
    base = f"{pod_name}-{claim_name}-"
    if len(base) <= MAX_BASE_LENGTH:
        return base
    return (pod_name[:len(pod_name) * MAX_BASE_LENGTH // len(base)] + "-"
            + claim_name[:len(claim_name) * MAX_BASE_LENGTH // len(base)])


def _owned_by(claim: dict[str, Any], pod: dict[str, Any]) -> bool:
    uid = pod["metadata"].get("uid")
    return any(ref.get("controller") and ref.get("kind") == "Pod" and ref.get("apiVersion") == "v1"
               and ref.get("uid") == uid for ref in claim["metadata"].get("ownerReferences") or ())


def _find_owned(view: View, pod: dict[str, Any], pod_claim: str) -> dict[str, Any] | None:
    """``findPodResourceClaim``: a claim the pod owns, annotated with this pod claim's name."""
    for key in view.dependents(pod["metadata"].get("uid", "")):
        claim = view.objects.get(key)
        if key[0] == "ResourceClaim" and claim is not None and _owned_by(claim, pod) and \
                (claim["metadata"].get("annotations") or {}).get(POD_CLAIM_ANNOTATION) == pod_claim:
            return claim
    return None


def sync_pod(view: View, pod: dict[str, Any]) -> None:
    """``syncPod``: create the missing claims of a pod that may still run, record them."""
    meta = pod["metadata"]
    if meta.get("deletionTimestamp") or is_terminal(pod):
        return
    ns = meta.get("namespace", "default")
    known = _claim_names(pod)
    created: dict[str, str] = {}
    for pod_claim in (pod.get("spec") or {}).get("resourceClaims") or ():
        template = pod_claim.get("resourceClaimTemplateName")
        name = str(pod_claim.get("name", ""))
        if not template:
            continue
        existing = view.get("ResourceClaim", known[name], ns) if name in known else None
        if existing is not None and _owned_by(existing, pod):
            continue
        claim = _find_owned(view, pod, name) or _create_claim(view, pod, name, str(template))
        if claim is None:
            break
        created[name] = claim["metadata"]["name"]
    if created:
        _record(view, pod, created)


def _create_claim(view: View, pod: dict[str, Any], pod_claim: str, template_name: str) -> dict[str, Any] | None:
    """The claim from the template, or None after a Warning on the pod."""
    meta = pod["metadata"]
    ns = meta.get("namespace", "default")
    template = view.get("ResourceClaimTemplate", template_name, ns)
    if template is None:
        view.record_event(pod, FAILED_CREATION, f'PodResourceClaim {pod_claim}: resource claim template '
                          f'"{template_name}": resourceclaimtemplate.resource.k8s.io "{template_name}" '
                          "not found", "Warning", COMPONENT)
        return None
    spec = template.get("spec") or {}
    template_meta = spec.get("metadata") or {}
    prefix = generate_name(meta["name"], pod_claim)
    claim_meta: dict[str, Any] = {
        "name": prefix + view.random_suffix(), "generateName": prefix, "namespace": ns,
        "annotations": {**(template_meta.get("annotations") or {}), POD_CLAIM_ANNOTATION: pod_claim},
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                             "uid": meta.get("uid", ""), "controller": True, "blockOwnerDeletion": True}]}
    if template_meta.get("labels"):
        claim_meta["labels"] = dict(template_meta["labels"])
    body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": claim_meta,
            "spec": copy.deepcopy(spec.get("spec") or {})}
    try:
        return write.create(view, body, owned=True)
    except GpuschedError as err:    # "create ResourceClaim %s": the name is empty before the create
        view.record_event(pod, FAILED_CREATION, f"PodResourceClaim {pod_claim}: create ResourceClaim : {err}",
                          "Warning", COMPONENT)
        return None


def _record(view: View, pod: dict[str, Any], created: dict[str, str]) -> None:
    """``status.resourceClaimStatuses``: the new entries merged by name, in spec order."""
    current = view.get("Pod", pod["metadata"]["name"], pod["metadata"].get("namespace", "default"))
    if current is None:
        return
    new = copy.deepcopy(current)
    status = new.setdefault("status", {})
    entries = {s.get("name"): s for s in status.get("resourceClaimStatuses") or () if isinstance(s, dict)}
    entries.update({name: {"name": name, "resourceClaimName": claim} for name, claim in created.items()})
    order = [c.get("name") for c in (new.get("spec") or {}).get("resourceClaims") or ()]
    status["resourceClaimStatuses"] = [entries[n] for n in order if n in entries]
    write.update_status(view, new)


# ---- claims -----------------------------------------------------------------------------------

def _pod_done(pod: dict[str, Any]) -> bool:
    """``isPodDone``: finished, or deleted before it was scheduled."""
    return is_terminal(pod) or bool(pod["metadata"].get("deletionTimestamp")
                                    and not (pod.get("spec") or {}).get("nodeName"))


def _still_reserving(view: View, ns: str, ref: dict[str, Any]) -> bool:
    if ref.get("apiGroup") or ref.get("resource") != "pods":
        return True
    pod = view.get("Pod", str(ref.get("name", "")), ns)
    return pod is not None and pod["metadata"].get("uid") == ref.get("uid") and not _pod_done(pod)


def sync_claim(view: View, claim: dict[str, Any]) -> None:
    """``syncClaim``: drop stale reservations (and a builtin allocation with the last one),
    delete a generated claim whose pod will not run."""
    meta = claim["metadata"]
    ns = meta.get("namespace", "default")
    reserved = (claim.get("status") or {}).get("reservedFor") or []
    valid = [r for r in reserved if isinstance(r, dict) and _still_reserving(view, ns, r)]
    builtin = FINALIZER in (meta.get("finalizers") or ())
    if len(valid) < len(reserved) or (builtin and meta.get("deletionTimestamp") and not valid):
        _release(view, claim, valid, builtin)
    if not valid and _owner_will_not_run(view, claim):
        write.delete(view, "ResourceClaim", meta["name"], ns)


def _owner_will_not_run(view: View, claim: dict[str, Any]) -> bool:
    """The claim's controlling pod exists and is another pod by now, or is done (a missing pod
    is the garbage collector's)."""
    meta = claim["metadata"]
    owner = next((r for r in meta.get("ownerReferences") or ()
                  if r.get("controller") and r.get("apiVersion") == "v1" and r.get("kind") == "Pod"), None)
    if owner is None:
        return False
    pod = view.get("Pod", str(owner.get("name", "")), meta.get("namespace", "default"))
    return pod is not None and (pod["metadata"].get("uid") != owner.get("uid") or _pod_done(pod))


def _release(view: View, claim: dict[str, Any], valid: list[dict[str, Any]], builtin: bool) -> None:
    new = copy.deepcopy(claim)
    status = new.setdefault("status", {})
    if valid:
        status["reservedFor"] = valid
    else:
        status.pop("reservedFor", None)
        if builtin:
            status.pop("allocation", None)
    write.update_status(view, new)
    current = view.get("ResourceClaim", new["metadata"]["name"], new["metadata"].get("namespace", "default")) or new
    if builtin and not (current.get("status") or {}).get("allocation"):
        current = copy.deepcopy(current)
        current["metadata"]["finalizers"] = [f for f in current["metadata"].get("finalizers") or ()
                                             if f != FINALIZER]
        if not current["metadata"]["finalizers"]:
            del current["metadata"]["finalizers"]
        write.update(view, current)

"""The PersistentVolume controller, the provisioners and the scheduler's volume pre-binding.

Follows kubernetes ``pkg/controller/volume/persistentvolume/pv_controller.go``:

- ``syncUnboundClaim``: a claim without ``spec.volumeName`` gets the best match
  (``findBestMatchForClaim`` -> ``find_best_match``: same class, volumeMode, access modes a
  superset (the group with the fewest modes first), capacity >= request, the claim's selector;
  a volume pre-bound to the claim wins; otherwise the smallest). None found:
  ``WaitForFirstConsumer`` class and no selected node -> event ``WaitForFirstConsumer`` ``waiting
  for first consumer to be created before binding`` (``WaitForPodScheduled`` ``waiting for pod
  <name> to be scheduled`` when an unscheduled pod uses it,
  ``emitEventForUnboundDelayBindingClaim``); a class set -> ``provisionClaim``; no class ->
  ``FailedBinding`` ``no persistent volumes available for this claim and no storage class is set``.
  A claim naming a volume binds to it when ``checkVolumeSatisfyClaim`` passes, else
  ``VolumeMismatch`` ``Cannot bind to requested volume "<pv>": <reason>``.
- ``bind``: the volume gets ``claimRef`` and phase Bound; the claim ``spec.volumeName``,
  ``pv.kubernetes.io/bind-completed: "yes"``, ``pv.kubernetes.io/bound-by-controller: "yes"``
  (when the controller chose the volume), phase Bound, capacity and access modes from the volume.
- ``syncBoundClaim``: a bound claim whose volume is gone -> phase Lost, ``ClaimLost`` ``Bound claim
  has lost its PersistentVolume. Data on the volume is lost!``.
- ``syncVolume``: no claimRef (or one without uid) -> Available; its claim deleted (or replaced,
  another uid) -> Released, then the reclaim policy: Retain keeps it Released; Delete deletes it;
  Recycle scrubs it back to Available.

Provisioning (``provisionClaimOperation`` plus an external provisioner): a missing class ->
Warning ``ProvisioningFailed`` ``storageclass.storage.k8s.io "<class>" not found``; otherwise the
claim gets ``volume.kubernetes.io/storage-provisioner`` (and the beta key), the events
``ExternalProvisioning`` (persistentvolume-controller), ``Provisioning`` and
``ProvisioningSucceeded`` ``Successfully provisioned volume pvc-<claim uid>`` (from the
provisioner), and a volume ``pvc-<uid>`` sized as the request, with the class's reclaim policy,
``pv.kubernetes.io/provisioned-by`` and, for a claim with a selected node, node affinity to that
node (what local-path does; ``hostPath`` under ``/var/local-path-provisioner``). Every
provisioner but ``kubernetes.io/no-provisioner`` is taken as installed and succeeds at once.

Scheduler side (``pkg/scheduler/framework/plugins/volumebinding``): :func:`claim_infos` describes
each claim for the VolumeBinding plugin (bound volume's node affinity; unbound
``WaitForFirstConsumer`` claims: the node affinities of the volumes that could bind, or "anywhere"
when the class provisions). After a pod is bound, :func:`prebind` does the plugin's PreBind for its
delayed claims: a static volume matching on the node is pre-bound (``claimRef``), a provisioned
one is requested with ``volume.kubernetes.io/selected-node``.

Neighbours: ``cluster.controllers`` runs :func:`reconcile`; ``cluster.scheduling`` calls
:func:`claim_infos` and :func:`prebind`; ``admission.default_storage_class`` defaults the class;
``controllers.storage.volumes_match`` matches claims to volumes (pure).
"""

from __future__ import annotations

from typing import Any

import copy

from gpusched.cluster.apiserver import write
from gpusched.cluster.controllers.storage.volumes_match import (ANN_BETA_STORAGE_PROVISIONER,
                                                                ANN_BIND_COMPLETED,
                                                                ANN_BOUND_BY_CONTROLLER,
                                                                ANN_PROVISIONED_BY,
                                                                ANN_SELECTED_NODE,
                                                                ANN_STORAGE_PROVISIONER, CONTROLLER,
                                                                HOSTNAME_LABEL, LOCAL_PATH_ROOT,
                                                                NO_CLASS_MESSAGE, NO_PROVISIONER,
                                                                WAIT_MESSAGE, claim_class,
                                                                find_best_match, is_bound_to,
                                                                volume_mismatch)
from gpusched.cluster.apiserver.view import View
from gpusched.objects.selectors import term_from_dict

# ---- the controller ---------------------------------------------------------------------

def storage_class(view: View, claim: dict[str, Any]) -> dict[str, Any] | None:
    name = claim_class(claim)
    return view.get("StorageClass", name) if name else None


def delays_binding(view: View, claim: dict[str, Any]) -> bool:
    """IsDelayBindingMode: the claim's class exists and binds WaitForFirstConsumer."""
    cls = storage_class(view, claim)
    return cls is not None and cls.get("volumeBindingMode") == "WaitForFirstConsumer"


def reconcile(view: View) -> None:
    if not view.list("PersistentVolumeClaim") and not view.list("PersistentVolume"):
        return
    for claim in view.list("PersistentVolumeClaim"):
        _sync_claim(view, claim)
    for volume in view.list("PersistentVolume"):
        _sync_volume(view, volume)


def _annotations(obj: dict[str, Any]) -> dict[str, Any]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _sync_claim(view: View, claim: dict[str, Any]) -> None:
    if _annotations(claim).get(ANN_BIND_COMPLETED):
        _sync_bound_claim(view, claim)
        return
    name = (claim.get("spec") or {}).get("volumeName")
    if not name:
        _sync_unbound_claim(view, claim)
        return
    volume = view.get("PersistentVolume", name)
    if volume is None:
        _set_claim_phase(view, claim, "Pending", None)
        return
    ref = (volume.get("spec") or {}).get("claimRef")
    if not ref or is_bound_to(volume, claim):
        problem = "" if ref else volume_mismatch(volume, claim)
        if problem:
            _event_once(view, claim, "VolumeMismatch",
                        f'Cannot bind to requested volume "{name}": {problem}', "Warning")
            _set_claim_phase(view, claim, "Pending", None)
            return
        _bind(view, volume, claim, by_controller=False)
        return
    _set_claim_phase(view, claim, "Pending", None)      # the volume is someone else's


def _sync_unbound_claim(view: View, claim: dict[str, Any]) -> None:
    delay = delays_binding(view, claim)
    volume = find_best_match(claim, view.list("PersistentVolume"), delay)
    if volume is not None:
        _bind(view, volume, claim, by_controller=True)
        return
    if delay and not _annotations(claim).get(ANN_SELECTED_NODE):
        waiting = _unscheduled_pods_using(view, claim)
        if waiting:
            _event_once(view, claim, "WaitForPodScheduled",
                        f"waiting for pod {waiting[0]} to be scheduled" if len(waiting) == 1
                        else f"waiting for pods {','.join(waiting)} to be scheduled")
        else:
            _event_once(view, claim, "WaitForFirstConsumer", WAIT_MESSAGE)
    elif claim_class(claim):
        _provision(view, claim)
    else:
        _event_once(view, claim, "FailedBinding", NO_CLASS_MESSAGE)
    _set_claim_phase(view, claim, "Pending", None)


def _sync_bound_claim(view: View, claim: dict[str, Any]) -> None:
    name = (claim.get("spec") or {}).get("volumeName")
    volume = view.get("PersistentVolume", name) if name else None
    if volume is None:
        message = ("Bound claim has lost its PersistentVolume. Data on the volume is lost!" if name
                   else "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!")
        if _phase(claim) != "Lost":
            _event_once(view, claim, "ClaimLost", message, "Warning")
        _set_claim_phase(view, claim, "Lost", None)
        return
    if not (volume.get("spec") or {}).get("claimRef") or is_bound_to(volume, claim):
        _bind(view, volume, claim, by_controller=bool(_annotations(claim).get(ANN_BOUND_BY_CONTROLLER)))
        return
    if _phase(claim) != "Lost":
        _event_once(view, claim, "ClaimMisbound",
                    "Two claims are bound to the same volume, this one is bound incorrectly",
                    "Warning")
    _set_claim_phase(view, claim, "Lost", None)


def _sync_volume(view: View, volume: dict[str, Any]) -> None:
    ref = (volume.get("spec") or {}).get("claimRef")
    if not ref or not ref.get("uid"):
        _set_volume_phase(view, volume, "Available")
        return
    claim = view.get("PersistentVolumeClaim", ref.get("name", ""), ref.get("namespace", "default"))
    if claim is not None and claim["metadata"].get("uid") != ref.get("uid"):
        claim = None
    if claim is None:
        _reclaim(view, volume)
    elif (claim.get("spec") or {}).get("volumeName") == volume["metadata"]["name"]:
        _set_volume_phase(view, volume, "Bound")


def _reclaim(view: View, volume: dict[str, Any]) -> None:
    policy = (volume.get("spec") or {}).get("persistentVolumeReclaimPolicy") or "Retain"
    if policy == "Delete":
        write.delete(view, "PersistentVolume", volume["metadata"]["name"])
    elif policy == "Recycle":
        new = copy.deepcopy(volume)
        new["spec"].pop("claimRef", None)
        new.setdefault("status", {})["phase"] = "Available"
        write.update(view, new)
    else:
        _set_volume_phase(view, volume, "Released")


def _bind(view: View, volume: dict[str, Any], claim: dict[str, Any], by_controller: bool) -> None:
    meta = claim["metadata"]
    claim = view.get("PersistentVolumeClaim", meta["name"], meta.get("namespace", "default")) or claim
    meta = claim["metadata"]
    new_volume = copy.deepcopy(volume)
    new_volume["spec"]["claimRef"] = {
        "kind": "PersistentVolumeClaim", "namespace": meta.get("namespace", "default"),
        "name": meta["name"], "uid": meta.get("uid", ""), "apiVersion": "v1",
        "resourceVersion": meta.get("resourceVersion", "")}
    if (volume["spec"].get("claimRef") or {}).get("uid") == meta.get("uid"):
        new_volume["spec"]["claimRef"]["resourceVersion"] = volume["spec"]["claimRef"].get(
            "resourceVersion", "")
    if by_controller and not (volume["spec"].get("claimRef") or {}).get("name"):
        new_volume["metadata"].setdefault("annotations", {})[ANN_BOUND_BY_CONTROLLER] = "yes"
    new_volume.setdefault("status", {})["phase"] = "Bound"
    write.update(view, new_volume)
    new_claim = copy.deepcopy(claim)
    new_claim["spec"]["volumeName"] = volume["metadata"]["name"]
    annotations = new_claim["metadata"].setdefault("annotations", {})
    annotations[ANN_BIND_COMPLETED] = "yes"
    if by_controller:
        annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
    write.update(view, new_claim)
    _set_claim_phase(view, new_claim, "Bound", volume)


def _phase(obj: dict[str, Any]) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


def _set_claim_phase(view: View, claim: dict[str, Any], phase: str, volume: dict[str, Any] | None) -> None:
    """updateClaimStatus: phase, plus capacity and access modes from the volume (or none)."""
    meta = claim["metadata"]
    new = view.copy("PersistentVolumeClaim", meta["name"], meta.get("namespace", "default"))
    if new is None:
        return
    status = new.setdefault("status", {})
    status["phase"] = phase
    if volume is None:
        status.pop("accessModes", None)
        status.pop("capacity", None)
    else:
        status["accessModes"] = list((volume.get("spec") or {}).get("accessModes") or [])
        status["capacity"] = {"storage": volume["spec"]["capacity"]["storage"]}
    write.update_status(view, new)


def _set_volume_phase(view: View, volume: dict[str, Any], phase: str) -> None:
    if _phase(volume) == phase:
        return
    new = copy.deepcopy(volume)
    new.setdefault("status", {})["phase"] = phase
    write.update_status(view, new)


def _event_once(view: View, obj: dict[str, Any], reason: str, message: str, type_: str = "Normal",
                component: str = CONTROLLER) -> None:
    """Record an event unless this object already has it (the periodic resync's repeats are
    not modelled; they would only bump the count)."""
    uid = obj["metadata"].get("uid")
    for event in view.list_events(obj["metadata"].get("namespace") or "default"):
        if ((event.get("involvedObject") or {}).get("uid") == uid and event.get("reason") == reason
                and event.get("message") == message):
            return
    view.record_event(obj, reason, message, type_, component)


def _unscheduled_pods_using(view: View, claim: dict[str, Any]) -> list[str]:
    meta = claim["metadata"]
    names = []
    for pod in view.list("Pod", meta.get("namespace", "default")):
        spec = pod.get("spec") or {}
        if spec.get("nodeName"):
            continue
        if meta["name"] in _claim_names(pod):
            names.append(pod["metadata"]["name"])
    return names


def _claim_names(pod: dict[str, Any]) -> set[str]:
    return {str((v.get("persistentVolumeClaim") or {}).get("claimName") or "")
            for v in (pod.get("spec") or {}).get("volumes") or []
            if isinstance(v, dict) and v.get("persistentVolumeClaim")}


# ---- provisioning -----------------------------------------------------------------------

def _provision(view: View, claim: dict[str, Any]) -> None:
    meta = claim["metadata"]
    cls = storage_class(view, claim)
    if cls is None:
        _event_once(view, claim, "ProvisioningFailed",
                    f'storageclass.storage.k8s.io "{claim_class(claim)}" not found', "Warning")
        return
    provisioner = str(cls.get("provisioner") or "")
    new = copy.deepcopy(claim)
    annotations = new["metadata"].setdefault("annotations", {})
    annotations[ANN_STORAGE_PROVISIONER] = provisioner
    annotations[ANN_BETA_STORAGE_PROVISIONER] = provisioner
    write.update(view, new)
    claim = view.get("PersistentVolumeClaim", meta["name"], meta.get("namespace", "default")) or new
    _event_once(view, claim, "ExternalProvisioning",
                f"Waiting for a volume to be created either by the external provisioner "
                f"'{provisioner}' or manually by the system administrator. If volume creation is "
                "delayed, please verify that the provisioner is running and correctly registered.")
    if provisioner == NO_PROVISIONER:
        return
    key = f"{meta.get('namespace', 'default')}/{meta['name']}"
    name = f"pvc-{meta['uid']}"
    if view.get("PersistentVolume", name) is not None:
        return
    component = f"{provisioner}_gpusched"
    _event_once(view, claim, "Provisioning",
                f'External provisioner is provisioning volume for claim "{key}"',
                component=component)
    write.create(view, _provisioned_volume(name, claim, cls))
    _event_once(view, claim, "ProvisioningSucceeded", f"Successfully provisioned volume {name}",
                component=component)


def _provisioned_volume(name: str, claim: dict[str, Any], cls: dict[str, Any]) -> dict[str, Any]:
    meta, spec = claim["metadata"], claim.get("spec") or {}
    provisioner = str(cls.get("provisioner") or "")
    node = _annotations(claim).get(ANN_SELECTED_NODE, "")
    volume_spec: dict[str, Any] = {
        "accessModes": list(spec.get("accessModes") or []),
        "capacity": {"storage": spec["resources"]["requests"]["storage"]},
        "persistentVolumeReclaimPolicy": cls.get("reclaimPolicy") or "Delete",
        "storageClassName": cls["metadata"]["name"],
        "volumeMode": spec.get("volumeMode") or "Filesystem",
        "claimRef": {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace", "default"),
                     "name": meta["name"], "uid": meta["uid"], "apiVersion": "v1",
                     "resourceVersion": meta.get("resourceVersion", "")},
    }
    if node:
        volume_spec["hostPath"] = {"path": f"{LOCAL_PATH_ROOT}/{name}_{meta.get('namespace', 'default')}"
                                           f"_{meta['name']}", "type": "DirectoryOrCreate"}
        volume_spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": HOSTNAME_LABEL, "operator": "In", "values": [node]}]}]}}
    else:
        volume_spec["csi"] = {"driver": provisioner, "volumeHandle": name}
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {ANN_PROVISIONED_BY: provisioner}},
            "spec": volume_spec, "status": {"phase": "Pending"}}


# ---- scheduler side ---------------------------------------------------------------------

def prebind(view: View, pod: dict[str, Any], node_name: str) -> None:
    """VolumeBinding PreBind for a just-bound pod's unbound WaitForFirstConsumer claims."""
    node = view.get("Node", node_name)
    ns = pod["metadata"].get("namespace", "default")
    for name in sorted(_claim_names(pod)):
        claim = view.get("PersistentVolumeClaim", name, ns)
        if claim is None or (claim.get("spec") or {}).get("volumeName") or not delays_binding(view, claim):
            continue
        volume = find_best_match(claim, view.list("PersistentVolume"), True, node)
        if volume is not None:
            _bind(view, volume, claim, by_controller=True)
            continue
        new = copy.deepcopy(claim)
        new["metadata"].setdefault("annotations", {})[ANN_SELECTED_NODE] = node_name
        write.update(view, new)


def claim_infos(view: View) -> list[Any]:
    """Every claim as the VolumeBinding plugin sees it (``ClaimInfo``)."""
    from gpusched.scheduler.plugins.volume_binding import ClaimInfo
    out = []
    volumes = view.list("PersistentVolume")
    for claim in view.list("PersistentVolumeClaim"):
        meta = claim["metadata"]
        ns = meta.get("namespace", "default")
        volume_name = (claim.get("spec") or {}).get("volumeName")
        if volume_name:
            volume = view.get("PersistentVolume", volume_name)
            out.append(ClaimInfo(ns, meta["name"], node_terms=_terms(volume) if volume else None,
                                 bound=True))
            continue
        if not delays_binding(view, claim):
            out.append(ClaimInfo(ns, meta["name"], bound=False, immediate=True))
            continue
        provisions = (storage_class(view, claim) or {}).get("provisioner") != NO_PROVISIONER
        candidates = None if provisions else tuple(
            _terms(v) for v in _static_candidates(claim, volumes))
        out.append(ClaimInfo(ns, meta["name"], bound=False, immediate=False,
                             candidate_terms=candidates))
    return out


def _static_candidates(claim: dict[str, Any], volumes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Volumes the scheduler could bind the claim to on some node (FindPodVolumes per node)."""
    out = []
    for volume in volumes:
        chosen = find_best_match(claim, [volume], True, node={"metadata": {"labels": {}}}) \
            if not _terms(volume) else _match_ignoring_node(claim, volume)
        if chosen is not None:
            out.append(volume)
    return out


def _match_ignoring_node(claim: dict[str, Any], volume: dict[str, Any]) -> dict[str, Any] | None:
    loose = copy.deepcopy(volume)
    loose["spec"].pop("nodeAffinity", None)
    return find_best_match(claim, [loose], True, node={"metadata": {"labels": {}}})


def _terms(volume: dict[str, Any]) -> tuple[Any, ...] | None:
    required = ((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required")
    if not required:
        return None
    return tuple(term_from_dict(t) for t in required.get("nodeSelectorTerms") or ())

"""PersistentVolume binding as kubernetes' PV controller does it.

Each case names the upstream function (pkg/controller/volume/persistentvolume/pv_controller.go,
index.go, and their tests index_test.go / binder_test.go / provision_test.go) whose behaviour it
reproduces.
"""

from __future__ import annotations

import pytest
import yaml

from gpusched.cluster.controllers.storage.volumes_match import find_best_match, volume_mismatch
from gpusched.errors import InvalidError

from .builders import apply, join, pool

# ---- builders ----------------------------------------------------------------------------------


def pv(name: str, size: str = "10Gi", modes: tuple[str, ...] = ("ReadWriteOnce",), cls: str = "",
       labels: dict | None = None, claim: tuple[str, str] | None = None, phase: str = "Available",
       node: str = "", policy: str = "Retain", mode: str = "Filesystem") -> dict:
    spec: dict = {"capacity": {"storage": size}, "accessModes": list(modes),
                  "persistentVolumeReclaimPolicy": policy, "volumeMode": mode}
    if cls:
        spec["storageClassName"] = cls
    if claim:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    if node:
        spec["local"] = {"path": f"/mnt/disks/{name}"}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
    else:
        spec["hostPath"] = {"path": f"/data/{name}"}
    body = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": spec, "status": {"phase": phase}}
    if labels:
        body["metadata"]["labels"] = labels
    return body


def pvc(name: str = "claim", size: str = "5Gi", modes: tuple[str, ...] = ("ReadWriteOnce",),
        cls: str | None = "", selector: dict | None = None, volume: str = "",
        mode: str = "Filesystem") -> dict:
    spec: dict = {"accessModes": list(modes), "resources": {"requests": {"storage": size}},
                  "volumeMode": mode}
    if cls is not None:
        spec["storageClassName"] = cls
    if selector:
        spec["selector"] = {"matchLabels": selector}
    if volume:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "default", "uid": "uid-1"}, "spec": spec}


def storage_class(name: str, provisioner: str = "example.com/csi", mode: str = "Immediate",
                  policy: str = "Delete") -> str:
    return yaml.safe_dump({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                           "metadata": {"name": name}, "provisioner": provisioner,
                           "volumeBindingMode": mode, "reclaimPolicy": policy})


def dump(*objects: dict) -> str:
    docs = []
    for obj in objects:
        obj = {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "uid"}}
        obj.pop("status", None)
        docs.append(yaml.safe_dump(obj))
    return join(*docs)


def pod_with_claim(name: str, claim: str, **spec) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                           "spec": {"containers": [{"name": "c", "image": "busybox"}],
                                    "volumes": [{"name": "d", "persistentVolumeClaim":
                                                 {"claimName": claim}}], **spec}})


def claim_of(cluster, name: str = "claim") -> dict:
    return cluster.get("pvc", [name])[0]


def events_of(cluster, name: str) -> list[tuple[str, str, str]]:
    return [(e["type"], e["reason"], e["message"]) for e in cluster.get("events")
            if e["involvedObject"]["name"] == name]


# ---- FindMatchingVolume / findBestMatchForClaim (index.go, index_test.go) ---------------------

MATCH_CASES = [
    # (id, claim, volumes, delay_binding, expected volume name or None)
    ("smallest-that-fits (index_test TestMatchVolume 'successful-match-with-smallest')",
     pvc(size="5Gi"), [pv("big", "100Gi"), pv("small", "8Gi"), pv("tiny", "1Gi")], False, "small"),
    ("exact size fits", pvc(size="10Gi"), [pv("exact", "10Gi")], False, "exact"),
    ("none large enough", pvc(size="50Gi"), [pv("a", "10Gi")], False, None),
    ("class must match (GetPersistentVolumeClass != requestedClass)",
     pvc(cls="fast"), [pv("slow", cls="slow"), pv("fast", "20Gi", cls="fast")], False, "fast"),
    ("no class only matches class-less volumes", pvc(cls=""), [pv("classy", cls="fast")], False,
     None),
    ("access modes must include the claim's (allPossibleMatchingAccessModes)",
     pvc(modes=("ReadWriteMany",)), [pv("rwo"), pv("rwx", "20Gi", ("ReadWriteMany",))], False,
     "rwx"),
    ("the mode group with fewest modes is tried first (findByClaim)",
     pvc(), [pv("multi", "6Gi", ("ReadWriteOnce", "ReadOnlyMany")), pv("single", "50Gi")], False,
     "single"),
    ("selector filters by volume labels",
     pvc(selector={"tier": "gold"}), [pv("plain", "6Gi"), pv("gold", "60Gi", labels={"tier": "gold"})],
     False, "gold"),
    ("pre-bound volume wins over a smaller one (TestFindingPreboundVolumes)",
     pvc(), [pv("small", "6Gi"), pv("mine", "90Gi", claim=("default", "claim"))], False, "mine"),
    ("volume pre-bound to another claim is skipped",
     pvc(), [pv("theirs", claim=("default", "other"))], False, None),
    ("Released volumes are skipped (phase != Available)", pvc(), [pv("old", phase="Released")],
     False, None),
    ("volumeMode must match (CheckVolumeModeMismatches)",
     pvc(mode="Block"), [pv("fs"), pv("block", mode="Block")], False, "block"),
    ("delayed binding without a node: the controller leaves it to the scheduler",
     pvc(), [pv("a")], True, None),
    ("delayed binding still takes a pre-bound volume", pvc(),
     [pv("mine", claim=("default", "claim"))], True, "mine"),
]


@pytest.mark.parametrize("claim,volumes,delay,expected", [c[1:] for c in MATCH_CASES],
                         ids=[c[0] for c in MATCH_CASES])
def test_find_best_match(claim, volumes, delay, expected):
    found = find_best_match(claim, volumes, delay)
    assert (found["metadata"]["name"] if found else None) == expected


def test_find_best_match_with_a_node_checks_node_affinity():
    """FindMatchingVolume with node != nil: CheckNodeAffinity (the scheduler's path)."""
    volumes = [pv("on-a", node="node-a"), pv("on-b", "20Gi", node="node-b")]
    node_b = {"metadata": {"name": "node-b", "labels": {"kubernetes.io/hostname": "node-b"}}}
    assert find_best_match(pvc(), volumes, True, node_b)["metadata"]["name"] == "on-b"


SATISFY_CASES = [  # checkVolumeSatisfyClaim
    ("fits", pv("v", "10Gi"), pvc(size="10Gi"), ""),
    ("too small", pv("v", "1Gi"), pvc(size="10Gi"), "requested PV is too small"),
    ("class", pv("v", cls="a"), pvc(cls="b"), "storageClassName does not match"),
    ("volume mode", pv("v", mode="Block"), pvc(), "incompatible volumeMode"),
    ("access mode", pv("v"), pvc(modes=("ReadWriteMany",)), "incompatible accessMode"),
]


@pytest.mark.parametrize("volume,claim,reason", [c[1:] for c in SATISFY_CASES],
                         ids=[c[0] for c in SATISFY_CASES])
def test_check_volume_satisfy_claim(volume, claim, reason):
    assert volume_mismatch(volume, claim) == reason


# ---- the controller in the cluster ----------------------------------------------------------

def test_static_binding_sets_both_sides(cluster):
    """syncUnboundClaim -> bind(): claimRef, phases, bind-completed/bound-by-controller."""
    apply(cluster, dump(pv("pv-10", "10Gi"), pv("pv-100", "100Gi"), pvc(size="5Gi")))
    claim = claim_of(cluster)
    assert claim["status"] == {"phase": "Bound", "accessModes": ["ReadWriteOnce"],
                               "capacity": {"storage": "10Gi"}}
    assert claim["spec"]["volumeName"] == "pv-10"
    annotations = claim["metadata"]["annotations"]
    assert annotations["pv.kubernetes.io/bind-completed"] == "yes"
    assert annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
    volume = cluster.get("pv", ["pv-10"])[0]
    assert volume["status"]["phase"] == "Bound"
    assert volume["spec"]["claimRef"]["name"] == "claim"
    assert volume["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
    assert cluster.get("pv", ["pv-100"])[0]["status"]["phase"] == "Available"


def test_no_match_and_no_class(cluster):
    """syncUnboundClaim, volume == nil, no class: FailedBinding, Pending."""
    cluster.delete("sc", "standard")
    apply(cluster, dump(pvc(cls=None, size="5Gi")))
    assert claim_of(cluster)["status"]["phase"] == "Pending"
    assert "storageClassName" not in claim_of(cluster)["spec"]
    assert events_of(cluster, "claim") == [
        ("Normal", "FailedBinding",
         "no persistent volumes available for this claim and no storage class is set")]


def test_default_class_is_written_into_the_claim(cluster):
    """admission DefaultStorageClass: a claim without storageClassName gets the default."""
    apply(cluster, dump(pvc(cls=None)))
    assert claim_of(cluster)["spec"]["storageClassName"] == "standard"


def test_immediate_provisioning(cluster):
    """provisionClaimOperation + external provisioner: pvc-<uid>, events, bound."""
    apply(cluster, join(storage_class("fast"), dump(pvc(cls="fast", size="20Gi"))))
    claim = claim_of(cluster)
    name = f"pvc-{claim['metadata']['uid']}"
    assert claim["status"]["phase"] == "Bound" and claim["spec"]["volumeName"] == name
    assert claim["metadata"]["annotations"]["volume.kubernetes.io/storage-provisioner"] == \
        "example.com/csi"
    volume = cluster.get("pv", [name])[0]
    assert volume["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == "example.com/csi"
    assert (volume["spec"]["capacity"], volume["spec"]["persistentVolumeReclaimPolicy"]) == \
        ({"storage": "20Gi"}, "Delete")
    assert [r for _, r, _ in events_of(cluster, "claim")] == [
        "ExternalProvisioning", "Provisioning", "ProvisioningSucceeded"]
    assert events_of(cluster, "claim")[-1][2] == f"Successfully provisioned volume {name}"


def test_missing_class(cluster):
    apply(cluster, dump(pvc(cls="gold")))
    assert events_of(cluster, "claim") == [
        ("Warning", "ProvisioningFailed", 'storageclass.storage.k8s.io "gold" not found')]
    assert claim_of(cluster)["status"]["phase"] == "Pending"


def test_wait_for_first_consumer_then_selected_node(cluster):
    """emitEventForUnboundDelayBindingClaim, then the scheduler's selected-node annotation and
    a volume with node affinity to that node (local-path)."""
    apply(cluster, join(pool("gpu", count=2, gpus=1), dump(pvc(cls=None))))
    assert claim_of(cluster)["status"]["phase"] == "Pending"
    assert events_of(cluster, "claim") == [
        ("Normal", "WaitForFirstConsumer", "waiting for first consumer to be created before binding")]
    apply(cluster, pod_with_claim("user", "claim"))
    node = cluster.get("pods", ["user"])[0]["spec"]["nodeName"]
    claim = claim_of(cluster)
    assert claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
    assert claim["status"]["phase"] == "Bound"
    volume = cluster.get("pv", [claim["spec"]["volumeName"]])[0]
    terms = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                            "values": [node]}]}]
    apply(cluster, pod_with_claim("second", "claim"))          # the volume pins later users
    assert cluster.get("pods", ["second"])[0]["spec"]["nodeName"] == node


def test_local_volumes_pick_the_node(cluster):
    """VolumeBinding Filter: an unbound WaitForFirstConsumer claim of a no-provisioner class goes
    where a matching local volume is; none -> ErrReasonBindConflict."""
    apply(cluster, join(pool("gpu", count=3, gpus=1),
                        storage_class("local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer"),
                        dump(pv("disk-2", "100Gi", cls="local", node="gpu-2"),
                             pvc("data", size="50Gi", cls="local"),
                             pvc("huge", size="500Gi", cls="local"))))
    apply(cluster, join(pod_with_claim("reader", "data"), pod_with_claim("hungry", "huge")))
    assert cluster.get("pods", ["reader"])[0]["spec"]["nodeName"] == "gpu-2"
    assert claim_of(cluster, "data")["spec"]["volumeName"] == "disk-2"
    hungry = cluster.get("pods", ["hungry"])[0]
    message = next(c["message"] for c in hungry["status"]["conditions"] if c["type"] == "PodScheduled")
    assert message.startswith("0/3 nodes are available: 3 node(s) didn't find available "
                              "persistent volumes to bind.")


@pytest.mark.parametrize("claims,message", [
    ((), 'persistentvolumeclaim "claim" not found'),
    ((pvc(cls="gold"),), "pod has unbound immediate PersistentVolumeClaims"),
], ids=["claim-missing", "unbound-immediate"])
def test_failed_scheduling_volume_messages(cluster, claims, message):
    """volumebinding PreFilter's UnschedulableAndUnresolvable reasons."""
    apply(cluster, join(pool("gpu", count=1, gpus=1), *(dump(c) for c in claims),
                        pod_with_claim("p", "claim")))
    pod = cluster.get("pods", ["p"])[0]
    condition = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    assert condition["message"].startswith(f"0/1 nodes are available: {message}.")


def test_pending_pod_is_retried_when_its_claim_appears(cluster):
    apply(cluster, join(pool("gpu", count=1, gpus=1), pod_with_claim("p", "claim")))
    assert not cluster.get("pods", ["p"])[0]["spec"].get("nodeName")
    apply(cluster, dump(pvc(cls=None)))
    assert cluster.get("pods", ["p"])[0]["spec"]["nodeName"] == "gpu-1"


def test_requested_volume_mismatch(cluster):
    """syncUnboundClaim with spec.volumeName: checkVolumeSatisfyClaim fails -> VolumeMismatch."""
    apply(cluster, dump(pv("small", "1Gi"), pvc(size="5Gi", volume="small")))
    assert events_of(cluster, "claim") == [
        ("Warning", "VolumeMismatch", 'Cannot bind to requested volume "small": requested PV is too small')]
    assert claim_of(cluster)["status"]["phase"] == "Pending"


@pytest.mark.parametrize("policy,after", [("Retain", "Released"), ("Delete", None),
                                          ("Recycle", "Available")], ids=["retain", "delete", "recycle"])
def test_reclaim_policy_when_the_claim_goes(cluster, policy, after):
    """syncVolume: claim deleted -> Released, then reclaimVolume by policy."""
    apply(cluster, dump(pv("v", policy=policy), pvc()))
    assert cluster.get("pv", ["v"])[0]["status"]["phase"] == "Bound"
    cluster.delete("pvc", "claim")
    remaining = {v["metadata"]["name"]: v["status"]["phase"] for v in cluster.get("pv")}
    assert remaining.get("v") == after


def test_released_volume_is_not_reused_by_a_new_claim_of_the_same_name(cluster):
    """syncVolume: a claimRef with the old uid is a claim that no longer exists."""
    apply(cluster, dump(pv("v"), pvc()))
    cluster.delete("pvc", "claim")
    apply(cluster, dump(pvc()))
    assert claim_of(cluster)["status"]["phase"] == "Pending"
    assert cluster.get("pv", ["v"])[0]["status"]["phase"] == "Released"


def test_bound_claim_loses_its_volume(cluster):
    """syncBoundClaim: volume not found -> Lost, ClaimLost."""
    apply(cluster, dump(pv("v"), pvc()))
    cluster.delete("pv", "v")
    assert claim_of(cluster)["status"]["phase"] == "Lost"
    assert events_of(cluster, "claim")[-1] == (
        "Warning", "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!")


def test_reapplying_a_changed_claim_keeps_its_binding(cluster):
    """apply's merge leaves out volumeName/storageClassName; the API server keeps them and
    ValidatePersistentVolumeClaimUpdate refuses other spec changes."""
    apply(cluster, dump(pv("v"), pvc()))
    labelled = pvc()
    labelled["metadata"]["labels"] = {"team": "a"}
    apply(cluster, dump(labelled))
    claim = claim_of(cluster)
    assert claim["spec"]["volumeName"] == "v" and claim["status"]["phase"] == "Bound"
    wider = pvc(modes=("ReadWriteMany",))
    with pytest.raises(InvalidError) as err:
        apply(cluster, dump(wider))
    assert str(err.value) == ('The PersistentVolumeClaim "claim" is invalid: spec: Forbidden: spec is '
                              "immutable after creation except resources.requests and "
                              "volumeAttributesClassName for bound claims")

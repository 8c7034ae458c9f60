"""Prepared DRA claims in the simulated container (``cluster.kubelet.dra_prepare``,
``metrics.container_dra``): what NVIDIA's driver hands each container
(``cmd/gpu-kubelet-plugin/device_state.go``: CDI devices per claim request; ``resources.claims
[].request`` narrows a container to one request, as in the quickstart's ``gpu-test4``)."""

from __future__ import annotations

import pytest
import yaml

from gpusched.cluster.apiserver import write
from gpusched.cluster.kubelet.dra_prepare import prepared_devices, sharing_problem
from gpusched.devices.node import gpu_uuid, mig_uuid
from gpusched.metrics.container import known_output
from tests.cluster.builders import apply

NODES = """
apiVersion: gpusched.io/v1alpha1
kind: NodePool
metadata: {name: a100}
spec:
  count: 1
  gpu: {model: A100-40GB, count: 2, management: dra}
---
apiVersion: gpusched.io/v1alpha1
kind: NodePool
metadata: {name: h100}
spec:
  count: 1
  gpu: {model: H100-80GB, count: 1, management: dra-dynamic-mig}
"""


def claim(name: str, requests: list[str], config: list | None = None) -> dict:
    devices: dict = {"requests": [{"name": r, "exactly": {"deviceClassName": "gpu.nvidia.com"}}
                                  for r in requests]}
    if config:
        devices["config"] = config
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"devices": devices}}


def pod(name: str, node: str, containers: dict[str, list[dict]], claims: list[str]) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node,
                     "containers": [{"name": c, "image": "ubuntu", "resources": {"claims": refs}}
                                    for c, refs in containers.items()],
                     "resourceClaims": [{"name": c, "resourceClaimName": c} for c in claims]}}


def allocate(cluster, name: str, node: str, results: list[tuple[str, str]], pods: list[str]) -> None:
    """Write the allocation the scheduler's PreBind would (results: (request, device))."""
    def run(view):
        body = view.get("ResourceClaim", name, "default")
        uids = [view.get("Pod", p, "default")["metadata"]["uid"] for p in pods]
        status = {"allocation": {"devices": {"results": [
            {"request": r, "driver": "gpu.nvidia.com", "pool": node, "device": d}
            for r, d in results]}},
            "reservedFor": [{"resource": "pods", "name": p, "uid": u} for p, u in zip(pods, uids)]}
        write.update_status(view, {**body, "status": status})
    cluster.write(run)


def run(cluster, pod_name: str, container: str, *argv: str) -> str:
    def read(view):
        return known_output(view, view.get("Pod", pod_name, "default"), container, list(argv))
    return cluster.read(read).stdout


@pytest.fixture
def dra(cluster):
    apply(cluster, NODES)
    return cluster


def test_a_claim_shared_by_two_containers_shows_the_same_gpu_in_both(dra):
    """quickstart gpu-test2: two containers, one claim."""
    apply(dra, yaml.safe_dump_all([claim("shared", ["gpu"]),
                                   pod("p", "a100-1", {"c0": [{"name": "shared"}],
                                                       "c1": [{"name": "shared"}]}, ["shared"])]))
    allocate(dra, "shared", "a100-1", [("gpu", "gpu-1")], ["p"])
    uuid = gpu_uuid("a100-1", 1)
    for container in ("c0", "c1"):
        assert run(dra, "p", container, "nvidia-smi", "-L") == \
            f"GPU 0: NVIDIA A100-SXM4-40GB (UUID: {uuid})"
        assert f"NVIDIA_VISIBLE_DEVICES={uuid}" in run(dra, "p", container, "env").splitlines()


def test_a_container_sees_only_the_request_it_names(dra):
    """quickstart gpu-test4: ``resources.claims[].request`` picks one request's devices."""
    apply(dra, yaml.safe_dump_all([claim("two", ["a", "b"]),
                                   pod("p", "a100-1", {"ca": [{"name": "two", "request": "a"}],
                                                       "all": [{"name": "two"}]}, ["two"])]))
    allocate(dra, "two", "a100-1", [("a", "gpu-0"), ("b", "gpu-1")], ["p"])
    env = run(dra, "p", "ca", "env").splitlines()
    assert f"NVIDIA_VISIBLE_DEVICES={gpu_uuid('a100-1', 0)}" in env
    assert run(dra, "p", "all", "nvidia-smi", "-L").splitlines()[1].startswith("GPU 1: ")


def test_a_claim_not_reserved_for_the_pod_gives_it_nothing(dra):
    apply(dra, yaml.safe_dump_all([claim("other", ["gpu"]),
                                   pod("p", "a100-1", {"c": [{"name": "other"}]}, ["other"]),
                                   pod("q", "a100-1", {"c": [{"name": "other"}]}, ["other"])]))
    allocate(dra, "other", "a100-1", [("gpu", "gpu-0")], ["q"])
    assert run(dra, "p", "c", "nvidia-smi", "-L") == "No devices were found"
    assert run(dra, "q", "c", "nvidia-smi", "-L").startswith("GPU 0: ")


def test_a_dynamic_mig_device_shows_as_its_instance(dra):
    apply(dra, yaml.safe_dump_all([claim("mig", ["mig"]),
                                   pod("p", "h100-1", {"c": [{"name": "mig"}]}, ["mig"])]))
    allocate(dra, "mig", "h100-1", [("mig", "gpu-0-mig-3g40gb-9-4")], ["p"])
    uuid = mig_uuid("h100-1", 0, "3g.40gb", 4)
    assert run(dra, "p", "c", "nvidia-smi", "-L").splitlines() == [
        f"GPU 0: NVIDIA H100 80GB HBM3 (UUID: {gpu_uuid('h100-1', 0)})",
        f"  MIG 3g.40gb     Device  0: (UUID: {uuid})"]
    assert f"NVIDIA_VISIBLE_DEVICES={uuid}" in run(dra, "p", "c", "env").splitlines()
    assert "MIG devices:" in run(dra, "p", "c", "nvidia-smi")


TIME_SLICING = {"driver": "gpu.nvidia.com", "parameters": {
    "apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
    "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}}}
MPS = {"driver": "gpu.nvidia.com", "parameters": {
    "apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
    "sharing": {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 50}}}}


def test_claim_config_says_how_each_request_is_shared(dra):
    """quickstart gpu-test5: TimeSlicing for one request, MPS for the other."""
    config = [{"requests": ["ts-gpu"], "opaque": TIME_SLICING},
              {"requests": ["mps-gpu"], "opaque": MPS}]
    apply(dra, yaml.safe_dump_all([claim("shared", ["ts-gpu", "mps-gpu"], config),
                                   pod("p", "a100-1", {"c": [{"name": "shared"}]}, ["shared"])]))
    allocate(dra, "shared", "a100-1", [("ts-gpu", "gpu-0"), ("mps-gpu", "gpu-1")], ["p"])
    found = dra.read(lambda v: prepared_devices(v, v.get("Pod", "p", "default")))
    assert [(d.request, d.device, d.sharing) for d in found] == [
        ("ts-gpu", "gpu-0", "TimeSlicing"), ("mps-gpu", "gpu-1", "MPS")]


@pytest.mark.parametrize("sharing,problem", [
    ({"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}, None),
    ({"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 50}}, None),
    ({"strategy": "Exclusive"}, "unknown GPU sharing strategy: Exclusive, supported GPU sharing "
                                "strategies: TimeSlicing, MPS"),
    ({"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Forever"}},
     "unknown time-slice interval: Forever, supported time-slice intervals: Default, Short, "
     "Medium, Long"),
    ({"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 101}},
     "active thread percentage must not be greater than 100"),
    ({"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": -1}},
     "active thread percentage must not be negative"),
], ids=["time-slicing", "mps", "unknown-strategy", "unknown-interval", "mps-over-100",
        "mps-negative"])
def test_sharing_config_is_checked_as_the_driver_checks_it(sharing, problem):
    """api/nvidia.com/resource/v1beta1/validate.go."""
    assert sharing_problem({"sharing": sharing}) == problem


def uses(cluster, node: str) -> dict[str, tuple[str, str, str]]:
    from gpusched.cluster.kubelet.dra_prepare import node_device_uses
    rows = node_device_uses(cluster.get("ResourceSlice"),
                            cluster.get("ResourceClaim", all_namespaces=True), node)
    return {u.device: (u.state, u.claim, u.pods) for u in rows}


def test_describe_rows_show_carved_mig_devices_and_what_they_block(dra):
    """A DynamicMIG node lists its GPU and the carved devices; the GPU whose memory slices a
    carved device takes is ``blocked``; the free placements are not listed."""
    apply(dra, yaml.safe_dump_all([claim("mig", ["mig"]),
                                   pod("p", "h100-1", {"c": [{"name": "mig"}]}, ["mig"])]))
    assert uses(dra, "h100-1") == {"gpu-0": ("free", "-", "-")}
    allocate(dra, "mig", "h100-1", [("mig", "gpu-0-mig-3g40gb-9-4")], ["p"])
    assert uses(dra, "h100-1") == {"gpu-0": ("blocked", "-", "-"),
                                   "gpu-0-mig-3g40gb-9-4": ("allocated", "default/mig", "p")}


def test_describe_node_shows_the_dra_block_instead_of_the_plugin_table(dra):
    from gpusched.cli.describe import describe_page
    from gpusched.cli.describe_base import Related
    from gpusched.cli.output import Clock
    apply(dra, yaml.safe_dump_all([claim("one", ["gpu"]),
                                   pod("p", "a100-1", {"c": [{"name": "one"}]}, ["one"])]))
    allocate(dra, "one", "a100-1", [("gpu", "gpu-1")], ["p"])
    node = dra.get("Node", ["a100-1"])[0]
    page = describe_page(dra, "Node", node, Related([], Clock(dra.timestamp()), lambda *_: []))
    assert "GPU Devices" not in page
    block = page[page.index("DRA Devices (gpu.nvidia.com):"):].splitlines()
    assert block[1].split() == ["Device", "Type", "Profile", "State", "Claim", "Pods"]
    assert block[3].split() == ["gpu-1", "gpu", "-", "allocated", "default/one", "p"]


def phase_and_events(cluster, name: str) -> tuple[str, list[str]]:
    body = cluster.get("Pod", [name])[0]
    events = [e["message"] for e in cluster.events()
              if e.get("reason") == "FailedPrepareDynamicResources"
              and e["involvedObject"]["name"] == name]
    return body["status"].get("phase", ""), events


def test_a_pod_waits_until_its_claim_is_reserved_for_it(dra):
    """pkg/kubelet/cm/dra/manager.go prepareResources: ``pod %s (%s) is not allowed to use
    ResourceClaim %s (%s)``, wrapped as ``prepare dynamic resources: ...`` and recorded as
    ``Failed to prepare dynamic resources: %v`` (kuberuntime_manager.go)."""
    apply(dra, yaml.safe_dump_all([claim("c", ["gpu"]), pod("p", "a100-1", {"c": [{"name": "c"}]},
                                                            ["c"])]))
    phase, events = phase_and_events(dra, "p")
    uid = dra.get("Pod", ["p"])[0]["metadata"]["uid"]
    claim_uid = dra.get("ResourceClaim", ["c"])[0]["metadata"]["uid"]
    assert phase == "Pending"
    assert events[-1] == ("Failed to prepare dynamic resources: prepare dynamic resources: "
                          f"pod p ({uid}) is not allowed to use ResourceClaim c ({claim_uid})")
    allocate(dra, "c", "a100-1", [("gpu", "gpu-0")], ["p"])
    assert phase_and_events(dra, "p")[0] == "Running"


def test_a_claim_config_the_driver_refuses_keeps_the_pod_waiting(dra):
    """cmd/gpu-kubelet-plugin: ``error preparing devices for claim <ns>/<name>:<uid>``,
    ``prepare devices failed``, ``error validating GPU config`` (driver.go, device_state.go)."""
    bad = {"driver": "gpu.nvidia.com", "parameters": {
        "apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
        "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Forever"}}}}
    apply(dra, yaml.safe_dump_all([claim("c", ["gpu"], [{"opaque": bad}]),
                                   pod("p", "a100-1", {"c": [{"name": "c"}]}, ["c"])]))
    allocate(dra, "c", "a100-1", [("gpu", "gpu-0")], ["p"])
    phase, events = phase_and_events(dra, "p")
    claim_uid = dra.get("ResourceClaim", ["c"])[0]["metadata"]["uid"]
    assert phase == "Pending"
    assert events[-1].endswith(
        f"NodePrepareResources failed for ResourceClaim c: error preparing devices for claim "
        f"default/c:{claim_uid}: prepare devices failed: error validating GPU config: unknown "
        "time-slice interval: Forever, supported time-slice intervals: Default, Short, Medium, "
        "Long")


def test_describe_rows_list_every_claim_sharing_a_device(dra):
    """Consumable shares: two claims allocated the same device both appear."""
    apply(dra, yaml.safe_dump_all([claim("a", ["gpu"]), claim("b", ["gpu"]),
                                   pod("p", "a100-1", {"c": [{"name": "a"}]}, ["a"]),
                                   pod("q", "a100-1", {"c": [{"name": "b"}]}, ["b"])]))
    allocate(dra, "a", "a100-1", [("gpu", "gpu-0")], ["p"])
    allocate(dra, "b", "a100-1", [("gpu", "gpu-0")], ["q"])
    assert uses(dra, "a100-1")["gpu-0"] == ("allocated", "default/a,default/b", "p,q")


def test_a_template_claim_not_created_yet_keeps_the_pod_waiting(dra):
    """k8s.io/dynamic-resource-allocation/resourceclaim Name: ``pod "<ns>/<name>": ResourceClaim
    not created yet`` (ErrClaimNotFound) until status.resourceClaimStatuses names the claim."""
    body = pod("p", "a100-1", {"c": [{"name": "gpu"}]}, [])
    body["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}]
    apply(dra, yaml.safe_dump(body))
    phase, events = phase_and_events(dra, "p")
    assert phase == "Pending"
    assert events[-1] == ('Failed to prepare dynamic resources: prepare dynamic resources: '
                          'pod "default/p": ResourceClaim not created yet')

"""pod_info: effective requests and the scheduling fields of a Pod dict."""

import pytest

from gpusched.errors import InvalidError
from gpusched.objects.pod import (container_requests, pod_gpu_share, pod_info, pod_resource_limits,
                                  pod_resource_requests)
from gpusched.objects.types import NodeSelectorTerm, Requirement, Toleration


def container(name="c", requests=None, limits=None, **extra):
    resources = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": name, "image": "img", "resources": resources, **extra}


def make_pod(containers=(), init=(), overhead=None, annotations=None, **spec):
    spec = {"containers": list(containers) or [container()], **spec}
    if init:
        spec["initContainers"] = list(init)
    if overhead:
        spec["overhead"] = overhead
    meta = {"name": "p", "namespace": "team"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


REQUEST_CASES = [
    ("one-container", make_pod([container(requests={"cpu": "500m", "memory": "1Gi"})]),
     {"cpu": 500, "memory": 2**30}),
    ("sum-containers", make_pod([container("a", {"cpu": "1"}), container("b", {"cpu": "500m"})]), {"cpu": 1500}),
    ("init-larger", make_pod([container("a", {"cpu": "1"}), container("b", {"cpu": "500m"})],
                             init=[container("i", {"cpu": "2"})]), {"cpu": 2000}),
    ("init-smaller", make_pod([container("a", {"cpu": "1", "memory": "1Gi"})],
                              init=[container("i", {"cpu": "500m", "memory": "2Gi"})]),
     {"cpu": 1000, "memory": 2 * 2**30}),
    ("overhead", make_pod([container("a", {"cpu": "1"}), container("b", {"cpu": "500m"})],
                          init=[container("i", {"cpu": "2"})], overhead={"cpu": "100m"}), {"cpu": 2100}),
    ("limit-only", make_pod([container(limits={"nvidia.com/gpu": 2, "cpu": "1"})]),
     {"nvidia.com/gpu": 2, "cpu": 1000}),
    ("request-kept-over-limit", make_pod([container(requests={"cpu": "250m"}, limits={"cpu": "1"})]), {"cpu": 250}),
    ("sidecar-adds", make_pod([container("a", {"cpu": "1"})],
                              init=[container("s", {"cpu": "200m"}, restartPolicy="Always"),
                                    container("i", {"cpu": "2"})]), {"cpu": 2200}),
    ("no-resources", make_pod(), {}),
    ("zero-dropped", make_pod([container(requests={"cpu": "0"})]), {}),
]


@pytest.mark.parametrize("pod,expected", [c[1:] for c in REQUEST_CASES], ids=[c[0] for c in REQUEST_CASES])
def test_effective_requests(pod, expected):
    assert dict(pod_info(pod).requests) == expected
    assert pod_resource_requests(pod) == expected


def test_pod_limits_overhead_only_where_limited():
    pod = make_pod([container(limits={"cpu": "1"})], init=[container("i", limits={"cpu": "2"})],
                   overhead={"cpu": "100m", "memory": "1Gi"})
    assert pod_resource_limits(pod) == {"cpu": 2100}


def test_container_requests():
    assert container_requests(container(requests={"memory": "1Ki"}, limits={"nvidia.com/gpu": "1"})) == {
        "memory": 1024, "nvidia.com/gpu": 1}


def test_bad_quantity_names_field():
    with pytest.raises(InvalidError) as err:
        pod_info(make_pod([container(requests={"cpu": "abc"})]))
    assert str(err.value).startswith(
        'The Pod "p" is invalid: spec.containers[0].resources.requests[cpu]: Invalid value: "abc": quantities must')


GPU_CASES = [
    ("annotation-share", {"gpusched.io/gpu-milli": "470"}, {"nvidia.com/gpu": 1}, 470, {}),
    ("annotation-whole", {"gpusched.io/gpu-milli": "1000"}, None, 0, {"nvidia.com/gpu": 1}),
    ("resource-share", None, {"gpusched.io/gpu-milli": 250}, 250, {}),
    ("annotation-wins", {"gpusched.io/gpu-milli": "100"}, {"gpusched.io/gpu-milli": 250}, 100, {}),
    ("none", None, {"nvidia.com/gpu": 2}, 0, {"nvidia.com/gpu": 2}),
]


@pytest.mark.parametrize("annotations,limits,milli,requests", [c[1:] for c in GPU_CASES],
                         ids=[c[0] for c in GPU_CASES])
def test_gpu_share(annotations, limits, milli, requests):
    info = pod_info(make_pod([container(limits=limits)], annotations=annotations))
    assert info.gpu_milli == milli
    assert dict(info.requests) == requests
    assert info.gpu_count == (1 if milli else requests.get("nvidia.com/gpu", 0))


SHARE = "gpusched.io/gpu-milli"
SHARE_PODS = [   # pod_gpu_share reads only the share, by pod_info's rule
    pytest.param(make_pod([container(limits={SHARE: 250})]), id="limit"),
    pytest.param(make_pod([container(requests={SHARE: 200}, limits={SHARE: 200})]), id="request"),
    pytest.param(make_pod([container("a", limits={SHARE: 200}), container("b", limits={SHARE: 100})]),
                 id="summed"),
    pytest.param(make_pod([container(limits={SHARE: 100})], init=[container("i", limits={SHARE: 400})]),
                 id="init-container-peak"),
    pytest.param(make_pod([container(limits={SHARE: 100})],
                          init=[container("s", limits={SHARE: 50}, restartPolicy="Always")]),
                 id="sidecar-adds"),
    pytest.param(make_pod([container(limits={SHARE: 100})], overhead={SHARE: 10}), id="overhead"),
    pytest.param(make_pod([container(limits={SHARE: 1000})]), id="whole-gpu"),
    pytest.param(make_pod([container(limits={SHARE: 250})], annotations={SHARE: "100"}), id="annotation-wins"),
    pytest.param(make_pod([container(limits={"nvidia.com/gpu": 2, "cpu": "1"})]), id="none"),
]


@pytest.mark.parametrize("pod", SHARE_PODS)
def test_pod_gpu_share_is_pod_info_share(pod):
    assert pod_gpu_share(pod) == pod_info(pod).gpu_milli


@pytest.mark.parametrize("pod,path", [
    pytest.param(make_pod(annotations={SHARE: "abc"}), r"metadata.annotations\[gpusched.io/gpu-milli\]",
                 id="annotation"),
    pytest.param(make_pod([container(limits={SHARE: "x"})]),
                 r"spec.containers\[0\].resources.limits\[gpusched.io/gpu-milli\]", id="quantity"),
    pytest.param(make_pod([container(limits={SHARE: 1500})]),
                 r"spec.containers\[\*\].resources.limits\[gpusched.io/gpu-milli\]", id="out-of-range"),
])
def test_pod_gpu_share_refuses_as_pod_info(pod, path):
    for read in (pod_gpu_share, pod_info):
        with pytest.raises(InvalidError, match=path):
            read(pod)


@pytest.mark.parametrize("value", ["0", "1001", "abc", "-3"])
def test_bad_gpu_share(value):
    with pytest.raises(InvalidError, match=r"metadata.annotations\[gpusched.io/gpu-milli\]: Invalid value"):
        pod_info(make_pod(annotations={"gpusched.io/gpu-milli": value}))


def test_scheduling_fields():
    pod = make_pod(
        annotations={"gpusched.io/gpu-model": "V100M16| V100M32|V100M16", "gpusched.io/start-time": "12.5"},
        priority=1000, priorityClassName="high", preemptionPolicy="Never", nodeName="n1",
        nodeSelector={"gpu": "a100"},
        tolerations=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                     {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100", "v100"]}]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 80, "preference": {"matchExpressions": [{"key": "gpu", "operator": "In",
                                                                        "values": ["a100"]}]}}]},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname",
                 "namespaces": ["a"]}]},
        },
        topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
                                    "labelSelector": {"matchLabels": {"app": "web"}}}],
        volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}, {"name": "e", "emptyDir": {}}],
    )
    pod["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "rs-x", "controller": False},
                                          {"kind": "Job", "name": "train", "controller": True}]
    pod["metadata"]["labels"] = {"app": "web"}
    pod["status"] = {"nominatedNodeName": "n2",
                     "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]}
    info = pod_info(pod, seq=7)
    assert (info.namespace, info.name, info.key, info.creation_seq) == ("team", "p", "team/p", 7)
    assert (info.priority, info.priority_class, info.preemption_policy) == (1000, "high", "Never")
    assert (info.node_name, info.nominated_node, info.scheduler_name) == ("n1", "n2", "default-scheduler")
    assert info.gpu_models == ("V100M16", "V100M32")
    assert info.start_time == 12.5
    assert info.node_selector == {"gpu": "a100"} and info.labels == {"app": "web"}
    assert info.tolerations == (Toleration("dedicated", "Equal", "gpu", "NoSchedule"),
                                Toleration("", "Exists", "", "NoExecute", 30))
    assert info.required_terms == (NodeSelectorTerm((Requirement("gpu", "In", ("a100", "v100")),)),)
    assert info.preferred_terms[0].weight == 80
    assert info.pod_anti_affinity[0].namespaces == ("a",)
    assert info.pod_anti_affinity[0].label_selector.match_labels == (("app", "web"),)
    assert info.topology_spread[0].when_unsatisfiable == "ScheduleAnyway"
    assert info.pvc_names == ("data",)
    assert (info.owner_kind, info.owner_name) == ("Job", "train")
    assert info.disruption_reason == "PreemptionByScheduler"
    assert not info.terminating


def test_defaults():
    info = pod_info({"metadata": {"name": "x"}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
    assert info.namespace == "default" and info.priority == 0 and info.required_terms is None
    assert info.preemption_policy == "PreemptLowerPriority" and info.start_time is None

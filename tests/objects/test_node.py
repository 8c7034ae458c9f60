"""node_info and kubectl's taint syntax."""

import pytest

from gpusched.errors import InvalidError, UsageError
from gpusched.objects.node import node_info, parse_taint, parse_taint_removal, taint_to_dict
from gpusched.objects.types import Taint


def make_node(name="n1", capacity=None, allocatable=None, labels=None, annotations=None, **spec):
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "spec": spec, "status": {}}
    if annotations:
        node["metadata"]["annotations"] = annotations
    if capacity is not None:
        node["status"]["capacity"] = capacity
    if allocatable is not None:
        node["status"]["allocatable"] = allocatable
    return node


def test_node_info_basic():
    info = node_info(make_node(capacity={"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4", "pods": "110"},
                               allocatable={"cpu": "7500m", "memory": "30Gi", "nvidia.com/gpu": "4"},
                               taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
                               unschedulable=True))
    assert info.allocatable == {"cpu": 7500, "memory": 30 * 2**30, "nvidia.com/gpu": 4}
    assert info.capacity["pods"] == 110
    assert info.taints == (Taint("dedicated", "gpu", "NoSchedule"),)
    assert info.unschedulable and info.gpu_count == 4 and info.gpu_model == ""


def test_allocatable_falls_back_to_capacity():
    assert node_info(make_node(capacity={"cpu": "2"})).allocatable == {"cpu": 2000}


@pytest.mark.parametrize("labels,annotations,lookup,expected", [
    ({"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}, None, None, "NVIDIA-A100-SXM4-40GB"),
    ({"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}, None, lambda p: "A100-40GB", "A100-40GB"),
    ({"nvidia.com/gpu.product": "X"}, None, lambda p: None, "X"),
    ({"nvidia.com/gpu.product": "X"}, None, lambda p: (_ for _ in ()).throw(KeyError(p)), "X"),
    ({"nvidia.com/gpu.product": "X"}, {"gpusched.io/gpu-model": "T4"}, lambda p: "A100-40GB", "T4"),
    ({}, None, None, ""),
], ids=["product-raw", "product-lookup", "lookup-none", "lookup-raises", "annotation-wins", "cpu-node"])
def test_gpu_model(labels, annotations, lookup, expected):
    assert node_info(make_node(labels=labels, annotations=annotations), lookup).gpu_model == expected


@pytest.mark.parametrize("labels,annotations,count", [
    ({"nvidia.com/gpu.count": "2"}, None, 2),
    ({"nvidia.com/gpu.count": "2"}, {"gpusched.io/gpu-count": "4"}, 4),
    ({}, None, 8),
    ({"nvidia.com/gpu.count": "two"}, None, 8),
], ids=["label-before-capacity", "annotation-first", "capacity", "bad-label"])
def test_gpu_count(labels, annotations, count):
    node = make_node(labels=labels, annotations=annotations, capacity={"nvidia.com/gpu": "8"})
    assert node_info(node).gpu_count == count


def test_gpu_model_label_form():
    assert node_info(make_node(labels={"gpusched.io/gpu-model": "A100-40GB"})).gpu_model == "A100-40GB"


def test_bad_capacity_names_field():
    with pytest.raises(InvalidError, match=r'status.capacity\[cpu\]: Invalid value: "x"'):
        node_info(make_node(capacity={"cpu": "x"}))


@pytest.mark.parametrize("spec,taint", [
    ("dedicated=gpu:NoSchedule", Taint("dedicated", "gpu", "NoSchedule")),
    ("dedicated:NoExecute", Taint("dedicated", "", "NoExecute")),
    ("nvidia.com/gpu=present:PreferNoSchedule", Taint("nvidia.com/gpu", "present", "PreferNoSchedule")),
], ids=["key-value", "key-only", "prefixed"])
def test_parse_taint(spec, taint):
    assert parse_taint(spec) == taint


@pytest.mark.parametrize("spec,message", [
    ("dedicated=gpu:Sometimes", "invalid taint effect: Sometimes, unsupported taint effect"),
    ("dedicated=gpu", "unknown taint spec: dedicated=gpu"),
    ("a=b=c:NoSchedule", "invalid taint spec: a=b=c:NoSchedule"),
    ("a:b:NoSchedule", "invalid taint spec: a:b:NoSchedule"),
    ("bad key:NoSchedule", "invalid taint spec: bad key:NoSchedule, name part must consist"),
], ids=["bad-effect", "no-effect", "two-equals", "two-colons", "bad-key"])
def test_parse_taint_errors(spec, message):
    with pytest.raises(UsageError) as err:
        parse_taint(spec)
    assert str(err.value).startswith(message)


@pytest.mark.parametrize("spec,expected", [
    ("dedicated:NoSchedule-", ("dedicated", "NoSchedule")),
    ("dedicated-", ("dedicated", "")),
], ids=["with-effect", "all-effects"])
def test_parse_taint_removal(spec, expected):
    assert parse_taint_removal(spec) == expected


def test_parse_taint_removal_bad_effect():
    with pytest.raises(UsageError, match="invalid taint effect: Bad, unsupported taint effect"):
        parse_taint_removal("dedicated:Bad-")


def test_taint_to_dict():
    assert taint_to_dict(Taint("a", "", "NoSchedule")) == {"key": "a", "effect": "NoSchedule"}
    assert taint_to_dict(Taint("a", "b", "NoExecute")) == {"key": "a", "value": "b", "effect": "NoExecute"}

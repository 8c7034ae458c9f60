"""Property tests: random command sequences keep devices and resources consistent and the store
equal to the in-memory view; malformed manifests give GpuschedError and change nothing."""

from __future__ import annotations

import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusched.cluster.cluster import Cluster
from gpusched.errors import GpuschedError
from gpusched.objects.kinds import KINDS
from gpusched.objects.manifest import Manifest
from gpusched.objects.pod import pod_info
from gpusched.objects.quantity import canonical
from gpusched.objects.types import ANN_ASSIGNED_DEVICES, Taint

from .builders import apply, join, pod, pool

CLUSTER = join(
    pool("a100", count=1, model="A100-40GB", gpus=2, migConfig="all-1g.5gb", migStrategy="mixed"),
    pool("t4", count=1, model="T4", gpus=2),
    pool("cpu", count=1, gpus=0),
    yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "time-slicing-config", "namespace": "default"},
                    "data": {"any": yaml.safe_dump({"version": "v1", "sharing": {"timeSlicing": {
                        "resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}}})}}),
)
NODES = ["a100-1", "t4-1", "cpu-1"]

create = st.builds(lambda i, gpus, mig, dur: ("create", i, gpus, mig, dur),
                   st.integers(0, 7), st.integers(0, 3), st.booleans(),
                   st.sampled_from(["", "1m", "10m"]))
delete = st.builds(lambda i: ("delete", i), st.integers(0, 7))
label = st.builds(lambda n, v: ("label", n, v), st.sampled_from(NODES), st.sampled_from(["x", "y", None]))
taint = st.builds(lambda n, effect, on: ("taint", n, effect, on), st.sampled_from(NODES),
                  st.sampled_from(["NoSchedule", "NoExecute"]), st.booleans())
advance = st.builds(lambda s: ("advance", s), st.sampled_from([1, 30, 60, 600]))
scale = st.builds(lambda r: ("scale", r), st.integers(0, 4))
OPS = st.lists(st.one_of(create, delete, label, taint, advance, scale), min_size=1, max_size=10)

DEPLOYMENT = yaml.safe_dump({
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
             "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                 {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}})


def run_op(cluster: Cluster, op: tuple) -> None:
    kind = op[0]
    try:
        if kind == "create":
            _, i, gpus, mig, duration = op
            text = pod(f"p{i}", duration=duration)
            if gpus:
                body = yaml.safe_load(text)
                resource = "nvidia.com/mig-1g.5gb" if mig else "nvidia.com/gpu"
                body["spec"]["containers"][0]["resources"] = {"limits": {resource: gpus}}
                text = yaml.safe_dump(body)
            apply(cluster, text)
        elif kind == "delete":
            cluster.delete("pod", f"p{op[1]}")
        elif kind == "label":
            cluster.label("node", op[1], {"prop": op[2]}, overwrite=True)
        elif kind == "taint":
            _, node, effect, on = op
            if on:
                cluster.taint(node, [Taint("prop", "", effect)], [], overwrite=True)
            else:
                cluster.taint(node, [], [("prop", effect)])
        elif kind == "advance":
            cluster.advance(op[1])
        elif kind == "scale":
            cluster.scale("deploy", "web", op[1])
    except GpuschedError:
        pass    # e.g. deleting a missing pod, removing a missing taint: refused, nothing changes


def check_invariants(cluster: Cluster) -> None:
    nodes = {n["metadata"]["name"]: n for n in cluster.get("nodes")}
    held: dict[tuple[str, str], str] = {}
    used: dict[str, dict[str, int]] = {name: {} for name in nodes}
    for body in cluster.get("pods", all_namespaces=True):
        node = body["spec"].get("nodeName")
        if not node or body["status"].get("phase") in ("Succeeded", "Failed"):
            continue
        devices = (body["metadata"].get("annotations") or {}).get(ANN_ASSIGNED_DEVICES, "")
        for device in filter(None, devices.split(",")):
            assert (node, device) not in held, f"{device} held twice on {node}"
            held[(node, device)] = body["metadata"]["name"]
        for res, amount in pod_info(body).requests.items():
            used[node][res] = used[node].get(res, 0) + amount
    for name, node in nodes.items():
        allocatable = {res: canonical(res, v) for res, v in node["status"]["allocatable"].items()}
        for res, amount in used[name].items():
            assert amount <= allocatable.get(res, 0), f"{name}: {res} {amount} > {allocatable.get(res)}"
    with Cluster.open(str(cluster.store.path)) as fresh:
        assert fresh.view().snapshot() == cluster.view().snapshot()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_random_commands_keep_the_cluster_consistent(ops):
    with tempfile.TemporaryDirectory() as tmp, Cluster.open(str(Path(tmp) / "c.db")) as cluster:
        apply(cluster, join(CLUSTER, DEPLOYMENT))
        check_invariants(cluster)
        for op in ops:
            run_op(cluster, op)
            check_invariants(cluster)


# ---- fuzz: malformed manifests -------------------------------------------------------------

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(
    ["", "x", "1", "-1", "500m", "16Gi", "abc!", "nvidia.com/gpu", "Never", "NoExecute"]))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from(["name", "spec", "limits", "requests", "containers", "value",
                                     "hard", "selector", "template", "replicas", "nvidia.com/gpu",
                                     "cpu", "labels", "metadata", "data", "taints", "gpu"]),
                    inner, max_size=4)), max_leaves=12)
manifests = st.fixed_dictionaries({
    "apiVersion": st.sampled_from(["v1", "apps/v1", "batch/v1", "scheduling.k8s.io/v1",
                                   "policy/v1", "gpusched.io/v1alpha1", "nope/v9"]),
    "kind": st.sampled_from(sorted(KINDS) + ["Widget", ""]),
    "metadata": st.one_of(values, st.fixed_dictionaries({"name": scalars})),
}, optional={"spec": values, "data": values, "value": scalars, "status": values})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(st.lists(manifests, min_size=1, max_size=3))
def test_malformed_manifests_give_clean_errors_and_change_nothing(cluster_for_fuzz, objs):
    cluster = cluster_for_fuzz
    before = cluster.view().snapshot()
    documents = [Manifest("fuzz.yaml", i, obj) for i, obj in enumerate(objs)]
    try:
        cluster.apply(documents)
    except GpuschedError:
        assert cluster.view().snapshot() == before
    else:
        cluster.reset()
        apply(cluster, CLUSTER)

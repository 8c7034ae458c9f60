"""Property: every change ``explain`` suggests for a pending pod, applied, lets the pod schedule.

Hypothesis draws small clusters (1 to 3 GPU nodes of 1, 2, 4 or 8 GPUs, each with a ``gpu-type``
label, maybe a ``dedicated=gpu:NoSchedule`` taint, maybe cordoned, maybe a running pod that holds
some GPUs, with or without a duration and at low or high priority) and a pod that asks for GPUs
with maybe a nodeSelector, a toleration and a priority. When the pod stays Pending, every
suggestion of ``gpusched explain -o json`` is applied through its ``edit`` fields alone (the
``change`` text is never parsed), on a copy of the state file:

- pod edits (``add-toleration``, ``remove-node-selector``, ``remove-required-node-affinity``,
  ``set-gpus``): the pod is re-created with the edit;
- ``uncordon``: the node is uncordoned;
- ``wait-until``: the virtual clock advances to that second;
- ``evict``: nothing to apply (DefaultPreemption acts by itself): the clock advances past the
  victims' 30 s grace period (kubernetes ``pkg/scheduler/framework/preemption``: the preemptor
  is nominated and binds once the victims are gone);

and then the pod must be bound. An edit op the test does not know fails the test, so a new kind
of suggestion needs a way to be applied here. Runs in-process on real SQLite state files.
"""

from __future__ import annotations

import copy
import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusched.cluster.cluster import Cluster
from gpusched.objects.manifest import load_manifests, load_text
from gpusched.objects.node import parse_taint
from gpusched.scheduler.explain import EDITS, to_json
from tests.conftest import REPO_ROOT

TYPES = ("a100", "v100", "t4")
MODELS = {"a100": "A100-40GB", "v100": "V100-32GB", "t4": "T4"}
GRACE = 31.0   # past the default terminationGracePeriodSeconds (30)


@dataclass(frozen=True)
class NodeSpec:
    gpus: int
    type: str
    tainted: bool
    cordoned: bool
    busy: int              # GPUs held by a running pod (0: none)
    busy_duration: str     # "" runs forever
    busy_priority: str     # "low" | "high"


nodes = st.builds(NodeSpec, gpus=st.sampled_from((1, 2, 4, 8)), type=st.sampled_from(TYPES),
                  tainted=st.booleans(), cordoned=st.booleans(), busy=st.integers(0, 8),
                  busy_duration=st.sampled_from(("", "10m", "1h")),
                  busy_priority=st.sampled_from(("low", "high")))


def pod_manifest(name: str, gpus: int, selector: str | None = None, tolerate: bool = False,
                 priority: str = "", duration: str = "", node: str = "") -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "x",
                                  "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}
    if selector:
        spec["nodeSelector"] = {"gpu-type": selector}
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    if tolerate:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "gpu",
                                "effect": "NoSchedule"}]
    if priority:
        spec["priorityClassName"] = priority
    meta: dict = {"name": name}
    if duration:
        meta["annotations"] = {"gpusched.io/duration": duration}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def build(path: Path, specs: list[NodeSpec]) -> None:
    pools = [{"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool", "metadata": {"name": f"n{i}"},
              "spec": {"names": [f"node-{i}"], "gpu": {"model": MODELS[s.type], "count": s.gpus},
                       "cpu": "32", "memory": "128Gi", "labels": {"gpu-type": s.type}}}
             for i, s in enumerate(specs)]
    with Cluster.open(str(path)) as cluster:
        cluster.apply(load_manifests([str(REPO_ROOT / "examples/priority-classes.yaml")]))
        cluster.apply(load_text(yaml.safe_dump_all(pools), "pools"))
        for i, s in enumerate(specs):
            if s.busy:
                busy = pod_manifest(f"busy-{i}", min(s.busy, s.gpus), priority=s.busy_priority,
                                    duration=s.busy_duration, node=f"node-{i}")
                cluster.apply(load_text(yaml.safe_dump(busy), "busy"))
        for i, s in enumerate(specs):
            if s.tainted:
                cluster.taint(f"node-{i}", [parse_taint("dedicated=gpu:NoSchedule")], [])
            if s.cordoned:
                cluster.cordon(f"node-{i}")


def edited(manifest: dict, op: str, value) -> dict:
    """The pod manifest with one pod edit applied (``scheduler.explain.EDITS``)."""
    out = copy.deepcopy(manifest)
    spec = out["spec"]
    if op == "add-toleration":
        spec.setdefault("tolerations", []).append(dict(value))
    elif op == "remove-node-selector":
        spec["nodeSelector"].pop(value)
    elif op == "remove-required-node-affinity":
        spec["affinity"]["nodeAffinity"].pop("requiredDuringSchedulingIgnoredDuringExecution")
    elif op == "set-gpus":
        spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = value
    else:
        raise AssertionError(f"no way to apply edit {op!r}")
    return out


def bound_after(state: Path, manifest: dict, edits: list[dict], now: float) -> bool:
    """Apply one suggestion's edits to a copy of the state; is the pod then bound?"""
    pod_edits = [e for e in edits if e["op"] not in ("uncordon", "wait-until", "evict")]
    with Cluster.open(str(state)) as cluster:
        if pod_edits:
            cluster.delete("Pod", "p")
            for e in pod_edits:
                manifest = edited(manifest, e["op"], e["value"])
            cluster.apply(load_text(yaml.safe_dump(manifest), "p"))
        for e in edits:
            if e["op"] == "uncordon":
                cluster.uncordon(e["value"])
            elif e["op"] == "wait-until":
                cluster.advance(max(0.0, e["value"] - now))
            elif e["op"] == "evict":
                cluster.advance(GRACE)
        return bool(cluster.get("Pod", names=("p",))[0]["spec"].get("nodeName"))


@settings(max_examples=100, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(specs=st.lists(nodes, min_size=1, max_size=3), gpus=st.integers(1, 9),
       selector=st.sampled_from((None,) + TYPES), tolerate=st.booleans(),
       priority=st.sampled_from(("", "high")))
def test_every_suggested_change_lets_the_pod_schedule(tmp_path_factory, specs, gpus, selector,
                                                      tolerate, priority):
    work = tmp_path_factory.mktemp("case")
    state = work / "s.db"
    build(state, specs)
    manifest = pod_manifest("p", gpus, selector, tolerate, priority)
    with Cluster.open(str(state)) as cluster:
        cluster.apply(load_text(yaml.safe_dump(manifest), "p"))
        if cluster.get("Pod", names=("p",))[0]["spec"].get("nodeName"):
            return
        suggestions = to_json(cluster.explain("p"))["suggestions"]
        now = cluster.now()
    for number, suggestion in enumerate(suggestions):
        assert suggestion["edit"] and all(e["op"] in EDITS for e in suggestion["edit"]), suggestion
        trial = work / f"t{number}.db"
        shutil.copy(state, trial)
        assert bound_after(trial, manifest, suggestion["edit"], now), (specs, suggestion)


def test_a_cordoned_node_is_suggested_as_uncordon_not_as_a_toleration(tmp_path):
    """Tolerating ``node.kubernetes.io/unschedulable`` would pass the filters (as a DaemonSet's
    pods do) but is no advice for a user's pod: the change named is the node's."""
    state = tmp_path / "s.db"
    build(state, [NodeSpec(4, "a100", False, True, 0, "", "low")])
    with Cluster.open(str(state)) as cluster:
        cluster.apply(load_text(yaml.safe_dump(pod_manifest("p", 1)), "p"))
        data = to_json(cluster.explain("p"))
    assert [(s["kind"], s["edit"]) for s in data["suggestions"]] == [
        ("uncordon", [{"op": "uncordon", "value": "node-0"}])]
    assert data["facts"][0]["text"] == ("node-0 has room but is cordoned (spec.unschedulable); "
                                        "change: gpusched uncordon node-0")

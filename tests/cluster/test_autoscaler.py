"""Cluster Autoscaler on NodePools (issue 11 point 1), against kubernetes/autoscaler's
cluster-autoscaler: scale-up with template nodes and the scheduler's Filter plugins, the
expanders, CA's events and messages, scale-down rules and the status ConfigMap.

Upstream files are cited per case (paths under ``cluster-autoscaler/``)."""

from __future__ import annotations

import pytest
import yaml

from gpusched.errors import InvalidError

from .builders import apply, join, pool

CA = "cluster-autoscaler"


def deployment(name: str = "inf", replicas: int = 1, gpus: int = 1, cpu: str = "1",
               memory: str = "1Gi", selector: dict | None = None, annotations: dict | None = None,
               namespace: str = "default") -> str:
    limits = {"cpu": cpu, "memory": memory}
    if gpus:
        limits["nvidia.com/gpu"] = gpus
    spec = {"containers": [{"name": "c", "image": "x", "resources": {"limits": limits}}]}
    if selector:
        spec["nodeSelector"] = selector
    meta = {"labels": {"app": name}}
    if annotations:
        meta["annotations"] = annotations
    return yaml.safe_dump({"apiVersion": "apps/v1", "kind": "Deployment",
                           "metadata": {"name": name, "namespace": namespace},
                           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                                    "template": {"metadata": meta, "spec": spec}}})


def l4_pool(name: str = "l4", count: int = 1, low: int = 1, high: int = 6, **spec) -> str:
    return pool(name, count=count, model="L4", gpus=1, cpu="16", memory="64Gi",
                minNodes=low, maxNodes=high, **spec)


def ca_events(cluster, reason: str) -> list[str]:
    return [e["message"] for e in cluster.events(None)
            if e["source"]["component"] == CA and e["reason"] == reason]


def node_names(cluster) -> list[str]:
    return sorted(n["metadata"]["name"] for n in cluster.get("nodes"))


def pending(cluster) -> int:
    return sum(1 for p in cluster.get("pods") if not p["spec"].get("nodeName"))


# ---- scale-up ------------------------------------------------------------------------------

def test_scale_up_adds_nodes_after_the_provisioning_delay(cluster):
    # eventing_scale_up_processor.go Process: TriggeredScaleUp "pod triggered scale-up: %v" of
    # ScaleUpInfos; nodegroupset ScaleUpInfo.String "{%v %v->%v (max: %v)}"; executor.go
    # "Scale-up: setting group %s size to %d instead of %d (max: %d)".
    apply(cluster, join(l4_pool(), deployment(replicas=3)))
    assert node_names(cluster) == ["l4-1"] and pending(cluster) == 2
    assert ca_events(cluster, "TriggeredScaleUp") == \
        ["pod triggered scale-up: [{l4 1->3 (max: 6)}]"] * 2
    assert ca_events(cluster, "ScaledUpGroup") == \
        ["Scale-up: setting group l4 size to 3 instead of 1 (max: 6)"]
    cluster.advance(179)          # the default GPU provisioning delay is 3 minutes
    assert node_names(cluster) == ["l4-1"] and pending(cluster) == 2
    cluster.advance(1)
    assert node_names(cluster) == ["l4-1", "l4-2", "l4-3"] and pending(cluster) == 0
    assert not ca_events(cluster, "NotTriggerScaleUp")      # pods waited for upcoming nodes


def test_scale_up_respects_max_nodes(cluster):
    # orchestrator.go ComputeExpansionOption: the estimator caps at MaxSize - target.
    apply(cluster, join(l4_pool(high=2), deployment(replicas=4)))
    assert ca_events(cluster, "TriggeredScaleUp") == ["pod triggered scale-up: [{l4 1->2 (max: 2)}]"]
    cluster.advance(180)
    assert node_names(cluster) == ["l4-1", "l4-2"] and pending(cluster) == 2
    # skippedreasons.go MaxLimitReachedReason; eventing_scale_up_processor.go ReasonsMessage.
    assert set(ca_events(cluster, "NotTriggerScaleUp")) == \
        {"pod didn't trigger scale-up: 1 max node group size reached"}


def test_not_trigger_scale_up_counts_reasons_per_node_group(cluster):
    # ReasonsMessage: "%d %s" per reason, the count being node groups; the template node of
    # each group runs the scheduler's Filter plugins (orchestrator.go SchedulablePodGroups ->
    # ClusterSnapshot.CheckPredicates), so NodeAffinity's own text appears.
    apply(cluster, join(l4_pool("a", high=1, labels={"tier": "a"}),
                        l4_pool("b", labels={"tier": "b"}), l4_pool("c", labels={"tier": "c"}),
                        deployment(replicas=2, selector={"tier": "a"})))
    assert set(ca_events(cluster, "NotTriggerScaleUp")) == {
        "pod didn't trigger scale-up: 1 max node group size reached, "
        "2 node(s) didn't match Pod's node affinity/selector"}
    assert not ca_events(cluster, "TriggeredScaleUp")


def test_template_node_carries_gfd_labels_and_mig_resources(cluster):
    # The template is the pool's node as the device plugin and GFD advertise it: a pod
    # selecting a GFD label and asking a MIG profile of an A100 pool in mixed strategy scales
    # it up (simulator/node_info_utils.go: template NodeInfo from the node group).
    mig = pool("a100", count=0, model="A100-40GB", gpus=1, minNodes=0, maxNodes=2,
               migConfig="all-1g.5gb", migStrategy="mixed")
    pod = yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "m"},
                          "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"},
                                   "containers": [{"name": "c", "image": "x", "resources": {
                                       "limits": {"nvidia.com/mig-1g.5gb": 1}}}]}})
    apply(cluster, join(mig, pod))
    assert ca_events(cluster, "TriggeredScaleUp") == ["pod triggered scale-up: [{a100 0->1 (max: 2)}]"]
    cluster.advance(180)
    assert cluster.get("pods", ["m"])[0]["spec"].get("nodeName") == "a100-1"


@pytest.mark.parametrize("expander, priorities, chosen", [
    # FAQ.md parameters: expander default "least-waste".
    pytest.param(None, None, "small", id="default-is-least-waste"),
    # expander/factory/chain.go: each expander narrows the options of the one before.
    pytest.param("priority,least-waste", "10:\n  - small\n  - big\n", "small", id="chain"),
    # expander/waste/waste.go BestOption: least wasted cpu + memory fraction.
    pytest.param("least-waste", None, "small", id="least-waste"),
    # expander/price/price.go: the cheaper option (L4 at 0.60 vs A100-40GB at 1.80 per GPU-hour).
    pytest.param("price", None, "small", id="price"),
    # expander/priority/priority.go: the highest priority whose regexp matches the group id.
    pytest.param("priority", "10:\n  - .*small.*\n50:\n  - big\n", "big", id="priority"),
    # priority.go compiles each rule with Go's regexp (RE2): a look-behind does not compile there
    # (Python's re took it, matched "big" and chose it), so only the rule for "small" is left.
    pytest.param("priority", "10:\n  - small\n50:\n  - (?<=b)ig\n", "small", id="priority-rule-go-refuses"),
])
def test_expanders(cluster, expander, priorities, chosen):
    maps = [yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "gpusched-cluster-autoscaler",
                                         "namespace": "kube-system"},
                            "data": {"expander": expander}})] if expander else []
    if priorities:
        maps.append(yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": "cluster-autoscaler-priority-expander",
                                                 "namespace": "kube-system"},
                                    "data": {"priorities": priorities}}))
    big = pool("big", count=0, model="A100-40GB", gpus=1, cpu="96", memory="1Ti", minNodes=0, maxNodes=3)
    small = pool("small", count=0, model="L4", gpus=1, cpu="16", memory="64Gi", minNodes=0, maxNodes=3)
    apply(cluster, join(*maps, big, small, deployment(replicas=1, cpu="8", memory="32Gi")))
    assert ca_events(cluster, "TriggeredScaleUp") == \
        [f"pod triggered scale-up: [{{{chosen} 0->1 (max: 3)}}]"]


# ---- scale-down ----------------------------------------------------------------------------

def test_scale_down_after_unneeded_time_and_delay_after_add(cluster):
    # FAQ.md "How does scale-down work?": unneeded for 10 minutes (scale-down-unneeded-time),
    # evaluation resumes 10 minutes after a scale-up (scale-down-delay-after-add);
    # actuation/actuator.go: "marked the node as toBeDeleted/unschedulable",
    # "Scale-down: empty node %s removed" on the status ConfigMap.
    apply(cluster, join(l4_pool(), deployment(replicas=3)))
    cluster.advance(180)
    cluster.scale("deployment", "inf", 1)
    cluster.advance(600 + 600 - 180 - 1)     # unneeded since 10:00 (delay after add)
    assert len(node_names(cluster)) == 3
    cluster.advance(1)
    assert len(node_names(cluster)) == 1      # never below minNodes
    assert sorted(ca_events(cluster, "ScaleDownEmpty")) == \
        ["Scale-down: empty node l4-2 removed", "Scale-down: empty node l4-3 removed"]
    cluster.advance(3600)
    assert len(node_names(cluster)) == 1


@pytest.mark.parametrize("annotations, bare, namespace, pdb, removed, volumes", [
    # utils/drain/drain.go GetPodsForDeletionOnNodeDrain / simulator/drainability/rules:
    pytest.param({}, False, "default", None, True, None, id="replicated-pod-moves"),
    pytest.param({"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}, False, "default",
                 None, False, None, id="safe-to-evict-false-blocks"),
    pytest.param({}, True, "default", None, False, None, id="pod-without-controller-blocks"),
    pytest.param({"cluster-autoscaler.kubernetes.io/safe-to-evict": "true"}, True, "default",
                 None, True, None, id="safe-to-evict-true-moves-a-bare-pod"),
    pytest.param({}, False, "kube-system", None, False, None, id="kube-system-pod-without-pdb-blocks"),
    pytest.param({}, False, "default", 1, False, None, id="pdb-allowing-no-disruption-blocks"),
    pytest.param({}, False, "default", 0, True, None, id="pdb-allowing-a-disruption-moves"),
    # FAQ.md "Pods with local storage" (--skip-nodes-with-local-storage=true) ...
    pytest.param({}, False, "default", None, False, ["scratch"], id="emptydir-blocks"),
    # ... unless safe-to-evict-local-volumes lists every local volume.
    pytest.param({"cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes": "scratch"},
                 False, "default", None, True, ["scratch"], id="listed-local-volume-moves"),
])
def test_scale_down_drain_rules(cluster, annotations, bare, namespace, pdb, removed, volumes):
    apply(cluster, l4_pool(count=2, high=2, low=1))
    apply(cluster, deployment("gpu", replicas=1))
    gpu_node = cluster.get("pods")[0]["spec"]["nodeName"]
    other = "l4-2" if gpu_node == "l4-1" else "l4-1"
    if bare:
        body = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "cpu", "namespace": namespace, "labels": {"app": "cpu"},
                             "annotations": annotations},
                "spec": {"nodeName": other, "containers": [{"name": "c", "image": "x", "resources": {
                    "limits": {"cpu": "1", "memory": "1Gi"}}}]}}
        apply(cluster, yaml.safe_dump(body))
    else:
        # preferred (not required) affinity to the other node: the pod lands there, and may move.
        dep = yaml.safe_load(deployment("cpu", replicas=1, gpus=0, annotations=annotations,
                                        namespace=namespace))
        if volumes:
            dep["spec"]["template"]["spec"]["volumes"] = [{"name": v, "emptyDir": {}} for v in volumes]
        dep["spec"]["template"]["spec"]["affinity"] = {"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {
                "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                      "values": [other]}]}}]}}
        apply(cluster, yaml.safe_dump(dep))
    if pdb is not None:
        apply(cluster, yaml.safe_dump({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                       "metadata": {"name": "cpu", "namespace": namespace},
                                       "spec": {"minAvailable": pdb,
                                                "selector": {"matchLabels": {"app": "cpu"}}}}))
    cpu_node = [p for p in cluster.get("pods", namespace=namespace)
                if p["metadata"]["labels"].get("app") == "cpu"][0]["spec"]["nodeName"]
    assert cpu_node == other
    cluster.advance(3600)
    nodes = node_names(cluster)
    assert (cpu_node not in nodes) == removed
    if removed and not bare:
        assert ca_events(cluster, "ScaleDown").count("deleting pod for node scale down") == 1
        assert f"Scale-down: node {cpu_node} removed with drain" in ca_events(cluster, "ScaleDown")
        moved = [p for p in cluster.get("pods", namespace=namespace)
                 if p["metadata"]["labels"].get("app") == "cpu"]
        assert [p["spec"].get("nodeName") for p in moved] == [gpu_node]


def test_gpu_node_utilization_counts_gpus_only():
    # simulator/utilization/info.go Calculate: a node with a GPU config counts GPU utilization
    # only; others max(cpu, memory).
    from gpusched.cluster.controllers.autoscaling.autoscaler_scaledown import utilization
    node = {"status": {"allocatable": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "2"}}}
    busy_cpu = {"metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "15"}}}]}}
    one_gpu = {"metadata": {"name": "q", "namespace": "default"},
               "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    assert utilization(None, node, [busy_cpu]) == 0.0
    assert utilization(None, node, [busy_cpu, one_gpu]) == 0.5
    cpu_node = {"status": {"allocatable": {"cpu": "16", "memory": "64Gi"}}}
    assert utilization(None, cpu_node, [busy_cpu]) == pytest.approx(15 / 16)


# ---- status ConfigMap and configuration ---------------------------------------------------------

def test_status_configmap_layout(cluster):
    # clusterstate/api/types.go ClusterAutoscalerStatus; clusterstate/utils/status.go
    # StatusConfigMapName, ConfigMapLastUpdatedKey.
    apply(cluster, join(l4_pool(), deployment(replicas=2)))
    body = cluster.get("configmaps", ["cluster-autoscaler-status"], "kube-system")[0]
    assert "cluster-autoscaler.kubernetes.io/last-updated" in body["metadata"]["annotations"]
    status = yaml.safe_load(body["data"]["status"])
    assert status["autoscalerStatus"] == "Running"
    group = status["nodeGroups"][0]
    assert group["name"] == "l4"
    assert group["health"]["cloudProviderTarget"] == 2
    assert (group["health"]["minSize"], group["health"]["maxSize"]) == (1, 6)
    assert group["scaleUp"]["status"] == "InProgress"
    assert status["clusterWide"]["health"]["nodeCounts"]["registered"]["total"] == 1
    cluster.advance(180)
    status = yaml.safe_load(cluster.get("configmaps", ["cluster-autoscaler-status"],
                                        "kube-system")[0]["data"]["status"])
    assert status["nodeGroups"][0]["scaleUp"]["status"] == "NoActivity"


def test_bad_config_value_is_one_warning_and_the_default_applies(cluster):
    bad = yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": "gpusched-cluster-autoscaler", "namespace": "kube-system"},
                          "data": {"expander": "cheapest"}})
    apply(cluster, join(bad, l4_pool(), deployment(replicas=2)))
    assert ca_events(cluster, "InvalidConfig") == [
        'ConfigMap kube-system/gpusched-cluster-autoscaler: data.expander: invalid value '
        '"cheapest": supported values: random, least-waste, price, priority (or several, '
        'comma-separated)']
    assert ca_events(cluster, "TriggeredScaleUp")


@pytest.mark.parametrize("spec, message", [
    pytest.param(dict(minNodes=3, maxNodes=2), "spec.minNodes: Invalid value: 3: must be less "
                 "than or equal to spec.maxNodes (2)", id="min-above-max"),
    pytest.param(dict(minNodes=-1, maxNodes=2), "spec.minNodes: Invalid value: -1: must be "
                 "greater than or equal to 0", id="negative"),
    pytest.param(dict(minNodes=0, maxNodes=5000), "spec.maxNodes: Invalid value: 5000: must be "
                 "less than or equal to 1000", id="max-above-bound"),
    pytest.param(dict(minNodes=1), "spec.maxNodes: Required value", id="min-without-max"),
    pytest.param(dict(minNodes=1, maxNodes=3, count=5), "spec.count: Invalid value: 5: the "
                 "initial size must be between spec.minNodes (1) and spec.maxNodes (3)",
                 id="count-outside"),
    pytest.param(dict(minNodes=1, maxNodes=2, provisioningDelay="soon"),
                 'spec.provisioningDelay: Invalid value: "soon"', id="delay-not-a-duration"),
])
def test_invalid_min_max_is_refused_with_one_line(cluster, spec, message):
    count = spec.pop("count", 1)
    with pytest.raises(InvalidError) as error:
        apply(cluster, pool("l4", count=count, model="L4", gpus=1, **spec))
    text = str(error.value)
    assert message in text and "\n" not in text
    assert cluster.get("nodepools") == [] and cluster.get("nodes") == []


def test_cost_counts_node_hours_from_creation_to_removal(cluster):
    # Issue 11 point 5: a node costs from creation to removal, used or not.
    from gpusched.metrics import cost
    apply(cluster, join(l4_pool(), deployment(replicas=2)))
    cluster.advance(180)                       # l4-2 registers at 3 min
    cluster.scale("deployment", "inf", 1)
    cluster.advance(3600 - 180)                # l4-2 removed at 20 min (delay after add + unneeded)
    view = cluster.view()
    [row] = cost.node_usage(view.list("NodePool"), view.list("Node"), view.now(),
                            cost.load_prices(None))
    assert (row.pool, row.model, row.nodes_now) == ("l4", "L4", 1)
    assert row.node_hours == pytest.approx(1 + 17 / 60)
    assert row.dollars == pytest.approx((1 + 17 / 60) * 0.60)


def test_scale_down_disabled_annotation_keeps_the_node(cluster):
    # FAQ.md "How can I prevent Cluster Autoscaler from scaling down a particular node?"
    apply(cluster, l4_pool(count=2, high=2))
    cluster.write(lambda view: _annotate(view, "l4-2", "cluster-autoscaler.kubernetes.io/scale-down-disabled", "true"))
    cluster.advance(3600)
    assert node_names(cluster) == ["l4-2"]       # l4-1 (empty, not annotated) went


def _annotate(view, node: str, key: str, value: str) -> None:
    body = view.copy("Node", node)
    body["metadata"].setdefault("annotations", {})[key] = value
    view.update(body)


def test_expendable_pods_do_not_trigger_scale_up(cluster):
    # core/podlistprocessor/filter_out_expendable.go, --expendable-pods-priority-cutoff=-10.
    from .builders import priority_class
    dep = yaml.safe_load(deployment(replicas=2))
    dep["spec"]["template"]["spec"]["priorityClassName"] = "expendable"
    apply(cluster, join(priority_class("expendable", -11), l4_pool(), yaml.safe_dump(dep)))
    assert pending(cluster) == 1
    assert not ca_events(cluster, "TriggeredScaleUp") and not ca_events(cluster, "NotTriggerScaleUp")


def test_drain_taints_the_node_and_evicts_gracefully(cluster):
    # actuation/actuator.go taintNode + drain.go evictPod: the node gets
    # ToBeDeletedByClusterAutoscaler=<unix time>:NoSchedule (utils/taints MarkToBeDeleted), its
    # pods a DisruptionTarget and a graceful delete; the node goes when they are gone.
    apply(cluster, l4_pool(count=2, high=2))
    apply(cluster, deployment("gpu", replicas=1))
    gpu_node = cluster.get("pods")[0]["spec"]["nodeName"]
    other = "l4-2" if gpu_node == "l4-1" else "l4-1"
    dep = yaml.safe_load(deployment("cpu", replicas=1, gpus=0))
    dep["spec"]["template"]["spec"]["affinity"] = {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {
            "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                  "values": [other]}]}}]}}
    apply(cluster, yaml.safe_dump(dep))
    cluster.advance(600)                        # unneeded since 0 for scale-down-unneeded-time
    node = cluster.get("nodes", [other])[0]
    [taint] = [t for t in node["spec"]["taints"] if t["key"] == "ToBeDeletedByClusterAutoscaler"]
    assert taint["effect"] == "NoSchedule" and taint["value"].isdigit()
    evicted = [p for p in cluster.get("pods") if p["spec"].get("nodeName") == other]
    assert len(evicted) == 1 and evicted[0]["metadata"].get("deletionTimestamp")
    assert {"type": "DisruptionTarget", "reason": "EvictionByEvictionAPI"}.items() <= \
        next(c for c in evicted[0]["status"]["conditions"] if c["type"] == "DisruptionTarget").items()
    cluster.advance(30)                         # terminationGracePeriodSeconds default 30
    assert node_names(cluster) == [gpu_node]
    assert [p["spec"].get("nodeName") for p in cluster.get("pods")] == [gpu_node, gpu_node]

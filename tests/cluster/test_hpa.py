"""The HPA controller against upstream's algorithm (kubernetes pkg/controller/podautoscaler:
``replica_calculator.go`` and ``horizontal.go``; the HPA algorithm doc,
https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/#algorithm-details).

Tables of the pure parts (ratio, tolerance, missing/unready pods, rate limits) and end-to-end
runs on a cluster with load curves (scale-up, stabilization, limits, conditions, events, a
metric that does not exist)."""

from __future__ import annotations

import re

import pytest
import yaml

from gpusched.cluster.controllers.autoscaling import hpa_behavior, hpa_replicas, hpa_sync
from gpusched.cluster.clock.load import LoadError, parse_load
from gpusched.cluster.apiserver.store import rfc3339
from gpusched.errors import GpuschedError

from .builders import apply, pool

NOW = 10_000.0


def running(name: str, cpu: str = "1", started: float = NOW - 3600, ready: bool = True,
            phase: str = "Running", ready_since: float | None = None) -> dict:
    """A pod as the replica calculator sees it (requests, phase, Ready condition, startTime)."""
    since = started if ready_since is None else ready_since
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": phase, "startTime": rfc3339(started),
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                       "lastTransitionTime": rfc3339(since)}]}}


# replica_calculator.go GetResourceReplicas: (pods, usage millicores by pod, target %) ->
# (replicas, utilization %). Requests are 1 CPU each unless the pod says otherwise.
RESOURCE_CASES = [
    # TestReplicaCalcScaleUp: 3 pods at 300/500/700m of 1 CPU, target 30 % -> ceil(50/30 x 3)
    ("scale-up", [running("a"), running("b"), running("c")], {"a": 300, "b": 500, "c": 700},
     3, 30, 5, 50),
    # TestReplicaCalcScaleDown: 28 % of a 50 % target over 5 pods -> ceil(0.56 x 5) = 3
    ("scale-down", [running(n) for n in "abcde"],
     {"a": 100, "b": 300, "c": 500, "d": 250, "e": 250}, 5, 50, 3, 28),
    # TestReplicaCalcTolerance: |1 - ratio| <= 0.1 keeps the count
    ("within-tolerance", [running("a"), running("b"), running("c")],
     {"a": 1010, "b": 1030, "c": 1020}, 3, 100, 3, 102),
    ("just-outside-tolerance", [running("a"), running("b")], {"a": 560, "b": 560}, 2, 50, 3, 56),
    # missing metrics on a scale-down count 100 % of the request: 2 pods at 10 %, 1 missing
    # -> new ratio (10+10+100)/3/50 = 0.8 -> ceil(0.8 x 3) = 3 (no change would go up -> 3)
    ("missing-scale-down-assumes-100%", [running("a"), running("b"), running("c")],
     {"a": 100, "b": 100}, 3, 50, 3, 10),
    # missing metrics on a scale-up count 0: 2 pods at 100 %, 2 missing, target 50
    # -> new ratio (100+100+0+0)/4/50 = 1.0 -> within tolerance -> unchanged
    ("missing-scale-up-assumes-0%", [running(n) for n in "abcd"], {"a": 1000, "b": 1000},
     4, 50, 4, 100),
    # a proposal against the new ratio's direction keeps the count: 3 pods, current 1, 2 at 40 %
    # of a 100 % target and one missing (100 %) -> (40+40+100)/3/100 = 0.6 -> ceil(1.8) = 2 > 1
    ("missing-never-scales-against-its-direction", [running(n) for n in "abc"],
     {"a": 400, "b": 400}, 1, 100, 1, 40),
    # a missing pod flips the direction: stay
    ("missing-flips-direction", [running("a"), running("b")], {"a": 400}, 2, 50, 2, 40),
    # unready pods count 0 on a scale-up: 2 ready at 90 %, 1 pending, target 50 -> 180/3/50=1.2
    ("unready-scale-up-assumes-0%", [running("a"), running("b"), running("p", phase="Pending")],
     {"a": 900, "b": 900}, 3, 50, 4, 90),
    # a pod in its CPU initialization period whose readiness changed within the metric window
    # is unready (groupPods), so it is left out of a scale-down
    ("cpu-initialization-unready-ignored-on-scale-down",
     [running("a"), running("b", started=NOW - 60, ready_since=NOW - 10)],
     {"a": 100, "b": 900}, 2, 50, 1, 10),
    # deleted / Failed pods are ignored
    ("failed-pods-ignored", [running("a"), running("f", phase="Failed")], {"a": 1000, "f": 0},
     2, 50, 2, 100),
    # requests of 500m: 250m is 50 %
    ("utilization-of-request", [running("a", cpu="500m"), running("b", cpu="500m")],
     {"a": 500, "b": 500}, 2, 50, 4, 100),
]


@pytest.mark.parametrize("pods, metrics, current, target, replicas, utilization",
                         [c[1:] for c in RESOURCE_CASES], ids=[c[0] for c in RESOURCE_CASES])
def test_resource_replicas(pods, metrics, current, target, replicas, utilization):
    got, percent, _raw = hpa_replicas.resource_replicas(NOW, current, target, "cpu", pods, metrics)
    assert (got, percent) == (replicas, utilization)


RESOURCE_ERRORS = [
    ("no-pods", [], {}, "no pods returned by selector while calculating replica count"),
    ("all-unready", [running("p", phase="Pending")], {},
     "did not receive metrics for targeted pods (pods might be unready)"),
    ("missing-request", [{"metadata": {"name": "x"}, "spec": {"containers": [{"name": "side"}]},
                          "status": running("x")["status"]}], {"x": 5},
     "missing request for cpu in container side of Pod x"),
]


@pytest.mark.parametrize("pods, metrics, message", [c[1:] for c in RESOURCE_ERRORS],
                         ids=[c[0] for c in RESOURCE_ERRORS])
def test_resource_replicas_errors(pods, metrics, message):
    with pytest.raises(hpa_sync.MetricError, match=re.escape(message)):
        hpa_replicas.resource_replicas(NOW, 1, 50, "cpu", pods, metrics)


# calcPlainMetricReplicas (Pods metrics, averageValue): milli-values per pod, target milli.
PLAIN_CASES = [
    ("pods-metric-scale-up", [running("a"), running("b")], {"a": 90_000, "b": 70_000}, 2, 40_000, 4),
    ("pods-metric-tolerance", [running("a"), running("b")], {"a": 52_000, "b": 50_000}, 2, 50_000, 2),
    # missing on a scale-down counts the target: (10+10+50)/3 = 23.3 of 50 -> ceil(0.466x3)=2
    ("pods-missing-scale-down-assumes-target", [running(n) for n in "abc"],
     {"a": 10_000, "b": 10_000}, 3, 50_000, 2),
    # GetMetricUsageRatio averages with integer division before the ratio: 4 // 3 = 1 -> ratio 1
    ("integer-average", [running("a"), running("b"), running("c")], {"a": 1, "b": 1, "c": 2}, 3, 1, 3),
]


@pytest.mark.parametrize("pods, metrics, current, target, replicas",
                         [c[1:] for c in PLAIN_CASES], ids=[c[0] for c in PLAIN_CASES])
def test_plain_metric_replicas(pods, metrics, current, target, replicas):
    assert hpa_replicas.plain_replicas(NOW, metrics, current, target, pods)[0] == replicas


# GetObjectPerPodMetricReplicas / GetExternalPerPodMetricReplicas: (status replicas, usage,
# target per pod) -> (replicas, average per pod)
PER_POD_CASES = [
    ("per-pod-scale-up", 2, 300_000, 50_000, 6, 150_000),
    ("per-pod-within-tolerance", 3, 155_000, 50_000, 3, 51_667),
    ("per-pod-scale-down", 4, 20_000, 10_000, 2, 5_000),
]


@pytest.mark.parametrize("status, usage, target, replicas, average",
                         [c[1:] for c in PER_POD_CASES], ids=[c[0] for c in PER_POD_CASES])
def test_per_pod_replicas(status, usage, target, replicas, average):
    assert hpa_replicas.per_pod_replicas(status, usage, target) == (replicas, average)


def rules(select="Max", *policies):
    return {"selectPolicy": select, "stabilizationWindowSeconds": 0,
            "policies": [{"type": t, "value": v, "periodSeconds": p} for t, v, p in policies]}


# horizontal.go calculateScaleUpLimitWithScalingRules / calculateScaleDownLimitWithBehaviors:
# (current, up events, down events, rules) -> limit. Events are [change, time, outdated].
LIMIT_CASES = [
    ("up-pods-4", "up", 5, [], [], rules("Max", ("Pods", 4, 60)), 9),
    ("up-percent-100", "up", 5, [], [], rules("Max", ("Percent", 100, 60)), 10),
    ("up-max-of-two", "up", 5, [], [], rules("Max", ("Pods", 4, 60), ("Percent", 100, 60)), 10),
    ("up-min-of-two", "up", 5, [], [], rules("Min", ("Pods", 4, 60), ("Percent", 100, 60)), 9),
    ("up-disabled", "up", 5, [], [], rules("Disabled", ("Pods", 4, 60)), 5),
    # 3 added 30 s ago within the 60 s period: the period started at 2 -> 2 + 4
    ("up-events-in-period", "up", 5, [[3, NOW - 30, False]], [], rules("Max", ("Pods", 4, 60)), 6),
    ("up-events-outside-period", "up", 5, [[3, NOW - 90, False]], [],
     rules("Max", ("Pods", 4, 60)), 9),
    # percent rounds up so a scale-up always moves (1 x 1.1 -> 2)
    ("up-percent-rounds-up", "up", 1, [], [], rules("Max", ("Percent", 10, 60)), 2),
    ("down-percent-50", "down", 10, [], [], rules("Max", ("Percent", 50, 60)), 5),
    ("down-pods-3", "down", 10, [], [], rules("Max", ("Pods", 3, 60)), 7),
    ("down-max-picks-lowest", "down", 10, [], [], rules("Max", ("Pods", 3, 60), ("Percent", 50, 60)), 5),
    ("down-min-picks-highest", "down", 10, [], [], rules("Min", ("Pods", 3, 60), ("Percent", 50, 60)), 7),
    # 3 removed within the period: the period started at 13, 13 x 0.5 truncates to 6
    ("down-events-in-period", "down", 10, [], [[3, NOW - 10, False]],
     rules("Max", ("Percent", 50, 60)), 6),
    ("down-disabled", "down", 10, [], [], rules("Disabled", ("Pods", 3, 60)), 10),
]


@pytest.mark.parametrize("direction, current, up, down, scaling, limit",
                         [c[1:] for c in LIMIT_CASES], ids=[c[0] for c in LIMIT_CASES])
def test_rate_limits(direction, current, up, down, scaling, limit):
    fn = hpa_behavior.scale_up_limit if direction == "up" else hpa_behavior.scale_down_limit
    assert fn(current, up, down, scaling, NOW) == limit


# horizontal.go convertDesiredReplicasWithRules (no behavior): max(2 x current, 4) and min/max
RULE_CASES = [
    ("within", 3, 5, 1, 10, 5, "DesiredWithinRange"),
    ("scale-up-limit", 3, 20, 1, 30, 6, "ScaleUpLimit"),
    ("scale-up-limit-minimum-4", 1, 10, 1, 30, 4, "ScaleUpLimit"),
    ("too-many", 3, 20, 1, 5, 5, "TooManyReplicas"),
    ("too-few", 3, 1, 2, 5, 2, "TooFewReplicas"),
]


@pytest.mark.parametrize("current, desired, minimum, maximum, result, reason",
                         [c[1:] for c in RULE_CASES], ids=[c[0] for c in RULE_CASES])
def test_rules_without_behavior(current, desired, minimum, maximum, result, reason):
    got, why, _ = hpa_behavior._with_rules(current, desired, minimum, maximum)
    assert (got, why) == (result, reason)


def test_behavior_defaults_fill_unset_fields():
    """pkg/apis/autoscaling/v2/defaults.go GenerateHPAScale{Up,Down}Rules, and
    horizontal.go maybeInitScaleDownStabilizationWindow (300 s)."""
    body = {"spec": {"behavior": {"scaleDown": {"policies": [
        {"type": "Pods", "value": 1, "periodSeconds": 60}]}}}}
    down, up = hpa_behavior.rules_of(body, "scaleDown"), hpa_behavior.rules_of(body, "scaleUp")
    assert down == {"selectPolicy": "Max", "stabilizationWindowSeconds": 300,
                    "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}
    assert up["stabilizationWindowSeconds"] == 0 and len(up["policies"]) == 2


# ---- end to end -------------------------------------------------------------------------------

def inference(rps: float = 90, per_pod: float = 30, replicas: int = 1, load: str = "") -> str:
    curve = load or f'{{"shape": "constant", "rps": {rps}, "perPodRPS": {per_pod}}}'
    return yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "annotations": {"gpusched.io/load": curve}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                     {"name": "c", "image": "x", "resources": {"limits": {
                         "nvidia.com/gpu": 1, "cpu": "1", "memory": "1Gi"}}}]}}}})


def autoscaler(metrics: list[dict] | None = None, minimum: int = 1, maximum: int = 6,
               behavior: dict | None = None, target: str = "web") -> str:
    spec = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": minimum, "maxReplicas": maximum,
            "metrics": metrics if metrics is not None else [gpu_metric()]}
    if behavior is not None:
        spec["behavior"] = behavior
    return yaml.safe_dump({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                           "metadata": {"name": "web"}, "spec": spec})


def gpu_metric(name: str = "gpu_utilization", target: str = "50") -> dict:
    return {"type": "Pods", "pods": {"metric": {"name": name},
                                     "target": {"type": "AverageValue", "averageValue": target}}}


def status(cluster) -> dict:
    return cluster.get("hpa", ["web"])[0].get("status") or {}


def condition(cluster, type_: str) -> tuple[str, str, str]:
    cond = next(c for c in status(cluster)["conditions"] if c["type"] == type_)
    return cond["status"], cond["reason"], cond["message"]


def hpa_events(cluster) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in cluster.events()
            if e["involvedObject"]["kind"] == "HorizontalPodAutoscaler"]


def replicas_over_time(cluster, steps: int, step: float = 15) -> list[int]:
    out = []
    for _ in range(steps):
        cluster.advance(step)
        out.append(cluster.get("deployment", ["web"])[0]["spec"]["replicas"])
    return out


def test_first_sync_one_period_after_creation_then_every_15s(cluster):
    """horizontal.go enqueueHPA: AddRateLimited with the resync period (15 s) -> the first sync
    is one period after creation."""
    apply(cluster, pool(count=2, model="L4", gpus=4) + "---\n" + inference() + "---\n" + autoscaler())
    cluster.advance(14)
    assert status(cluster) == {}
    cluster.advance(1)
    assert status(cluster)["desiredReplicas"] == 2


def test_scale_up_follows_load_and_events(cluster):
    """90 req/s, 30 per pod at 100 %: 1 -> 2 -> 4 -> 6 (target 50 % of GPU each), one
    SuccessfulRescale per change with horizontal.go's message."""
    apply(cluster, pool(count=2, model="L4", gpus=4) + "---\n" + inference() + "---\n" + autoscaler())
    assert replicas_over_time(cluster, 5) == [2, 4, 6, 6, 6]
    assert hpa_events(cluster) == [
        ("SuccessfulRescale", f"New size: {n}; reason: pods metric gpu_utilization above target")
        for n in (2, 4, 6)]
    assert condition(cluster, "ScalingActive") == (
        "True", "ValidMetricFound",
        "the HPA was able to successfully calculate a replica count from pods metric gpu_utilization")
    assert status(cluster)["currentMetrics"] == [
        {"type": "Pods", "pods": {"metric": {"name": "gpu_utilization"},
                                  "current": {"averageValue": "50"}}}]


def test_scale_down_waits_for_the_300s_stabilization_window(cluster):
    """normalizeDesiredReplicas / stabilizeRecommendation: the highest recommendation of the
    last 300 s (--horizontal-pod-autoscaler-downscale-stabilization) wins."""
    apply(cluster, pool(count=2, model="L4", gpus=4) + "---\n" + inference(rps=60, replicas=4)
          + "---\n" + autoscaler())
    cluster.advance(15)                                  # 15 req/s per pod = 50 %: stays 4
    apply(cluster, inference(rps=15, replicas=4))        # load drops to 15 req/s
    cluster.advance(15)
    assert condition(cluster, "AbleToScale")[1] == "ScaleDownStabilized"
    history = replicas_over_time(cluster, 20)            # t = 45 .. 330
    assert history[:19] == [4] * 19 and history[19] == 1
    assert ("SuccessfulRescale", "New size: 1; reason: All metrics below target") in hpa_events(cluster)


def test_behavior_scale_up_policy_limits_rate(cluster):
    """convertDesiredReplicasWithBehaviorRate: 1 pod per 60 s -> ScalingLimited ScaleUpLimit."""
    behavior = {"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}
    apply(cluster, pool(count=2, model="L4", gpus=4) + "---\n" + inference(rps=300)
          + "---\n" + autoscaler(behavior=behavior))
    assert replicas_over_time(cluster, 9) == [2, 2, 2, 2, 3, 3, 3, 3, 4]
    assert condition(cluster, "ScalingLimited") == (
        "True", "ScaleUpLimit",
        "the desired replica count is increasing faster than the maximum scale rate")


def test_max_replicas_limits_with_too_many_replicas(cluster):
    apply(cluster, pool(count=2, model="L4", gpus=4) + "---\n" + inference(rps=900)
          + "---\n" + autoscaler(maximum=3))
    replicas_over_time(cluster, 3)
    assert cluster.get("deployment", ["web"])[0]["spec"]["replicas"] == 3
    assert condition(cluster, "ScalingLimited") == (
        "True", "TooManyReplicas", "the desired replica count is more than the maximum replica count")


@pytest.mark.parametrize("replicas, rps, minimum, maximum, size, reason", [
    pytest.param(1, 1, 2, 6, 2, "Current number of replicas below Spec.MinReplicas",
                 id="below-min-raised"),
    pytest.param(5, 90, 1, 3, 3, "Current number of replicas above Spec.MaxReplicas",
                 id="above-max-lowered"),
])
def test_replicas_outside_min_max_are_moved_in_with_upstream_reason(cluster, replicas, rps, minimum,
                                                                    maximum, size, reason):
    # horizontal.go reconcileAutoscaler: currentReplicas outside [minReplicas, maxReplicas]
    apply(cluster, pool(count=2, model="L4", gpus=4) + "---\n" + inference(rps=rps, replicas=replicas)
          + "---\n" + autoscaler(minimum=minimum, maximum=maximum))
    cluster.advance(15)
    assert hpa_events(cluster) == [("SuccessfulRescale", f"New size: {size}; reason: {reason}")]
    assert cluster.get("deployment", ["web"])[0]["spec"]["replicas"] == size


@pytest.mark.parametrize("names", [
    pytest.param(["gpu_nope"], id="one-missing-metric"),
    pytest.param(["gpu_nope", "gpu_nope2"], id="each-failing-metric-an-event-the-first-the-condition"),
])
def test_metric_that_does_not_exist_sets_failed_get_pods_metric(cluster, names):
    """computeStatusForPodsMetric + getUnableComputeReplicaCountCondition: the event and the
    ScalingActive=False condition (the first invalid metric's; computeReplicasForMetrics records
    every invalid metric's event); reconcileAutoscaler's FailedComputeMetricsReplicas; no crash,
    no scaling."""
    apply(cluster, pool(count=2, model="L4", gpus=4) + "---\n" + inference()
          + "---\n" + autoscaler(metrics=[gpu_metric(n) for n in names]))
    cluster.advance(15)
    why = {n: f"unable to get metric {n}: unable to fetch metrics from custom metrics API: "
              f"the server could not find the metric {n} for pods" for n in names}
    first = why[names[0]]
    assert condition(cluster, "ScalingActive") == (
        "False", "FailedGetPodsMetric", f"the HPA was unable to compute the replica count: {first}")
    assert hpa_events(cluster) == [("FailedGetPodsMetric", why[n]) for n in names] + [
        ("FailedComputeMetricsReplicas", f"invalid metrics ({len(names)} invalid out of "
                                         f"{len(names)}), first error is: "
                                         f"failed to get pods metric value: {first}")]
    assert cluster.get("deployment", ["web"])[0]["spec"]["replicas"] == 1


def test_missing_target_is_failed_get_scale(cluster):
    apply(cluster, autoscaler(target="nope"))
    cluster.advance(15)
    assert condition(cluster, "AbleToScale") == (
        "False", "FailedGetScale",
        'the HPA controller was unable to get the target\'s current scale: '
        'deployments.apps "nope" not found')
    assert hpa_events(cluster) == [("FailedGetScale", 'deployments.apps "nope" not found')]


def test_zero_replicas_disables_scaling(cluster):
    apply(cluster, pool(count=1, model="L4", gpus=4) + "---\n" + inference(replicas=0)
          + "---\n" + autoscaler())
    cluster.advance(15)
    assert condition(cluster, "ScalingActive") == (
        "False", "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")


def test_object_and_external_metrics(cluster):
    """GetObjectMetricReplicas (Value: requests_per_second of the Deployment, 90 of 30 per ready
    pod -> 3) and GetExternalMetricReplicas (a user-set value in gpusched-external-metrics)."""
    metrics = [{"type": "Object", "object": {
        "describedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "metric": {"name": "requests_per_second"}, "target": {"type": "Value", "value": "30"}}},
        {"type": "External", "external": {"metric": {"name": "queue_depth"},
                                          "target": {"type": "AverageValue", "averageValue": "10"}}}]
    config = yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "gpusched-external-metrics"},
                             "data": {"queue_depth": "40"}})
    apply(cluster, pool(count=2, model="L4", gpus=4) + "---\n" + inference() + "---\n"
          + config + "---\n" + autoscaler(metrics=metrics))
    cluster.advance(15)
    assert cluster.get("deployment", ["web"])[0]["spec"]["replicas"] == 4
    current = status(cluster)["currentMetrics"]
    assert current[0]["object"]["current"] == {"value": "90"}
    assert current[1]["external"]["current"] == {"averageValue": "40"}


HPA_REFUSALS = [
    # pkg/apis/autoscaling/validation/validation.go validateMetricSpec / validatePodsSource
    ("pods-without-target", [{"type": "Pods", "pods": {"metric": {"name": "x"}, "target": {
        "type": "AverageValue"}}}], None,
     "spec.metrics[0].pods.target.averageValue: Required value: must specify a positive target averageValue"),
    ("source-missing", [{"type": "External"}], None,
     "spec.metrics[0].external: Required value: must populate information for the given metric source"),
    ("two-sources", [{"type": "Pods", "pods": gpu_metric()["pods"],
                      "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "1"}}}],
     None, "spec.metrics[0].external: Forbidden: must populate the given metric source only"),
    ("utilization-zero", [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 0}}}], None,
     "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0"),
    ("bad-target-type", [{"type": "Pods", "pods": {"metric": {"name": "x"}, "target": {
        "type": "Avg", "averageValue": "1"}}}], None,
     'spec.metrics[0].pods.target.type: Invalid value: "Avg": must be either Utilization, Value, or AverageValue'),
    ("negative-average-value", [{"type": "Pods", "pods": {"metric": {"name": "x"}, "target": {
        "type": "AverageValue", "averageValue": "-1"}}}], None,
     'spec.metrics[0].pods.target.averageValue: Invalid value: "-1": must be positive'),
    # validateScalingRules / validateScalingPolicy
    ("window-too-long", None, {"scaleDown": {"stabilizationWindowSeconds": 3601}},
     "spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: 3601: must be less than or equal to 3600"),
    ("empty-policies", None, {"scaleUp": {"policies": []}},
     "spec.behavior.scaleUp.policies: Required value: must specify at least one Policy"),
    ("bad-select-policy", None, {"scaleUp": {"selectPolicy": "Most"}},
     'spec.behavior.scaleUp.selectPolicy: Unsupported value: "Most": supported values: "Disabled", "Max", "Min"'),
    ("policy-period-too-long", None, {"scaleUp": {"policies": [{"type": "Pods", "value": 1,
                                                                  "periodSeconds": 1801}]}},
     "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 1801: must be less than or equal to 1800"),
    ("policy-value-zero", None, {"scaleDown": {"policies": [{"type": "Percent", "value": 0,
                                                               "periodSeconds": 15}]}},
     "spec.behavior.scaleDown.policies[0].value: Invalid value: 0: must be greater than zero"),
]


@pytest.mark.parametrize("metrics, behavior, message", [c[1:] for c in HPA_REFUSALS],
                         ids=[c[0] for c in HPA_REFUSALS])
def test_invalid_hpa_refused_with_api_message(cluster, metrics, behavior, message):
    with pytest.raises(GpuschedError) as err:
        apply(cluster, autoscaler(metrics=metrics, behavior=behavior))
    assert message in str(err.value)
    assert cluster.get("hpa") == []


def test_defaults_cpu_80_and_behavior_stored(cluster):
    """SetDefaults_HorizontalPodAutoscaler: no metrics -> cpu Utilization 80; a behavior gets
    its unset fields filled (what kubectl get -o yaml shows)."""
    apply(cluster, autoscaler(metrics=[], behavior={"scaleDown": {}}))
    spec = cluster.get("hpa", ["web"])[0]["spec"]
    assert spec["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    assert spec["behavior"]["scaleDown"] == {"selectPolicy": "Max", "policies": [
        {"type": "Percent", "value": 100, "periodSeconds": 15}]}
    assert spec["behavior"]["scaleUp"]["policies"][0] == {"type": "Pods", "value": 4,
                                                          "periodSeconds": 15}


LOAD_CASES = [
    ("constant", '{"rps": 50}', 0, 50.0),
    ("diurnal-peak", '{"shape": "diurnal", "rps": 60, "peak": 100, "peakHour": 14}', 14 * 3600, 100.0),
    ("diurnal-trough", '{"shape": "diurnal", "rps": 60, "peak": 100, "peakHour": 14}', 2 * 3600, 20.0),
    ("burst", '{"rps": 10, "bursts": [{"at": "9h", "for": "30m", "factor": 3}]}', 9 * 3600 + 60, 30.0),
    ("after-burst", '{"rps": 10, "bursts": [{"at": "9h", "for": "30m", "factor": 3}]}', 9 * 3600 + 1800, 10.0),
    ("next-day", '{"shape": "diurnal", "rps": 60, "peak": 100, "peakHour": 14}', 86400 + 14 * 3600, 100.0),
]


@pytest.mark.parametrize("text, t, rate", [c[1:] for c in LOAD_CASES], ids=[c[0] for c in LOAD_CASES])
def test_load_curve_rate(text, t, rate):
    assert parse_load(text).rate(t) == pytest.approx(rate)


@pytest.mark.parametrize("text, message", [
    ("{", "not JSON"), ('{"shape": "square"}', "shape: must be one of constant, diurnal"),
    ('{"rps": -1}', "rps: must be between 0"), ('{"rps": 1, "speed": 2}', "unknown field 'speed'"),
    ('{"bursts": [{"at": "25h"}]}', "bursts[0].at: must be within one day"),
], ids=["json", "shape", "negative", "unknown", "burst-at"])
def test_load_curve_refusals(text, message):
    with pytest.raises(LoadError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_load(text)


def test_deployment_with_bad_load_is_refused_and_nothing_stored(cluster):
    with pytest.raises(GpuschedError) as err:
        apply(cluster, inference(load='{"shape": "square"}'))
    assert str(err.value).endswith(
        'The Deployment "web" is invalid: metadata.annotations[gpusched.io/load]: Invalid value: '
        '{"shape": "square"}: load.shape: must be one of constant, diurnal, got \'square\'')
    assert cluster.get("deployment") == []


def test_container_resource_metric(cluster):
    """computeStatusForContainerResourceMetric: utilization of one container's request (the
    sidecar's idle CPU does not dilute it); metric name '... container resource utilization'."""
    body = yaml.safe_load(inference())
    body["spec"]["template"]["spec"]["containers"].append(
        {"name": "sidecar", "image": "y", "resources": {"requests": {"cpu": "1"}}})
    metric = {"type": "ContainerResource", "containerResource": {
        "name": "cpu", "container": "c", "target": {"type": "Utilization", "averageUtilization": 50}}}
    apply(cluster, pool(count=2, model="L4", gpus=4) + "---\n" + yaml.safe_dump(body) + "---\n"
          + autoscaler(metrics=[metric]))
    cluster.advance(45)
    events = hpa_events(cluster)
    # at 15 s the pod became Ready within the 30 s metric window of its CPU initialization
    # period (groupPods): no usable sample yet
    assert events[0] == ("FailedGetContainerResourceMetric", "failed to get cpu utilization: did "
                         "not receive metrics for targeted pods (pods might be unready)")
    assert ("SuccessfulRescale", "New size: 2; reason: cpu container resource utilization "
            "(percentage of request) above target") in events
    current = status(cluster)["currentMetrics"][0]
    assert current["type"] == "ContainerResource"
    assert current["containerResource"]["container"] == "c"


@pytest.mark.parametrize("target, wrapped", [
    ({"type": "Value", "value": "30"}, "failed to get object metric value: {why}"),
    ({"type": "AverageValue", "averageValue": "30"},
     "failed to get object metric value: failed to get gpu_nope object metric: {why}"),
], ids=["value", "average-value"])
def test_object_metric_not_found(cluster, target, wrapped):
    """GetObjectMetricReplicas' error ('unable to get metric %s: %v on %s %s/%s', arguments in
    upstream's order) and computeStatusForObjectMetric's wrapping per target type."""
    metric = {"type": "Object", "object": {
        "describedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "metric": {"name": "gpu_nope"}, "target": target}}
    apply(cluster, pool(count=1, model="L4", gpus=4) + "---\n" + inference() + "---\n"
          + autoscaler(metrics=[metric]))
    cluster.advance(15)
    why = ("unable to get metric gpu_nope: Deployment on default web/unable to fetch metrics from "
           "custom metrics API: the server could not find the metric gpu_nope for deployments.apps")
    assert condition(cluster, "ScalingActive") == (
        "False", "FailedGetObjectMetric", f"the HPA was unable to compute the replica count: {why}")
    assert hpa_events(cluster)[-1] == (
        "FailedComputeMetricsReplicas",
        "invalid metrics (1 invalid out of 1), first error is: " + wrapped.format(why=why))

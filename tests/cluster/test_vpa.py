"""The VPA recommender against kubernetes/autoscaler vertical-pod-autoscaler/pkg/recommender
(util/histogram, logic/recommender.go, model/container.go) and gpusched's GPU right-sizing."""

from __future__ import annotations

import pytest
import yaml

from gpusched.cluster.controllers.autoscaling import vpa
from gpusched.cluster.controllers.autoscaling.gpu_fit import fit
from gpusched.errors import InvalidError
from gpusched.objects.strict import StrictDecodingError

from .builders import apply, pool

OPTIONS = (100.0, 10.0, 2.0)     # histogram_options_test.go: NewExponentialHistogramOptions(100, 10, 2)


def test_exponential_buckets():
    """exponentialHistogramOptions: NumBuckets, GetBucketStart, FindBucket (bucket i starts at
    first x (ratio^i - 1) / (ratio - 1); the last bucket is open)."""
    assert vpa.num_buckets(OPTIONS) == 5
    assert [vpa.bucket_start(OPTIONS, b) for b in range(5)] == [0.0, 10.0, 30.0, 70.0, 150.0]
    assert [vpa.find_bucket(OPTIONS, v) for v in (0, 9.99, 10, 29.99, 30, 150, 1e6)] == [
        0, 0, 1, 1, 2, 4, 4]


def test_percentile_is_the_end_of_the_bucket():
    """histogram.Percentile returns the bucket's end (the last bucket's start)."""
    hist = vpa.new_histogram()
    for value in (5, 15, 15, 80):
        vpa.add_sample(hist, OPTIONS, value, 1.0, 0.0)
    assert vpa.percentile(hist, OPTIONS, 0.25) == 10.0
    assert vpa.percentile(hist, OPTIONS, 0.5) == 30.0
    assert vpa.percentile(hist, OPTIONS, 1.0) == 150.0
    assert vpa.percentile(vpa.new_histogram(), OPTIONS, 0.9) == 0.0


def test_decay_halves_weight_per_half_life():
    """decayingHistogram: a sample 24 h newer weighs twice as much, so the median moves to it."""
    hist = vpa.new_histogram()
    vpa.add_sample(hist, OPTIONS, 15, 1.0, 0.0)
    vpa.add_sample(hist, OPTIONS, 80, 1.0, vpa.HALF_LIFE)
    assert vpa.percentile(hist, OPTIONS, 0.5) == 150.0
    plain = vpa.new_histogram()
    vpa.add_sample(plain, OPTIONS, 15, 1.0, 0.0)
    vpa.add_sample(plain, OPTIONS, 80, 1.0, 0.0)
    assert vpa.percentile(plain, OPTIONS, 0.5) == 30.0


def deployment(cpu_usage: str, containers: int = 1, memory_usage: str = "100Mi") -> str:
    specs = [{"name": f"c{i}", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
             for i in range(containers)]
    return yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}, "annotations": {
                     "gpusched.io/cpu-usage": cpu_usage, "gpusched.io/memory-usage": memory_usage}},
                     "spec": {"containers": specs}}}})


VPA = yaml.safe_dump({"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
                      "metadata": {"name": "web"},
                      "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                             "name": "web"},
                               "updatePolicy": {"updateMode": "Off"}}})


def recommendation(cluster) -> list[dict]:
    status = cluster.get("vpa", ["web"])[0].get("status") or {}
    return status["recommendation"]["containerRecommendations"]


def test_one_day_of_constant_cpu(cluster):
    """300m every minute for a day: p90 = end of the bucket holding 0.3 cores (0.30539) x 1.15 =
    352m; confidence min(1 day, 1441/1440) = 1: upper x 2 = 703m, lower x 1.001^-2 = 351m.
    Memory stays under the pod minimum 250 MiB (--pod-recommendation-min-memory-mb) = 262144k."""
    apply(cluster, pool(count=1, gpus=0) + "---\n" + deployment("300m") + "---\n" + VPA)
    cluster.advance(86400)
    (rec,) = recommendation(cluster)
    assert rec["containerName"] == "c0"
    assert (rec["lowerBound"]["cpu"], rec["target"]["cpu"], rec["upperBound"]["cpu"]) == (
        "351m", "352m", "703m")
    assert rec["target"]["memory"] == "262144k"
    cond = cluster.get("vpa", ["web"])[0]["status"]["conditions"][0]
    assert (cond["type"], cond["status"]) == ("RecommendationProvided", "True")


def test_minimum_split_over_containers(cluster):
    """logic/recommender.go: the pod minimum (25m, 250Mi) is divided by the container count."""
    apply(cluster, pool(count=1, gpus=0) + "---\n" + deployment("2m", containers=2) + "---\n" + VPA)
    cluster.advance(3600)
    assert [(r["target"]["cpu"], r["target"]["memory"]) for r in recommendation(cluster)] == [
        ("13m", "131072k")] * 2


def test_no_pods_no_recommendation(cluster):
    apply(cluster, VPA)
    cluster.advance(120)
    cond = cluster.get("vpa", ["web"])[0]["status"]["conditions"][0]
    assert (cond["status"], cond["reason"]) == ("False", "NoPodsMatched")


FIT_CASES = [
    # A100-40GB: 7 compute slices; 20 % x 1.15 -> 2g (2/7); 3 GB x 1.15 fits 10gb
    ("a100-low", "A100-40GB", 20, 3e9, "MIG 2g.10gb", 24 * 5 / 7),
    ("a100-memory-bound", "A100-40GB", 10, 12 * 2**30, "MIG 3g.20gb", 24 * 4 / 7),
    ("a100-busy", "A100-40GB", 95, 3e9, "whole GPU", 0.0),
    # no MIG on L4: time-slicing shares 1/8, 1/4, 1/2
    ("l4-quarter", "L4", 20, 3e9, "time-slice 1/4", 18.0),
    ("l4-eighth", "L4", 5, 1e9, "time-slice 1/8", 21.0),
]


@pytest.mark.parametrize("model, util, memory, what, hours", [c[1:] for c in FIT_CASES],
                         ids=[c[0] for c in FIT_CASES])
def test_gpu_fit(model, util, memory, what, hours):
    got = fit(model, util, memory)
    assert got.what == what
    assert got.gpu_hours_saved_per_day == pytest.approx(hours, abs=1e-3)


# ---- bad input: the CRD's structural schema (kubernetes/autoscaler
# vertical-pod-autoscaler/deploy/vpa-v1-crd-gen.yaml), unknown fields refused under kubectl's
# strict field validation (apimachinery strict decoding), enums with the CRD validator's message.

def vpa_doc(**spec) -> str:
    body = {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, **spec}
    return yaml.safe_dump({"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
                           "metadata": {"name": "web"}, "spec": body})


STRICT_PREFIX = ('VerticalPodAutoscaler in version "v1" cannot be handled as a VerticalPodAutoscaler: '
                 'strict decoding error: ')
BAD_VPA_CASES = [
    ("unknown-field-at-spec (spec.updatePolcy)", vpa_doc(updatePolcy={"updateMode": "Off"}),
     STRICT_PREFIX + 'unknown field "spec.updatePolcy"'),
    ("unknown-field-in-container-policy (minAlowed)",
     vpa_doc(resourcePolicy={"containerPolicies": [{"containerName": "*", "minAlowed": {"cpu": "100m"}}]}),
     STRICT_PREFIX + 'unknown field "spec.resourcePolicy.containerPolicies[0].minAlowed"'),
    ("unknown-field-in-target-ref", vpa_doc(targetRef={"kind": "Deployment", "name": "web", "nmae": "x"}),
     STRICT_PREFIX + 'unknown field "spec.targetRef.nmae"'),
    ("update-mode-enum (PodUpdatePolicy.updateMode)", vpa_doc(updatePolicy={"updateMode": "On"}),
     'The VerticalPodAutoscaler "web" is invalid: spec.updatePolicy.updateMode: Unsupported value: "On": '
     'supported values: "Off", "Initial", "Recreate", "InPlaceOrRecreate", "InPlace", "Auto"'),
    ("container-mode-enum (ContainerResourcePolicy.mode)",
     vpa_doc(resourcePolicy={"containerPolicies": [{"containerName": "c0", "mode": "Disabled"}]}),
     'The VerticalPodAutoscaler "web" is invalid: spec.resourcePolicy.containerPolicies[0].mode: '
     'Unsupported value: "Disabled": supported values: "Auto", "Off"'),
    ("controlled-values-enum",
     vpa_doc(resourcePolicy={"containerPolicies": [{"containerName": "c0", "controlledValues": "LimitsOnly"}]}),
     'The VerticalPodAutoscaler "web" is invalid: spec.resourcePolicy.containerPolicies[0].controlledValues: '
     'Unsupported value: "LimitsOnly": supported values: "RequestsAndLimits", "RequestsOnly"'),
    ("recommender-name-required", vpa_doc(recommenders=[{}]),
     'The VerticalPodAutoscaler "web" is invalid: spec.recommenders[0].name: Required value'),
]


@pytest.mark.parametrize("text, message", [c[1:] for c in BAD_VPA_CASES], ids=[c[0] for c in BAD_VPA_CASES])
def test_bad_vpa_refused_and_nothing_stored(cluster, text, message):
    with pytest.raises((StrictDecodingError, InvalidError)) as err:
        apply(cluster, text)
    assert str(err.value).endswith(message), str(err.value)
    assert cluster.get("vpa", []) == []


def test_full_vpa_with_resource_policy_is_stored_and_recommended_for(cluster):
    """Every v1 field a real cluster accepts is kept as given; the recommender still writes."""
    spec = {"updatePolicy": {"updateMode": "Off", "minReplicas": 1, "evictionRequirements": [
                {"resources": ["cpu"], "changeRequirement": "TargetHigherThanRequests"}]},
            "resourcePolicy": {"containerPolicies": [
                {"containerName": "*", "mode": "Auto", "minAllowed": {"cpu": "100m", "memory": 1048576},
                 "maxAllowed": {"cpu": 2, "memory": "4Gi"}, "controlledResources": ["cpu", "memory"],
                 "controlledValues": "RequestsOnly"}]},
            "recommenders": [{"name": "default"}]}
    apply(cluster, pool(count=1, gpus=0) + "---\n" + deployment("300m") + "---\n" + vpa_doc(**spec))
    stored = cluster.get("vpa", ["web"])[0]["spec"]
    assert {k: stored[k] for k in spec} == spec
    cluster.advance(3600)
    (rec,) = recommendation(cluster)
    assert rec["containerName"] == "c0" and rec["target"]["cpu"].endswith("m")

"""Bounds on hostile manifests (objects.limits), through the loader and validation the CLI uses.

Each case is a few bytes that used to expand without bound or crash (issue 16, "Limits and hostile
input"): nesting deep enough to segfault the YAML composer, a 400-byte alias bomb that became a
78 MB state file, NaN stored and then breaking every list, workload sizes that hung the worker.
Upstream references per case: go-yaml decode.go ``allowedAliasRatio`` ("yaml: document contains
excessive aliasing") and its ``max depth``; Go encoding/json ``maxNestingDepth``; sigs.k8s.io/yaml
``YAMLToJSON`` (``json: unsupported value: NaN``); etcd's ``--max-request-bytes`` 1.5 MiB and
kube-apiserver's pass-through of ``etcdserver: request is too large``; apimachinery
``field.TooMany``; batch validation ``completionsSoftLimit``.
"""

from __future__ import annotations

import json
import re

import pytest

from gpusched.errors import GpuschedError, InvalidError, ManifestError
from gpusched.objects import limits
from gpusched.objects.manifest import load_text
from gpusched.objects.strict import decode
from gpusched.objects.validation import validate_object
from tests.conftest import gpusched_executable, run_process

CM_HEAD = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"


def alias_bomb(levels: int = 9) -> str:
    """The billion-laughs document: each level is ten aliases of the one before (~400 bytes)."""
    lines = ["  a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, levels):
        name, prev = chr(97 + level), chr(96 + level)
        lines.append(f"  {name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    return CM_HEAD + "data:\n" + "\n".join(lines) + "\n"


def deployment(**spec: object) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}, **spec}}


def job(**spec: object) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "x"}]}}, **spec}}


def pool(**spec: object) -> dict:
    return {"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "p"},
            "spec": spec}


# ---- text the loader refuses before building it --------------------------------------------

TEXT_CASES = [
    # go-yaml decode.go allowedAliasRatio / CVE-2019-11253
    ("yaml-alias-bomb", alias_bomb(), "x.yaml", "yaml: document contains excessive aliasing"),
    # go-yaml "exceeded max depth of 10000" (gpusched: 100)
    ("yaml-deep-flow", CM_HEAD + "data: " + "[" * 100_000 + "]" * 100_000 + "\n", "x.yaml",
     "yaml: exceeded max depth of 100"),
    ("yaml-deep-block", CM_HEAD + "data:\n" + "".join("  " * i + "- \n" for i in range(1, 300)),
     "x.yaml", "yaml: exceeded max depth of 100"),
    # Go encoding/json maxNestingDepth
    ("json-deep", '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":'
     + "[" * 100_000 + "]" * 100_000 + "}", "x.json", "exceeded max depth of 100"),
    # encoding/json: NaN and Infinity are not JSON
    ("json-nan", '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":NaN}}',
     "x.json", "invalid character 'N' looking for beginning of value"),
    ("json-infinity", '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"x":-Infinity}',
     "x.json", "invalid character 'I' in numeric literal"),
    # sigs.k8s.io/yaml YAMLToJSON: json.Marshal of a NaN float
    ("yaml-nan", CM_HEAD + "x: .nan\n", "x.yaml", "json: unsupported value: NaN"),
    ("yaml-inf", CM_HEAD + "x: [-.inf]\n", "x.yaml", "json: unsupported value: -Inf"),
]


@pytest.mark.parametrize("text,name,message", [c[1:] for c in TEXT_CASES], ids=[c[0] for c in TEXT_CASES])
def test_loader_refuses_hostile_text_with_one_line(text, name, message):
    with pytest.raises(ManifestError) as caught:
        load_text(text, name, json_hint=name.endswith(".json"))
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_aliases_within_bounds_still_load():
    """Anchors and merges as people use them (a few shared blocks) are fine."""
    text = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, labels: &l {a: b}}\n"
            "data: {k: &v value, k2: *v}\n")
    assert load_text(text, "x.yaml")[0].obj["data"] == {"k": "value", "k2": "value"}


def test_nesting_at_the_bound_loads():
    value: object = "leaf"
    for _ in range(limits.MAX_DEPTH - 3):
        value = [value]
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "x": value}
    assert load_text(json.dumps(doc), "x.json")[0].obj["x"] == value


# ---- objects validation refuses -----------------------------------------------------------

def hpa(low: int, high: int) -> dict:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "minReplicas": low, "maxReplicas": high}}


def big_pod(size: int) -> dict:
    """A pod whose bulk is a container argument (no field limit of its own: a ConfigMap's data
    stops at 1 MiB in validation, before etcd's 1.5 MiB)."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"},
            "spec": {"containers": [{"name": "c", "image": "i", "args": ["x" * size]}]}}


OBJECT_CASES = [
    ("replicas-100000", deployment(replicas=100_000), 'spec.replicas: Invalid value: 100000: must be less '
     "than or equal to 5000"),
    ("job-completions-1e6", job(completions=1_000_000), "spec.completions: Invalid value: 1000000: must be "
     "less than or equal to 100000"),
    ("job-parallelism-1e6", job(parallelism=1_000_000), "spec.parallelism: Invalid value: 1000000: must be "
     "less than or equal to 5000"),
    ("nodepool-count-1e5", pool(count=100_000), "spec.count: Invalid value: 100000: must be less than or "
     "equal to 5000"),
    ("nodepool-gpus-per-node", pool(count=1, gpu={"model": "A100-40GB", "count": 100_000}),
     "spec.gpu.count: Invalid value: 100000: must be less than or equal to 64"),
    # issue 25: the HPA controller writes these into its target's replicas
    ("hpa-min-replicas-1e9", hpa(1_000_000_000, 1_000_000_000), "spec.minReplicas: Invalid value: "
     "1000000000: must be less than or equal to 5000"),
    ("hpa-max-replicas-1e9", hpa(1, 1_000_000_000), "spec.maxReplicas: Invalid value: 1000000000: "
     "must be less than or equal to 5000"),
    # apimachinery field.TooMany
    ("nodepool-names", pool(names=[f"n{i}" for i in range(5001)]),
     "spec.names: Too many: 5001: must have at most 5000 items"),
]


@pytest.mark.parametrize("obj,message", [c[1:] for c in OBJECT_CASES], ids=[c[0] for c in OBJECT_CASES])
def test_workload_sizes_have_documented_maxima(obj, message):
    with pytest.raises(InvalidError) as caught:
        validate_object(obj)
    assert message in str(caught.value)


@pytest.mark.parametrize("obj", [deployment(replicas=5000), job(completions=100_000, parallelism=5000),
                                 pool(count=5000), hpa(5000, 5000)], ids=["replicas", "job", "nodepool", "hpa"])
def test_workload_sizes_at_the_maxima_are_valid(obj):
    validate_object(obj)


def test_object_over_etcd_request_limit_is_refused_as_etcd_does():
    """etcd --max-request-bytes (1.5 MiB); kube-apiserver answers with etcd's text."""
    validate_object(big_pod(limits.MAX_OBJECT_BYTES - 300))
    with pytest.raises(limits.ObjectTooLargeError) as caught:
        validate_object(big_pod(limits.MAX_OBJECT_BYTES), where="x.yaml: document 0")
    assert str(caught.value) == "x.yaml: document 0: etcdserver: request is too large"
    assert caught.value.code == 500


@pytest.mark.parametrize("value,message", [
    (float("nan"), "json: unsupported value: NaN"),
    (float("inf"), "json: unsupported value: +Inf"),
], ids=["nan", "inf"])
def test_non_finite_numbers_never_validate(value, message):
    """An object built in code (a patch result) with NaN is refused before the store sees it."""
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "x": value}
    with pytest.raises(GpuschedError, match=re.escape(message)):
        validate_object(obj)


@pytest.mark.parametrize("field", ["annotations", "labels", "ownerReferences", "finalizers"])
def test_null_metadata_fields_decode_to_nothing(field):
    """Go decodes null into the zero value, which is omitted: ``annotations: null`` is no
    annotations (a stored None crashed every later settle of the pending pod)."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", field: None},
           "spec": {"containers": [{"name": "c", "image": "x", "resources": None}]}}
    out = decode(pod).obj
    assert field not in out["metadata"] and "resources" not in out["spec"]["containers"][0]


# ---- the CLI: one line, exit 1, nothing stored ----------------------------------------------

CLI_CASES = [
    # 100,000 levels segfaulted libyaml's composer (exit -11)
    ("deep-yaml", "deep.yaml", CM_HEAD + "data: " + "[" * 100_000 + "]" * 100_000 + "\n",
     "yaml: exceeded max depth of 100"),
    ("alias-bomb", "bomb.yaml", alias_bomb(), "yaml: document contains excessive aliasing"),
    ("replicas", "d.json", json.dumps(deployment(replicas=100_000)), "must be less than or equal to 5000"),
]


@pytest.mark.parametrize("name,text,message", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_apply_refuses_with_one_line(tmp_path, name, text, message):
    (tmp_path / name).write_text(text)
    state = tmp_path / "state.db"
    done = run_process([gpusched_executable(), "--state", str(state), "apply", "-f", str(tmp_path / name)], check=False)
    assert done.returncode == 1, (done.returncode, done.stderr[-500:])
    assert message in done.stderr and done.stderr.count("\n") == 1, done.stderr[-500:]
    listed = run_process([gpusched_executable(), "--state", str(state), "get", "configmaps,deployments",
                             "-o", "name"], check=True)
    assert "bomb" not in listed.stdout and "deployment" not in listed.stdout
    assert state.stat().st_size < 5_000_000 if state.exists() else True


@pytest.mark.parametrize("kind,obj,flag", [
    ("deployment", deployment(replicas=1), "must be less than or equal to 5000"),
    ("job", job(parallelism=1), "must be less than or equal to 5000"),
], ids=["deployment", "job"])
def test_cli_scale_past_the_maxima_is_refused(tmp_path, kind, obj, flag):
    """``gpusched scale`` writes through validation too (it used to store replicas: 100000)."""
    (tmp_path / "w.json").write_text(json.dumps(obj))
    state = str(tmp_path / "state.db")
    run = lambda *args: run_process([gpusched_executable(), "--state", state, *args],  # noqa: E731
                                    check=False)
    assert run("apply", "-f", str(tmp_path / "w.json")).returncode == 0
    done = run("scale", kind, obj["metadata"]["name"], "--replicas", "100000")
    assert done.returncode == 1 and flag in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert run("scale", kind, obj["metadata"]["name"], "--replicas", "3").returncode == 0


# ---- documents users embed in ConfigMaps and annotations, or give as files (issue 25, 2) ----
# Each reader of such text goes through limits.safe_load / limits.json_loads: a document 5,000
# levels deep is one line naming what it is (or, for a reader that ignores unreadable text, is
# ignored), never a RecursionError. Go's own readers stop at 10,000 levels (encoding/json
# maxNestingDepth, go-yaml max depth); gpusched's bound is MAX_DEPTH = 100.

DEEP_YAML = "a: " + "[" * 5000 + "]" * 5000
DEEP_JSON = "[" * 5000 + "]" * 5000


def _raises_one_line(call, *args) -> str:
    with pytest.raises(GpuschedError) as caught:
        call(*args)
    assert "\n" not in str(caught.value)
    return str(caught.value)


def _file(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def read_plugin_config(_tmp):
    from gpusched.devices.plugin_config import parse_config
    return _raises_one_line(parse_config, DEEP_YAML, "ConfigMap default/x key 'any'")


def read_mig_parted_config(_tmp):
    from gpusched.devices.mig import parse_mig_parted_config
    return _raises_one_line(parse_mig_parted_config, DEEP_YAML)


def read_scheduler_config(_tmp):
    from gpusched.scheduler.profile import parse_config
    return _raises_one_line(parse_config, DEEP_YAML)


def read_gpu_models(_tmp):
    from gpusched.devices.user_models import parse_models
    return _raises_one_line(parse_models, DEEP_YAML, "ConfigMap kube-system/gpusched-gpu-models")


def read_model_annotation(_tmp):
    from gpusched.devices.user_models import model_of_annotation
    return _raises_one_line(model_of_annotation, DEEP_JSON, "gpu-node-1")


def read_price_file(tmp):
    from gpusched.metrics.cost import load_prices
    return _raises_one_line(load_prices, _file(tmp, "prices.yaml", DEEP_YAML))


def read_price_json(tmp):
    from gpusched.metrics.cost import load_prices
    return _raises_one_line(load_prices, _file(tmp, "prices.json", DEEP_JSON))


def read_sweep_file(tmp):
    from gpusched.sim.sweep import load_sweep
    return _raises_one_line(load_sweep, _file(tmp, "sweep.yaml", DEEP_YAML))


def read_load_annotation(_tmp):
    from gpusched.cluster.clock.load import parse_load
    return _raises_one_line(parse_load, "[" * 4000 + "]" * 4000)


def read_delete_options(_tmp):
    from gpusched.cluster.apiserver.api_ops import delete_grace
    return _raises_one_line(delete_grace, {}, DEEP_JSON.encode())


@pytest.mark.parametrize("read,message", [
    (read_plugin_config, "ConfigMap default/x key 'any': unable to parse config file: yaml: exceeded max depth of 100"),
    (read_mig_parted_config, "unable to parse MIG config: yaml: exceeded max depth of 100"),
    (read_scheduler_config, "scheduler config: yaml: exceeded max depth of 100"),
    (read_gpu_models, "ConfigMap kube-system/gpusched-gpu-models: yaml: exceeded max depth of 100"),
    (read_model_annotation, "annotation gpusched.io/gpu-model-spec: invalid JSON"),
    (read_price_file, "not valid YAML/JSON: yaml: exceeded max depth of 100"),
    (read_price_json, "not valid YAML/JSON: exceeded max depth of 100"),
    (read_sweep_file, "exceeded max depth of 100"),
    (read_load_annotation, "not JSON (exceeded max depth of 100)"),
    (read_delete_options, "the body of a DELETE must be a DeleteOptions object"),
], ids=["plugin-config", "mig-parted-config", "scheduler-config", "gpu-models", "model-annotation",
        "price-yaml", "price-json", "sweep-file", "load-annotation", "delete-options"])
def test_every_reader_of_embedded_documents_is_bounded(tmp_path, read, message):
    assert message in read(tmp_path)


@pytest.mark.parametrize("reader", ["mig-layout-annotation", "loaded-config-annotation",
                                     "autoscaler-priorities", "autoscaler-status"])
def test_lenient_readers_ignore_a_too_deep_document(reader):
    """Readers that treat unreadable text as absent do so for a too-deep one too."""
    if reader == "mig-layout-annotation":
        from gpusched.devices.mig_manager import current_layout
        assert current_layout(DEEP_JSON, 1) == [None]
    elif reader == "loaded-config-annotation":
        from gpusched.cluster.controllers.gpuoperator.clusterpolicy import _found
        assert _found(DEEP_JSON) is False and _found("not json") is False and _found("[1]") is False
    elif reader == "autoscaler-priorities":
        from gpusched.cluster.controllers.autoscaling.autoscaler_config import priority_table

        class View:
            def get(self, *_):
                return {"data": {"priorities": DEEP_YAML}}
        assert priority_table(View()) == []
    else:
        from gpusched.cluster.controllers.autoscaling.autoscaler_status import _previous
        assert _previous({"data": {"status": DEEP_YAML}}) == (None, {})
        assert _previous({"data": {"status": "nodeGroups: [1, x]"}}) == (None, {})


# ---- numbers in free text (annotations, query parameters) -------------------------------------
# str.isdigit() takes 5,000 digits (and "٣"), and int() then raises past 4,300 digits: each
# reader below answered with an internal error (or a 500) before limits.small_int.

HUGE = "9" * 5000


def _annotated(key: str, value: str) -> dict:
    return {"metadata": {"name": "x", "annotations": {key: value}}}


def read_revision():
    from gpusched.cluster.controllers.workloads.deployment_util import ANN_REVISION, revision
    return revision(_annotated(ANN_REVISION, HUGE))


def read_completion_index():
    from gpusched.cluster.controllers.workloads.job_rules import INDEX_KEY, completion_index
    return completion_index(_annotated(INDEX_KEY, HUGE))


def read_share_milli():
    from gpusched.objects.pod import requested_gpu_share
    from gpusched.objects.types import RESOURCE_GPU_MILLI
    return requested_gpu_share(_annotated(RESOURCE_GPU_MILLI, HUGE))


def read_web_limit():
    from gpusched.server.web.query import _number
    try:
        return _number({"limit": HUGE}, "limit", 50, 1, 500)
    except GpuschedError as err:
        return str(err).split(": ")[0]


@pytest.mark.parametrize("read,expected", [
    (read_revision, 0), (read_completion_index, None), (read_share_milli, 0),
    (read_web_limit, "query parameter limit"),
], ids=["rs-revision-annotation", "job-completion-index", "gpu-milli-share", "web-limit-param"])
def test_numbers_in_free_text_are_read_within_bounds(read, expected):
    assert read() == expected


@pytest.mark.parametrize("value", ["9" * 5000, "\u0663", "86401"], ids=["5000-digits", "arabic-indic", "over"])
def test_autoscaler_seconds_are_bounded_where_parsed(value):
    from gpusched.cluster.controllers.autoscaling.autoscaler_config import load_config

    class View:
        def get(self, *_):
            return {"data": {"max-graceful-termination-sec": value}}
    problems = load_config(View()).problems
    assert len(problems) == 1 and problems[0].endswith("give whole seconds between 0 and 86400")

"""Property: every change ``explain`` suggests for a pending pod, applied, lets the pod schedule.

Random pods (GPU count, a nodeSelector, a toleration) on the lab cluster with a tainted T4 node
and some running pods; for each suggestion of a kind a user applies to the pod itself (tolerate a
taint, drop a nodeSelector key, ask for fewer GPUs) or to the cluster (uncordon, wait until the
named pods finish), the pod is re-created with the change on a copy of the state and must then be
bound. Runs in-process on real SQLite state files.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusched.cluster.cluster import Cluster
from gpusched.objects.manifest import load_manifests, load_text
from tests.conftest import REPO_ROOT

SELECTORS = (None, "a100", "v100", "t4", "h100")


def pod_yaml(name: str, gpus: int, selector: str | None, tolerate: bool) -> str:
    lines = [f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:"]
    if selector:
        lines.append(f"  nodeSelector: {{gpu-type: {selector}}}")
    if tolerate:
        lines.append("  tolerations: [{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}]")
    lines.append(f"  containers:\n  - {{name: c, image: x, resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}}}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def base_state(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("prop") / "base.db"
    with Cluster.open(str(path)) as cluster:
        cluster.apply(load_manifests([str(REPO_ROOT / "examples/cluster.yaml"),
                                      str(REPO_ROOT / "examples/priority-classes.yaml")]))
        cluster.taint("gpu-node-3", [__import__("gpusched.objects.node", fromlist=["parse_taint"])
                                     .parse_taint("dedicated=gpu:NoSchedule")], [])
        cluster.apply(load_text("apiVersion: v1\nkind: Pod\nmetadata: {name: busy, annotations: "
                                "{gpusched.io/duration: 20m}}\nspec:\n  nodeSelector: {gpu-type: a100}\n"
                                "  containers:\n  - {name: c, image: x, resources: {limits: "
                                "{nvidia.com/gpu: 6}}}\n", "busy"))
    return path


def scheduled(state: Path, manifest: str, advance: float = 0.0) -> bool:
    with Cluster.open(str(state)) as cluster:
        if advance:
            cluster.advance(advance)
        cluster.apply(load_text(manifest, "changed"))
        pod = cluster.get("Pod", names=("p",))[0]
    return bool(pod["spec"].get("nodeName"))


@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gpus=st.integers(1, 12), selector=st.sampled_from(SELECTORS), tolerate=st.booleans())
def test_every_suggested_change_lets_the_pod_schedule(base_state, tmp_path_factory, gpus, selector, tolerate):
    work = tmp_path_factory.mktemp("case")
    state = work / "s.db"
    shutil.copy(base_state, state)
    with Cluster.open(str(state)) as cluster:
        cluster.apply(load_text(pod_yaml("p", gpus, selector, tolerate), "p"))
        if cluster.get("Pod", names=("p",))[0]["spec"].get("nodeName"):
            return
        explanation = cluster.explain("p")
        now = cluster.now()
    for number, suggestion in enumerate(explanation.suggestions):
        trial = work / f"t{number}.db"
        shutil.copy(state, trial)
        with Cluster.open(str(trial)) as cluster:
            cluster.delete("Pod", "p")
        if suggestion.kind == "toleration":
            changed = pod_yaml("p", gpus, selector, True)
        elif suggestion.kind == "node-selector":
            changed = pod_yaml("p", gpus, None, tolerate)
        elif suggestion.kind == "fewer-gpus":
            fewer = int(re.search(r"ask for (\d+) ", suggestion.change).group(1))
            changed = pod_yaml("p", fewer, selector, tolerate)
        elif suggestion.kind == "finishing":
            assert suggestion.at is not None
            assert scheduled(trial, pod_yaml("p", gpus, selector, tolerate), suggestion.at - now), suggestion
            continue
        else:
            continue   # preemption and the rest are not changes a user applies to the pod
        assert scheduled(trial, changed), suggestion

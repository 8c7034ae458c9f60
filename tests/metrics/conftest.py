"""Builders for the metrics tests: a cluster in a temporary state file, filled from YAML text."""

from __future__ import annotations

import pytest

from gpusched.cluster.cluster import Cluster
from gpusched.objects.manifest import load_manifests

NODES = """
apiVersion: gpusched.io/v1alpha1
kind: NodePool
metadata: {name: a100}
spec: {names: [gpu-node-1], gpu: {model: A100-40GB, count: 2}, cpu: "32", memory: 256Gi}
---
apiVersion: gpusched.io/v1alpha1
kind: NodePool
metadata: {name: t4}
spec: {names: [t4-node], gpu: {model: T4, count: 1}, cpu: "16", memory: 64Gi,
       labels: {nvidia.com/device-plugin.config: t4}}
---
apiVersion: gpusched.io/v1alpha1
kind: NodePool
metadata: {name: mig}
spec: {names: [mig-node], gpu: {model: A100-40GB, count: 1}, cpu: "16", memory: 64Gi,
       migConfig: all-balanced, migStrategy: mixed}
"""

TIME_SLICING = """
apiVersion: v1
kind: ConfigMap
metadata: {name: time-slicing-config-all, namespace: default}
data:
  plain: |-
    version: v1
  t4: |-
    version: v1
    sharing:
      timeSlicing:
        resources:
        - name: nvidia.com/gpu
          replicas: 4
"""


def pod(name: str, gpus: int = 1, resource: str = "nvidia.com/gpu", node: str = "",
        util: int | None = None, memory: str | None = None, ns: str = "default",
        duration: str | None = None, priority_class: str | None = None) -> str:
    """A one-container pod manifest asking for ``gpus`` of ``resource``."""
    annotations = {}
    if util is not None:
        annotations["gpusched.io/gpu-util"] = str(util)
    if memory is not None:
        annotations["gpusched.io/gpu-memory"] = memory
    if duration is not None:
        annotations["gpusched.io/duration"] = duration
    spec = [f"  containers:\n  - name: main\n    image: cuda\n"
            f"    resources: {{limits: {{{resource}: {gpus}}}}}\n"]
    if node:
        spec.append(f"  nodeSelector: {{kubernetes.io/hostname: {node}}}\n")
    if priority_class:
        spec.append(f"  priorityClassName: {priority_class}\n")
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {ns}\n"
            f"  annotations: {annotations!r}\nspec:\n" + "".join(spec))


def apply(cluster: Cluster, *docs: str) -> None:
    cluster.apply(load_manifests(["-"], stdin_text="\n---\n".join(docs)))


@pytest.fixture
def cluster(tmp_path):
    with Cluster.open(str(tmp_path / "cluster.db")) as c:
        yield c

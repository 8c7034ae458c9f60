"""Tiny builders for cluster tests: a cluster in a temp file, manifests from YAML text."""

from __future__ import annotations

import yaml

from gpusched.cluster.cluster import Cluster
from gpusched.objects.manifest import load_text


def docs(text: str, source: str = "test.yaml"):
    return load_text(text, source)


def apply(cluster: Cluster, text: str):
    return cluster.apply(docs(text))


def pool(name: str = "gpu", count: int = 1, model: str = "A100-40GB", gpus: int = 8,
         cpu: str = "64", memory: str = "256Gi", **spec) -> str:
    body = {"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"count": count, "cpu": cpu, "memory": memory, **spec}}
    if gpus:
        body["spec"]["gpu"] = {"model": model, "count": gpus}
    return yaml.safe_dump(body)


def pod(name: str = "p", gpus: int = 0, cpu: str = "", namespace: str = "default",
        priority_class: str = "", duration: str = "", labels: dict | None = None,
        tolerations: list | None = None, **spec) -> str:
    limits = {}
    if gpus:
        limits["nvidia.com/gpu"] = gpus
    if cpu:
        limits["cpu"] = cpu
    container = {"name": "c", "image": "busybox"}
    if limits:
        container["resources"] = {"limits": limits}
    meta = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    if duration:
        meta["annotations"] = {"gpusched.io/duration": duration}
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [container], **spec}}
    if priority_class:
        body["spec"]["priorityClassName"] = priority_class
    if tolerations:
        body["spec"]["tolerations"] = tolerations
    return yaml.safe_dump(body)


def priority_class(name: str, value: int, default: bool = False, policy: str = "") -> str:
    body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value}
    if default:
        body["globalDefault"] = True
    if policy:
        body["preemptionPolicy"] = policy
    return yaml.safe_dump(body)


def join(*texts: str) -> str:
    return "\n---\n".join(texts)


def phase(cluster: Cluster, name: str, namespace: str = "default") -> str:
    return cluster.get("pods", [name], namespace)[0]["status"].get("phase", "")


def node_of(cluster: Cluster, name: str, namespace: str = "default") -> str:
    return cluster.get("pods", [name], namespace)[0]["spec"].get("nodeName", "")


def pod_names(cluster: Cluster, namespace: str = "default", selector: str = "") -> list[str]:
    return [p["metadata"]["name"] for p in cluster.get("pods", namespace=namespace,
                                                         selector=selector)]


def terminating_names(cluster: Cluster, namespace: str = "default") -> list[str]:
    """Pods with metadata.deletionTimestamp (kubectl's STATUS ``Terminating``)."""
    return [p["metadata"]["name"] for p in cluster.get("pods", namespace=namespace)
            if p["metadata"].get("deletionTimestamp")]


def live_names(cluster: Cluster, namespace: str = "default", selector: str = "") -> list[str]:
    """Pods not being deleted (what a controller counts as active, if not finished)."""
    return [p["metadata"]["name"] for p in cluster.get("pods", namespace=namespace,
                                                         selector=selector)
            if not p["metadata"].get("deletionTimestamp")]


def reasons(cluster: Cluster, namespace: str | None = "default") -> list[str]:
    return [e["reason"] for e in cluster.events(namespace)]

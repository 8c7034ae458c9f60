"""Tiny builders of v1beta2 Kueue dicts for the pure ``gpusched.kueue`` tests."""

from __future__ import annotations

from typing import Any


def flavor_quota(name: str, **resources: Any) -> dict[str, Any]:
    """One flavor of a resource group: ``gpu=8`` or ``gpu=(8, borrow, lend)``; ``gpu`` stands
    for ``nvidia.com/gpu``."""
    entries = []
    for res, value in resources.items():
        nominal, borrowing, lending = value if isinstance(value, tuple) else (value, None, None)
        entry: dict[str, Any] = {"name": "nvidia.com/gpu" if res == "gpu" else res, "nominalQuota": nominal}
        if borrowing is not None:
            entry["borrowingLimit"] = borrowing
        if lending is not None:
            entry["lendingLimit"] = lending
        entries.append(entry)
    return {"name": name, "resources": entries}


def make_cq(name: str, *flavors: dict[str, Any], cohort: str | None = None, **spec: Any) -> dict[str, Any]:
    covered = sorted({res["name"] for flavor in flavors for res in flavor["resources"]})
    body: dict[str, Any] = {"resourceGroups": [{"coveredResources": covered, "flavors": list(flavors)}] if flavors else []}
    if cohort:
        body["cohortName"] = cohort
    body.update(spec)
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name}, "spec": body}


def make_cohort(name: str, *flavors: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if flavors:
        covered = sorted({res["name"] for flavor in flavors for res in flavor["resources"]})
        spec["resourceGroups"] = [{"coveredResources": covered, "flavors": list(flavors)}]
    if parent:
        spec["parentName"] = parent
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def make_flavor(name: str, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
                tolerations: list[dict[str, str]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if labels:
        spec["nodeLabels"] = labels
    if taints:
        spec["nodeTaints"] = taints
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def make_podset(name: str = "main", count: int = 1, node_selector: dict[str, str] | None = None,
                tolerations: list[dict[str, str]] | None = None, **requests: Any) -> dict[str, Any]:
    """A Workload PodSet whose one container requests ``requests`` (``gpu`` = nvidia.com/gpu)."""
    reqs = {("nvidia.com/gpu" if k == "gpu" else k): v for k, v in requests.items()}
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": reqs}}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    return {"name": name, "count": count, "template": {"spec": spec}}


SPOT_TAINT = {"key": "instance", "value": "spot", "effect": "NoSchedule"}
SPOT_TOLERATION = {"key": "instance", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}
FLAVORS = [make_flavor("default"), make_flavor("one", {"type": "one"}), make_flavor("two", {"type": "two"}),
           make_flavor("a100", {"gpu": "a100"}), make_flavor("h100", {"gpu": "h100"}),
           make_flavor("tainted", taints=[SPOT_TAINT]),
           make_flavor("taint_and_toleration", taints=[SPOT_TAINT], tolerations=[SPOT_TOLERATION])]

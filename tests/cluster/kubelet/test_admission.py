"""The kubelet reads each pod once in full: after its pod is started (a write of metadata and
status only) it keeps the spec's parts of its earlier reading (``objects.pod.pod_info_like``)."""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.cluster.kubelet import admission

from ..builders import apply, pod, pool


@pytest.mark.parametrize("pods", [1, 4], ids=["one-pod", "four-pods"])
def test_the_kubelet_reads_each_pod_once_in_full(cluster, monkeypatch, pods):
    apply(cluster, pool("gpu", count=2, gpus=8))
    full: list[str] = []
    original = admission.pod_info

    def counted(body: dict[str, Any], *args: Any) -> Any:
        full.append(body["metadata"]["name"])
        return original(body, *args)

    monkeypatch.setattr(admission, "pod_info", counted)
    apply(cluster, "---\n".join(pod(f"p{i}", gpus=1) for i in range(pods)))
    phases = {p["metadata"]["name"]: p["status"]["phase"] for p in cluster.view().list("Pod")}
    assert phases == {f"p{i}": "Running" for i in range(pods)}
    assert sorted(full) == [f"p{i}" for i in range(pods)]

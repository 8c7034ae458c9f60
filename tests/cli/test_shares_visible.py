"""Fractional-GPU shares (``gpusched.io/gpu-milli``) count in ``top nodes`` and ``describe node``:
a T4 holding two 460m shares is taken (WHOLE 1/2, SHARED 0.9/1), its share rows name both pods,
and it is never listed as a free whole GPU."""

from __future__ import annotations

import pytest

from tests.cli.runner import Gpusched


def share_pod(name: str) -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, annotations: "
            f"{{gpusched.io/gpu-milli: \"460\"}}}}\nspec:\n  nodeSelector: {{gpu-type: t4}}\n"
            f"  containers:\n  - {{name: c, image: x, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}\n")


def share_resource_pod(name: str) -> str:
    """The same share asked for as the extended resource (``objects.pod``: either form)."""
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  nodeSelector: {{gpu-type: t4}}\n"
            f"  containers:\n  - {{name: c, image: x, resources: {{limits: {{gpusched.io/gpu-milli: 460}}}}}}\n")


@pytest.mark.parametrize("share_pod", [share_pod, share_resource_pod], ids=["annotation", "extended-resource"])
def test_two_460m_shares_hold_one_gpu_everywhere(tmp_path, share_pod):
    g = Gpusched(tmp_path)
    g.cluster()
    g.ok("apply", "-f", "-", stdin=share_pod("share-1") + "---\n" + share_pod("share-2"))
    row = next(line.split() for line in g.ok("top", "nodes").lines if line.startswith("gpu-node-3"))
    assert row[3:7] == ["1/2", "(50%)", "0.9/1", "(92%)"]
    page = g.ok("describe", "node", "gpu-node-3").out
    allocated = [line.split() for line in page.split("Allocated resources:")[1].split("Events:")[0].splitlines()]
    assert ["gpusched.io/gpu-milli", "920", "(46%)", "920", "(46%)"] in allocated
    assert ["nvidia.com/gpu", "1", "1"] in allocated   # describe.go describeNodeResource: extended resources unpercented
    devices = [line.split() for line in page.split("GPU Devices:")[1].splitlines()[3:] if line.strip()
               and not line.startswith("Events")]
    gpu0 = [d for d in devices if d[0] == "0"]
    assert sorted(d[-1] for d in gpu0) == ["default/share-1", "default/share-2"]
    assert all(d[3] == "460m" for d in gpu0)          # no "whole -" row for the shared GPU
    assert [d[3:] for d in devices if d[0] == "1"] == [["whole", "-"]]

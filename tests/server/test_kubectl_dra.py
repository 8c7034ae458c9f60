"""Real kubectl against ``gpusched serve`` for the ``resource.k8s.io/v1`` kinds: bad input refused
with kube-apiserver's one-line message and nothing stored (``pkg/apis/resource/validation``),
the resourceclaim controller's generated claim (``pkg/controller/resourceclaim``) listed with
``kubectl get``'s STATE column and deleted with its pod, and ``kubectl describe`` (its generic
describer: kubectl has no typed one for these kinds) printing what ``gpusched describe`` prints."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from tests.server.conftest import wait_for

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")]

OBJECTS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: single-gpu}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.example.com}
---
apiVersion: v1
kind: Pod
metadata: {name: pod0}
spec:
  resourceClaims:
  - {name: gpu, resourceClaimTemplateName: single-gpu}
  containers:
  - name: ctr
    image: ubuntu
    resources:
      claims: [{name: gpu}]
"""


def claim(name: str, request: dict) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [request]}}}


def slice_of(name: str, devices: int, **spec) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": "gpu.example.com", "pool": {"name": "node-1", "generation": 0,
                                                            "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}"} for i in range(devices)], **spec}}


BAD = [
    ("claim-without-request-type", "resourceclaims", "no-type", claim("no-type", {"name": "gpu"}),
     'The ResourceClaim "no-type" is invalid: spec.devices.requests[0]: Required value: exactly one of '
     "`exactly` or `firstAvailable` is required"),
    ("claim-count-with-all", "resourceclaims", "all-two",
     claim("all-two", {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
                                                  "allocationMode": "All", "count": 2}}),
     'The ResourceClaim "all-two" is invalid: spec.devices.requests[0].exactly.count: Invalid value: 2: '
     "must not be specified when allocationMode is 'All'"),
    ("slice-over-the-device-limit", "resourceslices", "big", slice_of("big", 129, nodeName="node-1"),
     'The ResourceSlice "big" is invalid: spec.devices: Too many: 129: must have at most 128 items'),
    ("slice-without-node-selection", "resourceslices", "nowhere", slice_of("nowhere", 1),
     'The ResourceSlice "nowhere" is invalid: spec: Required value: exactly one of `nodeName`, '
     "`nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"),
]


@pytest.mark.parametrize("resource, name, body, message", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_is_one_line_and_nothing_is_stored(serve, tmp_path, resource, name, body, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(body))
    done = serve.kubectl("create", "-f", str(path), check=False)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [message]   # kubectl's StandardErrorMessage of a 422
    missing = serve.kubectl("get", resource, name, check=False)
    assert "NotFound" in missing.stderr


def test_a_pods_template_claim_through_kubectl(serve, tmp_path):
    path = tmp_path / "objects.yaml"
    path.write_text(OBJECTS)
    serve.kubectl("apply", "-f", str(path))
    serve.settled()
    lines = serve.kubectl("get", "resourceclaims").stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATE", "AGE"]
    name, state = lines[1].split()[:2]
    assert re.fullmatch(r"pod0-gpu-[a-z0-9]{5}", name) and state == "pending"
    recorded = serve.kubectl("get", "pod", "pod0", "-o", "jsonpath={.status.resourceClaimStatuses}").stdout
    assert json.loads(recorded) == [{"name": "gpu", "resourceClaimName": name}]
    real = serve.kubectl("describe", "resourceclaim", name).stdout
    mine = serve.cli("describe", "resourceclaim", name)
    assert mine.rstrip("\n") == real.rstrip("\n")
    serve.kubectl("delete", "pod", "pod0", "--grace-period=0", "--force", check=False)

    def gone():
        serve.settled()
        return serve.kubectl("get", "resourceclaims", "-o", "name").stdout.strip() == ""
    wait_for(gone, "the generated claim to be deleted with its pod",
             lambda: serve.kubectl("get", "resourceclaims").stdout)

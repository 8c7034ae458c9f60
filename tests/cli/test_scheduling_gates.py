"""``spec.schedulingGates``: the one queue that holds a pod in gpusched.

Upstream:
- ``pkg/registry/core/pod/strategy.go`` ``PrepareForCreate`` (``applySchedulingGatedCondition``):
  a pod created with gates gets PodScheduled False, reason ``SchedulingGated``, message
  ``Scheduling is blocked due to non-empty scheduling gates``;
- the SchedulingGates PreEnqueue plugin keeps it out of the scheduling queue: never attempted, so
  no ``FailedScheduling`` event; kubectl's ``printPod`` shows STATUS ``SchedulingGated``;
- ``validateOnlyDeletedSchedulingGates`` (``pkg/apis/core/validation/validation.go``): gates may
  only be removed: ``spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found
  new scheduling gate 'x'``; once the last one is gone the pod is scheduled.
"""

from __future__ import annotations

from tests.cli.runner import Gpusched


def gated(gates: str) -> str:
    spec = f"  schedulingGates: {gates}\n" if gates else ""
    return ("apiVersion: v1\nkind: Pod\nmetadata: {name: gated}\nspec:\n" + spec +
            "  containers:\n  - {name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}\n")


def test_a_gated_pod_waits_unattempted_until_its_last_gate_is_removed(tmp_path):
    g = Gpusched(tmp_path)
    g.cluster()
    g.ok("apply", "-f", "-", stdin=gated("[{name: example.com/a}, {name: example.com/b}]"))
    pod = g.json("get", "pod", "gated")
    assert not pod["spec"].get("nodeName")
    scheduled = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert [(c["status"], c["reason"], c["message"]) for c in scheduled] == [
        ("False", "SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates")]
    assert g.ok("get", "pod", "gated").lines[1].split()[:3] == ["gated", "0/1", "SchedulingGated"]
    assert not [e for e in g.json("get", "events")["items"] if e["reason"] == "FailedScheduling"]

    error = g.fails("apply", "-f", "-", stdin=gated(
        "[{name: example.com/a}, {name: example.com/b}, {name: x}]"))
    assert error.strip().endswith("The Pod \"gated\" is invalid: spec.schedulingGates[2].name: "
                                  "Forbidden: only deletion is allowed, but found new scheduling gate 'x'")
    g.ok("apply", "-f", "-", stdin=gated("[{name: example.com/b}]"))
    assert not g.json("get", "pod", "gated")["spec"].get("nodeName")
    g.ok("apply", "-f", "-", stdin=gated(""))
    pod = g.json("get", "pod", "gated")
    assert pod["spec"].get("nodeName") and pod["status"]["phase"] == "Running"

"""examples/dra/ with real kubectl against ``gpusched serve``: each example's outcome, the
table of ``tests/examples/test_dra_examples.py``, and ``kubectl get resourceclaims`` STATE
``allocated,reserved`` for every claim once the pods run."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.examples.test_dra_examples import (CASES, IDS, NODES, STEPS, dra_scheduling, phases,
                                              pods_by_name, running, without_marker)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
@pytest.mark.skipif(not dra_scheduling(), reason="needs the DynamicResources plugin and the "
                    "resourceclaim controller")
@pytest.mark.parametrize("example,namespace,check", CASES, ids=IDS)
def test_example_outcome_through_serve_and_kubectl(serve, example, namespace, check):
    serve.kubectl("apply", "-f", NODES)
    serve.kubectl("apply", "-f", f"examples/dra/{example}")
    for _ in range(STEPS):
        serve.settled()
        pods = json.loads(serve.kubectl("get", "pods", "-n", namespace, "-o", "json").stdout)["items"]
        if running(pods):
            break
        serve.cli("advance", "30s")
    assert running(pods), f"pods of {example} not running after {STEPS} steps: {phases(pods)}"
    claims = json.loads(serve.kubectl("get", "resourceclaims", "-n", namespace, "-o",
                                      "json").stdout)["items"]

    def exec_(pod: str, container: str, *argv: str) -> list[str]:
        return without_marker(serve.exec("-n", namespace, pod, "-c", container, "--",
                                            *argv).stdout.splitlines())

    check(pods_by_name(pods), claims, exec_)
    state = serve.kubectl("get", "resourceclaims", "-n", namespace).stdout.splitlines()
    assert state[0].split() == ["NAME", "STATE", "AGE"]
    assert all(line.split()[1] == "allocated,reserved" for line in state[1:])



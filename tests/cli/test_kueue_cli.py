"""Kueue's kinds in the embedded CLI: examples/kueue applied unchanged, ``get`` with the CRDs'
printer columns (config/components/crd/bases/kueue.x-k8s.io_*.yaml additionalPrinterColumns;
ClusterQueue has no AGE, its -o wide columns sit where the CRD lists them), short names as the
CRDs declare them, ``describe`` as kubectl's generic describer of a CRD (tests/cli/test_describe_parity.py compares
it with real kubectl's), bad input in one line."""

from __future__ import annotations

import pytest

from tests.cli.runner import Gpusched


@pytest.fixture
def kueue(tmp_path):
    cli = Gpusched(tmp_path)
    cli.ok("apply", "-f", "examples/kueue/")
    return cli


@pytest.mark.parametrize("args, header, first", [
    pytest.param(("get", "cq"), ["NAME", "COHORT", "PENDING", "WORKLOADS"], ["team-a", "gpu-pool", "0"],
                 id="clusterqueues"),
    pytest.param(("get", "clusterqueues", "-o", "wide"),
                 ["NAME", "COHORT", "STRATEGY", "PENDING", "WORKLOADS", "ADMITTED", "WORKLOADS"],
                 ["team-a", "gpu-pool", "BestEffortFIFO", "0", "0"], id="clusterqueues-wide"),
    pytest.param(("get", "lq", "-n", "team-a"),
                 ["NAME", "CLUSTERQUEUE", "PENDING", "WORKLOADS", "ADMITTED", "WORKLOADS"],
                 ["team-queue", "team-a", "0", "0"], id="localqueues"),
    pytest.param(("get", "queues", "-A"),
                 ["NAMESPACE", "NAME", "CLUSTERQUEUE", "PENDING", "WORKLOADS", "ADMITTED", "WORKLOADS"],
                 ["team-a", "team-queue", "team-a", "0", "0"], id="localqueues-all-namespaces"),
    pytest.param(("get", "flavors"), ["NAME", "AGE"], ["a100", "0s"], id="resourceflavors"),
    pytest.param(("get", "co"), ["NAME", "AGE"], ["gpu-pool", "0s"], id="cohorts"),
    pytest.param(("get", "wpc"), ["NAME", "VALUE"], ["batch", "100"], id="workloadpriorityclasses"),
])
def test_get_columns(kueue, args, header, first):
    lines = kueue.ok(*args).lines
    assert lines[0].split() == header
    assert lines[1].split() == first


def test_workloads_and_pod_groups_are_listed_empty(kueue):
    assert kueue.ok("get", "kwl", "-A").err.strip() == "No resources found"
    assert kueue.ok("get", "pg").err.strip() == "No resources found in default namespace."


def test_describe_cluster_queue_shows_the_defaulted_spec(kueue):
    out = kueue.ok("describe", "cq", "team-c").out
    assert out.startswith("Name:")
    fields = {line.split(":")[0].strip(): line.split(":", 1)[1].strip()
              for line in out.splitlines() if ":" in line}
    assert fields["Queueing Strategy"] == "StrictFIFO"          # kubectl's smartLabelFor names
    assert fields["Max Priority Threshold"] == "100"
    assert fields["When Can Preempt"] == "TryNextFlavor"        # the CRD's default
    assert fields["API Version"] == "kueue.x-k8s.io/v1beta2" and fields["Namespace"] == ""
    assert "Events:" in out


def test_bad_queue_is_one_line_and_changes_nothing(kueue, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: bad}\n"
                   "spec:\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
                   "    - name: a100\n      resources: [{name: cpu, nominalQuota: 1, lendingLimit: 1}]\n")
    err = kueue.fails("apply", "-f", str(bad))
    assert err.strip().splitlines() == [
        f'error: error when creating "{bad}": admission webhook "vclusterqueue.kb.io" denied the request: '
        'spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "1": must be nil '
        "when cohort is empty"]
    assert "bad" not in kueue.ok("get", "cq").out

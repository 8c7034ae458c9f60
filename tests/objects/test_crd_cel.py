"""Every CEL rule of the CRD schemas gpusched stores has a translation (objects.crd_cel), and
the translations read as the rules do, case by case (Kueue's integration tests under
test/integration/singlecluster/webhook/core/*_test.go exercise these rules against a real API
server; each case names the Entry it follows)."""

from __future__ import annotations

import glob
import os

import pytest
import yaml

from gpusched.objects import crd_cel
from gpusched.objects.schema import OWN_SCHEMAS


def _rules(node):
    if isinstance(node, dict):
        for rule in node.get("x-kubernetes-validations") or ():
            yield rule["rule"]
        for value in node.values():
            yield from _rules(value)
    elif isinstance(node, list):
        for value in node:
            yield from _rules(value)


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(OWN_SCHEMAS, "*.yaml"))),
                         ids=os.path.basename)
def test_every_rule_of_a_schema_is_translated(path):
    with open(path, encoding="utf-8") as handle:
        missing = [rule for rule in _rules(yaml.safe_load(handle)) if rule not in crd_cel.RULES]
    assert missing == []


def _rule(message_start: str):
    for rule, check in crd_cel.RULES.items():
        if rule.startswith(message_start):
            return check
    raise AssertionError(message_start)


HOST, RACK = {"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "cloud.com/rack"}
RESERVED = {"status": {"conditions": [{"type": "QuotaReserved", "status": "True"}]}}


@pytest.mark.parametrize("rule, value, old, holds", [
    # clusterqueue_test.go "Should forbid ... borrowingLimit and empty cohort"
    pytest.param("!has(self.cohortName) && has(self.resourceGroups)",
                 {"resourceGroups": [{"flavors": [{"resources": [{"borrowingLimit": 1}]}]}]}, None, False,
                 id="borrowing-limit-without-cohort"),
    pytest.param("!has(self.cohortName) && has(self.resourceGroups)",
                 {"cohortName": "c", "resourceGroups": [{"flavors": [{"resources": [{"borrowingLimit": 1}]}]}]},
                 None, True, id="borrowing-limit-with-cohort"),
    # "Should forbid to create clusterQueue missing resources in a flavor"
    pytest.param("self.flavors.all(x, size(x.resources) == size(self.coveredResources))",
                 {"coveredResources": ["cpu", "memory"], "flavors": [{"resources": [{"name": "cpu"}]}]},
                 None, False, id="flavor-missing-a-resource"),
    pytest.param("!(self.reclaimWithinCohort == 'Never'",
                 {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}},
                 None, False, id="reclaim-never-borrow-lower-priority"),
    pytest.param("!(self.reclaimWithinCohort == 'Never'",
                 {"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}},
                 None, True, id="reclaim-any-borrow-lower-priority"),
    pytest.param("!has(self.preference)",
                 {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor",
                  "preference": "BorrowingOverPreemption"}, None, False, id="preference-needs-try-next"),
    # resourceflavor_test.go: topologyName needs a node label; it is immutable once set
    pytest.param("!has(self.topologyName) || self.nodeLabels", {"topologyName": "t"}, None, False,
                 id="topology-without-node-labels"),
    pytest.param("!has(oldSelf.topologyName)", {"topologyName": "u", "nodeLabels": {"a": "b"}},
                 {"topologyName": "t"}, False, id="topology-name-changed"),
    pytest.param("self.all(x, x.effect in", [{"key": "k", "effect": "Sometimes"}], None, False,
                 id="taint-effect"),
    pytest.param("self.all(x, !has(x.key) ? x.operator == 'Exists'", [{"operator": "Equal"}], None,
                 False, id="toleration-without-key-needs-exists"),
    # topology_test.go: unique levels, hostname lowest, levels mutable only under hostname
    pytest.param("size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0", [RACK, RACK], None,
                 False, id="levels-not-unique"),
    pytest.param("size(self.filter(i, i.nodeLabel == 'kubernetes.io/hostname'))", [HOST, RACK], None,
                 False, id="hostname-not-lowest"),
    pytest.param("self == oldSelf || (self[size(self) - 1]", [RACK, HOST], [HOST], True,
                 id="levels-change-above-hostname"),
    pytest.param("self == oldSelf || (self[size(self) - 1]", [HOST], [RACK], False,
                 id="levels-change-without-hostname"),
    # workload_test.go: queueName immutable while quota reserved, minCount <= count
    pytest.param("((has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions"
                 ".exists(c, c.type == 'QuotaReserved'", {**RESERVED, "spec": {"queueName": "b"}},
                 {**RESERVED, "spec": {"queueName": "a"}}, False, id="queue-name-while-reserved"),
    pytest.param("has(self.minCount)", {"count": 3, "minCount": 4}, None, False, id="min-count-over-count"),
    pytest.param("(self.group == 'scheduling.k8s.io')", {"group": "scheduling.k8s.io",
                                                         "kind": "WorkloadPriorityClass"}, None, False,
                 id="priority-class-ref-kind"),
])
def test_translations(rule, value, old, holds):
    assert _rule(rule)(value, old) is holds

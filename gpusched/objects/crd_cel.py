"""The CEL rules (``x-kubernetes-validations``) of the CRD schemas gpusched stores, as Python.

gpusched has no CEL interpreter. Each rule text a schema under ``schemas/own/`` carries maps,
here, to a predicate with the rule's meaning: ``(self, old) -> bool``, where ``self`` is the
value at the rule's place and ``old`` its stored value on an update (``None`` on a create).
A rule that reads ``oldSelf`` is a transition rule: apiextensions evaluates it only on an
update whose old object has a value there (``TRANSITION`` marks them). ``has(x.f)`` is "the key
is present" (nulls were pruned when the object was decoded).

The rules come from Kueue's CRDs (``apis/kueue/v1beta2/*_types.go`` ``+kubebuilder:validation:
XValidation`` markers, generated into ``config/components/crd/bases/``); a schema file holding a
rule text missing here fails ``tests/objects/test_crd_cel.py``, so a regenerated schema cannot
silently lose a check.

Neighbours: ``objects.crd_validation`` finds the rules in the schema and reports a false one as
apiextensions does (``spec.preemption: Invalid value: "object": <message>``).
"""

from __future__ import annotations

from typing import Any, Callable

Rule = Callable[[Any, Any], bool]

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
HOSTNAME = "kubernetes.io/hostname"


def _get(value: Any, *path: str) -> Any:
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _condition_true(obj: Any, kind: str) -> bool:
    """``has(o.status) && has(o.status.conditions) && o.status.conditions.exists(c, c.type ==
    kind && c.status == 'True')``."""
    return any(isinstance(c, dict) and c.get("type") == kind and c.get("status") == "True"
               for c in _items(_get(obj, "status", "conditions")))


def _no_borrowing_without_cohort(spec: Any, _: Any) -> bool:
    if "cohortName" in spec or "resourceGroups" not in spec:
        return True
    return all("borrowingLimit" not in r for rg in _items(spec["resourceGroups"])
               for f in _items(_get(rg, "flavors")) for r in _items(_get(f, "resources")))


def _preference_needs_try_next(ff: Any, _: Any) -> bool:
    return "preference" not in ff or (ff.get("whenCanBorrow") == "TryNextFlavor"
                                      and ff.get("whenCanPreempt") == "TryNextFlavor")


def _reclaim_never_borrow_never(p: Any, _: Any) -> bool:
    return not (p.get("reclaimWithinCohort") == "Never" and "borrowWithinCohort" in p
                and _get(p, "borrowWithinCohort", "policy") != "Never")


def _flavors_match_covered(rg: Any, _: Any) -> bool:
    covered = len(_items(rg.get("coveredResources")))
    return all(len(_items(_get(f, "resources"))) == covered for f in _items(rg.get("flavors")))


def _last_label(levels: Any) -> Any:
    return _get(levels[-1], "nodeLabel") if levels else None


def _levels_mutable(levels: Any, old: Any) -> bool:
    return bool(levels == old or (_last_label(levels) == HOSTNAME and _last_label(old) == HOSTNAME))


def _unique(levels: Any, _: Any) -> bool:
    return not any(sum(1 for j in levels if j == i) > 1 for i in levels)


def _hostname_lowest(levels: Any, _: Any) -> bool:
    return (not any(_get(i, "nodeLabel") == HOSTNAME for i in levels)
            or _last_label(levels) == HOSTNAME)


def _assignments_match(wl: Any, _: Any) -> bool:
    if not (_condition_true(wl, "QuotaReserved") and _get(wl, "status", "admission") is not None):
        return True
    return (len(_items(_get(wl, "spec", "podSets")))
            == len(_items(_get(wl, "status", "admission", "podSetAssignments"))))


def _pcr_presence(wl: Any, old: Any) -> bool:
    if not _condition_true(old, "QuotaReserved"):
        return True
    return ((_get(old, "spec", "priorityClassRef") is None)
            == (_get(wl, "spec", "priorityClassRef") is None))


def _pcr_field(field: str, only_core: bool = False) -> Rule:
    def rule(wl: Any, old: Any) -> bool:
        new_ref, old_ref = _get(wl, "spec", "priorityClassRef"), _get(old, "spec", "priorityClassRef")
        if not (_condition_true(old, "QuotaReserved") and new_ref is not None and old_ref is not None):
            return True
        if only_core and not (new_ref.get("group") == "scheduling.k8s.io"
                              and new_ref.get("kind") == "PriorityClass"):
            return True
        return bool(old_ref.get(field) == new_ref.get(field))
    return rule


def _queue_name_fixed(wl: Any, old: Any) -> bool:
    if not (_condition_true(old, "QuotaReserved") and _condition_true(wl, "QuotaReserved")):
        return True
    return bool(_get(old, "spec", "queueName") == _get(wl, "spec", "queueName"))


def _max_exec_fixed(wl: Any, old: Any) -> bool:
    if not (_condition_true(old, "Admitted") and _condition_true(wl, "Admitted")):
        return True
    return ((_get(old, "spec", "maximumExecutionTimeSeconds") or 0)
            == (_get(wl, "spec", "maximumExecutionTimeSeconds") or 0))


def _exactly_one(value: Any, _: Any) -> bool:
    return ("universal" in value) != ("individual" in value)


def _toleration(check: Callable[[dict[str, Any]], bool]) -> Rule:
    return lambda tolerations, _: all(check(t) for t in _items(tolerations) if isinstance(t, dict))


RULES: dict[str, Rule] = {
    # ClusterQueue (clusterqueue_types.go), Cohort (cohort_types.go)
    "!has(self.cohortName) && has(self.resourceGroups) ? self.resourceGroups.all(rg, rg.flavors.all("
    "f, f.resources.all(r, !has(r.borrowingLimit)))) : true": _no_borrowing_without_cohort,
    "!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && self.whenCanPreempt == "
    "'TryNextFlavor')": _preference_needs_try_next,
    "!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) &&  "
    "self.borrowWithinCohort.policy != 'Never')": _reclaim_never_borrow_never,
    "self.flavors.all(x, size(x.resources) == size(self.coveredResources))": _flavors_match_covered,
    # LocalQueue.spec.clusterQueue
    "self == oldSelf": lambda value, old: bool(value == old),
    # ResourceFlavor (resourceflavor_types.go)
    "!has(self.topologyName) || self.nodeLabels.size() >= 1":
        lambda spec, _: "topologyName" not in spec or len(spec.get("nodeLabels") or {}) >= 1,
    "!has(oldSelf.topologyName) || (has(self.topologyName) && self.topologyName == "
    "oldSelf.topologyName)":
        lambda spec, old: "topologyName" not in old or spec.get("topologyName") == old["topologyName"],
    "self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])":
        _toleration(lambda t: t.get("effect") in EFFECTS),
    "self.all(x, !has(x.key) ? x.operator == 'Exists' : true)":
        _toleration(lambda t: "key" in t or t.get("operator") == "Exists"),
    "self.all(x, has(x.tolerationSeconds) ? x.effect == 'NoExecute' : true)":
        _toleration(lambda t: "tolerationSeconds" not in t or t.get("effect") == "NoExecute"),
    "self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])":
        _toleration(lambda t: "operator" not in t or t["operator"] in ("Equal", "Exists")),
    "self.all(x, has(x.operator) && x.operator == 'Exists' ? !has(x.value) : true)":
        _toleration(lambda t: t.get("operator") != "Exists" or "value" not in t),
    "self.all(x, !has(x.effect) || x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])":
        _toleration(lambda t: "effect" not in t or t["effect"] in EFFECTS),
    # Topology (topology_types.go)
    "self == oldSelf || (self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname' && "
    "oldSelf[size(oldSelf) - 1].nodeLabel == 'kubernetes.io/hostname')": _levels_mutable,
    "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0": _unique,
    "size(self.filter(i, i.nodeLabel == 'kubernetes.io/hostname')) == 0 || self[size(self) - 1]"
    ".nodeLabel == 'kubernetes.io/hostname'": _hostname_lowest,
    # Workload (workload_types.go)
    "has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == "
    "'QuotaReserved' && c.status == 'True') && has(self.status.admission) ? size(self.spec.podSets) "
    "== size(self.status.admission.podSetAssignments) : true": _assignments_match,
    "(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, "
    "c.type == 'QuotaReserved' && c.status == 'True')) ? (!has(oldSelf.spec.priorityClassRef) && "
    "!has(self.spec.priorityClassRef)) || (has(oldSelf.spec.priorityClassRef) && "
    "has(self.spec.priorityClassRef)) : true": _pcr_presence,
    "(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, "
    "c.type == 'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassRef) && "
    "has(self.spec.priorityClassRef)) ? oldSelf.spec.priorityClassRef.group == "
    "self.spec.priorityClassRef.group : true": _pcr_field("group"),
    "(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, "
    "c.type == 'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassRef) && "
    "has(self.spec.priorityClassRef)) ? oldSelf.spec.priorityClassRef.kind == "
    "self.spec.priorityClassRef.kind : true": _pcr_field("kind"),
    "(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, "
    "c.type == 'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassRef) && "
    "has(self.spec.priorityClassRef) && self.spec.priorityClassRef.group == 'scheduling.k8s.io' && "
    "self.spec.priorityClassRef.kind == 'PriorityClass') ? oldSelf.spec.priorityClassRef.name == "
    "self.spec.priorityClassRef.name : true": _pcr_field("name", only_core=True),
    "((has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, "
    "c.type == 'QuotaReserved' && c.status == 'True')) && (has(self.status) && "
    "has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'QuotaReserved' && "
    "c.status == 'True'))) ? ((has(oldSelf.spec.queueName) == has(self.spec.queueName)) && "
    "(!has(oldSelf.spec.queueName) || oldSelf.spec.queueName == self.spec.queueName)) : true":
        _queue_name_fixed,
    "((has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, "
    "c.type == 'Admitted' && c.status == 'True')) && (has(self.status) && "
    "has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'Admitted' && "
    "c.status == 'True')))?((has(oldSelf.spec.maximumExecutionTimeSeconds)?"
    "oldSelf.spec.maximumExecutionTimeSeconds:0) ==  (has(self.spec.maximumExecutionTimeSeconds)?"
    "self.spec.maximumExecutionTimeSeconds:0)):true": _max_exec_fixed,
    "!has(self.priorityClassRef) || has(self.priority)":
        lambda spec, _: "priorityClassRef" not in spec or "priority" in spec,
    "has(self.minCount) ? self.minCount <= self.count : true":
        lambda ps, _: "minCount" not in ps or ps["minCount"] <= ps.get("count", 1),
    "(self.group == 'scheduling.k8s.io') ? self.kind == 'PriorityClass' : true":
        lambda ref, _: ref.get("group") != "scheduling.k8s.io" or ref.get("kind") == "PriorityClass",
    "(self.group == 'kueue.x-k8s.io') ? self.kind == 'WorkloadPriorityClass' : true":
        lambda ref, _: ref.get("group") != "kueue.x-k8s.io" or ref.get("kind") == "WorkloadPriorityClass",
    "!has(oldSelf.clusterName) || !has(self.clusterName) || oldSelf.clusterName == self.clusterName":
        lambda st, old: ("clusterName" not in old or "clusterName" not in st
                         or old["clusterName"] == st["clusterName"]),
    "!has(self.clusterName) || (!has(self.nominatedClusterNames) || (has(self.nominatedClusterNames) "
    "&& size(self.nominatedClusterNames) == 0))":
        lambda st, _: "clusterName" not in st or not st.get("nominatedClusterNames"),
    "self.slices.all(x, size(x.valuesPerLevel) == size(self.levels))":
        lambda ta, _: all(len(_items(_get(s, "valuesPerLevel"))) == len(_items(ta.get("levels")))
                          for s in _items(ta.get("slices"))),
    "!has(self.podCounts.individual) || size(self.podCounts.individual) == self.domainCount":
        lambda s, _: (_get(s, "podCounts", "individual") is None
                      or len(_items(_get(s, "podCounts", "individual"))) == s.get("domainCount")),
    "self.valuesPerLevel.all(x, !has(x.individual) || size(x.individual.roots) == self.domainCount)":
        lambda s, _: all("individual" not in v or len(_items(_get(v, "individual", "roots")))
                         == s.get("domainCount") for v in _items(s.get("valuesPerLevel"))),
    "[has(self.universal),has(self.individual)].filter(x,x==true).size() == 1": _exactly_one,
    "has(self.universal) != has(self.individual)": _exactly_one,
}

# Rules that read oldSelf: evaluated on an update only, when the old object has a value there.
TRANSITION = frozenset(rule for rule in RULES if "oldSelf" in rule)

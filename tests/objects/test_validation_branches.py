"""One case per branch of the validators that were split into upstream's own helpers
(pkg/apis/core/validation/validation.go: validateScopeSelector,
validateScopedResourceSelectorRequirement, ValidatePersistentVolumeSpec, ValidateTolerations,
validatePodAffinityTerm, ValidateObjectMeta; pkg/apis/networking/validation
ValidateNetworkPolicySpec; pkg/apis/autoscaling/validation validateHorizontalPodAutoscalerSpec)
and of gpusched's NodePool checks: each message and its place in the error list stay as they were.
"""

from __future__ import annotations

import pytest

from gpusched.errors import InvalidError
from gpusched.objects.validation import validate_object


def obj(kind: str, api: str = "v1", name: str = "x", **fields) -> dict:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name}, **fields}


def pod(**spec) -> dict:
    return obj("Pod", spec={"containers": [{"name": "c", "image": "i"}], **spec})


def volume(**spec) -> dict:
    return obj("PersistentVolume", spec={"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
                                         "hostPath": {"path": "/d"}, **spec})


def quota(**spec) -> dict:
    return obj("ResourceQuota", spec={"hard": {"pods": "1"}, **spec})


def sel(*requirements) -> dict:
    return {"scopeSelector": {"matchExpressions": list(requirements)}}


def pool(**spec) -> dict:
    return obj("NodePool", "gpusched.io/v1alpha1", "p", spec=spec)


CASES = [
    # validateScopedResourceSelectorRequirement: helper.IsStandardResourceQuotaScope
    ('quota-selector-unsupported-scope', quota(**sel({"scopeName": "Gpu", "operator": "Exists"})),
     'The ResourceQuota "x" is invalid: spec.scopeSelector.matchExpressions.scopeName: Invalid value: '
     '"Gpu": unsupported scope'),
    # validateScopedResourceSelectorRequirement: IsResourceQuotaScopeValidForResource, value is the whole selector
    ('quota-selector-scope-on-resource',
     obj("ResourceQuota", spec={"hard": {"configmaps": "1"}, **sel({"scopeName": "BestEffort", "operator": "Exists"})}),
     'The ResourceQuota "x" is invalid: spec.scopeSelector.matchExpressions: Invalid value: &core.Scop'
     'eSelector{MatchExpressions:[]core.ScopedResourceSelectorRequirement{core.ScopedResourceSelectorR'
     'equirement{ScopeName:"BestEffort", Operator:"Exists", Values:[]string(nil)}}}: unsupported scope'
     ' applied to resource'),
    # validateScopedResourceSelectorRequirement: Exists/DoesNotExist take no values
    ('quota-selector-values-with-exists',
     quota(**sel({"scopeName": "PriorityClass", "operator": "Exists", "values": ["a"]})),
     'The ResourceQuota "x" is invalid: spec.scopeSelector.matchExpressions.values: Invalid value: '
     '[]string{"a"}: must be no value when `operator` is \'Exist\' or \'DoesNotExist\' for scope selector'),
    # validateScopedResourceSelectorRequirement: default case of the operator switch
    ('quota-selector-bad-operator',
     quota(**sel({"scopeName": "PriorityClass", "operator": "Gt", "values": ["a"]})),
     'The ResourceQuota "x" is invalid: spec.scopeSelector.matchExpressions.operator: Invalid value: '
     '"Gt": not a valid selector operator'),
    # validateScopeSelector: the conflicting pair is reported with spec.scopes as its value
    ('quota-selector-conflicting',
     quota(**sel({"scopeName": "Terminating", "operator": "Exists"},
                 {"scopeName": "NotTerminating", "operator": "Exists"})),
     'The ResourceQuota "x" is invalid: spec.scopeSelector.matchExpressions: Invalid value: '
     '[]core.ResourceQuotaScope(nil): conflicting scopes'),
    # ValidatePersistentVolumeSpec: numVolumes > 0
    ('pv-two-sources', volume(nfs={"server": "s", "path": "/"}),
     'The PersistentVolume "x" is invalid: spec.nfs: Forbidden: may not specify more than 1 volume '
     'type'),
    # validateHostPathVolumeSource: path required
    ('pv-hostpath-no-path',
     obj("PersistentVolume", spec={"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}, "hostPath": {}}),
     'The PersistentVolume "x" is invalid: spec.hostPath.path: Required value'),
    # ValidatePersistentVolumeSpec: capacity must hold storage only
    ('pv-capacity-not-storage', volume(capacity={"cpu": "1"}),
     'The PersistentVolume "x" is invalid: spec.capacity: Unsupported value: {"cpu":"1"}: supported '
     'values: "storage"'),
    # validateVolumeNodeAffinity -> ValidateNodeSelector: at least one term
    ('pv-node-affinity-no-terms', volume(nodeAffinity={"required": {"nodeSelectorTerms": []}}),
     'The PersistentVolume "x" is invalid: spec.nodeAffinity.required.nodeSelectorTerms: Required '
     'value: must have at least one node selector term'),
    # validateNodeFieldSelectorRequirement: one value, key metadata.name
    ('pv-node-affinity-bad-field',
     volume(nodeAffinity={"required": {"nodeSelectorTerms": [
         {"matchFields": [{"key": "name", "operator": "In", "values": ["a", "b"]}]}]}}),
     'The PersistentVolume "x" is invalid: '
     'spec.nodeAffinity.required.nodeSelectorTerms[0].matchFields[0].values: Required value: must be '
     "only one value when `operator` is 'In' or 'NotIn' for node field selector, "
     'spec.nodeAffinity.required.nodeSelectorTerms[0].matchFields[0].key: Invalid value: "name": not a'
     ' valid field selector key'),
    # ValidateNetworkPolicySpec: an ingress rule that is not an object
    ('netpol-rule-not-object',
     obj("NetworkPolicy", "networking.k8s.io/v1", spec={"podSelector": {}, "ingress": [3]}),
     'The NetworkPolicy "x" is invalid: spec.ingress[0]: Invalid value: 3: must be an object'),
    # ValidateNetworkPolicySpec: podSelector required
    ('netpol-no-pod-selector', obj("NetworkPolicy", "networking.k8s.io/v1", spec={}),
     'The NetworkPolicy "x" is invalid: spec.podSelector: Required value'),
    # ValidateTolerations: default case of the operator switch
    ('toleration-unsupported-operator', pod(tolerations=[{"key": "a", "operator": "In"}]),
     'The Pod "x" is invalid: spec.tolerations[0].operator: Unsupported value: "In": supported values:'
     ' "Equal", "Exists"'),
    # ValidateTolerations: Equal checks the value as a label value
    ('toleration-bad-value', pod(tolerations=[{"key": "a", "operator": "Equal", "value": "-v-"}]),
     'The Pod "x" is invalid: spec.tolerations[0].value: Invalid value: "-v-": a valid label must be '
     "an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end "
     "with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
     "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
    # validateContainerCommon: image without surrounding whitespace
    ('container-image-whitespace', pod(containers=[{"name": "c", "image": " i"}]),
     'The Pod "x" is invalid: spec.containers[0].image: Invalid value: " i": must not have leading or '
     'trailing whitespace'),
    # ValidateVolumes: name required; validatePersistentClaimVolumeSource: claimName required
    ('volume-no-name-no-claim', pod(volumes=[{"persistentVolumeClaim": {}}]),
     'The Pod "x" is invalid: spec.volumes[0].name: Required value, '
     'spec.volumes[0].persistentVolumeClaim.claimName: Required value'),
    # validatePodAffinityTerm: namespaces are DNS labels, topologyKey required
    ('pod-affinity-term',
     pod(affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
         {"namespaces": ["Bad_NS"], "topologyKey": ""}]}}),
     'The Pod "x" is invalid: '
     'spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaces[0]: '
     'Invalid value: "Bad_NS": a lowercase RFC 1123 label must consist of lower case alphanumeric '
     "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
     "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'), "
     'spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: '
     'Required value: can not be empty'),
    # validateHorizontalPodAutoscalerSpec: minReplicas >= 1, maxReplicas required
    ('hpa-min-zero-no-max',
     obj("HorizontalPodAutoscaler", "autoscaling/v2",
         spec={"minReplicas": 0, "scaleTargetRef": {"kind": "Deployment", "name": "d"}}),
     'The HorizontalPodAutoscaler "x" is invalid: spec.minReplicas: Invalid value: 0: must be greater '
     'than or equal to 1, spec.maxReplicas: Required value'),
    # ValidateObjectMeta on a metadata that does not decode
    ('metadata-not-object', {"apiVersion": "v1", "kind": "ConfigMap", "metadata": 3},
     'The ConfigMap "" is invalid: metadata: Invalid value: 3: must be an object'),
    # ValidateObjectMeta: generateName checked as a name prefix (NameIsDNSSubdomain with prefix)
    ('generate-name-invalid',
     {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "Bad-"},
      "spec": {"containers": [{"name": "c", "image": "i"}]}},
     'The Pod "Bad-" is invalid: metadata.generateName: Invalid value: "Bad-": a lowercase RFC 1123 '
     "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end"
     " with an alphanumeric character (e.g. 'example.com', regex used for validation is "
     "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    # gpusched NodePool: an autoscaled pool names its own nodes
    ('pool-autoscaled-with-names', pool(minNodes=1, maxNodes=2, names=["a"]),
     'The NodePool "p" is invalid: spec.names: Forbidden: an autoscaled pool (spec.minNodes/maxNodes) '
     'names its nodes <namePrefix>-N; give spec.count (the initial size)'),
    # gpusched NodePool (cluster-autoscaler node group min <= max)
    ('pool-min-over-max', pool(minNodes=3, maxNodes=2),
     'The NodePool "p" is invalid: spec.minNodes: Invalid value: 3: must be less than or equal to '
     'spec.maxNodes (2)'),
    # gpusched NodePool: minNodes and maxNodes together
    ('pool-max-only', pool(maxNodes=2, count=1),
     'The NodePool "p" is invalid: spec.minNodes: Required value: spec.minNodes and spec.maxNodes are '
     'set together'),
    # gpusched NodePool: maxNodes <= MAX_POOL_NODES
    ('pool-max-too-big', pool(minNodes=0, maxNodes=1001, count=1),
     'The NodePool "p" is invalid: spec.maxNodes: Invalid value: 1001: must be less than or equal to '
     '1000'),
    # gpusched NodePool: the initial size within [minNodes, maxNodes]
    ('pool-count-outside', pool(minNodes=1, maxNodes=2, count=5),
     'The NodePool "p" is invalid: spec.count: Invalid value: 5: the initial size must be between '
     'spec.minNodes (1) and spec.maxNodes (2)'),
    # gpusched NodePool: provisioningDelay at most 24h
    ('pool-delay', pool(minNodes=1, maxNodes=2, provisioningDelay="25h"),
     'The NodePool "p" is invalid: spec.provisioningDelay: Invalid value: "25h": must be at most 24h'),
    # gpusched NodePool: provisioningDelay a duration
    ('pool-delay-bad', pool(minNodes=1, maxNodes=2, provisioningDelay="soon"),
     'The NodePool "p" is invalid: spec.provisioningDelay: Invalid value: "soon": must be a duration '
     'such as "3m" or "90s"'),
    # gpusched NodePool: names distinct DNS subdomains, strings
    ('pool-names', pool(names=["a", "a", 3, "B"]),
     'The NodePool "p" is invalid: spec.names[1]: Duplicate value: "a", spec.names[2]: Invalid value: '
     '3: must be a string, spec.names[3]: Invalid value: "B": a lowercase RFC 1123 subdomain must '
     "consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
     "alphanumeric character (e.g. 'example.com', regex used for validation is "
     "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    # gpusched NodePool: a GPU count needs a model (or gpu.define)
    ('pool-gpu-model-required', pool(count=1, gpu={"count": 2}),
     'The NodePool "p" is invalid: spec.gpu.model: Required value'),
]


@pytest.mark.parametrize("body,message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_message_and_order(body, message):
    with pytest.raises(InvalidError) as err:
        validate_object(body)
    assert str(err.value) == message

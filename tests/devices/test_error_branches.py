"""One case per error branch of the device parsers and builders that were split into helpers:
the exception type and its one line stay as they were.

Upstream wording where there is one: the device plugin's config (NVIDIA/k8s-device-plugin
api/config/v1: flags.go ``sharedDevicesAllocationPolicy`` / ``deviceListStrategy`` checks,
resources.go ``NewResourceName``, whose line upstream ends with the DNS-subdomain reasons that
gpusched leaves out); the rest is gpusched's own (mig-parted config
entries, user-defined MIG geometries, NodePool autoscaling, a node's GPU count).
"""

from __future__ import annotations

import pytest

from gpusched.devices.advertise import node_gpus
from gpusched.devices.catalog import CATALOG
from gpusched.devices.mig import parse_mig_parted_config
from gpusched.devices.mig_profiles import geometry_from_names
from gpusched.devices.node import NodeDevices
from gpusched.devices.nodepool import autoscaling, expand_nodepool
from gpusched.devices.plugin_config import DevicePluginConfigError, parse_config
from gpusched.errors import UsageError
from gpusched.objects.names import DNS1123_SUBDOMAIN_MSG


def mig(entry):
    return lambda: parse_mig_parted_config({"version": "v1", "mig-configs": {"c": [entry]}})


def plugin(text):
    return lambda: parse_config(text, "ConfigMap a/b, key k")


def pool(**spec):
    return {"metadata": {"name": "p"}, "spec": spec}


def gpus(count):
    return lambda: node_gpus({"metadata": {"name": "n1", "annotations": {
        "gpusched.io/gpu-model": "T4", "gpusched.io/gpu-count": count}}})


WHERE = "ConfigMap a/b, key k: "
CASES = [
    # mig-parted config entries (devices.mig._parse_entry / _entry_devices)
    ("mig-entry-not-mapping", mig(3), UsageError, "mig-configs.c: each entry must be a mapping"),
    ("mig-entry-bad-devices", mig({"devices": [0, -1], "mig-enabled": True}),
     UsageError, "mig-configs.c: devices must be 'all' or a list of GPU indices"),
    ("mig-entry-enabled-not-bool", mig({"devices": "all", "mig-enabled": "yes"}),
     UsageError, "mig-configs.c: mig-enabled must be true or false"),
    ("mig-entry-bad-counts", mig({"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": True}}),
     UsageError, "mig-configs.c: mig-devices must map profiles to counts"),
    # user-defined geometries (devices.mig_profiles.geometry_from_names and its helpers)
    ("geometry-duplicate", lambda: geometry_from_names(["1g.5gb", "1g.5gb"]),
     ValueError, "duplicate MIG profile names"),
    ("geometry-three-plain-1g", lambda: geometry_from_names(["1g.5gb", "1g.10gb", "1g.20gb"]),
     ValueError, "at most two 1g profiles without +me (1 and 2 memory slices)"),
    ("geometry-no-5g", lambda: geometry_from_names(["5g.40gb"]),
     ValueError, 'invalid MIG profile "5g.40gb": no 5g profile on an 8-slice GPU'),
    ("geometry-me-not-1g", lambda: geometry_from_names(["2g.10gb+me"]),
     ValueError, 'invalid MIG profile "2g.10gb+me": no 2g+me profile on an 8-slice GPU'),
    # NodeDevices.build's layout checks
    ("build-layout-length", lambda: NodeDevices.build("n1", CATALOG["A100-40GB"], 2, mig_layout=[None]),
     UsageError, "node n1: MIG layout lists 1 GPUs, the node has 2"),
    ("build-no-mig-model", lambda: NodeDevices.build("n1", CATALOG["T4"], 1, mig_layout=[["1g.5gb"]]),
     UsageError, "node n1: GPU model T4 does not support MIG"),
    # device-plugin config (plugin_config._load, _plugin_flags, _resource, _resource_name)
    ("plugin-invalid-yaml", plugin("version: [v1\n"),
     DevicePluginConfigError, WHERE + "unable to parse config file: invalid YAML at line 2"),
    ("plugin-not-mapping", plugin("- a\n"),
     DevicePluginConfigError, WHERE + "unable to parse config file: expected a mapping"),
    ("plugin-allocation-policy (flags.go)", plugin("flags: {plugin: {sharedDevicesAllocationPolicy: spread}}"),
     DevicePluginConfigError, WHERE + "invalid sharedDevicesAllocationPolicy: spread"),
    ("plugin-list-strategy (flags.go)", plugin("flags: {plugin: {deviceListStrategy: [envvar, files]}}"),
     DevicePluginConfigError, WHERE + "invalid strategy: files"),
    ("plugin-replicas-not-int",
     plugin("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: '4'}]}}"),
     DevicePluginConfigError, WHERE + "unable to parse config file: replicas must be an integer, got '4'"),
    ("plugin-resource-name (resources.go)",
     plugin("sharing: {timeSlicing: {resources: [{name: Bad_Prefix/gpu, replicas: 4}]}}"),
     DevicePluginConfigError, WHERE + "incorrect format for resource name 'nvidia.com/Bad_Prefix/gpu': "
     "[" + DNS1123_SUBDOMAIN_MSG + "]"),
    ("plugin-resource-name-other-prefix (resources.go NewResourceName prefixes nvidia.com/)",
     plugin("sharing: {timeSlicing: {resources: [{name: example.com/gpu, replicas: 4}]}}"),
     DevicePluginConfigError, WHERE + "incorrect format for resource name 'nvidia.com/example.com/gpu': "
     "[" + DNS1123_SUBDOMAIN_MSG + "]"),
    ("plugin-resource-name-too-long (resources.go MaxResourceNameLength)",
     plugin("sharing: {timeSlicing: {resources: [{name: " + "g" * 60 + ", replicas: 4}]}}"),
     DevicePluginConfigError, WHERE + "fully-qualified resource name must be 63 characters or less: "
     "nvidia.com/" + "g" * 60),
    # NodePool autoscaling (nodepool.autoscaling, _bound, _provisioning_delay) and expansion
    ("pool-min-over-max", lambda: autoscaling(pool(minNodes=3, maxNodes=2)),
     UsageError, 'NodePool "p": spec.minNodes: invalid value "3": must be <= spec.maxNodes (2)'),
    ("pool-max-too-big", lambda: autoscaling(pool(minNodes=0, maxNodes=1001)),
     UsageError, 'NodePool "p": spec.maxNodes: invalid value "1001": must be <= 1000'),
    ("pool-bound-negative", lambda: autoscaling(pool(minNodes=-1, maxNodes=2)),
     UsageError, 'NodePool "p": spec.minNodes: invalid value "-1": give an integer >= 0 (both minNodes '
                 "and maxNodes are required for autoscaling)"),
    ("pool-names-autoscaled", lambda: autoscaling(pool(minNodes=1, maxNodes=2, names=["a"])),
     UsageError, 'NodePool "p": spec.names: an autoscaled pool names its nodes <namePrefix>-N: give '
                 "spec.count (the initial size) instead"),
    ("pool-count-outside", lambda: autoscaling(pool(minNodes=1, maxNodes=2, count=3)),
     UsageError, 'NodePool "p": spec.count: invalid value "3": the initial size must be between '
                 "spec.minNodes (1) and spec.maxNodes (2)"),
    ("pool-delay-bad", lambda: autoscaling(pool(minNodes=1, maxNodes=2, provisioningDelay="soon")),
     UsageError, 'NodePool "p": spec.provisioningDelay: invalid value "soon": give a duration such as '
                 '"3m" or "90s"'),
    ("pool-delay-too-long", lambda: autoscaling(pool(minNodes=1, maxNodes=2, provisioningDelay="25h")),
     UsageError, 'NodePool "p": spec.provisioningDelay: invalid value "25h": must be at most 24h'),
    ("pool-model-and-define", lambda: expand_nodepool(pool(count=1, gpu={"model": "T4", "define": {"name": "X"}})),
     UsageError, 'NodePool "p": spec.gpu.define: give either gpu.model or gpu.define, not both'),
    # a node's physical GPU count (advertise._gpu_count)
    ("node-gpu-count-not-quantity", gpus("two"), UsageError, 'node n1: invalid GPU count "two"'),
    ("node-gpu-count-negative", gpus("-1"), UsageError, 'node n1: invalid GPU count "-1"'),
]


@pytest.mark.parametrize("call,error,message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_line(call, error, message):
    with pytest.raises(error) as err:
        call()
    assert type(err.value) is error and str(err.value) == message

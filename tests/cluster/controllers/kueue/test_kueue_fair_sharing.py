"""Fair sharing on the embedded cluster: the ``fairSharing`` section of Kueue's Configuration
(ConfigMap ``kueue-system/kueue-manager-config``) switches the Kueue scheduler's order to the
fair-sharing tournament (``pkg/scheduler/fair_sharing_iterator.go``; the cases of
``scheduler_fs_test.go`` are in ``tests/kueue/test_cycle_fair_sharing.py``).

Three queues of 4, 4 and 8 GPUs share a cohort; team-a runs 8 GPUs (borrows 4), team-b 6
(borrows 2). One Job of 2 GPUs each then waits in team-a and team-b, with room for one: as if
admitted, team-a would borrow 6 of the 16 GPUs the cohort lends (375 per mille) and team-b 4
(250), so fair sharing admits team-b's; without it both borrow, with the same priority and
creation time, and team-a's goes first.
"""

from __future__ import annotations

import pytest

from tests.cluster.builders import apply, pool
from tests.kueue.builders import job_workload

CONFIG = """
apiVersion: v1
kind: Namespace
metadata: {name: kueue-system}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kueue-manager-config, namespace: kueue-system}
data:
  controller_manager_config.yaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta2
    kind: Configuration
    fairSharing:
      preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]
"""


def queues() -> str:
    docs = ["apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: a100}"]
    for team, gpus in (("team-a", 4), ("team-b", 4), ("team-c", 8)):
        docs.append(f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {team}}}")
        docs.append(f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {team}}}
spec:
  namespaceSelector: {{}}
  cohortName: shared
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{{name: a100, resources: [{{name: nvidia.com/gpu, nominalQuota: {gpus}}}]}}]""")
        docs.append(f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: queue, namespace: {team}}}
spec: {{clusterQueue: {team}}}""")
    return "\n---\n".join(docs)


def job(name: str, team: str, gpus: int) -> str:
    return f"""apiVersion: batch/v1
kind: Job
metadata: {{name: {name}, namespace: {team}, labels: {{kueue.x-k8s.io/queue-name: queue}}}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: train
        image: busybox
        resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}
"""


def admitted(cluster, name: str, team: str) -> bool:
    return bool((job_workload(cluster, name, team).get("status") or {}).get("admission"))


@pytest.mark.parametrize("configured,want", [(True, "b2"), (False, "a2")],
                         ids=["fairSharing: the lower share first", "no fairSharing: the first queue by name"])
def test_the_configuration_switches_the_order(cluster, configured, want) -> None:
    apply(cluster, pool(count=2, gpus=8) + "---\n" + queues() + ("\n---" + CONFIG if configured else ""))
    apply(cluster, job("a1", "team-a", 8))
    apply(cluster, job("b1", "team-b", 6))
    apply(cluster, job("a2", "team-a", 2) + "---\n" + job("b2", "team-b", 2))
    assert admitted(cluster, "a1", "team-a") and admitted(cluster, "b1", "team-b")
    got = {name for name, team in (("a2", "team-a"), ("b2", "team-b")) if admitted(cluster, name, team)}
    assert got == {want}

"""Settle on work queues (``apiserver.changes``, ``cluster.clock.settle.settle_changed``).

Upstream controllers reconcile the keys their informers' event handlers enqueue (kubernetes
``pkg/controller/replicaset/replica_set.go`` ``addPod``/``updatePod``/``deletePod`` enqueue the
pod's controlling ReplicaSet; ``pkg/controller/job/job_controller.go`` the same for a Job), not
every object on every event. Two kinds of test:

- equivalence: each scenario is run twice, once with ``advance`` settling on work queues and once
  with every controller's full pass at each time (the level-triggered fixpoint the work queues
  must reach); every object and every event must be the same;
- cost: a settle after one pod completes hands each controller only the keys that pod's
  completion affects, reconciles only its owners, and never lists every pod.
"""

from __future__ import annotations

import yaml
import pytest

from gpusched.cluster import cluster as cluster_module
from gpusched.cluster.clock import settle as settle_module
from gpusched.cluster.controllers.workloads import deployment, job, replicaset
from gpusched.cluster.apiserver.view import View

from .builders import apply, join, pod, pool

HOUR = 3600


def deployment_yaml(name: str, replicas: int, duration: str, labels: dict | None = None) -> str:
    labels = labels or {"app": name}
    template = {"metadata": {"labels": labels, "annotations": {"gpusched.io/duration": duration}},
                "spec": {"containers": [{"name": "c", "image": "x",
                                         "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
    return yaml.safe_dump({"apiVersion": "apps/v1", "kind": "Deployment",
                           "metadata": {"name": name},
                           "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                                    "template": template}})


def job_yaml(name: str, duration: str, exit_code: int | None = None, restart: str = "Never",
             **spec) -> str:
    annotations = {"gpusched.io/duration": duration}
    if exit_code is not None:
        annotations["gpusched.io/exit-code"] = str(exit_code)
    template = {"metadata": {"annotations": annotations},
                "spec": {"restartPolicy": restart,
                         "containers": [{"name": "c", "image": "x",
                                         "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
    return yaml.safe_dump({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                           "spec": {"template": template, **spec}})


def _bare_pods_queue(c):
    apply(c, join(pool(count=1, gpus=4),
                  *[pod(f"p{i}", gpus=1, duration=f"{10 * (i + 1)}m") for i in range(7)]))
    for _ in range(4):
        c.advance(HOUR)


def _job_backoff(c):
    apply(c, join(pool(count=1, gpus=4),
                  job_yaml("fails", "5m", exit_code=1, backoffLimit=3, parallelism=2,
                           completions=4),
                  job_yaml("ok", "20m", parallelism=2, completions=5,
                           ttlSecondsAfterFinished=600),
                  job_yaml("crash", "3m", exit_code=2, restart="OnFailure", backoffLimit=2)))
    c.advance(3 * HOUR)


def _deployment_replaces(c):
    apply(c, join(pool(count=2, gpus=2),
                  deployment_yaml("web", 3, "30m"),
                  yaml.safe_dump({"apiVersion": "v1", "kind": "Service",
                                  "metadata": {"name": "web"},
                                  "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}),
                  yaml.safe_dump({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                  "metadata": {"name": "web"},
                                  "spec": {"minAvailable": 2,
                                           "selector": {"matchLabels": {"app": "web"}}}})))
    c.advance(2 * HOUR)


def _recreate_and_services_in_two_namespaces(c):
    """A Recreate rollout waits for its old pods through the owner index; a pod change in one
    namespace re-syncs that namespace's Services only (controllers.base work queues)."""
    recreate = yaml.safe_load(deployment_yaml("web", 2, "40m"))
    recreate["spec"]["strategy"] = {"type": "Recreate"}
    apply(c, join(pool(count=2, gpus=2),
                  yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace",
                                  "metadata": {"name": "other"}}),
                  yaml.safe_dump(recreate),
                  yaml.safe_dump({"apiVersion": "v1", "kind": "Service",
                                  "metadata": {"name": "web"},
                                  "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}),
                  yaml.safe_dump({"apiVersion": "v1", "kind": "Service",
                                  "metadata": {"name": "db", "namespace": "other"},
                                  "spec": {"selector": {"app": "db"}, "ports": [{"port": 5432}]}}),
                  pod("db", namespace="other", labels={"app": "db"}, duration="25m")))
    c.advance(10 * 60)
    recreate["spec"]["template"]["metadata"]["annotations"]["gpusched.io/duration"] = "20m"
    apply(c, yaml.safe_dump(recreate))
    c.advance(2 * HOUR)


def _taint_eviction(c):
    toleration = [{"key": "maintenance", "operator": "Exists", "effect": "NoExecute",
                   "tolerationSeconds": 120}]
    apply(c, join(pool(count=2, gpus=2),
                  pod("tolerates", gpus=1, tolerations=toleration),
                  pod("plain", gpus=1), pod("other", gpus=1), pod("fourth", gpus=1),
                  pod("waits", gpus=1)))
    from gpusched.objects.types import Taint
    c.taint("gpu-1", [Taint("maintenance", "", "NoExecute")], [])
    c.advance(600)


def _graceful_delete_and_quota(c):
    apply(c, join(pool(count=1, gpus=2),
                  yaml.safe_dump({"apiVersion": "v1", "kind": "ResourceQuota",
                                  "metadata": {"name": "pods"}, "spec": {"hard": {"pods": "3"}}}),
                  pod("a", gpus=1, duration="1h"), pod("b", gpus=1, duration="2h"),
                  deployment_yaml("more", 3, "40m")))
    c.delete("pods", "a", grace=45)
    c.advance(30)
    c.advance(3 * HOUR)


# scenario -> (setup, exact). exact False: a controller's create refused by quota is retried
# upstream on a rate-limited queue (replica_set.go ``syncHandler`` error -> ``AddRateLimited``),
# so how many FailedCreate events (each taking a generated name) come before the quota frees is
# not behaviour; those scenarios compare what happened, by owner, not the generated names.
SCENARIOS = {
    "bare-pods-finish-and-pending-ones-bind": (_bare_pods_queue, True),
    "job-backoff-ttl-and-onfailure-restarts": (_job_backoff, True),
    "deployment-replaces-completed-pods-with-service-and-pdb": (_deployment_replaces, True),
    "recreate-rollout-and-services-in-two-namespaces": (_recreate_and_services_in_two_namespaces,
                                                        True),
    "noexecute-taint-evicts-after-toleration-seconds": (_taint_eviction, True),
    "graceful-delete-and-quota-refusals": (_graceful_delete_and_quota, False),
}


def _state(c, exact: bool) -> tuple:
    objects, events = c.view().snapshot()
    for body in objects.values():
        body.get("metadata", {}).pop("resourceVersion", None)
    if exact:
        return objects, sorted(events.items())
    return _by_owner(objects), _reasons(events)


def _by_owner(objects: dict) -> list:
    """Each object as (kind, owner or name, phase, start, conditions), generated names left out."""
    rows = []
    for (kind, _ns, name), body in objects.items():
        meta, status = body.get("metadata", {}), body.get("status") or {}
        owner = next((r["name"] for r in meta.get("ownerReferences", [])), name)
        rows.append((kind, owner, str(status.get("phase")), str(status.get("startTime")),
                     str(status.get("replicas")), str(status.get("used"))))
    return sorted(rows)


def _reasons(events: dict) -> list:
    return sorted((e["reason"], e["involvedObject"]["kind"], e.get("lastTimestamp", ""))
                  for e in events.values() if e["reason"] != "FailedCreate")


def _full_passes(view: View, fired: set) -> None:
    settle_module.settle_full(view)    # every controller's full pass, as before


@pytest.mark.parametrize("scenario", list(SCENARIOS), ids=list(SCENARIOS))
def test_work_queues_reach_the_same_state_as_full_passes(tmp_path, monkeypatch, scenario):
    setup, exact = SCENARIOS[scenario]
    with cluster_module.Cluster.open(str(tmp_path / "queues.db")) as c:
        setup(c)
        queued = _state(c, exact)
    monkeypatch.setattr(settle_module, "settle_changed", _full_passes)
    with cluster_module.Cluster.open(str(tmp_path / "full.db")) as c:
        setup(c)
        full = _state(c, exact)
    assert queued[0] == full[0]
    assert queued[1] == full[1]


class _Recorder:
    """Wraps the settle steps to record what each was handed, and counts full pod listings."""

    def __init__(self, monkeypatch) -> None:
        self.handed: dict[str, set] = {}
        self.pod_listings = 0
        self.reconciled: dict[str, list[str]] = {"replicaset": [], "deployment": [], "job": []}
        self.active = False
        steps = []
        for name, fn in settle_module.CONTROLLERS + settle_module.AFTER_CONTROLLERS:
            steps.append((name, self._wrap(name, fn)))
        n = len(settle_module.CONTROLLERS)
        monkeypatch.setattr(settle_module, "CONTROLLERS", tuple(steps[:n]))
        monkeypatch.setattr(settle_module, "AFTER_CONTROLLERS", tuple(steps[n:]))
        original_list = View.list

        def counting_list(view, kind, namespace=None):
            if self.active and kind == "Pod" and namespace is None:
                self.pod_listings += 1
            return original_list(view, kind, namespace)
        monkeypatch.setattr(View, "list", counting_list)
        for module, fn_name, label in ((replicaset, "reconcile_one", "replicaset"),
                                       (deployment, "reconcile_one", "deployment"),
                                       (job, "sync_job", "job")):
            monkeypatch.setattr(module, fn_name, self._counting(getattr(module, fn_name), label))

    def _wrap(self, name, fn):
        def step(view, changes=None):
            if not self.active:
                return fn(view, changes) if changes is not None else fn(view)
            keys = changes.keys if changes is not None else {"<full pass>"}
            self.handed.setdefault(name, set()).update(keys)
            if name == "scheduler":      # its snapshot of bound pods is built when it has work
                self.active = False
            try:
                return fn(view, changes) if changes is not None else fn(view)
            finally:
                self.active = True
        return step

    def _counting(self, fn, label):
        def counted(view, body, *args, **kwargs):
            if self.active:
                self.reconciled[label].append(body["metadata"]["name"])
            return fn(view, body, *args, **kwargs)
        return counted


def _advance_recorded(c, recorder: _Recorder, seconds: float) -> None:
    """Advance with the recorder on only inside the event settles (the command's own settles
    before and after are full passes by design: an informer's resync)."""
    original = settle_module.settle_changed

    def recorded(view, fired):
        recorder.active = True
        try:
            original(view, fired)
        finally:
            recorder.active = False
    settle_module.settle_changed = recorded
    try:
        c.advance(seconds)
    finally:
        settle_module.settle_changed = original


def _many_objects(c) -> None:
    """Four nodes, a Deployment, two Jobs, bare pods: all running far beyond the window but one."""
    apply(c, join(pool(count=4, gpus=8),
                  deployment_yaml("web", 4, "30d"),
                  job_yaml("train", "30d", parallelism=3, completions=3),
                  job_yaml("eval", "30d", parallelism=2, completions=2),
                  *[pod(f"bare-{i}", gpus=1, duration="30d") for i in range(12)]))


# (case id, the pod that completes at 1 h, what owns it, reconciles expected per controller)
CASES = [
    ("bare-pod", lambda: pod("short", gpus=1, duration="1h"), "short",
     {"replicaset": [], "deployment": [], "job": []}),
    ("job-pod", lambda: job_yaml("quick", "1h"), "quick-",
     {"replicaset": [], "deployment": [], "job": ["quick"]}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_one_completion_settles_only_what_it_affects(cluster, monkeypatch, case):
    _id, manifest, pod_prefix, expected = case
    _many_objects(cluster)
    apply(cluster, manifest())
    short = next(p for p in cluster.get("pods") if p["metadata"]["name"].startswith(pod_prefix))
    node = short["spec"]["nodeName"]
    recorder = _Recorder(monkeypatch)
    _advance_recorded(cluster, recorder, 1.5 * HOUR)
    assert (cluster.get("pods", [short["metadata"]["name"]])[0]["status"]["phase"]
            == "Succeeded")
    assert recorder.pod_listings == 0          # no controller scanned every pod
    allowed = {("Pod", "default", short["metadata"]["name"])}
    allowed |= {(ref["kind"], "default", ref["name"])
                for ref in short["metadata"].get("ownerReferences", [])}
    for name, keys in recorder.handed.items():
        assert keys <= allowed, (name, keys)
    assert "<full pass>" not in set().union(*recorder.handed.values())
    for label, names in expected.items():
        assert sorted(set(recorder.reconciled[label])) == names, label
    assert node         # the completion freed a device on its node; the node object is unchanged


def test_deployment_pod_completion_reconciles_its_replicaset_and_deployment_only(cluster,
                                                                                  monkeypatch):
    _many_objects(cluster)
    apply(cluster, deployment_yaml("short", 1, "1h"))
    recorder = _Recorder(monkeypatch)
    _advance_recorded(cluster, recorder, 1.5 * HOUR)
    assert recorder.pod_listings == 0
    assert sorted(set(recorder.reconciled["deployment"])) == ["short"]
    assert [n.rsplit("-", 1)[0] for n in set(recorder.reconciled["replicaset"])] == ["short"]
    assert recorder.reconciled["job"] == []
    # The replacement pod is created, bound and started within the same settle.
    running = [p for p in cluster.get("pods", selector="app=short")
               if p["status"].get("phase") == "Running"]
    assert len(running) == 1

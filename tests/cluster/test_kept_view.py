"""A process that keeps its view between commands (``gpusched serve``'s cluster thread) reaches
the same state as one that reloads the state file for every command (the CLI).

With the view kept, a write settles on work queues (``cluster.clock.settle.settle_changed``: only
what the write changed is reconciled, as upstream controllers reconcile the keys their
informers enqueue) and ``advance`` keeps the timer heap (``cluster.clock.timers.Timeline``) between
calls, re-deriving only the objects changed since. Reloading runs every controller's full pass
(an informer's resync) and rebuilds the heap. Each scenario runs both ways, command by command
on the same inputs; every object (resourceVersion aside) and every event must be equal, and
after every ``advance`` the kept heap's live timers must equal a fresh build's.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
import yaml

from gpusched.cluster.cluster import Cluster
from gpusched.cluster.controllers.registry import TIMED
from gpusched.cluster.clock.timers import Timeline
from gpusched.objects.types import Taint

from .builders import apply, join, pod, pool
from .test_controllers import time_slicing_configmap
from .test_work_queues import deployment_yaml, job_yaml

MINUTE = 60


class Reopening:
    """Cluster's commands, each on a Cluster opened for it (a fresh view: the CLI's way)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def command(*args: Any, **kwargs: Any) -> Any:
            with Cluster.open(self.path) as cluster:
                return getattr(cluster, name)(*args, **kwargs)
        return command


def _ticks(c: Any, seconds: int, step: int = 15) -> None:
    """``serve``'s real-time clock: many short advances."""
    for _ in range(seconds // step):
        c.advance(step)


def _arrivals_between_ticks(c: Any) -> None:
    apply(c, pool(count=2, gpus=4))
    for i in range(10):
        apply(c, pod(f"p{i}", gpus=1 + i % 2, duration=f"{3 + i}m"))
        _ticks(c, 2 * MINUTE)
    c.delete("pods", "p9", grace=30)
    _ticks(c, 20 * MINUTE)


def _jobs_and_deployments_ticking(c: Any) -> None:
    apply(c, join(pool(count=2, gpus=2), deployment_yaml("web", 3, "7m"),
                  job_yaml("fails", "2m", exit_code=1, backoffLimit=2, parallelism=1,
                           completions=2)))
    _ticks(c, 10 * MINUTE)
    c.scale("deployment", "web", 1)
    _ticks(c, 10 * MINUTE, step=40)


def _taint_while_ticking(c: Any) -> None:
    toleration = [{"key": "maintenance", "operator": "Exists", "effect": "NoExecute",
                   "tolerationSeconds": 90}]
    apply(c, join(pool(count=2, gpus=2), pod("tolerates", gpus=1, tolerations=toleration),
                  pod("plain", gpus=1), pod("late", gpus=1, duration="4m")))
    _ticks(c, MINUTE)
    c.taint("gpu-1", [Taint("maintenance", "", "NoExecute")], [])
    _ticks(c, 6 * MINUTE, step=20)


def _bare_node(name: str, model: str = "T4", gpus: int = 2) -> str:
    """A Node as a client creates it (no status conditions, no GPU resources yet): the node
    status and device plugin controllers fill it in."""
    resources = {"cpu": "16", "memory": "64Gi", "pods": "110"}
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "annotations": {"gpusched.io/gpu-model": model,
                                      "gpusched.io/gpu-count": str(gpus)}},
        "status": {"capacity": resources, "allocatable": resources}})


def _nodes_one_by_one_then_plugin_config(c: Any) -> None:
    # node-status and device-plugin reconcile only the changed nodes on a kept view (a full
    # pass after a change of what every node's devices derive from: ConfigMaps, ClusterPolicy)
    for i in range(4):
        apply(c, _bare_node(f"n{i}"))
        apply(c, pod(f"p{i}", gpus=1, duration="3m"))
    apply(c, time_slicing_configmap(replicas=2))
    _ticks(c, MINUTE)
    apply(c, _bare_node("n9", gpus=1))
    c.label("node", "n1", {"nvidia.com/device-plugin.config": "any"})
    apply(c, join(*(pod(f"s{i}", gpus=1) for i in range(6))))
    _ticks(c, 4 * MINUTE)


SCENARIOS: dict[str, Callable[[Any], None]] = {
    "nodes-created-one-by-one-then-a-plugin-config": _nodes_one_by_one_then_plugin_config,
    "pods-arrive-between-ticks-finish-and-bind-the-pending": _arrivals_between_ticks,
    "deployment-and-failing-job-under-ticks-then-scale-down": _jobs_and_deployments_ticking,
    "noexecute-taint-evicts-while-ticking": _taint_while_ticking,
}


def _state(path: str) -> tuple[Any, Any]:
    with Cluster.open(path) as cluster:
        objects, events = cluster.view().snapshot()
    for body in objects.values():
        body["metadata"].pop("resourceVersion", None)
    return objects, sorted(events.items())


@pytest.mark.parametrize("scenario", list(SCENARIOS), ids=list(SCENARIOS))
def test_kept_view_reaches_the_state_of_reloading(tmp_path, scenario):
    kept_path, reloaded_path = str(tmp_path / "kept.db"), str(tmp_path / "reloaded.db")
    with Cluster.open(kept_path) as kept:
        SCENARIOS[scenario](kept)
    SCENARIOS[scenario](Reopening(reloaded_path))
    kept_state, reloaded_state = _state(kept_path), _state(reloaded_path)
    assert kept_state[0] == reloaded_state[0]
    assert kept_state[1] == reloaded_state[1]


class Checking:
    """A kept Cluster whose timer heap is compared with a fresh build after every advance."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster, self.checked = cluster, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cluster, name)

    def advance(self, seconds: float) -> None:
        self.cluster.advance(seconds)
        view = self.cluster.view()
        kept = self.cluster._timeline
        assert kept is not None and self.cluster._timeline_view is view
        kept.sync(view)
        live = {slot: when for slot, when in kept.latest.items() if when > view.clock}
        assert live == Timeline.build(view, TIMED).latest
        self.checked += 1


@pytest.mark.parametrize("scenario", list(SCENARIOS), ids=list(SCENARIOS))
def test_kept_timer_heap_equals_a_fresh_build(tmp_path, scenario):
    with Cluster.open(str(tmp_path / "kept.db")) as cluster:
        checking = Checking(cluster)
        SCENARIOS[scenario](checking)
    assert checking.checked > 10

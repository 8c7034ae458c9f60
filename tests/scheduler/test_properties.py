"""Property: random clusters and pod streams never over-commit a resource or a device, and never
bind a pod to a node its filters reject."""

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from gpusched.scheduler.profile import parse_config
from tests.scheduler.builders import make_node, make_pod, scheduler_of, taint, toleration

NODE = st.tuples(st.sampled_from([0, 1, 2, 4, 8]), st.sampled_from(["A100-40GB", "V100-16GB", "T4"]),
                 st.sampled_from([0, 0, 2, 4]), st.booleans(), st.booleans(), st.sampled_from(["2", "8", "32"]))
POD = st.tuples(st.sampled_from([0, 1, 1, 2, 4]), st.sampled_from([0, 0, 0, 300, 500, 700]),
                st.sampled_from(["", "500m", "2", "6"]), st.booleans(), st.booleans(),
                st.sampled_from([(), ("A100-40GB",), ("T4", "V100-16GB")]), st.integers(0, 3))
NO_PREEMPTION = parse_config({"profiles": [{"plugins": {"postFilter": {"disabled": [{"name": "*"}]}}}]})


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(NODE, min_size=1, max_size=6), st.lists(POD, min_size=1, max_size=30), st.integers(0, 3))
def test_never_overcommits_and_never_binds_where_filters_reject(nodes, pods, seed):
    built = []
    for i, (gpus, model, replicas, tainted, cordoned, cpu) in enumerate(nodes):
        built.append(make_node(f"n{i}", gpus=gpus, model=model, replicas=replicas if gpus else 0, cpu=cpu,
                               labels={"zone": f"z{i % 2}"}, unschedulable=cordoned and i % 3 == 0,
                               taints=(taint("dedicated", "gpu"),) if tainted else ()))
    sched = scheduler_of(*built, profiles=NO_PREEMPTION, seed=seed)
    snap = sched.snapshot
    for j, (gpus, milli, cpu, tolerant, selector, models, priority) in enumerate(pods):
        pod = make_pod(name=f"p{j}", gpus=0 if milli else gpus, gpu_milli=milli, cpu=cpu, priority=priority,
                       gpu_models=models, node_selector={"zone": "z0"} if selector else {},
                       tolerations=(toleration("dedicated", "Exists"),) if tolerant else ())
        feasible = set(sched.run_filters(None, pod).feasible.tolist())
        result = sched.schedule_one(pod)
        if result.scheduled:
            row = snap.index[result.node]
            assert row in feasible
            assert snap.pod_node[pod.uid] == row
        else:
            assert not feasible
            assert result.message.startswith(f"0/{len(built)} nodes are available:")
        assert (snap.free >= 0).all(), "a resource is over-committed"
        assert (snap.gpu_free_milli >= -1).all()
        whole = [d for a in snap.assignments.values() if a.resource != "gpusched.io/gpu-milli" for d in a.device_ids]
        assert len(whole) == len(set(whole)), "a device is held twice"
        for r in range(snap.num_nodes):
            if snap.devices[r] is not None:
                free = np.asarray(snap.devices[r].free_milli())
                assert (free >= 0).all()
                assert snap.gpu_free_milli[r, : len(free)].tolist() == free.tolist()

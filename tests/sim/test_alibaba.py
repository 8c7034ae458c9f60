"""Trace loading and the target workload on the shared openb files (section 2 of the doc)."""

from __future__ import annotations

import pytest

from gpusched.errors import UsageError
from gpusched.sim.alibaba import load_nodes, load_pods, node_info, pod_info, pod_manifest
from gpusched.sim.workload import shape_counts, target_workload, tuned_sequence

ROWS = [("default", 8152), ("cpu050", 7439), ("cpu200", 8832), ("gpushare40", 8152),
        ("gpushare80", 8152), ("multigpu20", 8324), ("multigpu40", 8746),
        ("gpuspec10", 8152), ("gpuspec25", 8152)]
GPU_REQUEST = {"default": 6086.8, "gpushare80": 4408.2, "multigpu40": 9442.8}
# (workload, distinct shapes, shapes kept for >= 95 %) from the doc's table (gpuspec rows: the
# doc says the reference's normalisation there is unverified, so they are not pinned here)
SHAPES = [("default", 91, 35), ("cpu050", 89, 35), ("cpu200", 90, 34), ("gpushare40", 88, 36),
          ("gpushare80", 80, 32), ("multigpu20", 91, 38), ("multigpu40", 91, 42)]


def test_gpu_node_list_totals(trace_dir):
    nodes = load_nodes(trace_dir / "openb_node_list_gpu_node.csv")
    assert (len(nodes), sum(n.gpus for n in nodes)) == (1213, 6212)
    everything = load_nodes(trace_dir / "openb_node_list_all_node.csv")
    assert len(everything) == 1523 and sum(1 for n in everything if not n.gpus) == 310


@pytest.mark.parametrize("workload,rows", ROWS, ids=[r[0] for r in ROWS])
def test_pod_list_rows(trace_dir, workload, rows):
    pods = load_pods(trace_dir / f"openb_pod_list_{workload}.csv")
    assert len(pods) == rows
    if workload in GPU_REQUEST:
        assert sum(p.total_gpu_milli for p in pods) / 1000 == pytest.approx(GPU_REQUEST[workload], abs=0.05)  # doc rounds to 0.1


@pytest.mark.parametrize("workload,distinct,kept", SHAPES, ids=[s[0] for s in SHAPES])
def test_target_workload_shape_counts(trace_dir, workload, distinct, kept):
    pods = load_pods(trace_dir / f"openb_pod_list_{workload}.csv")
    counts = shape_counts(pods)
    assert len(counts) == distinct
    target = target_workload(pods)
    assert len(target) == kept
    # each kept shape carries its pod count (its weight is count / their sum); together >= 95 %
    assert [s.count for s in target] == [c.count for c in counts[:kept]]
    assert sum(s.count for s in target) * 100 >= 95 * len(pods)


def test_gpu_spec_duplicates_tolerated(trace_dir):
    pods = load_pods(trace_dir / "openb_pod_list_gpuspec25.csv")
    dup = [p for p in pods if p.gpu_spec == "V100M16|V100M32|V100M32"]
    assert len(dup) == 23 and dup[0].gpu_models == ("V100M16", "V100M32")


def test_pod_views(trace_dir):
    pods = {p.name: p for p in load_pods(trace_dir / "openb_pod_list_default.csv")}
    share, whole = pod_info(pods["openb-pod-0001"], 1), pod_info(pods["openb-pod-0000"], 0)
    assert (share.gpu_milli, share.gpu_count, share.requests["cpu"]) == (460, 1, 6000)
    assert share.requests["memory"] == 12288 * 2**20 and "nvidia.com/gpu" not in share.requests
    assert (whole.gpu_milli, whole.requests["nvidia.com/gpu"]) == (0, 1)
    manifest = pod_manifest(pods["openb-pod-0001"])
    assert manifest["metadata"]["annotations"] == {"gpusched.io/gpu-milli": "460"}


def test_node_view(trace_dir):
    node = load_nodes(trace_dir / "openb_node_list_gpu_node.csv")[0]
    info = node_info(node)
    assert (info.gpu_model, info.gpu_count, info.allocatable["cpu"]) == ("P100", 2, 64000)


def test_tuned_sequence_reaches_target(trace_dir):
    pods = load_pods(trace_dir / "openb_pod_list_default.csv")
    seq = tuned_sequence(pods, 42, 1.3, 6212 * 1000)
    total = sum(p.total_gpu_milli for p, _ in seq)
    assert 1.3 * 6212000 - 1000 < total <= 1.3 * 6212000 + 8000
    assert len({name for _, name in seq}) == len(seq)
    assert seq == tuned_sequence(pods, 42, 1.3, 6212 * 1000)


def test_tuned_sequence_drops_when_above(trace_dir):
    pods = load_pods(trace_dir / "openb_pod_list_multigpu40.csv")
    seq = tuned_sequence(pods, 42, 1.3, 6212 * 1000)
    assert sum(p.total_gpu_milli for p, _ in seq) <= 1.3 * 6212000 < 9442800


BAD = [("not-an-integer", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,abc,1,0,0\n", "cpu_milli"),
       ("missing-column", "name,cpu_milli,memory_mib,num_gpu\np,1,1,0\n", "gpu_milli"),
       ("share-on-two-gpus", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,2,500\n", "num_gpu 1")]


@pytest.mark.parametrize("text,needle", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_pod_csv_names_the_problem(tmp_path, text, needle):
    path = tmp_path / "pods.csv"
    path.write_text(text)
    with pytest.raises(UsageError, match=needle):
        load_pods(path)

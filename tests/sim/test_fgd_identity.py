"""FGD runs make exactly the decisions they made before the scoring was sped up.

Each case runs the whole FGD protocol (``sim.experiment.run``) on a small slice of the openb
cluster (every ``STRIDE``-th GPU node of ``openb_node_list_gpu_node.csv``: all models, ~50
nodes, so the run fills the cluster, saturates and fails pods within a second) or a prefix of
the full-size run, and compares every pod's node, GPU indices, milli and the cluster
fragmentation amount after it (``repr`` of the float) and the three discretised curves with the
record saved in ``tests/sim/data/fgd_decisions/`` from the code before the speed-up (commit
f96341a). ``bench/fgd_identity.py --check`` does the same for eight full-length runs.

To re-record after an intended change of decisions: ``GPUSCHED_RECORD_FGD=1 pytest`` this file,
and say why in the commit.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpusched.sim.experiment import RunSpec, decision_lines

DATA = Path(__file__).parent / "data" / "fgd_decisions"
STRIDE = 25
# id -> (nodes: "slice" or "full", workload, policy, seed, pod limit)
CASES = {
    "slice-default-fgd-42": ("slice", "default", "fgd", 42, None),
    "slice-default-fgd-43": ("slice", "default", "fgd", 43, None),
    "slice-cpu200-fgd-42": ("slice", "cpu200", "fgd", 42, None),
    "slice-gpuspec25-fgd-42": ("slice", "gpuspec25", "fgd", 42, None),
    "slice-multigpu40-fgd-42": ("slice", "multigpu40", "fgd", 42, None),
    "slice-default-fgdsat-42": ("slice", "default", "fgdsat", 42, None),
    # recorded at 2b3d998, before the move to gpusched/policies: they replace the fgdtight and
    # fgdfine cases, variants that left the code (docs/fgd-results.md keeps their results)
    "slice-gpushare80-fgd-42": ("slice", "gpushare80", "fgd", 42, None),
    "slice-multigpu20-fgdsat-42": ("slice", "multigpu20", "fgdsat", 42, None),
    "full-default-fgd-42-first-800": ("full", "default", "fgd", 42, 800),
}


@pytest.fixture(scope="module")
def node_slice(trace_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    lines = (trace_dir / "openb_node_list_gpu_node.csv").read_text().splitlines()
    path = tmp_path_factory.mktemp("nodes") / "openb_node_list_slice.csv"
    path.write_text("\n".join([lines[0], *lines[1::STRIDE]]) + "\n")
    return path


@pytest.mark.parametrize("case", CASES)
def test_decisions_identical_to_record(case: str, trace_dir: Path, node_slice: Path) -> None:
    nodes, workload, policy, seed, limit = CASES[case]
    nodes_csv = node_slice if nodes == "slice" else trace_dir / "openb_node_list_gpu_node.csv"
    spec = RunSpec(str(nodes_csv), str(trace_dir / f"openb_pod_list_{workload}.csv"), policy, seed)
    lines = decision_lines(spec, limit)
    saved = DATA / f"{case}.txt"
    if os.environ.get("GPUSCHED_RECORD_FGD"):
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text("\n".join(lines) + "\n")
    expected = saved.read_text().splitlines()
    first = next((i for i, (a, b) in enumerate(zip(expected, lines)) if a != b), None)
    assert first is None, f"line {first}: recorded {expected[first]!r}, now {lines[first]!r}"
    assert len(lines) == len(expected)

"""What-if variants: spec parsing, validation (one-line errors) and what each change does."""

from __future__ import annotations

import argparse

import pytest

from gpusched.errors import UsageError
from gpusched.sim.alibaba import MIB, TraceNode, load_nodes
from gpusched.sim.variants import (Scenario, add_change_options, build_variants, parse_variant,
                                   removal_count)
from gpusched.sim.whatif_stats import estimate, paired_difference, t_quantile

POLICIES = ("default", "fgd", "bestfit")


def node(name: str, model: str = "V100M16", gpus: int = 8) -> TraceNode:
    return TraceNode(name, 64_000, 256 * 1024 * MIB, gpus if model else 0, model)


def cluster() -> Scenario:
    """4 V100M16, 2 V100M32, 3 T4, 1 CPU-only node, in that list order."""
    nodes = ([node(f"v16-{i}") for i in range(4)] + [node(f"v32-{i}", "V100M32") for i in range(2)]
             + [node(f"t4-{i}", "T4", 2) for i in range(3)] + [node("cpu-0", "")])
    return Scenario(tuple(nodes))


def apply(options: str) -> Scenario:
    return parse_variant(f"v: {options}", POLICIES).apply(cluster())


# (id, options, node names gone, (model, count, gpus each) added)
NODE_CASES = [
    ("add-8-h100-default-shape", "--add-nodes 8xH100", [], ("H100-80GB", 8, 8)),
    ("add-lowercase-x-and-alias", "--add-nodes 2xa100", [], ("A100-40GB", 2, 8)),
    ("add-with-shape", "--add-nodes 3xT4:gpus=4,cpu=48,memory=192Gi", [], ("T4", 3, 4)),
    ("add-cpu-nodes", "--add-nodes 2xcpu:cpu=32", [], ("", 2, 0)),
    # 10 % of 6 V100 nodes = 0.6 -> 1 (half up); the last in list order goes
    ("remove-10pct-v100-prefix", "--remove-nodes 10%:V100", ["v32-1"], None),
    ("remove-50pct-v100", "--remove-nodes 50%:v100", ["v32-0", "v32-1", "v16-3"], None),
    ("remove-count-of-exact-model", "--remove-nodes 2:V100M16", ["v16-2", "v16-3"], None),
    ("remove-all-t4", "--remove-nodes 100%:T4", ["t4-0", "t4-1", "t4-2"], None),
    ("remove-cpu-only", "--remove-nodes 1:cpu", ["cpu-0"], None),
]


@pytest.mark.parametrize("options,gone,added", [c[1:] for c in NODE_CASES], ids=[c[0] for c in NODE_CASES])
def test_node_changes(options, gone, added):
    before = cluster()
    after = apply(options)
    names = {n.name for n in after.nodes}
    assert sorted(n.name for n in before.nodes if n.name not in names) == sorted(gone)
    new = [n for n in after.nodes if n.name not in {b.name for b in before.nodes}]
    if added is None:
        assert new == []
    else:
        model, count, gpus = added
        assert [(n.model, n.gpus) for n in new] == [(model, gpus)] * count
        assert len({n.name for n in new}) == count
    assert before == cluster()          # the base scenario is not changed in place


def test_add_nodes_default_shape_and_names():
    after = apply("--add-nodes 2xH100 --add-nodes 1xH100:gpus=4")
    added = [n for n in after.nodes if n.name.startswith("whatif-")]
    assert [n.name for n in added] == ["whatif-h100-80gb-1", "whatif-h100-80gb-2", "whatif-h100-80gb-3"]
    assert (added[0].cpu_milli, added[0].memory, added[0].gpus) == (128_000, 1 << 40, 8)
    assert added[2].gpus == 4


def test_other_changes_are_recorded(tmp_path):
    config = tmp_path / "ts.yaml"
    config.write_text("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                      "    - name: nvidia.com/gpu\n      replicas: 4\n")
    after = apply(f"--policy fgd --plugin-config {config} --quota team-a:requests.nvidia.com/gpu=16,pods=50 "
                  "--add-nodes 2xA100 --mig-config all-1g.5gb:A100")
    assert after.policy == "fgd" and after.plugin_config == str(config)
    assert [(q.namespace, q.hard) for q in after.quotas] == [
        ("team-a", (("requests.nvidia.com/gpu", "16"), ("pods", "50")))]
    assert after.quotas[0].manifest()["spec"]["hard"] == {"requests.nvidia.com/gpu": "16", "pods": "50"}
    assert after.mig_layouts == (("whatif-a100-40gb-1", "all-1g.5gb"), ("whatif-a100-40gb-2", "all-1g.5gb"))


# (id, variant options, the one-line error, a fragment of it)
BAD = [
    ("unknown-model", "--add-nodes 8xH1000", 'unknown GPU model "H1000"'),
    ("no-x", "--add-nodes 8H100", "expected COUNTxMODEL"),
    ("zero-count", "--add-nodes 0xH100", "count must be 1..10000"),
    ("too-many", "--add-nodes 10001xH100", "count must be 1..10000"),
    ("bad-shape-key", "--add-nodes 1xH100:disk=1Ti", '"disk=1Ti": expected KEY=VALUE'),
    ("gpus-on-cpu-node", "--add-nodes 1xcpu:gpus=2", "KEY one of cpu, memory"),
    ("bad-quantity", "--add-nodes 1xH100:memory=lots", "--add-nodes 1xH100:memory=lots:"),
    ("too-many-gpus", "--add-nodes 1xH100:gpus=17", "gpus must be 1..16"),
    # before: "invalid literal for int() with base 10: '1e9'"
    ("gpus-not-whole", "--add-nodes 1xH100:gpus=1e9", 'gpus: must be a whole number of GPUs, got "1e9"'),
    # issue 25: 5,000 digits passed isdigit() and int() raised (its 4,300-digit limit)
    ("gpus-5000-digits", "--add-nodes 1xH100:gpus=" + "9" * 5000, "gpus: must be a whole number of GPUs"),
    ("remove-unknown-model", "--remove-nodes 10%:V1000", 'unknown GPU model "V1000"'),
    ("remove-no-match", "--remove-nodes 10%:H100", 'no node matches "H100" (models in the cluster: '
                                                   "T4, V100M16, V100M32, cpu)"),
    ("remove-too-many", "--remove-nodes 5:T4", "only 3 nodes match"),
    ("remove-zero-pct", "--remove-nodes 0%:T4", "a percentage must be in (0, 100]"),
    ("remove-over-100", "--remove-nodes 150%:T4", "a percentage must be in (0, 100]"),
    ("remove-fraction-count", "--remove-nodes 1.5:T4", "a count a whole number"),
    ("remove-no-colon", "--remove-nodes 10%V100", "expected PERCENT%:MODEL"),
    ("unknown-policy", "--policy fastest", "--policy fastest: unknown policy (one of default, fgd, bestfit)"),
    ("missing-profile", "--profile /nonexistent.yaml", "--profile /nonexistent.yaml: cannot read"),
    ("mig-on-v100", "--mig-config all-1g.5gb:V100", '"all-1g.5gb" is not a MIG config of V100M16'),
    ("mig-no-model", "--mig-config all-balanced", "expected LAYOUT:MODEL"),
    ("quota-bad-ns", "--quota Team_A:pods=1", "expected NAMESPACE:RESOURCE=QUANTITY"),
    ("quota-bad-qty", "--quota a:pods=many", '"pods=many"'),
    ("quota-empty", "--quota a:", "no RESOURCE=QUANTITY"),
    # before: "<trace>: document 7: The ResourceQuota "whatif-quota" is invalid: ..." at the run
    ("quota-negative", "--quota a:nvidia.com/gpu=-1", '--quota a:nvidia.com/gpu=-1: "nvidia.com/gpu=-1": '
                                                      "must be greater than or equal to 0"),
    ("unknown-option", "--add-node 8xH100", "unrecognized arguments: --add-node 8xH100"),
    ("unbalanced-quote", "--add-nodes '8xH100", "No closing quotation"),
]


@pytest.mark.parametrize("options,fragment", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_specs_are_one_line(options, fragment):
    with pytest.raises(UsageError) as info:
        apply(options)
    message = str(info.value)
    assert fragment in message and "\n" not in message


def test_bad_plugin_config_names_the_file(tmp_path):
    bad = tmp_path / "dp.yaml"
    bad.write_text("version: v2\n")
    with pytest.raises(UsageError) as info:
        apply(f"--plugin-config {bad}")
    assert str(bad) in str(info.value) and "unknown version" in str(info.value)


def args_of(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_change_options(parser)
    parser.add_argument("--variant", action="append", default=[])
    parser.add_argument("--name", default=None)
    return parser.parse_args(argv)


VARIANT_LISTS = [
    ("flags-only", ["--add-nodes", "8xH100"], ["as is", "changed"]),
    ("flags-named", ["--add-nodes", "8xH100", "--name", "plus H100"], ["as is", "plus H100"]),
    ("variants", ["--variant", "minus 10% V100: --remove-nodes 10%:V100",
                  "--variant", "plus 8 H100: --add-nodes 8xH100"],
     ["as is", "minus 10% V100", "plus 8 H100"]),
]


@pytest.mark.parametrize("argv,names", [v[1:] for v in VARIANT_LISTS], ids=[v[0] for v in VARIANT_LISTS])
def test_build_variants_baseline_first(argv, names):
    variants = build_variants(args_of(argv), POLICIES)
    assert [v.name for v in variants] == names
    assert variants[0].apply(cluster()) == cluster()


@pytest.mark.parametrize("argv,fragment", [
    ([], "nothing to compare"),
    (["--variant", "a: --policy fgd", "--variant", "a: --policy bestfit"], 'the name "a" is used twice'),
    (["--variant", "as is: --policy fgd"], 'the name "as is" is used twice'),
    (["--variant", "--policy fgd"], 'expected "NAME: OPTIONS"'),
    (["--variant", f"{'x' * 41}: --policy fgd"], 'expected "NAME: OPTIONS"'),
    (["--variant", "a: --policy fgd"] * 1 + [a for i in range(8) for a in ("--variant", f"v{i}: --policy fgd")],
     "at most 8 variants"),
], ids=["none", "duplicate", "baseline-name", "no-name", "long-name", "too-many"])
def test_bad_variant_lists(argv, fragment):
    with pytest.raises(UsageError, match=None) as info:
        build_variants(args_of(argv), POLICIES)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_openb_minus_ten_percent_of_v100(trace_dir):
    """The capacity-planning example: 85 V100 nodes (55 V100M16 + 30 V100M32) -> 9 removed."""
    base = Scenario(tuple(load_nodes(trace_dir / "openb_node_list_gpu_node.csv", gpu_only=True)))
    after = parse_variant("m: --remove-nodes 10%:V100", POLICIES).apply(base)
    assert len(base.nodes) - len(after.nodes) == 9 == removal_count(85, 10, True)
    assert all(n.model.startswith("V100") for n in base.nodes if n not in after.nodes)
    plus = parse_variant("p: --add-nodes 8xH100", POLICIES).apply(base)
    assert plus.gpus - base.gpus == 64


# ---- statistics ------------------------------------------------------------------------------


@pytest.mark.parametrize("df,q", [(1, 12.706), (2, 4.303), (9, 2.262), (30, 2.042), (31, 2.042),
                                  (45, 2.021), (120, 1.980), (121, 1.960)])
def test_t_quantiles(df, q):
    """scipy.stats.t.ppf(0.975, df), 3 decimals; between table rows the lower df (wider)."""
    assert t_quantile(df) == q


def test_estimate_and_paired_difference():
    e = estimate([10.0, 12.0, 14.0, 16.0])        # s = 2.582, n = 4, t3 = 3.182
    assert e.mean == 13.0 and e.half_width == pytest.approx(3.182 * 2.5819889 / 2, rel=1e-6)
    d = paired_difference([9.0, 11.0, 13.0, 15.0], [10.0, 12.0, 14.0, 16.0])
    assert (d.mean, d.half_width, d.excludes_zero()) == (-1.0, 0.0, True)
    one = estimate([3.0])
    assert one.mean == 3.0 and one.half_width != one.half_width


# ---- the trace whatif replays ------------------------------------------------------------------

POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
NODE_CSV = "sn,cpu_milli,memory_mib,gpu,model\nn-1,32000,131072,2,T4\nc-1,32000,131072,0,\n"


def write_trace(tmp_path, rows: str):
    (tmp_path / "nodes.csv").write_text(NODE_CSV)
    (tmp_path / "pods.csv").write_text(POD_HEADER + rows)
    return tmp_path / "nodes.csv", tmp_path / "pods.csv"


def test_trace_time_scale_and_first(tmp_path):
    from gpusched.sim.whatif_trace import alibaba_trace

    nodes, pods = write_trace(tmp_path, "b,1000,1024,1,500,T4|T4,BE,Running,1000,5000,1200\n"
                                        "a,1000,1024,0,0,,LS,Pending,400,900,\n"
                                        "c,1000,1024,2,1000,,,Failed,3400,3400,3400\n")
    trace = alibaba_trace(nodes, pods, time_scale=10)
    # sorted by creation, origin at the first one, arrivals / 10, run times as recorded (>= 1 s)
    assert [(j.name, j.arrival, j.run_time) for j in trace.jobs] == [
        ("a", 0.0, 500.0), ("b", 60.0, 3800.0), ("c", 300.0, 0.0)]
    assert (trace.jobs[1].gpu_milli, trace.jobs[1].gpu_models, trace.jobs[1].qos) == (500, ("T4",), "BE")
    assert [n.name for n in trace.nodes] == ["n-1"]          # GPU nodes only
    assert [j.name for j in alibaba_trace(nodes, pods, first=2).jobs] == ["a", "b"]


def test_trace_bad_rows_are_replay_input_errors(tmp_path):
    from gpusched.sim.whatif_trace import alibaba_trace

    nodes, pods = write_trace(tmp_path, "a,1000,1024,1,1000,,LS,Running,50,10,50\n")
    with pytest.raises(UsageError) as info:
        alibaba_trace(nodes, pods)
    assert str(info.value).startswith(f"{pods}: line 2: deletion_time: 10 is before")

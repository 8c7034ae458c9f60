"""A command imports what it uses (issue 28, point 8): ``get`` and ``describe`` of stored objects
load the store and the view, not NumPy, the scheduler, the controllers or the sim layer.

Each case runs one command in a fresh interpreter and lists what it imported, so a module-level
import that pulls the control plane back into the read path fails here by name, whatever the
machine's speed (the CPU time itself is measured by ``bench/bench_control_plane.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import pytest

from gpusched.cli import parser as cli_parser
from tests.cli.runner import Gpusched
from tests.conftest import REPO_ROOT, run_process

# What a read of a furnished state file must not import (prefixes of module names).
# ``uuid`` imports ``platform`` (3 ms): the store's uids are made by ``objects.uids``.
# ``objects.typed_views`` (31 TypedDicts, 4 ms to create) is for the type checker alone.
TYPE_CHECKER_ONLY = ("gpusched.objects.typed_views",)
CONTROL_PLANE = (*TYPE_CHECKER_ONLY, "numpy", "gpusched.scheduler", "gpusched.sim", "gpusched.devices",
                 "gpusched.dra", "gpusched.kueue", "cel_expr_python", "google.protobuf",
                 "uuid", "platform",
                 "gpusched.cluster.settle", "gpusched.cluster.admission",
                 "gpusched.cluster.controllers.registry", "gpusched.cluster.scheduling",
                 "gpusched.slurm", "gpusched.server", "gpusched.metrics")
READ_COMMANDS = {
    "get-pods": ("get", "pods"),
    "get-pods-wide-all-namespaces": ("get", "pods", "-A", "-o", "wide"),
    "get-nodes-selector": ("get", "nodes", "-l", "gpusched.io/pool"),
    "get-pod-json": ("get", "pods", "-o", "json"),
    "describe-pod": ("describe", "pod", "train-small"),
    "events": ("events",),
}
POD = """apiVersion: v1
kind: Pod
metadata: {name: train-small}
spec:
  containers:
  - {name: c, image: nvidia/cuda, resources: {limits: {nvidia.com/gpu: 1}}}
"""
PROBE = ("import io, json, sys\n"
         "from contextlib import redirect_stdout\n"
         "from gpusched.cli.main import main\n"
         "with redirect_stdout(io.StringIO()):\n"
         "    code = main(sys.argv[1:])\n"
         "print(json.dumps([code, sorted(sys.modules)]))\n")


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> str:
    cli = Gpusched(tmp_path_factory.mktemp("startup"))
    cli.cluster()
    cli.ok("apply", "-f", "-", stdin=POD)
    return cli.state


def imported_by(state: str, argv: tuple[str, ...]) -> list[str]:
    proc = run_process([sys.executable, "-c", PROBE, "--state", state, *argv], cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr
    code, modules = json.loads(proc.stdout.splitlines()[-1])
    assert code == 0, f"gpusched {' '.join(argv)} exited {code}: {proc.stderr}"
    return list(modules)


@pytest.mark.parametrize("argv", READ_COMMANDS.values(), ids=READ_COMMANDS.keys())
def test_a_read_imports_no_control_plane(state: str, argv: tuple[str, ...]) -> None:
    heavy = [m for m in imported_by(state, argv) if m.startswith(CONTROL_PLANE)]
    assert not heavy, f"gpusched {' '.join(argv)} imported {heavy}"


# What ``apply -f`` of one pod (it settles: NumPy and the scheduler are needed) must not import:
# - the entry-point machinery while no installed distribution declares a scheduler plugin
#   (``scheduler.registry._may_declare``), the table printers of ``get``/``events``;
# - the controllers of kinds the cluster holds none of, the cluster autoscaler while no NodePool
#   is autoscaled (``controllers.registry._only_when``), the backfill and strict queue orders
#   while the default one is set (``cluster.scheduling.mode``);
# - DRA's semantics (``gpusched.dra``: the allocator, its CEL selectors on cel-expr-python and the
#   protobuf runtime under it) while no pod has a claim and no DRA object exists
#   (``scheduler.plugins.dynamic_resources``), nor the kubelet's preparing of claims
#   (``kubelet.pod_lifecycle._prepare_problem``);
# - the admission plugins of other kinds (``admission.registry``: Kueue's and JobSet's webhooks,
#   the Deployment load curve's parser);
# - ``_strptime``: the scheduler's cache reads creation times by position
#   (``apiserver.store._by_position``).
DRA = ("gpusched.dra", "cel_expr_python", "google.protobuf", "gpusched.cluster.kubelet.dra_prepare")
OTHER_KINDS_ADMISSION = ("gpusched.kueue", "gpusched.cluster.admission.kueue_",
                         "gpusched.cluster.admission.jobset_defaults",
                         "gpusched.cluster.admission.load_curve", "gpusched.cluster.clock.load")
APPLY_NEEDS_NOT = (*DRA, *OTHER_KINDS_ADMISSION, *TYPE_CHECKER_ONLY, "_strptime",
                   "importlib.metadata", "gpusched.cli.columns",
                   "gpusched.cluster.controllers.workloads.deployment",
                   "gpusched.cluster.controllers.workloads.replicaset",
                   "gpusched.cluster.controllers.workloads.daemonset",
                   "gpusched.cluster.controllers.autoscaling.hpa",
                   "gpusched.cluster.controllers.autoscaling.vpa",
                   "gpusched.cluster.controllers.autoscaling.autoscaler_config",
                   "gpusched.cluster.controllers.autoscaling.autoscaler_scaledown",
                   "gpusched.cluster.controllers.autoscaling.autoscaler_status",
                   "gpusched.cluster.controllers.gpuoperator",
                   "gpusched.cluster.scheduling.backfill", "gpusched.scheduler.backfill")


def test_apply_of_one_pod_imports_only_what_it_uses(state: str, tmp_path: Path) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(POD.replace("train-small", "one-more"))
    heavy = [m for m in imported_by(state, ("apply", "-f", str(manifest)))
             if m.startswith(APPLY_NEEDS_NOT)]
    assert not heavy, f"gpusched apply -f imported {heavy}"


def test_a_pod_with_a_claim_imports_the_allocator(tmp_path: Path) -> None:
    """The other side of the DRA exclusion: on DRA-managed nodes a pod whose claim comes from a
    template is allocated devices, so the command loads the allocator and CEL (and the probe
    above sees what a command imports)."""
    cli = Gpusched(tmp_path)
    cli.ok("apply", "-f", "examples/dra/embedded/nodes.yaml")
    modules = imported_by(cli.state, ("apply", "-f", "examples/dra/gpu-test1.yaml"))
    assert {"gpusched.dra.allocator", "gpusched.dra.cel", "cel_expr_python",
            "gpusched.cluster.kubelet.dra_prepare"} <= set(modules)


THREADS = ("import io, os, sys\n"
           "from contextlib import redirect_stdout\n"
           "from gpusched.cli.main import main\n"
           "with redirect_stdout(io.StringIO()):\n"
           "    code = main(sys.argv[1:])\n"
           "print(code, len(os.listdir('/proc/self/task')))\n")


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="threads listed in /proc (Linux)")
def test_apply_starts_no_blas_threads(state: str, tmp_path: Path) -> None:
    """NumPy's import would start OpenBLAS's thread pool: one thread per core, for matrix-vector
    products over a node's GPUs that one thread does (``cli.main._one_blas_thread``)."""
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(POD.replace("train-small", "threads"))
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    proc = run_process([sys.executable, "-c", THREADS, "--state", state, "apply", "-f",
                        str(manifest)], cwd=REPO_ROOT, env=env)
    assert proc.stdout.split() == ["0", "1"], proc.stderr


def test_get_prints_no_yaml_so_imports_no_yaml(state: str) -> None:
    assert "yaml" not in imported_by(state, ("get", "pods"))


def subcommands(parser: argparse.ArgumentParser) -> list[str]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(action.choices)


def test_the_command_table_names_every_command_in_help_order() -> None:
    words = [w for names, _ in (*cli_parser.COMMANDS, cli_parser.SIM) for w in names]
    assert subcommands(cli_parser.build_parser(["--help"])) == words


@pytest.mark.parametrize("names", [names for names, _ in (*cli_parser.COMMANDS, cli_parser.SIM)],
                         ids=lambda names: names[0])
def test_a_command_line_builds_its_own_command_group_alone(names: tuple[str, ...]) -> None:
    assert subcommands(cli_parser.build_parser([names[0], "--help"])) == list(names)


def test_an_unknown_command_lists_every_command_but_the_sim_layer() -> None:
    words = [w for names, _ in cli_parser.COMMANDS for w in names]
    assert subcommands(cli_parser.build_parser(["nosuch"])) == words


EXIT_PROBE = ("import atexit, gc, io, sys\n"
              "from contextlib import redirect_stdout\n"
              "atexit.register(lambda: print('frozen at exit', gc.get_freeze_count() > 0))\n"
              "from gpusched.cli.main import main\n"
              "with redirect_stdout(io.StringIO()):\n"
              "    code = main(sys.argv[1:])\n"
              "print('exit code', code)\n")


def test_the_process_ends_without_a_full_collection(state: str) -> None:
    """The interpreter's last full collection (every object the command left alive: 15-20 ms of
    a one-pod ``apply``) is skipped by freezing them at exit (``cli.main._no_collection_at_exit``);
    the probe's own exit handler, registered first, runs after it."""
    proc = run_process([sys.executable, "-c", EXIT_PROBE, "--state", state, "get", "pods"],
                       cwd=REPO_ROOT)
    assert proc.stdout.splitlines() == ["exit code 0", "frozen at exit True"], proc.stderr

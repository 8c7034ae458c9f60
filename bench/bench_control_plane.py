"""Control-plane benchmark: this tree against an older one, side by side in one run (a script).

The control plane's figures, each the CPU time (user + sys) of one ``gpusched`` process:

- **bulk apply**: ``gpusched apply -f`` of one file of ``--pods`` one-GPU pods (500m, 1Gi,
  ``nvidia.com/gpu: 1``) onto ``--nodes`` nodes of a NodePool (8x A100-40GB, cpu 96, memory
  1Ti), every pod bound: CPU seconds, pods per CPU second, ms of CPU per pod;
- **start-up**: ``gpusched get pods`` on the 4-node example cluster (``examples/cluster.yaml``)
  and ``gpusched apply -f`` of one pod onto it, best and median of ``--runs`` runs;
- **overload replay**: ``--overload-script`` (the scheduling queue's replay under overload, its
  shortened form ``--form short``) when this tree has it, run against each tree: its CPU
  seconds, or "not finished" after ``--overload-timeout``.

The older trees (``--base``, repeatable, default ``f9b2791``, the tree before the control
plane's reshaping) are checked out with ``git worktree add`` into a temporary folder and removed
at the end. Each process runs from its own tree (``PYTHONPATH``) with its bytecode cached outside the
trees (``PYTHONPYCACHEPREFIX``), so start-up measures imports rather than compiling; the two
trees alternate within every round, so a change of the machine's load hits both. The load average is printed with the results: on a
shared machine the CPU seconds compare, wall seconds do not.

    python bench/bench_control_plane.py                         # 5,000 pods, 1,000 nodes, 2 rounds
    python bench/bench_control_plane.py --pods 1000 --rounds 1  # quicker
    python bench/bench_control_plane.py --base main --runs 9
    python bench/bench_control_plane.py --base f9b2791 --base main --startup-only --runs 10

Results and the machine's load go to docs/benchmarks.md ("Control plane: start-up and bulk apply").
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
START = "2026-01-01T00:00:00Z"
POD = """apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  containers:
  - name: c
    image: nvidia/cuda
    resources:
      requests: {{cpu: 500m, memory: 1Gi, nvidia.com/gpu: 1}}
      limits: {{nvidia.com/gpu: 1}}
"""
NODEPOOL = """apiVersion: gpusched.io/v1alpha1
kind: NodePool
metadata: {{name: big}}
spec: {{count: {count}, gpu: {{model: A100-40GB, count: 8}}, cpu: "96", memory: 1Ti}}
"""


@dataclass(frozen=True)
class Tree:
    name: str          # "this", or the older tree's commit as given to --base
    root: Path
    cache: Path        # its bytecode (PYTHONPYCACHEPREFIX)


@dataclass(frozen=True)
class Run:
    cpu: float         # user + sys seconds of the process
    wall: float
    stdout: str


def run(tree: Tree, state: Path, *argv: str, timeout: float | None = None) -> Run:
    """``gpusched --state STATE ARGV`` from ``tree``; its CPU time from the children's rusage."""
    env = dict(os.environ, PYTHONPATH=str(tree.root), PYTHONPYCACHEPREFIX=str(tree.cache),
               GPUSCHED_START=START)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "gpusched", "--state", str(state), *argv],
                          cwd=tree.root, env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{tree.name}: gpusched {' '.join(argv)} failed: {proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(cpu, wall, proc.stdout)


def write_manifests(folder: Path, nodes: int, pods: int) -> dict[str, Path]:
    paths = {"nodes": folder / "nodes.yaml", "pods": folder / f"pods{pods}.yaml",
             "pod1": folder / "pod1.yaml"}
    paths["nodes"].write_text(NODEPOOL.format(count=nodes))
    paths["pods"].write_text("---\n".join(POD.format(name=f"p{i}") for i in range(pods)))
    paths["pod1"].write_text(POD.format(name="one"))
    return paths


def templates(tree: Tree, folder: Path, manifests: dict[str, Path],
              bulk: bool = True) -> dict[str, Path]:
    """State files to copy before each measured command: the big NodePool (unless ``bulk`` is
    False), the example cluster."""
    stem = tree.name.replace("/", "_")
    out = {"nodes": folder / f"{stem}-nodes.db", "small": folder / f"{stem}-small.db"}
    if bulk:
        run(tree, out["nodes"], "apply", "-f", str(manifests["nodes"]))
    run(tree, out["small"], "apply", "-f", "examples/cluster.yaml")
    run(tree, out["small"], "get", "pods")        # warms the bytecode cache of the read path
    return out


def fresh(template: Path, folder: Path) -> Path:
    target = folder / "run.db"
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(template, target)
    return target


def bulk_apply(tree: Tree, template: Path, folder: Path, pods_file: Path, pods: int) -> Run:
    result = run(tree, fresh(template, folder), "apply", "-f", str(pods_file))
    created = result.stdout.count(" created")
    if created != pods:
        raise SystemExit(f"{tree.name}: {created} of {pods} pods created")
    nodes = run(tree, folder / "run.db", "get", "pods", "-o", "jsonpath={.items[*].spec.nodeName}")
    bound = len(nodes.stdout.split())
    if bound != pods:
        raise SystemExit(f"{tree.name}: {bound} of {pods} pods bound after the apply")
    return result


def overload(tree: Tree, script: Path, timeout: float) -> str:
    """The overload replay's CPU seconds (this tree's script run against ``tree``), or why none."""
    if not (REPO / script).exists():
        return "no such script yet"
    env = dict(os.environ, PYTHONPATH=str(tree.root), PYTHONPYCACHEPREFIX=str(tree.cache))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        subprocess.run([sys.executable, str(REPO / script), "--form", "short"], cwd=tree.root,
                       env=env, capture_output=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return f"not finished after {timeout:.0f} s wall"
    except subprocess.CalledProcessError as err:
        return f"failed: {err.stderr.decode()[-300:]}"
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return f"{(after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime):.1f} s CPU"


def checkout(base: str, target: Path) -> Path:
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(target), base],
                   check=True, capture_output=True)
    return target


def remove_checkout(target: Path) -> None:
    subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(target)],
                   capture_output=True)


def summary(values: list[float]) -> str:
    return f"{min(values) * 1000:.0f} / {statistics.median(values) * 1000:.0f}"


def measure(args: argparse.Namespace, trees: list[Tree], folder: Path) -> None:
    manifests = write_manifests(folder, args.nodes, args.pods)
    states = {t.name: templates(t, folder, manifests, not args.startup_only) for t in trees}
    get_cpu: dict[str, list[float]] = {t.name: [] for t in trees}
    one_cpu: dict[str, list[float]] = {t.name: [] for t in trees}
    bulk: dict[str, list[Run]] = {t.name: [] for t in trees}
    loads = [os.getloadavg()[0]]
    for round_ in range(args.rounds):
        order = trees if round_ % 2 == 0 else trees[::-1]
        for _ in range(args.runs):
            for tree in order:
                get_cpu[tree.name].append(run(tree, states[tree.name]["small"], "get", "pods").cpu)
                one = run(tree, fresh(states[tree.name]["small"], folder), "apply", "-f",
                          str(manifests["pod1"]))
                one_cpu[tree.name].append(one.cpu)
        loads.append(os.getloadavg()[0])
        for tree in order if not args.startup_only else ():
            result = bulk_apply(tree, states[tree.name]["nodes"], folder, manifests["pods"], args.pods)
            bulk[tree.name].append(result)
            loads.append(os.getloadavg()[0])
            print(f"round {round_ + 1} {tree.name}: apply of {args.pods} pods {result.cpu:.2f} s CPU, "
                  f"{result.wall:.1f} s wall (load {loads[-1]:.1f})", file=sys.stderr)
    print(f"\nload average (1 min) during the run: {min(loads):.1f}-{max(loads):.1f}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    if args.startup_only:
        print(f"| tree | `get pods` ms CPU (best / median of {args.runs * args.rounds}) "
              "| `apply -f` one pod ms CPU (best / median) |")
        print("|---|---:|---:|")
        for tree in trees:
            print(f"| {tree.name} | {summary(get_cpu[tree.name])} | {summary(one_cpu[tree.name])} |")
        return
    print(f"| tree | apply {args.pods:,} pods onto {args.nodes:,} nodes: CPU s | pods per CPU s "
          f"| ms CPU per pod | wall s | `get pods` ms CPU (best / median of {args.runs * args.rounds}) "
          "| `apply -f` one pod ms CPU (best / median) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for tree in trees:
        cpus = [r.cpu for r in bulk[tree.name]]
        walls = [r.wall for r in bulk[tree.name]]
        print(f"| {tree.name} | {'-'.join(f'{c:.2f}' for c in sorted(cpus))} | "
              f"{args.pods / min(cpus):,.0f} | {min(cpus) / args.pods * 1000:.2f} | "
              f"{'-'.join(f'{w:.1f}' for w in sorted(walls))} | {summary(get_cpu[tree.name])} | "
              f"{summary(one_cpu[tree.name])} |")
    for tree in trees:
        print(f"\noverload replay ({args.overload_script}), {tree.name}: "
              f"{overload(tree, Path(args.overload_script), args.overload_timeout)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", action="append",
                        help="an older tree (a commit; repeatable; default f9b2791)")
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5, help="start-up runs per round and tree")
    parser.add_argument("--rounds", type=int, default=2, help="bulk applies per tree, alternated")
    parser.add_argument("--overload-script", default="bench/bench_overload.py")
    parser.add_argument("--overload-timeout", type=float, default=900.0)
    parser.add_argument("--startup-only", action="store_true",
                        help="only the start-up figures: no bulk apply, no overload replay")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="gpusched-bench-cp-"))
    bases = [(base, checkout(base, folder / f"base{i}")) for i, base in enumerate(args.base or ["f9b2791"])]
    try:
        trees = [Tree(base, root, folder / f"pycache-base{i}") for i, (base, root) in enumerate(bases)]
        measure(args, [*trees, Tree("this", REPO, folder / "pycache-this")], folder)
    finally:
        for _base, root in bases:
            remove_checkout(root)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

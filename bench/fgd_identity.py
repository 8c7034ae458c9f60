"""Per-pod decisions of whole FGD runs, saved once and compared byte for byte after a change.

Speed work on the FGD scoring must not move a single pod: this records, for each run below,
every pod's node, GPU indices and milli, and the cluster fragmentation amount after it (``repr``
of the float, so even a reordered sum shows), plus the three discretised curves.

Usage (from the repository root):
    python bench/fgd_identity.py --save     # before the change: writes results/fgd-identity/
    python bench/fgd_identity.py --check    # after it: exit 1 and name the first differing pod
    [--jobs 2] [--only default-fgd-42,...]
    [--cpu-features]    # the runs with numpy's AVX-512 and AVX2 families switched off and
                        # OpenBLAS on an older kernel (--blas-core, default Sandybridge): the
                        # decisions are exact integer arithmetic, so --check must still pass

``tests/sim/test_fgd_identity.py`` checks a short prefix of the same kind of record in the
test suite; this script is the full-length comparison (about 8 runs of 5-10 s CPU each).
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import sys
from pathlib import Path

from gpusched.sim.experiment import RunSpec, decision_lines

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "alibaba-gpu-v2023"
OUT = Path(__file__).resolve().parents[1] / "results" / "fgd-identity"
NODES = str(DATA / "openb_node_list_gpu_node.csv")
# name -> (workload, policy, seed)
RUNS = {f"{w}-{p}-{s}": (w, p, s) for w, p, s in (
    ("default", "fgd", 42), ("default", "fgd", 43), ("cpu200", "fgd", 42), ("gpuspec25", "fgd", 42),
    ("multigpu40", "fgd", 42), ("default", "fgdsat", 42), ("gpushare80", "fgd", 42),
    ("multigpu20", "fgdsat", 42))}


def _one(name: str) -> tuple[str, list[str]]:
    workload, policy, seed = RUNS[name]
    return name, decision_lines(RunSpec(NODES, str(DATA / f"openb_pod_list_{workload}.csv"), policy, seed))


SIMD_FAMILIES = ("X86_V4", "AVX512", "X86_V3", "AVX2", "FMA3", "F16C", "AVX")


def switch_off_cpu_features(blas_core: str) -> str:
    """Set the environment the spawned workers start with: numpy's dispatchable features of these
    families that this processor has switched off (numpy refuses its baseline), OpenBLAS's kernel
    forced; returns a description."""
    import numpy._core._multiarray_umath as umath      # what numpy can dispatch here
    present = [f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)]
    off = [f for f in present if f.startswith(SIMD_FAMILIES)]
    if off:
        os.environ["NPY_DISABLE_CPU_FEATURES"] = " ".join(off)
    os.environ["OPENBLAS_CORETYPE"] = blas_core
    return f"NPY_DISABLE_CPU_FEATURES={' '.join(off) or '(none can be)'} OPENBLAS_CORETYPE={blas_core}"


def main() -> int:
    parser = argparse.ArgumentParser()
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--save", action="store_true")
    mode.add_argument("--check", action="store_true")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", default=",".join(RUNS))
    parser.add_argument("--cpu-features", action="store_true",
                        help="switch numpy's AVX-512/AVX2 paths off and force an OpenBLAS kernel")
    parser.add_argument("--blas-core", default="Sandybridge")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in RUNS]
    if unknown:
        print(f"unknown run {unknown[0]} (one of {', '.join(RUNS)})", file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    if args.cpu_features:
        print(f"workers run with {switch_off_cpu_features(args.blas_core)}")
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        done = dict(pool.imap_unordered(_one, names))
    failed = 0
    for name in names:
        text = "\n".join(done[name]) + "\n"
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        path = OUT / f"{name}.txt"
        if args.save:
            path.write_text(text)
            print(f"{name}: saved {len(done[name])} lines, sha256 {digest}")
            continue
        failed += not _compare(name, path, done[name], digest)
    return 1 if failed else 0


def _compare(name: str, path: Path, lines: list[str], digest: str) -> bool:
    if not path.is_file():
        print(f"{name}: no saved record at {path} (run --save first)")
        return False
    saved = path.read_text().splitlines()
    if saved == lines:
        print(f"{name}: identical ({len(lines)} lines, sha256 {digest})")
        return True
    first = next((i for i, (a, b) in enumerate(zip(saved, lines)) if a != b), min(len(saved), len(lines)))
    print(f"{name}: DIFFERS at line {first}: saved {saved[first] if first < len(saved) else '<end>'!r}"
          f" now {lines[first] if first < len(lines) else '<end>'!r}")
    return False


if __name__ == "__main__":
    sys.exit(main())

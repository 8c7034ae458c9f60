"""FGD runs make the recorded decisions whatever SIMD paths numpy and OpenBLAS take (issue 27).

A processor without AVX-512 (or without AVX2/FMA) runs numpy's other SIMD paths and OpenBLAS's
other kernels; with float scores that moved the last bits of every fragmentation value and, at a
tie, a placement (``slice-gpushare80-fgd-42``: pod 4 went to another node on an AMD EPYC). This
test re-runs decision-record cases of ``test_fgd_identity`` in subprocesses with
``NPY_DISABLE_CPU_FEATURES`` switching off the AVX-512 family, then the AVX2/FMA3 family too (the
names are read from numpy at run time: numpy refuses to disable its baseline, so only the
dispatchable features this processor has are named), each with ``OPENBLAS_CORETYPE`` set to an
older kernel, and compares every line, floats included, with the record: the scores are exact
integer arithmetic (``policies.fragmentation``), so nothing may differ.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sim.test_fgd_identity import CASES, DATA, node_slice  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[2]
# the case whose tie moved between processors, and one with many multi-GPU pods
RUN_CASES = ("slice-gpushare80-fgd-42", "slice-multigpu20-fgdsat-42")
AVX512_FAMILY = ("X86_V4", "AVX512F", "AVX512CD", "AVX512_SKX", "AVX512_CLX", "AVX512_CNL",
                 "AVX512_ICL", "AVX512_SPR", "AVX512_KNL", "AVX512_KNM")
AVX2_FAMILY = ("X86_V3", "AVX2", "FMA3", "F16C", "AVX")

PROBE = ("import json, numpy._core._multiarray_umath as m; "
         "print(json.dumps([f for f in m.__cpu_dispatch__ if m.__cpu_features__.get(f)]))")
RUNNER = """
import sys
from gpusched.sim.experiment import RunSpec, decision_lines
nodes, *runs = sys.argv[1:]
for pods, policy, seed in zip(runs[::3], runs[1::3], runs[2::3]):
    print("\\n".join(decision_lines(RunSpec(nodes, pods, policy, int(seed)))))
    print("--")
"""


def dispatchable_present() -> list[str]:
    """numpy's dispatchable CPU features that this processor has (what may be switched off)."""
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    features: list[str] = json.loads(out.stdout)
    return features


def variants() -> list[tuple[str, dict[str, str]]]:
    present = dispatchable_present()
    avx512 = [f for f in present if f in AVX512_FAMILY or f.startswith("AVX512")]
    avx2 = avx512 + [f for f in present if f in AVX2_FAMILY]
    found = []
    if avx512:
        found.append(("no-avx512-sandybridge-blas", {"NPY_DISABLE_CPU_FEATURES": " ".join(avx512),
                                                      "OPENBLAS_CORETYPE": "Sandybridge"}))
    if len(avx2) > len(avx512):
        found.append(("no-avx2-avx512-prescott-blas", {"NPY_DISABLE_CPU_FEATURES": " ".join(avx2),
                                                        "OPENBLAS_CORETYPE": "Prescott"}))
    return found


def run_cases(env: dict[str, str], trace_dir: Path, node_slice: Path) -> list[list[str]]:
    """The decision lines of each of ``RUN_CASES``, from one subprocess under ``env``."""
    args = []
    for case in RUN_CASES:
        _, workload, policy, seed, _ = CASES[case]
        args += [str(trace_dir / f"openb_pod_list_{workload}.csv"), policy, str(seed)]
    full_env = {**os.environ, **env, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    out = subprocess.run([sys.executable, "-c", RUNNER, str(node_slice), *args],
                         capture_output=True, text=True, env=full_env, cwd=ROOT, timeout=900)
    assert out.returncode == 0, f"under {env}: {out.stderr.strip().splitlines()[-1:]}"
    return [block.strip("\n").splitlines() for block in out.stdout.split("--\n")[:-1]]


def test_decisions_hold_with_simd_paths_and_blas_kernels_switched(trace_dir: Path,
                                                                  node_slice: Path) -> None:
    found = variants()
    if not found:
        pytest.skip(f"numpy can switch off none of this processor's features "
                    f"(dispatchable and present: {dispatchable_present()})")
    for name, env in found:
        for case, lines in zip(RUN_CASES, run_cases(env, trace_dir, node_slice), strict=True):
            expected = (DATA / f"{case}.txt").read_text().splitlines()
            first = next((i for i, (a, b) in enumerate(zip(expected, lines)) if a != b), None)
            assert first is None, (f"{case} under {name} ({env}): line {first}: recorded "
                                   f"{expected[first]!r}, now {lines[first]!r}")
            assert len(lines) == len(expected), (case, name)

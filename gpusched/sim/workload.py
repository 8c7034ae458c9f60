"""The FGD experiment workload: the target workload (typical shapes) and the tuned pod sequence.

Section 3.1 / 3.3 / 3.7 of ``fgd-and-alibaba-trace.md``:

- ``target_workload(pods)``: every pod of the *untuned* trace reduced to a shape
  ``(cpu_milli, per-GPU milli, num_gpu, raw gpu_spec)``; shapes sorted by count (ties: first
  appearance in the file, a documented order since the reference's Go sort is unspecified),
  added one at a time until they cover >= 95 % of pods (CPU-only pods included), each with its
  pod count (``TargetShape.count``: weight p_m = count / the kept shapes' total, so the weights
  sum to 1). A CPU request of 0 is read as 100 m. Each shape also carries the
  median memory request of its pods (``TargetShape.memory``; FGD ignores memory, FGD-Fill reads it).
- ``tuned_sequence(pods, seed, tune, capacity_milli)``: shuffle with the seed, then append clones
  drawn with replacement until the total GPU request reaches ``tune x capacity`` (the reference's
  stop test compares the clone's *per-GPU* milli, so the last multi-GPU clone may overshoot), or
  drop random pods while the total is above it.

Neighbours: reads ``sim.alibaba`` records; feeds ``sim.experiment`` and the FGD plugins'
``TargetShape`` list (``policies.fragmentation``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from gpusched.policies.fragmentation import TargetShape
from gpusched.sim.alibaba import TracePod

POPULARITY_THRESHOLD = 95      # percent of pods the kept shapes must cover
NON_ZERO_CPU = 100             # Kubernetes' default for a zero CPU request (millicores)


@dataclass(frozen=True, slots=True)
class ShapeCount:
    cpu_milli: int
    gpu_milli: int
    num_gpu: int
    gpu_spec: str
    count: int


def shape_counts(pods: list[TracePod]) -> list[ShapeCount]:
    """Distinct shapes by decreasing count; equal counts keep their first appearance order."""
    keys = [(p.cpu_milli or NON_ZERO_CPU, p.gpu_milli, p.num_gpu, p.gpu_spec) for p in pods]
    counts = Counter(keys)
    first: dict[tuple[int, int, int, str], int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key, i)
    ordered = sorted(counts, key=lambda k: (-counts[k], first[k]))
    return [ShapeCount(*k, counts[k]) for k in ordered]


def target_workload(pods: list[TracePod], threshold: int = POPULARITY_THRESHOLD) -> list[TargetShape]:
    """The most common shapes covering >= ``threshold`` % of pods, weights summing to 1.

    Example: counts 6, 3, 1 over 10 pods with threshold 95 keep all three (6+3 = 90 % < 95 %);
    with threshold 90 they keep two, weighted 6/9 and 3/9.
    """
    counts = shape_counts(pods)
    total = sum(c.count for c in counts)
    kept, covered = [], 0
    for shape in counts:
        if covered * 100 >= threshold * total:        # integers: no float rounding at the edge
            break
        kept.append(shape)
        covered += shape.count
    memory: dict[tuple[int, int, int, str], list[int]] = {}
    for pod in pods:
        key = (pod.cpu_milli or NON_ZERO_CPU, pod.gpu_milli, pod.num_gpu, pod.gpu_spec)
        memory.setdefault(key, []).append(pod.memory)
    return [TargetShape(cpu_milli=s.cpu_milli, gpu_milli=s.gpu_milli, num_gpu=s.num_gpu,
                        gpu_models=tuple(sorted({m for m in s.gpu_spec.split("|") if m})),
                        count=s.count,
                        memory=int(np.median(memory[(s.cpu_milli, s.gpu_milli, s.num_gpu,
                                                     s.gpu_spec)])))
            for s in kept]


def tuned_sequence(pods: list[TracePod], seed: int, tune: float,
                   capacity_milli: int) -> list[tuple[TracePod, str]]:
    """The submission order for one run: ``(pod, unique name)`` pairs.

    One ``numpy.random.Generator(seed)`` drives the shuffle, then the clone draws (or drops).
    """
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(pods))
    sequence = [(pods[i], pods[i].name) for i in order]
    target = tune * capacity_milli
    total = sum(p.total_gpu_milli for p in pods)
    clone = 0
    if total < target:
        while True:
            pod = pods[int(rng.integers(len(pods)))]
            if total + pod.gpu_milli > target:      # the reference's per-GPU stop test (3.7)
                break
            sequence.append((pod, f"{pod.name}-clone-{clone}"))
            clone += 1
            total += pod.total_gpu_milli
    else:
        while total > target and sequence:
            drop = int(rng.integers(len(sequence)))
            total -= sequence[drop][0].total_gpu_milli
            del sequence[drop]
    return sequence

"""Means and 95 % confidence intervals over seeds, for ``gpusched whatif``.

Each variant runs the same seeds, so a metric has one value per (variant, seed). ``estimate``
gives the mean, the half width of the two-sided 95 % Student-t interval (``t(0.975, n-1) *
s / sqrt(n)``, s the sample standard deviation) and the seed range. ``paired_difference`` does
the same for the per-seed differences from the baseline: the seeds pair the runs (same arrivals,
same tie-breaking), so the interval of the difference is narrower than the two intervals side by
side suggest.

The t quantiles are a table (gpusched does not depend on SciPy); the values are
``scipy.stats.t.ppf(0.975, df)`` rounded to 3 decimals. Between tabulated degrees of freedom the
next lower one is used, which widens the interval slightly (never narrows it).

Neighbours: used by ``sim.whatif`` and ``sim.whatif_report``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120,
        17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064,
        25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000,
        120: 1.980}
Z975 = 1.960


def t_quantile(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom.

    >>> t_quantile(1), t_quantile(4), t_quantile(35), t_quantile(1000)
    (12.706, 2.776, 2.042, 1.96)
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df in T975:
        return T975[df]
    lower = [d for d in T975 if d < df]
    return T975[max(lower)] if df <= max(T975) else Z975


@dataclass(frozen=True)
class Estimate:
    mean: float
    half_width: float        # of the 95 % interval; nan with one seed
    n: int
    low: float               # lowest seed
    high: float              # highest seed

    @property
    def interval(self) -> tuple[float, float]:
        return (self.mean - self.half_width, self.mean + self.half_width)

    def excludes_zero(self) -> bool:
        """The interval lies wholly on one side of 0 (a difference outside seed noise)."""
        low, high = self.interval
        return low > 0 or high < 0


def estimate(values: Sequence[float]) -> Estimate:
    """Mean and 95 % t interval of ``values`` (one per seed).

    >>> e = estimate([1.0, 2.0, 3.0])
    >>> round(e.mean, 3), round(e.half_width, 3), e.low, e.high
    (2.0, 2.484, 1.0, 3.0)
    """
    if not values:
        raise ValueError("no values")
    n = len(values)
    mean = math.fsum(values) / n
    if n == 1:
        return Estimate(mean, float("nan"), 1, values[0], values[0])
    variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return Estimate(mean, t_quantile(n - 1) * math.sqrt(variance / n), n, min(values), max(values))


def paired_difference(values: Sequence[float], baseline: Sequence[float]) -> Estimate:
    """The estimate of ``values[i] - baseline[i]`` (same seed i)."""
    if len(values) != len(baseline):
        raise ValueError(f"{len(values)} values against {len(baseline)} baseline values")
    return estimate([v - b for v, b in zip(values, baseline)])

"""Load curves: requests per second over virtual time, carried by a Deployment.

A Deployment (or its pod template) may carry the annotation ``gpusched.io/load``, a JSON object:

==============  ==========================================================================
field           meaning
==============  ==========================================================================
``shape``       ``constant`` (default) or ``diurnal``
``rps``         requests/s of ``constant``; the mean of ``diurnal``
``peak``        ``diurnal`` only: requests/s at ``peakHour`` (default 2 x ``rps``); the
                trough, 12 h away, is ``2 x rps - peak`` (never below 0)
``peakHour``    ``diurnal`` only: hour of the virtual day (UTC, 0-24) of the peak (default 14)
``perPodRPS``   requests/s one ready pod serves at 100 % GPU utilization (default 10)
``bursts``      list of ``{"at": "9h", "for": "30m", "factor": 3}``: within
                [at, at + for) of every virtual day the rate is multiplied by ``factor``
==============  ==========================================================================

Example::

    gpusched.io/load: '{"shape": "diurnal", "rps": 60, "peak": 110, "peakHour": 14,
                        "perPodRPS": 30, "bursts": [{"at": "9h", "for": "20m", "factor": 2}]}'

The diurnal curve is ``rps + (peak - rps) x cos(2 pi (hour - peakHour) / 24)``. Durations are
Go-style (``90s``, ``20m``, ``1h30m``) or plain seconds. The virtual clock's day starts at
00:00 UTC of the store's epoch, so ``advance 14h`` from a fresh store reaches the peak.

The load is shared by the Deployment's ready pods (as a Service spreads requests), so each
ready pod's GPU utilization is ``min(100, 100 x rps / (ready x perPodRPS))``; that is what
``cluster.usage`` reports to the HPA controller and to the metrics APIs.

Neighbours: ``cluster.usage`` (per-pod metrics), ``objects.duration`` (durations).
"""

from __future__ import annotations

from typing import Any

import math
from dataclasses import dataclass

from gpusched.errors import FieldError, GpuschedError, InvalidError
from gpusched.objects import limits
from gpusched.objects.duration import parse_duration

ANN_LOAD = "gpusched.io/load"
DAY_S = 86400.0
MAX_RPS = 1e9            # bounds: a curve is a model, not a number overflow
MAX_BURSTS = 48
SHAPES = ("constant", "diurnal")


class LoadError(GpuschedError):
    """A ``gpusched.io/load`` annotation that does not parse."""


@dataclass(frozen=True, slots=True)
class Burst:
    at_s: float
    for_s: float
    factor: float


@dataclass(frozen=True, slots=True)
class LoadCurve:
    shape: str
    rps: float
    peak: float
    peak_hour: float
    per_pod_rps: float
    bursts: tuple[Burst, ...]

    def rate(self, t: float) -> float:
        """Requests/s at virtual time ``t`` (seconds)."""
        base = self.rps
        if self.shape == "diurnal":
            hour = (t % DAY_S) / 3600.0
            base = self.rps + (self.peak - self.rps) * math.cos(2 * math.pi * (hour - self.peak_hour) / 24)
        day_t = t % DAY_S
        for burst in self.bursts:
            if burst.at_s <= day_t < burst.at_s + burst.for_s:
                base *= burst.factor
        return max(0.0, base)


def _number(raw: dict[str, Any], key: str, default: float, where: str, low: float = 0.0,
            high: float = MAX_RPS) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise LoadError(f"{where}.{key}: must be a number, got {value!r}")
    if not low <= value <= high:
        raise LoadError(f"{where}.{key}: must be between {low:g} and {high:g}, got {value!r}")
    return float(value)


def _seconds(value: object, where: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        try:
            seconds = parse_duration(value)
        except (ValueError, GpuschedError) as err:
            raise LoadError(f"{where}: {err}") from None
    else:
        raise LoadError(f"{where}: must be a duration such as 30m, got {value!r}")
    if not 0 <= seconds <= DAY_S:
        raise LoadError(f"{where}: must be within one day (0-24h), got {value!r}")
    return seconds


def _bursts(raw: object, where: str) -> tuple[Burst, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) > MAX_BURSTS:
        raise LoadError(f"{where}: must be a list of at most {MAX_BURSTS} bursts")
    out = []
    for i, item in enumerate(raw):
        p = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise LoadError(f"{p}: must be an object with at, for, factor")
        out.append(Burst(_seconds(item.get("at", 0), f"{p}.at"),
                         _seconds(item.get("for", 0), f"{p}.for"),
                         _number(item, "factor", 1.0, p, 0.0, 1000.0)))
    return tuple(out)


def parse_load(text: str, where: str = ANN_LOAD) -> LoadCurve:
    """The curve of one annotation value; :class:`LoadError` names the field that is wrong."""
    if len(text) > 8192:
        raise LoadError(f"{where}: longer than 8192 characters")
    try:
        raw = limits.json_loads(text)
    except ValueError as err:
        raise LoadError(f"{where}: not JSON ({err})") from None
    if not isinstance(raw, dict):
        raise LoadError(f"{where}: must be a JSON object such as "
                        '{"shape": "constant", "rps": 50}')
    unknown = sorted(set(raw) - {"shape", "rps", "peak", "peakHour", "perPodRPS", "bursts"})
    if unknown:
        raise LoadError(f"{where}: unknown field {unknown[0]!r}")
    shape = raw.get("shape", "constant")
    if shape not in SHAPES:
        raise LoadError(f"{where}.shape: must be one of {', '.join(SHAPES)}, got {shape!r}")
    rps = _number(raw, "rps", 0.0, where)
    peak = _number(raw, "peak", 2 * rps, where)
    return LoadCurve(shape, rps, peak, _number(raw, "peakHour", 14.0, where, 0.0, 24.0),
                     _number(raw, "perPodRPS", 10.0, where, 1e-6), _bursts(raw.get("bursts"),
                                                                            f"{where}.bursts"))


def load_of(body: dict[str, Any]) -> LoadCurve | None:
    """The curve a Deployment carries (its own annotation, else its template's); None when it
    has none or it does not parse (``check_load`` refuses bad ones at admission)."""
    for meta in ((body.get("metadata") or {}),
                 (((body.get("spec") or {}).get("template") or {}).get("metadata") or {})):
        text = (meta.get("annotations") or {}).get(ANN_LOAD)
        if text is not None:
            try:
                return parse_load(str(text))
            except LoadError:
                return None
    return None


def check_load(body: dict[str, Any]) -> None:
    """Admission of a Deployment: a bad ``gpusched.io/load`` is refused as 422 Invalid naming
    the annotation and the curve field that is wrong; nothing is stored."""
    for path, meta in (("metadata.annotations", (body.get("metadata") or {})),
                       ("spec.template.metadata.annotations",
                        ((body.get("spec") or {}).get("template") or {}).get("metadata") or {})):
        text = (meta.get("annotations") or {}).get(ANN_LOAD)
        if text is None:
            continue
        try:
            parse_load(str(text), "load")
        except LoadError as err:
            name = str((body.get("metadata") or {}).get("name", ""))
            raise InvalidError(str(body.get("kind", "Deployment")), name, [FieldError(
                f"{path}[{ANN_LOAD}]", "Invalid value", str(text)[:200], str(err))]) from None

"""Durations: Go's ``time.ParseDuration`` syntax plus days, and kubectl's age rendering.

``parse_duration("1h30m") == 5400.0``; units ``ns us µs ms s m h d`` (``d`` = 24h, a gpusched
extension); a bare number is seconds (``"90"`` -> 90.0). ``format_duration`` renders an age the
way ``kubectl get`` prints AGE (``duration.HumanDuration``): ``5s``, ``3m``, ``2m30s``, ``2h10m``,
``4d``, ``3y45d`` (see ``format_duration`` for the thresholds).

Neighbours: used for the ``gpusched.io/duration`` annotation (cluster controllers), ``advance``
(CLI), event and pod ages (CLI output); imports only gpusched.errors.
"""

from __future__ import annotations

import math
import re

from gpusched.errors import UsageError

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
          "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h|d)")
_NUMBER = re.compile(r"^[+]?(\d+(?:\.\d*)?|\.\d+)$")


def parse_duration(text: str | int | float) -> float:
    """Seconds in ``text`` (``"30m"``, ``"1h30m"``, ``"1.5h"``, ``"500ms"``, ``"2d"``, ``"90"``).

    Negative durations are refused (nothing in gpusched runs backwards in time).

    >>> parse_duration("1h30m"), parse_duration("500ms"), parse_duration("2d"), parse_duration("90")
    (5400.0, 0.5, 172800.0, 90.0)
    """
    if isinstance(text, bool):
        raise UsageError(f'invalid duration "{text}"')
    if isinstance(text, (int, float)):
        if not math.isfinite(text) or text < 0:
            raise UsageError(f'invalid duration "{text}"')
        return float(text)
    raw = str(text).strip()
    if _NUMBER.match(raw):
        return float(raw)
    body = raw[1:] if raw.startswith("+") else raw
    if body in ("0",):
        return 0.0
    total, pos = 0.0, 0
    while pos < len(body):
        match = _PART.match(body, pos)
        if match is None:
            if body.startswith("-"):
                raise UsageError(f'invalid duration "{raw}": must not be negative')
            if re.match(r"(\d+(?:\.\d*)?|\.\d+)", body[pos:]):
                raise UsageError(f'time: unknown unit in duration "{raw}" '
                                 "(valid units: ns, us, ms, s, m, h, d)")
            raise UsageError(f'time: invalid duration "{raw}"')
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos == 0:
        raise UsageError(f'time: invalid duration "{raw}"')
    return total


def format_duration(seconds: float) -> str:
    """kubectl's HumanDuration (``apimachinery/pkg/util/duration``).

    Note ``2h10m`` only appears from 3h on: below that upstream prints minutes (``130m``).

    >>> [format_duration(s) for s in (5, 150, 600, 7800, 4 * 86400, 4 * 86400 + 3600, 3 * 3600 + 600)]
    ['5s', '2m30s', '10m', '130m', '4d', '4d1h', '3h10m']
    """
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = (s % 3600) // 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String`` of whole or fractional seconds (``72h3m0.5s``), as
    kube-scheduler prints a Permit time-out (``rejected due to timeout after waiting 1m0s``).

    >>> [go_duration(s) for s in (0, 1.5, 60, 90, 3600, 3661)]
    ['0s', '1.5s', '1m0s', '1m30s', '1h0m0s', '1h1m1s']
    """
    if seconds == 0:
        return "0s"
    sign = "-" if seconds < 0 else ""
    micros = round(abs(seconds) * 1_000_000)
    hours, rest = divmod(micros, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    whole, fraction = divmod(rest, 1_000_000)
    text = f"{whole}.{fraction:06d}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    return f"{sign}{minutes}m{text}" if minutes else sign + text

"""Flag values as kubectl's pflag parses them, with pflag's refusal lines.

Neighbours: used by ``cli.rollout`` (``--watch``, ``--timeout``) and ``cli.wait``.
"""

from __future__ import annotations

from gpusched.errors import GpuschedError, UsageError


def go_bool(text: str, flag: str) -> bool:
    """Go's strconv.ParseBool, as pflag parses a bool flag's value."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise UsageError(f'invalid argument "{text}" for "{flag}" flag: strconv.ParseBool: '
                     f'parsing "{text}": invalid syntax')


def go_duration(text: str, flag: str) -> float:
    """A duration flag's value in seconds (Go's time.ParseDuration, gpusched's ``d`` too)."""
    from gpusched.objects.duration import parse_duration

    try:
        return parse_duration(text)
    except (ValueError, GpuschedError):
        raise UsageError(f'invalid argument "{text}" for "{flag}" flag: time: invalid duration '
                         f'"{text}"') from None


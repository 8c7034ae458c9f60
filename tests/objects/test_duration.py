"""Go durations (plus days) and kubectl's age rendering."""

import pytest

from gpusched.errors import UsageError
from gpusched.objects.duration import format_duration, parse_duration


@pytest.mark.parametrize("text,seconds", [
    ("30m", 1800.0), ("1h30m", 5400.0), ("90s", 90.0), ("1.5h", 5400.0), ("500ms", 0.5), ("2d", 172800.0),
    ("90", 90.0), ("0", 0.0), ("1d2h", 93600.0), (15, 15.0), ("2.5", 2.5), ("100us", 1e-4),
], ids=lambda v: str(v))
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "abc", "10x", "-5m", "1h-", "m", "1.2.3s", True],
                         ids=["empty", "word", "bad-unit", "negative", "trailing", "unit-only", "two-dots", "bool"])
def test_parse_duration_errors(text):
    with pytest.raises(UsageError):
        parse_duration(text)


@pytest.mark.parametrize("seconds,text", [
    (0, "0s"), (5, "5s"), (119, "119s"), (150, "2m30s"), (180, "3m"), (600, "10m"), (7800, "130m"),
    (3 * 3600 + 600, "3h10m"), (10 * 3600, "10h"), (4 * 86400, "4d"), (4 * 86400 + 3600, "4d1h"),
    (30 * 86400, "30d"), (-0.5, "0s"), (-5, "<invalid>"),
], ids=lambda v: str(v))
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text

"""``is_digits``: whole numbers as Go's ``strconv.ParseUint``/``Atoi`` accept them, ASCII only
(golang ``strconv/atoi.go``: a digit is ``'0' <= c <= '9'``). Python's ``str.isdigit`` also takes
superscripts (``int()`` then raises: an internal error) and other scripts' digits (``int()`` reads
them)."""

from __future__ import annotations

import pytest

from gpusched.objects.digits import is_digits

CASES = {
    "ascii": ("0123", True),
    "empty": ("", False),
    "superscript-two": ("\u00b2", False),
    "arabic-indic-three": ("\u0663", False),
    "fullwidth-sixteen": ("\uff11\uff16", False),
    "leading-space": (" 1", False),
    "sign": ("-1", False),
    "bytes": (b"42", True),
    "bytes-latin1-superscript": ("\u00b2".encode("latin-1"), False),
}


@pytest.mark.parametrize("case", CASES)
def test_is_digits(case: str) -> None:
    text, expected = CASES[case]
    assert is_digits(text) is expected

"""Whole numbers written as text, read as Go's ``strconv`` reads them: ASCII ``0``-``9`` only.

Python's ``str.isdigit`` is true for ``"²"`` (which ``int()`` then refuses with a ValueError: an
internal error where a user sent a bad header or query parameter) and for ``"٣"`` (which ``int()``
reads as 3, where kube-apiserver refuses it). Every check of user text for "a whole number" goes
through :func:`is_digits`. Neighbours: ``quantity`` (the quantity grammar), ``limits``.
"""

from __future__ import annotations


def is_digits(text: str | bytes) -> bool:
    """True for one or more ASCII digits and nothing else.

    >>> is_digits("12"), is_digits(""), is_digits("²"), is_digits("٣"), is_digits(" 1")
    (True, False, False, False, False)
    """
    return text.isascii() and text.isdigit()

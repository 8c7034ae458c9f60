"""Kubernetes resource quantities, parsed exactly into integers in canonical units.

Canonical units (parsed once, at the boundary):
- ``cpu``: millicores (``"500m"`` -> 500, ``"2"`` -> 2000, ``"0.1"`` -> 100);
- everything else (memory, ephemeral-storage, pods, ``nvidia.com/*`` ...): whole units,
  bytes for memory (``"16Gi"`` -> 17179869184, ``"1e3"`` -> 1000).

Values that do not land on an integer are rounded up, as Kubernetes' ``Quantity.Value()`` and
``MilliValue()`` do (``"0.5"`` of a unit resource -> 1).

Neighbours: used by ``objects.validation`` and ``objects.pod``; nothing below it.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL: dict[str, Fraction | int] = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1,
            "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
# ASCII digits only, as apimachinery's byte scanner (``parseQuantityString``) reads them: Python's
# ``\d`` and ``Fraction()`` also take Unicode digits ("１６", "٣"), which kube-apiserver refuses.
_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?[0-9]+)|(?P<dec>[numkMGTPE]?))"
)
# What Go's ``strings.TrimSpace`` removes (``unicode.IsSpace``): ``Quantity.UnmarshalJSON`` trims
# it before parsing ("TODO: Remove support for leading/trailing whitespace"), so " 1" and "1Gi "
# decode; Python's ``str.strip()`` would also drop U+001C..U+001F, which Go keeps (and refuses).
GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
    "\u2028\u2029\u202f\u205f\u3000"

MILLI_RESOURCES = frozenset({"cpu"})


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity; the message quotes apimachinery."""


def parse_quantity(value: object) -> Fraction:
    """Parse a quantity into an exact Fraction of base units.

    >>> parse_quantity("500m"), parse_quantity("16Gi"), parse_quantity("1e3"), parse_quantity(2)
    (Fraction(1, 2), Fraction(17179869184, 1), Fraction(1000, 1), Fraction(2, 1))
    """
    if isinstance(value, bool):
        raise QuantityError("quantities must match the regular expression "
                            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"invalid quantity {value!r}")
        return Fraction(str(value))
    return _parse_text(str(value).strip(GO_SPACE))


@functools.lru_cache(maxsize=4096)
def _parse_text(text: str) -> Fraction:
    """``parse_quantity`` of a string; memoised (Fractions are immutable, the same few
    quantities recur in every manifest and node, and parsing them was a profile hot spot)."""
    match = _QUANTITY.fullmatch(text)
    if not match:
        raise QuantityError("quantities must match the regular expression "
                            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    number = Fraction(match["num"])
    if match["sign"] == "-":
        number = -number
    if match["bin"]:
        return number * _BINARY[match["bin"]]
    if match["exp"]:
        exponent = int(match["exp"][1:])
        if abs(exponent) > 30:
            raise QuantityError(f"quantity exponent out of range: {text}")
        return number * Fraction(10) ** exponent
    return number * _DECIMAL[match["dec"] or ""]


def canonical(resource: str, value: object) -> int:
    """The integer a quantity stands for in ``resource``'s canonical unit (see module doc).

    >>> canonical("cpu", "500m"), canonical("cpu", "2"), canonical("memory", "1Gi"), canonical("nvidia.com/gpu", 1)
    (500, 2000, 1073741824, 1)
    """
    amount = parse_quantity(value)
    if resource in MILLI_RESOURCES:
        amount *= 1000
    return math.ceil(amount)


def format_quantity(resource: str, amount: int) -> str:
    """Render a canonical integer the way kubectl prints it (``500m``, ``2``, ``16Gi``).

    >>> format_quantity("cpu", 1500), format_quantity("cpu", 2000), format_quantity("memory", 17179869184), format_quantity("memory", 1000)
    ('1500m', '2', '16Gi', '1k')
    """
    if resource in MILLI_RESOURCES:
        return f"{amount // 1000}" if amount % 1000 == 0 else f"{amount}m"
    if amount == 0:
        return "0"
    for suffix, factor in reversed(list(_BINARY.items())):
        if amount % factor == 0:
            return f"{amount // factor}{suffix}"
    for suffix, factor in (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if amount % factor == 0:
            return f"{amount // factor}{suffix}"
    return str(amount)


_SI = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def quantity_format(value: object) -> str:
    """apimachinery's Quantity format of a written quantity: ``BinarySI`` (``Ki``..``Ei``),
    ``DecimalExponent`` (``1e3``) or ``DecimalSI``."""
    text = str(value).strip()
    if text[-2:] in _BINARY_SUFFIXES[1:]:
        return "BinarySI"
    return "DecimalExponent" if "e" in text.lower() else "DecimalSI"


def quantity_string(value: object, form: str | None = None) -> str:
    """A quantity as apimachinery's ``Quantity.String()`` prints it (what the API stores and
    kubectl describe shows):
    binary values (``Ki``..``Ei``) of at least 1024 stay binary with the largest exact suffix
    (``1024Mi`` -> ``1Gi``, ``1536Mi`` stays); decimal values get the largest power-of-1000 suffix
    whose mantissa is whole (``0.5`` -> ``500m``, ``1000`` -> ``1k``, ``1500m`` stays); the
    ``e`` notation keeps ``eN``. ``form`` overrides the written format (a quota's used value is
    printed in its hard value's format). Text that is no quantity is printed as it is."""
    try:
        amount = parse_quantity(value)
    except (QuantityError, ValueError, TypeError):
        return str(value).strip()
    form = form or quantity_format(value)
    if amount == 0:
        return "0"
    if form == "BinarySI" and abs(amount) >= 1024 and amount.denominator == 1:
        power = 0
        while power < 6 and amount % 1024 ** (power + 1) == 0:
            power += 1
        return f"{amount // 1024 ** power}{_BINARY_SUFFIXES[power]}"
    exponent = 18
    while exponent > -9 and (amount / Fraction(10) ** exponent).denominator != 1:
        exponent -= 3
    mantissa = math.ceil(amount / Fraction(10) ** exponent)
    if form == "DecimalExponent":
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    return f"{mantissa}{_SI[exponent]}"

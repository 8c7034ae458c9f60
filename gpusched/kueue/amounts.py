"""Quantities as Kueue prints them in its messages (``pkg/resources/resource_formatter.go``):
cpu as a milli-quantity (``500m``, ``2``), memory, ephemeral-storage and hugepages as BinarySI
(``1Gi``), every other resource DecimalSI (``4``, ``1k`` for ``nvidia.com/gpu``).

Neighbours: ``objects.quantity``; used by ``flavors`` and the controllers' messages.
"""

from __future__ import annotations

from gpusched.objects.quantity import format_quantity

_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_DECIMAL = (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


def _binary_resource(resource: str) -> bool:
    return resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")


def amount_string(resource: str, amount: int) -> str:
    """``amount`` (canonical units) in ``resource``'s Kueue format.

    >>> amount_string("cpu", 10000), amount_string("memory", 2**30), amount_string("nvidia.com/gpu", 4)
    ('10', '1Gi', '4')
    """
    if resource == "cpu":
        return format_quantity("cpu", amount)
    if amount == 0:
        return "0"
    for suffix, factor in _BINARY if _binary_resource(resource) else _DECIMAL:
        if amount % factor == 0:
            return f"{amount // factor}{suffix}"
    return str(amount)

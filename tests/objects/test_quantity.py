"""Kubernetes quantities in canonical units."""

import pytest

from gpusched.objects.quantity import QuantityError, canonical, format_quantity

CASES = [
    ("cpu-milli", "cpu", "500m", 500),
    ("cpu-whole", "cpu", "2", 2000),
    ("cpu-fraction", "cpu", "0.5", 500),
    ("cpu-tiny-rounds-up", "cpu", "1u", 1),
    ("memory-gi", "memory", "16Gi", 16 * 2**30),
    ("memory-exp", "memory", "1e3", 1000),
    ("memory-decimal", "memory", "1G", 10**9),
    ("memory-int", "memory", 1024, 1024),
    ("gpu-int", "nvidia.com/gpu", 2, 2),
    ("unit-half-rounds-up", "nvidia.com/gpu", "0.5", 1),
    ("memory-milli", "memory", "1500m", 2),
]


@pytest.mark.parametrize("resource,text,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_canonical(resource, text, expected):
    assert canonical(resource, text) == expected


@pytest.mark.parametrize("text", ["abc", "1Z", "", "1.2.3", "Gi", "--1", "1 Gi", True, float("nan")],
                         ids=["word", "bad-suffix", "empty", "two-dots", "suffix-only", "double-sign", "space",
                              "bool", "nan"])
def test_bad_quantities(text):
    with pytest.raises(QuantityError):
        canonical("memory", text)


@pytest.mark.parametrize("resource,amount,text", [
    ("cpu", 1500, "1500m"), ("cpu", 2000, "2"), ("memory", 16 * 2**30, "16Gi"), ("memory", 1000, "1k"),
    ("memory", 0, "0"), ("nvidia.com/gpu", 3, "3"),
], ids=["cpu-milli", "cpu-whole", "gi", "k", "zero", "gpu"])
def test_format_quantity(resource, amount, text):
    assert format_quantity(resource, amount) == text

"""The worked examples in the objects modules' docstrings stay true."""

import doctest

import pytest

from gpusched.objects import duration, kinds, node, quantity, selectors

MODULES = [duration, kinds, node, quantity, selectors]


@pytest.mark.parametrize("module", MODULES, ids=[m.__name__.rsplit(".", 1)[1] for m in MODULES])
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0

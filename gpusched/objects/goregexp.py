"""Regular expressions that upstream compiles with Go's ``regexp`` package: RE2 syntax, matched in
time linear in the input.

Python's ``re`` backtracks, so a pattern such as ``(a+)+$`` a user writes into a ConfigMap takes
exponential time on a 30-character name and holds the cluster thread; Go's engine (and RE2's,
which Go's follows) cannot. RE2 also refuses what Go refuses (look-around, back-references).
Neighbours: used by the cluster-autoscaler's priority expander (``cluster.controllers``).
"""

from __future__ import annotations

from typing import Any, Protocol

import re2


class GoPattern(Protocol):
    """The part of a compiled pattern gpusched uses."""

    def search(self, text: str) -> Any: ...


class GoRegexpError(ValueError):
    """A pattern Go's ``regexp.Compile`` refuses; the text is RE2's reason."""


def compile_go(pattern: str) -> GoPattern:
    """``pattern`` compiled as Go's ``regexp.Compile`` would, or ``GoRegexpError``.

    >>> compile_go(r".*t2\\.large.*").search("pool-t2.large-a") is not None
    True
    >>> compile_go(r"(a+)+$").search("a" * 400 + "b") is None      # linear time, no backtracking
    True
    >>> try:
    ...     compile_go(r"(?<=a)b")                  # look-behind: Go refuses it, Python's re takes it
    ... except GoRegexpError as error:
    ...     print(error)
    invalid perl operator: (?<=
    """
    options = re2.Options()
    options.log_errors = False           # RE2 would print its own line on stderr
    try:
        compiled: GoPattern = re2.compile(pattern, options=options)
    except re2.error as error:
        reason = error.args[0] if error.args else str(error)
        raise GoRegexpError(reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)) from None
    return compiled

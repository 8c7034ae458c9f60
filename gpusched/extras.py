"""Optional dependencies (pyproject's extras) and the one-line error when one is missing.

The core (the embedded cluster, the scheduler, ``serve``, the CLI) needs only the packages in
``[project] dependencies``. The rest come with extras:

- ``experiments``: ``matplotlib`` (plots) and ``rich`` (progress bars, summary tables) for
  ``gpusched experiment``, ``sweep`` and the what-if reports;
- ``gpu``: ``nvidia-ml-py`` (``pynvml``) for ``gpusched exporter`` on a machine with GPUs;
- ``kube``: the ``kubernetes`` client for ``gpusched scheduler`` against a real cluster.

:func:`require` is called where a command first needs one of them: a missing module is a
:class:`MissingExtraError` (``error: gpusched experiment needs matplotlib, rich: pip install
'gpusched[experiments]'``, exit 1), never an ImportError traceback.
"""

from __future__ import annotations

import importlib.util

from gpusched.errors import GpuschedError

EXTRAS: dict[str, tuple[str, ...]] = {        # extra -> the modules it provides
    "experiments": ("matplotlib", "rich"),
    "gpu": ("pynvml",),
    "kube": ("kubernetes",),
}


class MissingExtraError(GpuschedError):
    """A feature's optional dependency is not installed."""

    def __init__(self, feature: str, extra: str, missing: list[str]) -> None:
        super().__init__(f"{feature} needs {', '.join(missing)}: pip install 'gpusched[{extra}]'")


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here."""
    return [name for name in EXTRAS[extra] if importlib.util.find_spec(name) is None]


def require(extra: str, feature: str) -> None:
    """Raise :class:`MissingExtraError` unless every module of ``extra`` is importable."""
    absent = missing(extra)
    if absent:
        raise MissingExtraError(feature, extra, absent)

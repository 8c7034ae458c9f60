"""The generated tables the comparison scripts (``scripts/backfill_compare.py``,
``scripts/dynamic_mig_compare.py``, ``scripts/kueue_compare.py``) keep in the docs: the command
line that regenerates one, a
markdown table with a column per mode, and the block between a script's two markers, rewritten
in place so the prose around it is kept.

Neighbours: the scripts (each measures its own modes); ``report`` writes the FGD experiment's
CSVs and plots.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path


def command_line(script: str, options: Sequence[tuple[str, object]]) -> str:
    """The shell command that regenerates a table: ``script`` run with ``options`` (quoted); an
    option whose value is None is a flag.

    >>> command_line("scripts/x.py", [("--quick", None), ("--seed", 7), ("--out", "a b.md")])
    ".venv/bin/python scripts/x.py --quick --seed 7 --out 'a b.md'"
    """
    words = [word for option, value in options
             for word in ((option,) if value is None else (option, str(value)))]
    return f".venv/bin/python {script} " + " ".join(shlex.quote(word) for word in words)


def header(first: str, columns: Sequence[str]) -> list[str]:
    """A markdown table's head: ``first`` then one right-aligned column per name."""
    return [row(first, columns), "|---|" + "---:|" * len(columns)]


def row(label: str, cells: Sequence[str]) -> str:
    """One markdown table row."""
    return f"| {label} | " + " | ".join(cells) + " |"


def metric_rows(metrics: Sequence[tuple[str, str, float]], results: Mapping[str, Mapping[str, float]],
                modes: Sequence[str]) -> list[str]:
    """A row per ``(label, key, unit)``: each mode's ``results[mode][key] / unit``, one decimal.

    >>> metric_rows([("wait (min)", "wait", 60)], {"a": {"wait": 90.0}, "b": {"wait": 30.0}}, ["a", "b"])
    ['| wait (min) | 1.5 | 0.5 |']
    """
    return [row(label, [f"{results[mode][key] / unit:.1f}" for mode in modes]) for label, key, unit in metrics]


def write_block(path: Path, begin: str, end: str, block: str) -> None:
    """``block`` (which starts with ``begin`` and ends with ``end``) in place of the one between
    the markers in ``path``, or appended to it (and its folder made) when it has none."""
    text = path.read_text() if path.exists() else ""
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = (text.rstrip("\n") + "\n\n" if text else "") + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)

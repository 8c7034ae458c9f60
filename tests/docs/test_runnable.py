"""The command blocks of the docs run as written: every ```console block of a page under docs/
runs, in order, against one throwaway cluster per page, and prints what the page shows.

A block is a reader's terminal: ``$ gpusched ...`` lines are commands (a trailing ``\\`` joins the
next line), the lines under one are its output (stdout and stderr as a terminal shows them,
trailing spaces ignored). As in doctest's ELLIPSIS, a line that is exactly ``...`` stands for any
number of lines, and ``...`` inside a line for any text. The cluster's clock starts at
2026-01-01T00:00:00Z and stands still between commands (``GPUSCHED_CLOCK=frozen``), so ages and
times are those the page prints. Only ``gpusched`` commands run; a page that needs something
else shows it in a plain ``sh`` block, which is not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import CEILING_S, REPO_ROOT

DOCS = REPO_ROOT / "docs"
BLOCK = re.compile(r"^```console\n(.*?)^```$", re.MULTILINE | re.DOTALL)


@dataclass
class Step:
    command: str
    expected: list[str] = field(default_factory=list)


def steps_of(text: str) -> list[Step]:
    """The commands of every console block of ``text``, in order, with their expected output."""
    steps: list[Step] = []
    for block in BLOCK.findall(text):
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            if not line.startswith("$ "):
                if not steps:
                    raise AssertionError(f"output before any command: {line!r}")
                steps[-1].expected.append(line)
                i += 1
                continue
            command = line[2:]
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command[:-1] + lines[i]
            steps.append(Step(command.strip()))
            i += 1
    return steps


def line_matches(pattern: str, line: str) -> bool:
    if "..." not in pattern:
        return pattern == line
    return re.fullmatch(".*".join(re.escape(part) for part in pattern.split("...")), line) is not None


def output_matches(expected: list[str], actual: list[str]) -> bool:
    """``expected`` (with ``...`` lines and in-line ``...``) against ``actual``, as doctest's ELLIPSIS."""
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head == "...":
        return any(output_matches(rest, actual[k:]) for k in range(len(actual) + 1))
    return bool(actual) and line_matches(head, actual[0]) and output_matches(rest, actual[1:])


def pages_with_blocks() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if BLOCK.search(p.read_text(encoding="utf-8")))


PAGES = pages_with_blocks()


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_console_blocks_print_what_the_page_shows(page: Path, tmp_path: Path):
    steps = steps_of(page.read_text(encoding="utf-8"))
    assert steps, f"{page.name}: no commands in its console blocks"
    env = {**os.environ, "GPUSCHED_STATE": str(tmp_path / "cluster.db"),
           "GPUSCHED_START": "2026-01-01T00:00:00Z", "GPUSCHED_CLOCK": "frozen",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "COLUMNS": "100"}
    for step in steps:
        assert step.command.split()[0] == "gpusched", f"{page.name}: only gpusched commands run: {step.command}"
        done = subprocess.run(["bash", "-c", step.command], cwd=REPO_ROOT, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=CEILING_S)
        actual = [line.rstrip() for line in done.stdout.rstrip("\n").splitlines()]
        expected = [line.rstrip() for line in step.expected]
        assert output_matches(expected, actual), (
            f"{page.name}: `{step.command}` printed (exit {done.returncode}):\n"
            + "\n".join(actual) + "\n--- the page shows:\n" + "\n".join(expected))


@pytest.mark.parametrize("expected, actual, matches", [
    (["a", "b"], ["a", "b"], True),
    (["a"], ["a", "b"], False),
    (["...", "b"], ["a", "x", "b"], True),
    (["...", "b"], ["a", "x", "c"], False),
    (["a..."], ["abc"], True),
    (["x ... z"], ["x yy z"], True),
    (["x ... z"], ["x yy q"], False),
    (["..."], [], True),
    ([], ["a"], False),
], ids=["same", "extra-line", "line-ellipsis", "line-ellipsis-miss", "tail-ellipsis", "inner-ellipsis",
        "inner-miss", "ellipsis-empty", "nothing-expected"])
def test_the_matcher_is_doctest_ellipsis(expected, actual, matches):
    assert output_matches(expected, actual) is matches


def test_commands_and_their_output_are_read_from_blocks():
    text = "x\n```console\n$ gpusched a \\\n  --b\nout 1\nout 2\n$ gpusched c\n```\n```sh\ngpusched not-run\n```\n"
    steps = steps_of(text)
    assert [(s.command, s.expected) for s in steps] == [("gpusched a   --b", ["out 1", "out 2"]), ("gpusched c", [])]

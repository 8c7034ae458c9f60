"""The documents a user opens: each says first who it is for, and none cites the project's
tracker items or files outside the repository (a reader has neither)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

DOCS = sorted([REPO_ROOT / "README.md", *(REPO_ROOT / "docs").rglob("*.md"),
               *(REPO_ROOT / "deploy").glob("*/README.md"),
               *(REPO_ROOT / "examples").glob("**/README.md")])
# tracker items ("issue 12", "Issue #3", "#14"), paths outside the checkout
OUTSIDE = [re.compile(r"\bissues? #?\d+", re.IGNORECASE), re.compile(r"(?<![\w&/#])#\d+\b"),
           re.compile(r"\.\./shared\b"), re.compile(r"/work/")]


def ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(REPO_ROOT)) for p in paths]


def first_paragraph(path: Path) -> str:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines and lines[0].startswith("# "), f"{path.name}: starts with its title"
    body = [line for line in lines[1:] if line.strip()]
    return body[0] if body else ""


@pytest.mark.parametrize("path", DOCS, ids=ids(DOCS))
def test_each_document_opens_with_who_it_is_for(path):
    assert first_paragraph(path).startswith("For "), \
        f"{path.name}: the first line after the title says who the page is for ('For ...')"


@pytest.mark.parametrize("path", DOCS, ids=ids(DOCS))
def test_no_document_cites_tracker_items_or_outside_files(path):
    found = [(number, match.group(0))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             for pattern in OUTSIDE for match in pattern.finditer(line)]
    assert found == [], f"{path.name}: {found}"


@pytest.mark.parametrize("text, cited", [
    ("see issue 12", True), ("Issue #3 says", True), ("(#14)", True), ("../shared/data", True),
    ("a shared folder", False), ("anchor [x](#section-2)", False), ("GPU 0 and 1", False),
    ("https://github.com/a/b/blob/main/f.go#L12", False),
], ids=["issue-n", "issue-hash-n", "hash-n", "dotdot-shared", "plain-shared", "anchor", "plain",
        "source-line-link"])
def test_the_patterns_find_what_they_should(text, cited):
    assert any(p.search(text) for p in OUTSIDE) is cited

"""The documentation site builds with MkDocs in strict mode: a broken link, a link to a missing
page or anchor, or any other warning fails (mkdocs.yml ``strict: true`` and ``validation``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import CEILING_S, REPO_ROOT


def test_the_site_builds_strictly_without_warnings(tmp_path: Path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=REPO_ROOT, text=True, capture_output=True, timeout=CEILING_S,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    assert "WARNING" not in log, log
    assert (tmp_path / "site" / "index.html").exists()
    assert (tmp_path / "site" / "reference" / "get" / "index.html").exists()


def test_every_page_is_reachable_from_the_index_or_the_nav():
    """A page in docs/ that neither the nav (mkdocs.yml) nor the command reference's index lists
    would be built but found by no reader."""
    config = (REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    reference_index = (REPO_ROOT / "docs" / "reference" / "index.md").read_text(encoding="utf-8")
    docs = REPO_ROOT / "docs"
    lost = [str(p.relative_to(docs)) for p in sorted(docs.rglob("*.md"))
            if f" {p.relative_to(docs)}" not in config and f"({p.name})" not in reference_index]
    assert lost == []

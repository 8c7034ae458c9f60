"""docs/reference/ is what ``scripts/gen_cli_reference.py`` makes of the argument parser today:
regenerating gives the committed pages byte for byte, so a changed flag cannot leave the
reference behind (run the script after changing the CLI)."""

from __future__ import annotations

import importlib.util

from tests.conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "gen_cli_reference.py"
OUT = REPO_ROOT / "docs" / "reference"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_cli_reference", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_reference_is_the_generated_one():
    pages = _generator().render_all()
    committed = {p.name: p.read_text(encoding="utf-8") for p in OUT.glob("*.md")}
    stale = sorted(name for name in pages if committed.get(name) != pages[name])
    extra = sorted(set(committed) - set(pages))
    assert (stale, extra) == ([], []), "run: python scripts/gen_cli_reference.py"


def test_every_command_has_a_page_with_its_flags_and_examples():
    pages = _generator().render_all()
    get = pages["get.md"]
    assert "`-o`, `--output`" in get and "## Examples" in get and "gpusched get pods -w" in get
    assert all(f"[`gpusched {name[:-3]}`]({name})" in pages["index.md"] for name in pages if name != "index.md")

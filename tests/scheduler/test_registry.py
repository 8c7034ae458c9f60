"""scheduler.registry: whether an installed distribution may declare the plugins' entry-point
group is answered from the metadata folders on ``sys.path`` (``_may_declare``), so a command
imports ``importlib.metadata`` only when one may; where the folders cannot be listed cheaply
the full scan (``importlib.metadata.entry_points``) decides. The real install of a declaring
distribution is tests/examples/test_out_of_tree_plugin.py."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path
from typing import Callable

import pytest

from gpusched.scheduler.registry import ENTRY_POINT_GROUP, _may_declare, entry_point_plugins

DECLARES = "[gpusched.plugins]\nPreferLabeledNodes = gpusched_example_plugin:PreferLabeledNodes\n"
OTHER = "[console_scripts]\nsomething = something.cli:main\n"


def dist_info(site: Path, folder: str, entry_points: str | None) -> None:
    (site / folder).mkdir(parents=True)
    (site / folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {folder.split('-')[0]}\n")
    if entry_points is not None:
        (site / folder / "entry_points.txt").write_text(entry_points)


Setup = Callable[[Path], None]
CASES: dict[str, tuple[Setup, bool]] = {
    "no-distribution": (lambda site: None, False),
    "other-groups-only": (lambda site: dist_info(site, "tool-1.0.dist-info", OTHER), False),
    "no-entry-points-file": (lambda site: dist_info(site, "bare-1.0.dist-info", None), False),
    "dist-info-declares": (lambda site: dist_info(site, "plug-1.0.dist-info", DECLARES), True),
    "egg-info-declares": (lambda site: dist_info(site, "plug.egg-info", DECLARES), True),
    "egg-folder-declares": (lambda site: dist_info(site / "plug-1.0.egg", "EGG-INFO", DECLARES),
                            True),
    "zip-file-on-path": (lambda site: (site / "bundle.zip").write_bytes(b"PK\x05\x06" + bytes(18)),
                         True),
}


@pytest.mark.parametrize("setup,expected", CASES.values(), ids=CASES.keys())
def test_may_declare_reads_the_metadata_folders_on_sys_path(
        setup: Setup, expected: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    site.mkdir()
    setup(site)
    extra = [str(site / "plug-1.0.egg"), str(site / "bundle.zip"), str(site)]
    monkeypatch.setattr(sys, "path", [p for p in extra if Path(p).exists()])
    assert _may_declare(ENTRY_POINT_GROUP) is expected
    if not expected:        # the cheap answer agrees with the full scan
        assert not importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)


def test_another_finder_of_distributions_means_the_full_scan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Finder:
        @staticmethod
        def find_distributions(*args: object, **kwargs: object) -> list[object]:
            return []
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder()])
    assert _may_declare(ENTRY_POINT_GROUP) is True


def test_no_declaring_distribution_means_no_out_of_tree_plugins(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist_info(tmp_path, "tool-1.0.dist-info", OTHER)
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert entry_point_plugins() == {}

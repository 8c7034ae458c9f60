"""The fuzz suite's fixed budget (issue 25, "the adversary as a test"): 0 in every failure class.

Table cases first, one test each (the hostile classes of findings 1-7, ``cases.py``), then a
derandomised hypothesis budget per surface: the same cases every run, about 60-90 s of CPU in
all on the 2-core development machine. The large budget is ``python -m bench.fuzz``. A failure
prints the class, its count and the first example (what was sent, after what, what came back).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz import cases, surface_api, surface_concurrent, surface_manifests, surface_protobuf
from tests.fuzz.harness import Tally

pytestmark = pytest.mark.slow

GENERATED_MANIFESTS = 150
GENERATED_REQUESTS = 200
CONCURRENT_WRITES = 144
PROTOBUF_BODIES = 120


@pytest.fixture(scope="module")
def manifest_surface(tmp_path_factory: pytest.TempPathFactory):
    surface = surface_manifests.ManifestSurface(tmp_path_factory.mktemp("manifests"), Tally("manifests"))
    yield surface
    surface.close()


@pytest.fixture(scope="module")
def api_surface(tmp_path_factory: pytest.TempPathFactory):
    surface = surface_api.ApiSurface(tmp_path_factory.mktemp("api"), Tally("api"))
    yield surface
    surface.close()


def fresh_tally(surface, name: str) -> Tally:
    surface.tally = Tally(name)
    return surface.tally


@pytest.mark.parametrize("case", cases.MANIFEST_CASES, ids=lambda c: c.id)
def test_manifest_table_case_through_the_cli(manifest_surface, case: cases.ManifestCase) -> None:
    tally = fresh_tally(manifest_surface, case.id)
    manifest_surface.run_table_case(case)
    assert tally.cases == 1 and not tally.failures(), tally.report()


@pytest.mark.parametrize("case", cases.API_CASES, ids=lambda c: c.id)
def test_api_table_case(api_surface, case: cases.ApiCase) -> None:
    tally = fresh_tally(api_surface, case.id)
    api_surface.run_api_case(case)
    assert tally.cases == 1 and not tally.failures(), tally.report()


@pytest.mark.parametrize("case", cases.MANIFEST_CASES, ids=lambda c: c.id)
def test_manifest_table_case_through_serve(api_surface, case: cases.ManifestCase) -> None:
    tally = fresh_tally(api_surface, case.id)
    api_surface.run_manifest_case(case)
    assert tally.cases == 1 and not tally.failures(), tally.report()


def test_generated_manifests_through_the_cli(tmp_path: Path) -> None:
    tally = surface_manifests.run(tmp_path, GENERATED_MANIFESTS, table=False)
    print(f"\n{tally.surface}: {tally.cases} cases, {tally.checks} checks")
    assert tally.cases == GENERATED_MANIFESTS and not tally.failures(), tally.report()


def test_generated_api_requests(tmp_path: Path) -> None:
    tally = surface_api.run(tmp_path, GENERATED_REQUESTS, table=False)
    print(f"\n{tally.surface}: {tally.cases} cases, {tally.checks} checks, slowest {tally.slowest_s} s")
    assert tally.cases == GENERATED_REQUESTS and not tally.failures(), tally.report()


def test_concurrent_writers(tmp_path: Path) -> None:
    tally = surface_concurrent.run(tmp_path, CONCURRENT_WRITES)
    print(f"\n{tally.surface}: {tally.cases} writes, {tally.checks} checks")
    assert tally.cases >= CONCURRENT_WRITES and tally.checks > 0 and not tally.failures(), tally.report()


def test_generated_protobuf_bodies(tmp_path: Path) -> None:
    """Damaged protobuf bodies (cut, flipped, wrong magic and lengths, nesting bombs, huge
    repeated fields): every one answered, nothing poisoned."""
    tally = surface_protobuf.run(tmp_path, PROTOBUF_BODIES)
    print(f"\n{tally.surface}: {tally.cases} cases, {tally.checks} checks, slowest {tally.slowest_s} s")
    assert tally.cases == PROTOBUF_BODIES and not tally.failures(), tally.report()

"""The experiment progress bar advances per batch of pods, in this process and from pool workers.

Runs use a cut-down trace (the first 60 GPU nodes, the first 400 pods: about 300-450 pods per
run after tuning, so every run reports once at ``PROGRESS_BATCH`` = 250 pods and once at its
end). ``Spy`` records what the bar is told.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusched.sim.experiment import PROGRESS_BATCH, RunResult, RunSpec
from gpusched.sim.progress import RunProgress, run_local

NODES, PODS = "openb_node_list_gpu_node.csv", "openb_pod_list_default.csv"


class Spy(RunProgress):
    """Records every report; ``enabled`` so pool workers get a channel; never entered as a
    context manager, so nothing is displayed."""

    def __init__(self, runs: int) -> None:
        super().__init__(runs, enabled=True)
        self.calls: list[tuple[str, int, int, int]] = []

    def pods(self, index: int, done: int, total: int) -> None:
        self.calls.append(("pods", index, done, total))
        super().pods(index, done, total)

    def finished(self, index: int, pods: int | None = None) -> None:
        self.calls.append(("finished", index, pods or 0, pods or 0))
        super().finished(index, pods)


@pytest.fixture()
def specs(trace_dir: Path, tmp_path: Path) -> list[RunSpec]:
    for name, rows in ((NODES, 60), (PODS, 400)):
        lines = (trace_dir / name).read_text().splitlines(keepends=True)
        (tmp_path / name).write_text("".join(lines[: rows + 1]))
    return [RunSpec(str(tmp_path / NODES), str(tmp_path / PODS), policy, 42)
            for policy in ("fgd", "bestfit")]


def expected_reports(pods: int) -> list[tuple[int, int]]:
    return [(done, pods) for done in range(PROGRESS_BATCH, pods, PROGRESS_BATCH)] + [(pods, pods)]


@pytest.mark.parametrize("jobs", [1, 2], ids=["in-process", "spawn-pool"])
def test_bar_advances_per_pod_batch_before_each_run_finishes(specs: list[RunSpec], jobs: int) -> None:
    results: dict[int, RunResult] = {}
    spy = Spy(len(specs))
    run_local(list(enumerate(specs)), jobs, results.__setitem__, spy)
    assert sorted(results) == [0, 1]
    for index, result in results.items():
        assert result.pods > PROGRESS_BATCH          # so the run reports a batch before its end
        mine = [call for call in spy.calls if call[1] == index]
        assert [(done, total) for kind, _, done, total in mine if kind == "pods"] == \
            expected_reports(result.pods)
        assert mine[-1] == ("finished", index, result.pods, result.pods)
    assert spy.completed == len(specs)


def test_progress_counts_fractions_of_runs_and_ignores_late_reports() -> None:
    bar = RunProgress(4, enabled=False, done=1)         # one run cached
    bar.pods(0, 250, 1000)
    bar.pods(1, 500, 1000)
    assert bar.completed == pytest.approx(1.75)
    bar.finished(0, 1000)
    bar.pods(0, 250, 1000)                              # a late report of a finished run
    assert bar.completed == pytest.approx(2.5)

"""``cluster.clock.wall``: virtual time follows an injected wall clock while a command waits.

A real cluster's clock runs while ``kubectl get pods -w`` waits (kubelet ends a grace period by
its own clock, ``pkg/kubelet/pod_workers.go``); the embedded cluster's clock runs only while
some command follows the wall clock. Each case drives :class:`Follower` with a wall clock the
test steps (no sleeps): how far the cluster clock moves, and that timers fire on the way.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gpusched.cluster.clock.wall import Follower, wall_source
from gpusched.cluster.cluster import Cluster
from gpusched.errors import UsageError

from ..builders import apply, pod, pool, terminating_names


class Wall:
    """A wall clock the test sets."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass(frozen=True)
class FollowCase:
    id: str
    walls: tuple[float, ...]      # the wall time at each tick after the follower's start (1000)
    moved: float                  # seconds the cluster clock moved in all


FOLLOW_CASES = [
    FollowCase("one-tick-moves-the-elapsed-wall-time", (1030.0,), 30.0),
    FollowCase("ticks-add-up-to-the-elapsed-wall-time", (1000.5, 1010.0, 1030.0), 30.0),
    FollowCase("no-wall-time-passed-moves-nothing", (1000.0, 1000.0), 0.0),
    FollowCase("a-wall-clock-going-back-moves-nothing", (1010.0, 990.0, 1005.0), 10.0),
]


@pytest.mark.parametrize("case", FOLLOW_CASES, ids=lambda c: c.id)
def test_the_cluster_clock_follows_the_wall_clock(cluster, case):
    wall = Wall()
    before = cluster.now()
    follower = Follower(cluster, wall)
    for now in case.walls:
        wall.now = now
        follower.tick()
    assert cluster.now() - before == case.moved


def test_a_grace_period_ends_while_the_follower_ticks(cluster):
    """A deleted pod is Terminating for 30 s (``terminationGracePeriodSeconds`` default,
    ``pkg/registry/core/pod/strategy.go`` CheckGracefulDelete); 31 s of wall time end it."""
    apply(cluster, pool(count=1) + "---\n" + pod("victim", gpus=1))
    cluster.delete("pod", "victim")
    assert terminating_names(cluster) == ["victim"]
    wall = Wall()
    follower = Follower(cluster, wall)
    wall.now = 1029.0
    follower.tick()
    assert terminating_names(cluster) == ["victim"]
    wall.now = 1031.0
    follower.tick()
    assert cluster.get("pod") == []


def test_two_followers_of_one_state_file_move_its_clock_once(tmp_path):
    """The state file records the wall time its clock last followed, so two commands waiting
    at once (two processes, here two Cluster objects) let 30 s pass, not 60."""
    path = str(tmp_path / "cluster.db")
    wall = Wall()
    with Cluster.open(path) as first, Cluster.open(path) as second:
        before = first.now()
        followers = [Follower(first, wall), Follower(second, wall)]
        for now in (1010.0, 1020.0, 1030.0):
            wall.now = now
            for follower in followers:
                follower.tick()
        assert second.now() - before == 30.0


def test_a_wait_does_not_count_wall_time_from_before_it_began(tmp_path):
    """An earlier wait recorded its last wall time; a later wait starts from its own start."""
    path = str(tmp_path / "cluster.db")
    wall = Wall()
    with Cluster.open(path) as cluster:
        before = cluster.now()
        earlier = Follower(cluster, wall)
        wall.now = 1010.0
        earlier.tick()               # 10 s, recorded at wall 1010
        wall.now = 5000.0            # the commands in between leave the clock standing
        later = Follower(cluster, wall)
        wall.now = 5005.0
        later.tick()
        assert cluster.now() - before == 15.0


def test_a_frozen_clock_does_not_move(cluster):
    before = cluster.now()
    assert Follower(cluster, wall_source("frozen")).tick() == 0.0
    assert cluster.now() == before


@pytest.mark.parametrize("setting, message", [
    ("sometimes", "GPUSCHED_CLOCK must be wall, frozen or file:PATH, got 'sometimes'"),
    ("file:", "GPUSCHED_CLOCK must be wall, frozen or file:PATH, got 'file:'"),
], ids=["unknown-word", "file-without-path"])
def test_a_bad_setting_says_what_is_valid(setting, message):
    with pytest.raises(UsageError) as err:
        wall_source(setting)
    assert str(err.value) == message


@pytest.mark.parametrize("content, message", [
    (None, "cannot read it (No such file or directory)"),
    ("soon", "must hold a number of seconds, got 'soon'"),
    ("nan", "must hold a number of seconds, got 'nan'"),
], ids=["missing-file", "not-a-number", "not-finite"])
def test_a_wall_file_that_does_not_hold_seconds_is_one_line(tmp_path, content, message):
    path = tmp_path / "wall"
    if content is not None:
        path.write_text(content)
    source = wall_source(f"file:{path}")
    assert source is not None
    with pytest.raises(UsageError) as err:
        source()
    assert str(err.value) == f"GPUSCHED_CLOCK=file:{path}: {message}"


def test_a_wall_file_is_read_at_each_call(tmp_path):
    path = tmp_path / "wall"
    source = wall_source(f"file:{path}")
    assert source is not None
    for seconds in (12.5, 40.0):
        path.write_text(f"{seconds}\n")
        assert source() == seconds


def test_a_timeout_counts_only_wall_time_the_cluster_was_advanced_to(cluster):
    """kubectl's ``wait --timeout`` (cmd/wait/wait.go) gives up once the deadline passed with the
    condition still false at that time. A slow command (a loaded machine) may read the wall
    clock far past the deadline before it advanced the cluster there: the wait then counts only
    the wall time its last tick brought the cluster to, so the state it checks has reached the
    deadline before it times out (tests/cli/test_wait.py's grace-period case failed under load)."""
    wall = Wall()
    follower = Follower(cluster, wall)
    wall.now = 1600.0                # ten minutes pass before the command ticks once
    assert follower.waited() == 0.0
    follower.tick()
    assert follower.waited() == 600.0


def test_a_frozen_wait_counts_the_wall_time_passed(cluster):
    wall = Wall()
    follower = Follower(cluster, None)
    follower.wall = wall             # frozen: no tick moves the cluster; --timeout is wall time
    follower.since = wall.now = 1000.0
    wall.now = 1030.0
    assert follower.waited() == 30.0

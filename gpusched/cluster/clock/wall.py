"""Virtual time following the wall clock while a CLI command waits.

The embedded cluster's clock stands still between commands: ``gpusched advance`` moves it. A
command that waits (``get -w``) lets it run, as a real cluster's clock runs while ``kubectl get
pods -w`` waits: at each poll, :meth:`Follower.tick` advances the cluster (``Cluster.follow_wall``:
the one loop of ``clock.loop``, so timers fire on the way: a grace period ends, a preemptor
binds) by the wall time elapsed since the clock last followed it. The state file records that
wall time (meta ``wall``), so two commands waiting at once move the clock once, not twice; a
wait never moves the clock for wall time that passed before it began. docs/serve.md
("The clock") is the page users read about it.

``GPUSCHED_CLOCK`` chooses the wall-clock source (:func:`wall_source`):

- ``wall`` (the default): the system's clock (``time.time``, read here and nowhere else);
- ``frozen``: a wait does not move the clock (only ``advance`` does);
- ``file:PATH``: the wall time is the number of seconds written in PATH, read at each poll (tests
  and scripted demos step it: writing 31 after 0 lets 31 seconds pass).

Neighbours: ``cluster.cluster`` (``Cluster.follow_wall``); used by the CLI's waiting commands
(``cli.get``'s watch, ``cli.rollout`` status, ``cli.wait``).
"""

from __future__ import annotations

import math
import os
import time
from typing import TYPE_CHECKING, Callable

from gpusched.errors import UsageError

if TYPE_CHECKING:
    from gpusched.cluster.cluster import Cluster

CLOCK_ENV = "GPUSCHED_CLOCK"
WALL_KEY = "wall"          # meta: the wall time the cluster clock last followed (seconds)

WallSource = Callable[[], float]


def wall_source(setting: str | None = None) -> WallSource | None:
    """The wall-clock source ``setting`` (default: ``$GPUSCHED_CLOCK``) names; None: frozen."""
    text = os.environ.get(CLOCK_ENV, "") if setting is None else setting
    if text in ("", "wall"):
        return time.time
    if text == "frozen":
        return None
    if text.startswith("file:") and len(text) > len("file:"):
        path = text[len("file:"):]
        return lambda: _read_seconds(path)
    raise UsageError(f"{CLOCK_ENV} must be wall, frozen or file:PATH, got {text!r}")


def _read_seconds(path: str) -> float:
    try:
        with open(path, encoding="utf-8") as source:
            text = source.read(64).strip()
    except OSError as err:
        raise UsageError(f"{CLOCK_ENV}=file:{path}: cannot read it ({err.strerror})") from None
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds):
        raise UsageError(f"{CLOCK_ENV}=file:{path}: must hold a number of seconds, got {text!r}")
    return seconds


def follow(cluster: Cluster) -> "Follower":
    """The clock of a command about to wait, from ``$GPUSCHED_CLOCK`` (a bad value raises
    before anything is printed); back-offs run on the clock while it follows wall time (a
    command that waits is not a new command after each of them: ``Cluster.frozen_clock``)."""
    follower = Follower(cluster, wall_source())
    cluster.frozen_clock = False
    return follower


class Follower:
    """The clock of one waiting command: from its start, virtual time follows ``wall``."""

    def __init__(self, cluster: Cluster, wall: WallSource | None) -> None:
        self.cluster = cluster
        self.follows = wall is not None
        self.wall: WallSource = wall if wall is not None else time.time   # frozen: for waited()
        self.since = self.wall()
        self.seen = self.since

    def tick(self) -> float:
        """Advance the cluster by the wall time passed (nothing when frozen or when no wall time
        passed since the last tick); the seconds it moved."""
        now = self.wall()
        if not self.follows or now <= self.seen:
            return 0.0
        self.seen = now
        return self.cluster.follow_wall(now, self.since)

    def waited(self) -> float:
        """Wall seconds since the wait began, for a command's ``--timeout``: while the clock
        follows, up to the wall time the cluster was last advanced to (:meth:`tick`), so a wait
        times out only after the state it checked had reached the deadline, however slowly the
        command ran; frozen, the wall time passed."""
        if self.follows:
            return max(0.0, self.seen - self.since)
        return max(0.0, self.wall() - self.since)

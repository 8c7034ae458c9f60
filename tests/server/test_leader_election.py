"""Leader election end to end: two ``gpusched scheduler --leader-elect`` replicas against a real
``gpusched serve`` (real time), sharing the Lease ``kube-system/gpusched``.

- exactly one replica holds the Lease and binds pods; the other only waits;
- SIGKILL of the leader: the standby takes over once the lease duration has passed since the
  leader's last renewal (``--lease-duration 3``), and binds a pod created afterwards;
- SIGTERM of the leader: it releases the Lease (holder cleared, as client-go's
  ``ReleaseOnCancel``), so the standby takes over at its next try, long before the lease
  (twice the suite's ceiling, so no load can make it expire first) would have expired.

Replicas' identities are ``<hostname>_<pid>``; their logs go to files in the test's temp dir.
Everything is polled (``wait_for``), nothing sleeps a fixed time.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import CEILING_S, REPO_ROOT
from tests.server.conftest import Served, stop, stops_cleanly, wait_for

pytestmark = pytest.mark.slow

LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/gpusched"
LONG_LEASE_S = int(2 * CEILING_S)   # outlasts every wait: only a release hands it over in time


@dataclass
class Replica:
    process: subprocess.Popen
    log: Path

    @property
    def identity(self) -> str:
        return f"{socket.gethostname()}_{self.process.pid}"

    def output(self) -> str:
        return self.log.read_text()


def start_replica(served: Served, tmp_path: Path, name: str, lease_seconds: int) -> Replica:
    log = tmp_path / f"{name}.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "gpusched", "-v", "scheduler", "--kubeconfig",
             str(served.kubeconfig), "--scheduler-name", "gpusched", "--leader-elect",
             "--lease-duration", str(lease_seconds)],
            stdout=sink, stderr=subprocess.STDOUT, cwd=REPO_ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    return Replica(process, log)


def lease_spec(served: Served) -> dict:
    status, body = served.request("GET", LEASE)
    return body.get("spec", {}) if status == 200 and isinstance(body, dict) else {}


def holder(served: Served) -> str:
    return lease_spec(served).get("holderIdentity", "")


def seconds(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def bound_node(served: Served, name: str) -> str:
    return served.pod(name)["spec"].get("nodeName", "")


@pytest.fixture
def elected(lab_serve: Served, tmp_path: Path):
    """The lab cluster (kube-system exists from the start, as on every real cluster) and a way
    to start replicas."""
    status, _ = lab_serve.request("GET", "/api/v1/namespaces/kube-system")
    assert status == 200
    replicas: list[Replica] = []

    def start(name: str, lease_seconds: int) -> Replica:
        replicas.append(start_replica(lab_serve, tmp_path, name, lease_seconds))
        return replicas[-1]

    yield lab_serve, start
    for replica in replicas:
        stop(replica.process)


def leader_and_standby(served: Served, a: Replica, b: Replica) -> tuple[Replica, Replica]:
    held = wait_for(lambda: holder(served) in (a.identity, b.identity) and holder(served),
                    "one replica to hold the lease")
    return (a, b) if held == a.identity else (b, a)


def test_one_leader_binds_and_the_standby_takes_over_after_sigkill(elected):
    served, start = elected
    leader, standby = leader_and_standby(served, start("a", 3), start("b", 3))
    served.create_pod("first", gpus=1, scheduler="gpusched")
    wait_for(lambda: bound_node(served, "first"), "first bound")
    wait_for(lambda: "bound default/first to" in leader.output(), "the leader's log of it")
    assert "bound default/" not in standby.output()
    assert "acquired lease" not in standby.output()
    assert holder(served) == leader.identity and standby.process.poll() is None

    os.kill(leader.process.pid, signal.SIGKILL)
    leader.process.wait()
    last = lease_spec(served)         # the dead leader's last renewal (the standby waits 3 s)
    assert last["holderIdentity"] == leader.identity
    served.create_pod("second", gpus=1, scheduler="gpusched")
    wait_for(lambda: holder(served) == standby.identity, "the standby to take the lease", 30)
    after = lease_spec(served)
    assert seconds(after["acquireTime"]) >= seconds(last["renewTime"]) + 3   # only once expired
    assert after["leaseTransitions"] == last["leaseTransitions"] + 1
    assert after["leaseDurationSeconds"] == 3
    wait_for(lambda: bound_node(served, "second"), "second bound")
    wait_for(lambda: "bound default/second to" in standby.output(), "the new leader's log of it")
    assert "bound default/second" not in leader.output()


def test_sigterm_releases_the_lease_so_the_standby_takes_over_at_once(elected):
    served, start = elected
    leader, standby = leader_and_standby(served, start("a", LONG_LEASE_S), start("b", LONG_LEASE_S))
    before = lease_spec(served)
    stops_cleanly(leader.process)                              # SIGTERM: clean exit
    assert "released lease kube-system/gpusched" in leader.output()
    released = lease_spec(served)      # cleared, unless the standby was quicker than this read
    if released["holderIdentity"] != standby.identity:
        assert (released["holderIdentity"], released["leaseDurationSeconds"]) == ("", 1)
        assert released["leaseTransitions"] == before["leaseTransitions"]
    wait_for(lambda: holder(served) == standby.identity, "the standby to take the released lease")
    after = lease_spec(served)
    # Without the release the standby would wait for the lease to expire.
    assert seconds(after["acquireTime"]) < seconds(before["renewTime"]) + LONG_LEASE_S
    assert after["leaseTransitions"] == before["leaseTransitions"] + 1
    served.create_pod("after-release", gpus=1, scheduler="gpusched")
    wait_for(lambda: bound_node(served, "after-release"), "after-release bound")
    wait_for(lambda: "bound default/after-release to" in standby.output(),
             "the new leader's log of it")

"""Surface 3: concurrent writers against one ``gpusched serve`` and its state file.

Each round, ``API_WRITERS`` threads write through the API and one through the CLI on serve's
state file, ``OPS_PER_ROUND`` operations each, at once: pods created (whole GPUs, fractional
shares, MIG profiles, time-slice replicas; some pinned by ``spec.nodeName``) and deleted, the
device-plugin ConfigMap's replicas changed and deleted, a NodePool created, its MIG layout changed
under the pods that use it, deleted, and its Node deleted. Every operation is a case (crash,
hang); after each round the state is checked as on the API surface (lists, a new pod, ``describe
nodes``, ``advance 1m``, the invariant checker). Operations come from ``random.Random(seed + i)``
per writer (the interleaving is the machine's).
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

from tests.fuzz import cases, harness
from tests.fuzz.harness import CliWorker, Tally
from tests.fuzz.surface_api import ApiSurface, collection_path, named_path

API_WRITERS = 3
OPS_PER_ROUND = 6
PODS = "/api/v1/namespaces/default/pods"
LIMITS = ({"nvidia.com/gpu": 1}, {"nvidia.com/gpu": 2}, {cases.MILLI: 300}, {cases.MILLI: 700},
          {"nvidia.com/mig-1g.5gb": 1}, {"nvidia.com/mig-2g.10gb": 1}, {"nvidia.com/gpu.shared": 1}, {"cpu": "1"})
NODES = ("gpu-node-1", "gpu-node-2", "gpu-node-3", "cpu-node-1", "mig-node-1", "churn-1")
MIG_CONFIGS = ("all-1g.5gb", "all-2g.10gb", "all-balanced", "all-3g.20gb")


def churn_pool(rng: random.Random) -> dict[str, Any]:
    return cases.nodepool("churn", gpu={"model": "A100-40GB", "count": rng.randint(1, 2)}, cpu="32",
                          memory="128Gi", migConfig=rng.choice(MIG_CONFIGS), migStrategy="mixed")


def api_op(rng: random.Random, writer: int) -> tuple[str, str, Any]:
    """(method, path, body) of one random write."""
    roll = rng.random()
    if roll < 0.45:
        body = cases.pod(f"w{writer}-{rng.randint(0, 15)}", dict(rng.choice(LIMITS)),
                         rng.choice(NODES) if rng.random() < 0.3 else "")
        return "POST", PODS, body
    if roll < 0.7:
        return "DELETE", f"{PODS}/w{rng.randint(0, API_WRITERS)}-{rng.randint(0, 15)}", None
    if roll < 0.8:
        body = cases.configmap("time-slicing-config-all", {"any": cases.time_slicing(rng.randint(1, 4))})
        return ("PUT", named_path(body), body) if rng.random() < 0.7 else ("DELETE", named_path(body), None)
    pool = churn_pool(rng)
    choice = rng.random()
    if choice < 0.4:
        return "POST", collection_path(pool), pool
    if choice < 0.8:
        return "PUT", named_path(pool), pool
    if choice < 0.9:
        return "DELETE", named_path(pool), None
    return "DELETE", "/api/v1/nodes/churn-1", None


class ConcurrentSurface(ApiSurface):
    """The API surface's serve and checks, with writer threads and a second CLI worker."""

    def __init__(self, workdir: Path, tally: Tally) -> None:
        super().__init__(workdir, tally)
        self.cli_writer = CliWorker()

    def close(self) -> None:
        self.cli_writer.close()
        super().close()

    def api_writer(self, writer: int, rng: random.Random) -> None:
        for _ in range(OPS_PER_ROUND):
            method, path, body = api_op(rng, writer)
            reply = self.server.json(method, path, body)
            self.tally.add_case()
            self.tally.slowest_s = max(self.tally.slowest_s, round(reply.waited.wall_s, 2))
            failure = reply.failure()
            if failure is not None:
                self.tally.record(failure[0], f"{method} {path} {str(body)[:200]}: {failure[1]}")
            elif reply.ok and method != "DELETE":
                self.unchecked.append(f"{method} {path}")

    def cli_writes(self, rng: random.Random) -> None:
        file = self.dir / f"cli-{rng.random()}.yaml"
        for _ in range(OPS_PER_ROUND):
            name = f"c-{rng.randint(0, 15)}"
            if rng.random() < 0.6:
                file.write_text(cases.dump(cases.pod(name, dict(rng.choice(LIMITS)),
                                                     rng.choice(NODES) if rng.random() < 0.3 else "")))
                argv: tuple[str, ...] = ("apply", "-f", str(file))
            else:
                argv = ("delete", "pod", name, "--ignore-not-found")
            answer, waited = self.cli_writer.cli("--state", str(self.state), *argv, idle_limit=harness.WALL_CEILING_S)
            self.tally.add_case()
            if waited.hang or "died" in answer or harness.crash_text(answer.get("err", "")):
                self.tally.record(harness.HANG if waited.hang else harness.CRASH,
                                  f"concurrent `gpusched {' '.join(argv)}`: "
                                  f"{waited.hang or answer.get('died') or answer['err'].strip()[-300:]}")
        file.unlink(missing_ok=True)

    def round(self, seed: int) -> None:
        self.server.also_busy = (self.cli_writer.process.pid,)
        threads = [threading.Thread(target=self.api_writer, args=(i, random.Random(seed * 100 + i)))
                   for i in range(API_WRITERS)]
        threads.append(threading.Thread(target=self.cli_writes, args=(random.Random(seed * 100 + 99),)))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.unchecked.append(f"concurrent round {seed}")
        if self.server.process.poll() is not None:
            self.tally.record(harness.CRASH, f"serve exited {self.server.process.returncode} in round {seed}")
            self.restart(fresh=True)
            return
        self.check()


def run(workdir: Path, operations: int, seed: int = 0, stop_at: float | None = None) -> Tally:
    """Rounds until ``operations`` writes have been made; returns the tally."""
    tally = Tally("concurrent writers")
    surface = ConcurrentSurface(workdir, tally)
    per_round = (API_WRITERS + 1) * OPS_PER_ROUND
    try:
        for n in range(max(1, -(-operations // per_round))):
            if stop_at is not None and time.monotonic() > stop_at:
                break
            surface.round(seed + n)
    finally:
        surface.close()
    return tally

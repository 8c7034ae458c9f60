"""Surface 1: manifests through the CLI (``gpusched apply -f FILE`` on a state file).

Each case is one file applied to a state file that holds the lab cluster (``examples/cluster.yaml``,
the priority classes and the MIG node of ``examples/mig-mixed``); accepted cases pile up in it so
later cases meet earlier ones, and the state starts over every ``RESET_EVERY`` accepted cases or
after a failure. After accepted writes (each table step; every ``CHECK_EVERY`` generated cases)
the state is checked: ``get``, ``describe nodes``, a new pod and ``advance 1m`` must succeed
(poisoned read otherwise, naming the cases applied since the last check) and the invariant checker
must find nothing (double-held device, over-committed node).
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings

from tests.fuzz import cases, harness
from tests.fuzz.generate import GeneratedCase, manifest_cases
from tests.fuzz.harness import CliWorker, Tally

BASE_FILES = ("examples/cluster.yaml", "examples/priority-classes.yaml", "examples/mig-mixed/1-mig-node.yaml")
RESET_EVERY = 40
CHECK_EVERY = 8
READS = (("get", "pods", "-A"), ("get", "nodes"), ("get", "configmaps", "-A"), ("describe", "nodes"))


class ManifestSurface:
    """A CLI worker, a prepared base state and the running state of one fuzz session."""

    def __init__(self, workdir: Path, tally: Tally) -> None:
        self.dir, self.tally, self.worker = workdir, tally, CliWorker()
        self.base, self.state, self.file = workdir / "base.db", workdir / "state.db", workdir / "case.yaml"
        args = [a for f in BASE_FILES for a in ("-f", f)]
        answer, _ = self.worker.cli("--state", str(self.base), "apply", *args)
        assert answer.get("code") == 0, f"the base cluster did not apply: {answer}"
        self.unchecked: list[str] = []
        self.accepted = self.probes = 0
        self.fresh()

    def fresh(self) -> None:
        harness.state_copy(self.base, self.state)
        self.unchecked, self.accepted = [], 0

    def close(self) -> None:
        self.worker.close()

    def apply(self, text: str, what: str) -> str:
        """Apply one file: "accepted", "refused" or "failed" (a failure already recorded)."""
        self.file.write_text(text, encoding="utf-8")
        answer, waited = self.worker.cli("--state", str(self.state), "apply", "-f", str(self.file))
        self.tally.slowest_s = max(self.tally.slowest_s, round(waited.wall_s, 2))
        if waited.hang or "died" in answer:
            self.tally.record(harness.HANG if waited.hang else harness.CRASH,
                              f"apply {what}: {waited.hang or answer['died']}")
            self.fresh()
            return "failed"
        if harness.crash_text(answer["err"]):
            self.tally.record(harness.CRASH, f"apply {what}: {answer['err'].strip()[-300:]}")
            return "failed"
        if answer["code"] != 0:
            return "refused"
        self.unchecked.append(what)
        self.accepted += 1
        return "accepted"

    def check(self) -> bool:
        """The reads, a create and a tick after the accepted writes, and the invariants."""
        if not self.unchecked:
            return True
        self.tally.checks += 1
        after = "; ".join(self.unchecked[-4:])
        self.probes += 1
        probe = self.dir / "probe.yaml"
        probe.write_text(cases.dump(cases.pod(f"probe-{self.probes}", {"cpu": "10m"})))
        answer, waited = self.worker.call({"op": "invariants", "state": str(self.state)})
        if "violations" not in answer:
            self.tally.record(harness.HANG if waited.hang else harness.POISONED,
                              f"invariant checker after {after}: {waited.hang or answer}")
            self.fresh()
            return False
        violations = answer["violations"]
        harness.classify_violations(self.tally, violations, after)
        for argv in (*READS, ("apply", "-f", str(probe)), ("advance", "1m")):
            answer, waited = self.worker.cli("--state", str(self.state), *argv)
            if waited.hang or answer.get("code") != 0 or harness.crash_text(answer.get("err", "")):
                why = waited.hang or answer.get("died") or answer["err"].strip()[-300:]
                self.tally.record(harness.HANG if waited.hang else harness.POISONED,
                                  f"`gpusched {' '.join(argv)}` after {after}: {why}")
                self.fresh()
                return False
        self.unchecked = []
        if violations or self.accepted >= RESET_EVERY:
            self.fresh()
        return not violations

    def run_table_case(self, case: cases.ManifestCase) -> None:
        """Every step of a named case on a fresh state, checked after each accepted step."""
        self.fresh()
        self.tally.cases += 1
        for i, text in enumerate(case.steps):
            last = i == len(case.steps) - 1
            outcome = self.apply(text, f"{case.id} step {i + 1}")
            if outcome == "accepted" and last and case.refused:
                self.tally.record(harness.ACCEPTED_INVALID, f"{case.id}: applied, kube-apiserver refuses it")
            if outcome == "failed" or not self.check():
                return

    def run_generated(self, case: GeneratedCase) -> None:
        self.tally.cases += 1
        outcome = self.apply(case.text, case.what)
        if outcome == "accepted" and case.expect_refused:
            self.tally.record(harness.ACCEPTED_INVALID, f"{case.what}: applied, kube-apiserver refuses it")
        if len(self.unchecked) >= CHECK_EVERY:
            self.check()


def run(workdir: Path, generated: int, derandomize: bool = True, seed: int = 0,
        table: bool = True, stop_at: float | None = None) -> Tally:
    """The table cases, then ``generated`` hypothesis cases; returns the tally."""
    tally = Tally("manifests (CLI)")
    surface = ManifestSurface(workdir, tally)
    try:
        if table:
            for case in cases.MANIFEST_CASES:
                surface.run_table_case(case)
        surface.fresh()
        if generated:
            @settings(max_examples=generated, derandomize=derandomize, deadline=None, database=None,
                      suppress_health_check=list(HealthCheck))
            @given(manifest_cases())
            def fuzz(case: GeneratedCase) -> None:
                harness.check_time(stop_at)
                surface.run_generated(case)

            harness.run_budget(fuzz, derandomize, seed)
            surface.check()
    finally:
        surface.close()
    return tally

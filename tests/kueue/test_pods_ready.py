"""waitForPodsReady's rules (``gpusched.kueue.pods_ready``) against Kueue's tests:
``pkg/controller/core/workload_controller_test.go`` ``TestAdmittedNotReadyWorkload``,
``pkg/workload/workload_test.go`` (``UpdateRequeueState``), ``pkg/controller/jobs/job/
job_controller_test.go`` ``TestPodsReady``, ``jobframework/reconciler.go``
``generatePodsReadyCondition``, ``apis/config/v1beta2/defaults.go``."""

from __future__ import annotations

import pytest

from gpusched.kueue import pods_ready as rules

CFG = rules.PodsReadyConfig(timeout=300, recovery_timeout=120)


@pytest.mark.parametrize("ready,admitted,since,want", [
    pytest.param(None, 100.0, 0.0, 400.0, id="admitted, no PodsReady: timeout after Admitted"),
    pytest.param({"status": "False", "reason": "WaitForStart"}, 100.0, 150.0, 400.0,
                 id="WaitForStart counts from Admitted"),
    pytest.param({"status": "True", "reason": "Started"}, 100.0, 150.0, None, id="ready: never"),
    pytest.param({"status": "False", "reason": "WaitForRecovery"}, 100.0, 500.0, 620.0,
                 id="WaitForRecovery counts recoveryTimeout from PodsReady"),
])
def test_admitted_not_ready_deadline(ready, admitted, since, want):
    assert rules.not_ready_deadline(CFG, admitted, ready, since) == want


def test_recovery_timeout_zero_disables_recovery_and_null_config_disables_all():
    cfg = rules.config_from({"waitForPodsReady": {"timeout": "10m", "recoveryTimeout": "0s"}})
    assert (cfg.timeout, cfg.recovery_timeout) == (600, None)
    assert rules.not_ready_deadline(cfg, 0, {"status": "False", "reason": "WaitForRecovery"}, 5) is None
    assert not rules.config_from({"waitForPodsReady": None}).enabled


def test_defaults_are_kueue_v0_19s():
    """defaults.go + CHANGELOG-0.19: on, 30m timeout and recovery, base 60 s, max 3600 s."""
    assert rules.config_from({}) == rules.PodsReadyConfig(True, 1800, 1800, False, None, 60, 3600)


@pytest.mark.parametrize("count,seconds", [
    pytest.param(1, 60, id="first requeue: base"), pytest.param(2, 120, id="doubles"),
    pytest.param(6, 1920, id="60*2^5"), pytest.param(7, 3600, id="capped at backoffMaxSeconds"),
])
def test_requeue_backoff(count, seconds):
    assert rules.backoff_seconds(count, 60, 3600) == seconds


@pytest.mark.parametrize("spec,status,ready", [
    pytest.param({"parallelism": 3, "completions": 3}, {"ready": 2}, False, id="2 of 3 ready"),
    pytest.param({"parallelism": 3, "completions": 3}, {"ready": 2, "succeeded": 1}, True,
                 id="ready + succeeded reach parallelism"),
    pytest.param({"parallelism": 4, "completions": 2}, {"ready": 2}, True, id="min(parallelism, completions)"),
    pytest.param({"parallelism": 2}, {"ready": 1, "uncountedTerminatedPods": {"succeeded": ["u"]}}, True,
                 id="uncounted succeeded count"),
])
def test_job_pods_ready(spec, status, ready):
    assert rules.job_pods_ready({"spec": spec, "status": status}) is ready


@pytest.mark.parametrize("ready,previous,want", [
    pytest.param(False, None, ("False", "WaitForStart"), id="not yet started"),
    pytest.param(True, {"status": "False", "reason": "WaitForStart"}, ("True", "Started"), id="started"),
    pytest.param(False, {"status": "True", "reason": "Started"}, ("False", "WaitForRecovery"),
                 id="a pod failed after start"),
    pytest.param(True, {"status": "False", "reason": "WaitForRecovery"}, ("True", "Recovered"),
                 id="recovered"),
])
def test_pods_ready_condition(ready, previous, want):
    got = rules.pods_ready_condition(ready, previous)
    assert (got.status, got.reason) == want

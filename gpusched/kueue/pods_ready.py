"""Kueue's ``waitForPodsReady``: all-or-nothing by time-out (pure rules, no store).

Kueue v0.19 enables it by default (``CHANGELOG-0.19.md``: 30 minute timeout, 30 minute
recovery timeout). Config (``apis/config/v1beta2/configuration_types.go``, ``defaults.go``):
``waitForPodsReady{timeout: 30m, blockAdmission: false, recoveryTimeout: <timeout>,
requeuingStrategy{timestamp: Eviction, backoffLimitCount: null, backoffBaseSeconds: 60,
backoffMaxSeconds: 3600}}``, read from the Configuration in Kueue's ConfigMap
(``kueue-system/kueue-manager-config``, key ``controller_manager_config.yaml``).

Rules:

- :func:`pods_ready_condition` (``jobframework/reconciler.go`` ``generatePodsReadyCondition``):
  an admitted Workload's ``PodsReady``: True ``Started`` (``Recovered`` after a failure) with
  ``All pods reached readiness and the workload is running``; else False ``WaitForStart``
  (``Not all pods are ready or succeeded``), or ``WaitForRecovery`` (``At least one pod has
  failed, waiting for recovery``) once it had been ready.
- :func:`job_pods_ready` (``jobs/job/job_controller.go`` ``PodsReady``): a batch/v1 Job is ready
  when ``succeeded + ready + uncountedTerminatedPods.succeeded >= min(parallelism, completions)``.
- :func:`not_ready_deadline` (``workload_controller.go`` ``admittedNotReadyWorkload``): an
  admitted Workload whose PodsReady is not True is evicted ``timeout`` after Admitted became
  True (reason WaitForStart), or ``recoveryTimeout`` after PodsReady went False (WaitForRecovery).
- :func:`backoff_seconds` (``workload.UpdateRequeueState``): the n-th requeue waits
  ``backoffBaseSeconds * 2^(n-1)``, at most ``backoffMaxSeconds`` (upstream adds a jitter of
  at most 0.01 %, left out so that runs repeat); past ``backoffLimitCount`` the Workload is
  deactivated instead.

Neighbours: ``kueue.conditions`` (Condition); the controller is ``cluster.controllers.kueue.
pods_ready``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from gpusched.kueue.conditions import Condition
from gpusched.objects.duration import parse_duration

READY_MESSAGE = "All pods reached readiness and the workload is running"
NOT_READY_MESSAGE = "Not all pods are ready or succeeded"
RECOVERY_MESSAGE = "At least one pod has failed, waiting for recovery"
BACKOFF_FINISHED = "The workload backoff was finished"
DEACTIVATED_MESSAGE = ("The workload is deactivated due to exceeding the maximum number of "
                       "re-queuing retries")


@dataclass(frozen=True)
class PodsReadyConfig:
    """``waitForPodsReady`` with Kueue's defaults (``enabled`` False: ``waitForPodsReady`` set
    to null in the Configuration)."""

    enabled: bool = True
    timeout: float = 1800.0
    recovery_timeout: float | None = 1800.0       # None: "0s", recovery not timed
    block_admission: bool = False
    backoff_limit: int | None = None
    backoff_base: float = 60.0
    backoff_max: float = 3600.0


def config_from(configuration: Mapping[str, Any] | None) -> PodsReadyConfig:
    """``waitForPodsReady`` of a Kueue Configuration (a missing key: the defaults; an explicit
    null: off); ``timeout`` / ``recoveryTimeout`` are Go durations (``10m``)."""
    if configuration is None or "waitForPodsReady" not in configuration:
        return PodsReadyConfig()
    raw = configuration.get("waitForPodsReady")
    if raw is None:
        return PodsReadyConfig(enabled=False)
    timeout = parse_duration(str(raw.get("timeout", "30m")))
    recovery_raw = raw.get("recoveryTimeout")
    recovery = timeout if recovery_raw is None else parse_duration(str(recovery_raw))
    strategy = raw.get("requeuingStrategy") or {}
    limit = strategy.get("backoffLimitCount")
    return PodsReadyConfig(True, timeout, recovery or None, bool(raw.get("blockAdmission", False)),
                           None if limit is None else int(limit),
                           float(strategy.get("backoffBaseSeconds", 60)),
                           float(strategy.get("backoffMaxSeconds", 3600)))


def backoff_seconds(count: int, base: float, cap: float) -> float:
    """The wait before the ``count``-th requeue: ``base * 2^(count-1)``, at most ``cap``.

    >>> [backoff_seconds(n, 60, 3600) for n in (1, 2, 3, 7, 8)]
    [60.0, 120.0, 240.0, 3600.0, 3600.0]
    """
    return float(min(base * 2 ** min(max(count - 1, 0), 62), cap))


def job_pods_ready(job: Mapping[str, Any]) -> bool:
    """``PodsReady`` of a batch/v1 Job (see the module docstring)."""
    spec, status = job.get("spec") or {}, job.get("status") or {}
    parallelism = int(spec.get("parallelism", 1) if spec.get("parallelism") is not None else 1)
    completions = spec.get("completions")
    want = parallelism if completions is None else min(parallelism, int(completions))
    uncounted = len((status.get("uncountedTerminatedPods") or {}).get("succeeded") or ())
    return int(status.get("succeeded") or 0) + int(status.get("ready") or 0) + uncounted >= want


def pods_ready_condition(ready: bool, previous: Mapping[str, Any] | None) -> Condition:
    """The PodsReady condition for an admitted Workload whose pods are ``ready`` or not."""
    was = dict(previous or {})
    had_started = was.get("status") == "True" or was.get("reason") == "WaitForRecovery"
    if ready:
        reason = "Recovered" if was.get("reason") == "WaitForRecovery" else "Started"
        return Condition("PodsReady", "True", reason, READY_MESSAGE)
    if had_started:
        return Condition("PodsReady", "False", "WaitForRecovery", RECOVERY_MESSAGE)
    return Condition("PodsReady", "False", "WaitForStart", NOT_READY_MESSAGE)


def not_ready_deadline(config: PodsReadyConfig, admitted_at: float,
                       pods_ready: Mapping[str, Any] | None, since: float) -> float | None:
    """When an admitted Workload with this PodsReady condition is evicted (None: never):
    ``since`` is the PodsReady condition's transition time."""
    if not config.enabled:
        return None
    ready = dict(pods_ready or {})
    if ready.get("status") == "True":
        return None
    if ready.get("reason") == "WaitForRecovery":
        return None if config.recovery_timeout is None else since + config.recovery_timeout
    return admitted_at + config.timeout


def timeout_message(namespace: str, name: str) -> str:
    """``Exceeded the PodsReady timeout <ns>/<name>`` (``reconcileNotReadyTimeout``)."""
    return f"Exceeded the PodsReady timeout {namespace}/{name}"

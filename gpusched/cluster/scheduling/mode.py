"""The embedded scheduler's queue-order mode: ``default`` (kube-scheduler's order), ``backfill``
or ``strict``, read from the ConfigMap ``kube-system/gpusched-scheduler`` (keys ``mode`` and
``backfillDepth``) at each scheduling pass.

Kept apart from the modes themselves (``cluster.scheduling.backfill``, which loads the backfill
planner) so that a pass in the default mode, the common case, reads its mode without importing
them. Neighbours: ``cluster.scheduling.host`` (reads the mode), ``cluster.scheduling.backfill``
(runs the other two), ``cluster.explain_facts``; docs/backfill.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusched.cluster.apiserver.view import View
from gpusched.errors import UsageError
from gpusched.objects.digits import is_digits

CONFIG_NAMESPACE, CONFIG_NAME = "kube-system", "gpusched-scheduler"
MODES = ("default", "backfill", "strict")
MAX_BACKFILL_DEPTH = 1_000_000   # Slurm's bf_max_job_test maximum (SchedulerParameters)


@dataclass(frozen=True, slots=True)
class ModeConfig:
    mode: str = "default"
    depth: int = 1


def scheduler_mode(view: View) -> ModeConfig:
    """The mode from ``kube-system/gpusched-scheduler``; a bad value is the applier's error."""
    body = view.get("ConfigMap", CONFIG_NAME, CONFIG_NAMESPACE)
    data = (body or {}).get("data") or {}
    where = f"ConfigMap {CONFIG_NAMESPACE}/{CONFIG_NAME}"
    mode = str(data.get("mode", "default")).strip() or "default"
    if mode not in MODES:
        raise UsageError(f'{where}: data.mode: Unsupported value: "{mode}": supported values: '
                         + ", ".join(f'"{m}"' for m in MODES))
    depth_text = str(data.get("backfillDepth", "1")).strip()
    digits = is_digits(depth_text) and len(depth_text) <= 7
    if not digits or not 1 <= int(depth_text) <= MAX_BACKFILL_DEPTH:
        raise UsageError(f'{where}: data.backfillDepth: Invalid value: "{depth_text[:32]}": '
                         f"must be an integer between 1 and {MAX_BACKFILL_DEPTH}")
    return ModeConfig(mode, 1 if mode == "strict" else int(depth_text))

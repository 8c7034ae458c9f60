"""The output files of sbatch jobs (``slurm-%j.out``), written after every command that can
start or end one (``sbatch``, ``scancel``, ``advance``...): what ``metrics.slurm_output`` says is
due, on this machine's disk, with the pod's annotation noting what was written.

Neighbours: ``metrics.slurm_output`` (the contents); used by ``cli.slurm_cmd`` and
``cli.commands`` (``advance``).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpusched.cluster.cluster import Cluster


def write_job_outputs(cluster: Cluster) -> None:
    """Write the output files (``slurm-%j.out``) of sbatch jobs that started or timed out since
    the last call (``metrics.slurm_output``); a file that cannot be written is one warning."""
    from gpusched.metrics.slurm_output import ANN_OUTPUT_STATE, pending_outputs   # CLI start-up

    with cluster.writing(settle=False) as view:
        for write in pending_outputs(view):
            try:
                if write.text or not write.append:
                    with open(write.path, "a" if write.append else "w", encoding="utf-8") as out:
                        out.write(write.text)
            except OSError as err:
                print(f"warning: cannot write {write.path}: {err.strerror}", file=sys.stderr)
            pod = view.copy("Pod", write.pod, write.namespace)
            if pod is not None:
                pod["metadata"].setdefault("annotations", {})[ANN_OUTPUT_STATE] = write.state
                view.update(pod)

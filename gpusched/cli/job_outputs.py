"""The output files of sbatch jobs (``slurm-%j.out``), written after every command that can
start or end one (``sbatch``, ``scancel``, ``advance``...) by ``slurm.output.write_outputs``;
this module prints its warnings.

Neighbours: ``slurm.output`` (the files); used by ``cli.slurm_cmd`` and ``cli.commands``
(``advance``; a module of its own so neither imports the other).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpusched.cluster.cluster import Cluster


def write_job_outputs(cluster: Cluster) -> None:
    """Write the output files of sbatch jobs that started or timed out since the last call
    (``slurm.output``); a file that cannot be written is one warning."""
    from gpusched.slurm.output import write_outputs   # CLI start-up

    for warning in write_outputs(cluster):
        print(warning, file=sys.stderr)

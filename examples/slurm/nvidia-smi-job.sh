#!/bin/bash
# An sbatch job that only looks at its GPUs, as Slurm GPU guides start: no duration given.
#
#   gpusched apply -f examples/cluster.yaml
#   cd /tmp && gpusched sbatch /path/to/gpusched/examples/slurm/nvidia-smi-job.sh
#   cat slurm-*.out                    # written when the job starts, in the submit directory
#   gpusched advance 10s && gpusched sacct
#
# What you see: "Submitted batch job 1"; slurm-1.out starts with a line saying the output is
# simulated and one naming the allocated GPUs (two A100s, CUDA_VISIBLE_DEVICES=0,1), then the
# job's hostname, nvidia-smi's table of its two GPUs, `nvidia-smi -L` and the echo line. The
# body has no `sleep`, so the job runs the documented default of 2 s per command line (10 s)
# and `sacct` shows it COMPLETED with ExitCode 0:0 (its .batch step too).
#SBATCH --job-name=nvidia-smi
#SBATCH --gres=gpu:a100_40gb:2
#SBATCH --cpus-per-task=4
hostname
nvidia-smi
nvidia-smi -L
echo "GPUs: $CUDA_VISIBLE_DEVICES on $SLURMD_NODENAME (job $SLURM_JOB_ID)"
python train.py

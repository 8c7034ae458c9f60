#!/bin/bash
# A job that runs until killed stops at its --time limit: Slurm's TIMEOUT.
#
#   gpusched apply -f examples/cluster.yaml
#   gpusched sbatch examples/slurm/until-killed.sh
#   gpusched advance 6m && gpusched sacct && tail -1 slurm-*.out
#   gpusched squeue -t all
#
# What you see: after 5 minutes the job is TIMEOUT in sacct (ExitCode 0:0, its batch step
# CANCELLED 0:15), `squeue -t all` lists it as TO, its pod is Failed with reason
# DeadlineExceeded, and the output file ends with slurmstepd's
# "*** JOB 1 ON gpu-node-... CANCELLED AT ... DUE TO TIME LIMIT ***".
#SBATCH --job-name=serve
#SBATCH --gres=gpu:1
#SBATCH --time=5
python -m http.server 8000 &
sleep infinity

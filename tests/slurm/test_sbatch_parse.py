"""sbatch script parsing: every supported option, and each error naming the option and line."""

from __future__ import annotations

import pytest

from gpusched.errors import UsageError
from gpusched.slurm.sbatch import hostlist, parse_sbatch


def script(*lines: str, body: str = "sleep 60") -> str:
    return "\n".join(["#!/bin/bash", *(f"#SBATCH {line}" for line in lines), body]) + "\n"


CASES = [
    ("gres-typed", ["--gres=gpu:a100_40gb:4"], {"gpus": 4, "gpu_type": "a100_40gb"}),
    ("gres-count", ["--gres=gpu:2"], {"gpus": 2, "gpu_type": ""}),
    ("gres-bare", ["--gres gpu"], {"gpus": 1}),
    ("gpus-typed", ["--gpus=t4:1"], {"gpus": 1, "gpu_type": "t4"}),
    ("gpus-short", ["-G 3"], {"gpus": 3}),
    ("cpus", ["-c 8"], {"cpus_per_task": 8}),
    ("cpus-long", ["--cpus-per-task=2"], {"cpus_per_task": 2}),
    ("mem-gib", ["--mem=16G"], {"mem_mib": 16384}),
    ("mem-default-mib", ["--mem 4096"], {"mem_mib": 4096}),
    ("time-minutes", ["-t 30"], {"time_limit": 1800}),
    ("time-days", ["--time=1-00:00:10"], {"time_limit": 86410}),
    ("time-unlimited", ["--time=UNLIMITED"], {"time_limit": None}),
    ("partition", ["-p t4"], {"partition": "t4"}),
    ("qos", ["--qos=high"], {"qos": "high"}),
    ("name-short-glued", ["-Jtrain"], {"name": "train"}),
    ("array-limit", ["--array=0-3%2"], {"array": (0, 1, 2, 3), "array_limit": 2}),
    ("dependency", ["-d afterok:4:5"], {"dependencies": ("4", "5")}),
    ("one-node-accepted", ["-N 1 -n 1 -o out.txt -e err.txt"], {"gpus": 0}),
    ("several-per-line", ["--gres=gpu:2 -c 4 --mem=1G"], {"gpus": 2, "cpus_per_task": 4}),
]


@pytest.mark.parametrize("lines, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_supported_options(lines, expected):
    job = parse_sbatch(script(*lines), "job.sh")
    assert {key: getattr(job, key) for key in expected} == expected


def test_defaults_and_body():
    job = parse_sbatch(script(body="echo start\nsleep 2m\nsleep 30"), "dir/train.sh")
    assert (job.name, job.gpus, job.cpus_per_task, job.run_seconds) == ("train.sh", 0, 1, 150.0)


def test_options_after_the_first_command_are_ignored():
    job = parse_sbatch("#!/bin/sh\necho hi\n#SBATCH --gres=gpu:2\n", "x.sh")
    assert job.gpus == 0


ERRORS = [
    ("unsupported", ["--gres=gpu:1", "--mail-type=END"],
     "unsupported #SBATCH option --mail-type (job.sh line 3)"),
    ("unsupported-short", ["-w node1"], "unsupported #SBATCH option -w (job.sh line 2)"),
    ("bad-time", ["--time=soon"], 'invalid #SBATCH --time value "soon"'),
    ("bad-mem", ["--mem=lots"], 'invalid #SBATCH --mem value "lots"'),
    ("zero-gpus", ["--gres=gpu:0"], 'invalid #SBATCH --gres value "gpu:0"'),
    ("not-gpu-gres", ["--gres=mps:50"], 'invalid #SBATCH --gres value "mps:50"'),
    ("afterany", ["--dependency=afterany:3"], 'dependency type "afterany" is not supported'),
    ("two-nodes", ["-N 2"], "only 1 is supported"),
    ("backwards-array", ["--array=5-1"], "a range must go upwards"),
    # issue 25: slurm.conf MaxArraySize (default 1001) bounds the task ids; 0-1000000000 built a
    # billion-element list before
    ("array-past-MaxArraySize", ["--array=0-1000000000"],
     "Invalid job array specification: indices must be less than MaxArraySize (1001)"),
    ("array-index-1001", ["--array=1,1001"], "must be less than MaxArraySize (1001)"),
]


@pytest.mark.parametrize("lines, message", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_errors_name_option_and_line(lines, message):
    with pytest.raises(UsageError) as err:
        parse_sbatch(script(*lines), "job.sh")
    assert message in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("names, expected", [
    (["n1"], "n1"), (["a-1", "a-2", "a-4"], "a-[1-2,4]"), (["b", "a-3", "a-2"], "a-[2-3],b"),
], ids=["single", "gap", "mixed"])
def test_hostlist(names, expected):
    assert hostlist(names) == expected

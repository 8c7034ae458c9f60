"""``gpusched exec`` / ``gpusched logs``: what a container would see, through the console script.

Layouts are nvidia-smi 550's (published transcripts of driver 550.54.15: 91-column tables,
``GPU 0: <name> (UUID: GPU-...)`` and ``  MIG <profile>     Device  0: (UUID: MIG-...)`` for
``-L``); exit codes follow client-go remotecommand (the command's own code, here 126 for a
command gpusched cannot answer).
"""

from __future__ import annotations

import re

import pytest

from tests.cli.runner import Gpusched, run_stepping_wall

EXAMPLE = "examples/exec-nvidia-smi"
SIMULATED = re.compile(r"^\[gpusched: simulated .* the embedded cluster runs no containers\]")


@pytest.fixture(scope="module")
def g(tmp_path_factory) -> Gpusched:
    cli = Gpusched(tmp_path_factory.mktemp("exec"))
    cli.ok("apply", "-f", f"{EXAMPLE}/1-time-sliced.yaml", "-f", f"{EXAMPLE}/2-mig.yaml")
    return cli


def table_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(("|", "+"))]


@pytest.mark.parametrize("pod,command", [
    ("infer-a", ["nvidia-smi"]), ("mig-pod", ["nvidia-smi"]), ("infer-a", ["nvidia-smi", "-L"]),
    ("infer-a", ["env"]), ("mig-pod", ["ls", "/dev/nvidia*"]), ("infer-a", ["python", "x.py"]),
], ids=lambda v: str(v))
def test_first_line_says_simulated(g, pod, command):
    out = g.run("exec", pod, "--", *command).out
    assert SIMULATED.match(out.splitlines()[0]), out


def test_time_sliced_nvidia_smi_shows_both_pods(g):
    out = g.ok("exec", "infer-a", "--", "nvidia-smi").out
    lines = table_lines(out)
    assert all(len(line) == 91 for line in lines), [line for line in lines if len(line) != 91]
    assert "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |" in lines
    gpu_row = next(line for line in lines if "NVIDIA L4" in line)
    assert gpu_row.startswith("|   0  NVIDIA L4 ")
    assert "23034MiB |     80%      Default |" in out         # two pods at 40 % each
    processes = [line for line in lines if re.match(r"^\|    0   N/A  N/A +\d+      C   python ", line)]
    assert len(processes) == 2                              # this pod and infer-b


def test_mig_nvidia_smi_shows_the_instance(g):
    out = g.ok("exec", "mig-pod", "--", "nvidia-smi").out
    assert all(len(line) == 91 for line in table_lines(out))
    assert "|   0  NVIDIA H100 80GB HBM3          On  |" in out
    assert "|     N/A      Default |" in out and "|              Enabled |" in out
    assert "| MIG devices:" in out
    assert re.search(r"\|  0    1   0   0  \| +\d+MiB /  9984MiB    \| 16      0 \|", out)


def test_nvidia_smi_list(g):
    ts = g.ok("exec", "infer-a", "--", "nvidia-smi", "-L").out.splitlines()[1:]
    assert re.fullmatch(r"GPU 0: NVIDIA L4 \(UUID: GPU-[0-9a-f-]{36}\)", ts[0]) and len(ts) == 1
    mig = g.ok("exec", "mig-pod", "--", "nvidia-smi", "-L").out.splitlines()[1:]
    assert re.fullmatch(r"GPU 0: NVIDIA H100 80GB HBM3 \(UUID: GPU-[0-9a-f-]{36}\)", mig[0])
    assert re.fullmatch(r"  MIG 1g\.10gb     Device  0: \(UUID: MIG-[0-9a-f-]{36}\)", mig[1])


def test_env_names_the_physical_device(g):
    env = dict(line.split("=", 1) for line in g.ok("exec", "infer-a", "--", "env").out.splitlines()[1:])
    gpu = g.ok("exec", "infer-a", "--", "nvidia-smi", "-L").out.split("UUID: ")[1].rstrip(")\n")
    assert env["NVIDIA_VISIBLE_DEVICES"] == gpu            # replica ::k mapped to its GPU
    assert "CUDA_VISIBLE_DEVICES" not in env               # the device plugin does not set it
    mig_env = g.ok("exec", "mig-pod", "--", "env").out
    assert re.search(r"^NVIDIA_VISIBLE_DEVICES=MIG-[0-9a-f-]{36}$", mig_env, re.M)


def test_ls_dev_nvidia(g):
    assert g.ok("exec", "infer-a", "--", "ls", "/dev/nvidia*").out.splitlines()[1:] == [
        "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia0", "/dev/nvidiactl"]
    mig = g.ok("exec", "mig-pod", "--", "ls", "/dev/nvidia*").out.splitlines()[1:]
    assert mig[:5] == ["/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia0",
                       "/dev/nvidiactl", ""] and mig[5] == "/dev/nvidia-caps:"


DATE = re.compile(r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d")
WHOLE_GPU_LONG = ["crw-rw-rw- 1 root root 235,   0 DATE /dev/nvidia-uvm",
                  "crw-rw-rw- 1 root root 235,   1 DATE /dev/nvidia-uvm-tools",
                  "crw-rw-rw- 1 root root 195,   0 DATE /dev/nvidia0",
                  "crw-rw-rw- 1 root root 195, 255 DATE /dev/nvidiactl"]
CAPS_LONG = ["", "/dev/nvidia-caps:", "total 0",
             "cr--r--r-- 1 root root 236, 12 DATE nvidia-cap12",
             "cr--r--r-- 1 root root 236, 13 DATE nvidia-cap13"]


# lesson 8.2 runs `kubectl exec POD -- ls -la /dev/nvidia*`: with no NVIDIA device on the local
# machine the local shell passes the glob on unexpanded, and ls in the container lists the
# device nodes the NVIDIA container toolkit created (coreutils ls long format: mode, links,
# owner, group, "major, minor", date, name; directories under "NAME:" with "total").
@pytest.mark.parametrize("pod,command,expected", [
    ("infer-a", ["ls", "-la", "/dev/nvidia*"], WHOLE_GPU_LONG),
    ("infer-a", ["ls", "-l", "-a", "/dev/nvidia*"], WHOLE_GPU_LONG),
    ("infer-a", ["sh", "-c", "ls -la /dev/nvidia*"], WHOLE_GPU_LONG),
    ("mig-pod", ["ls", "-l", "/dev/nvidia*"], WHOLE_GPU_LONG + CAPS_LONG),
    ("mig-pod", ["ls", "-la", "/dev/nvidia-caps"], [
        "total 0", "drwxr-xr-x 2 root root      80 DATE .",
        "drwxr-xr-x 6 root root     460 DATE ..", *CAPS_LONG[3:]]),
    ("mig-pod", ["ls", "-1", "/dev/nvidia0", "/dev/nvidia7"], [
        "ls: cannot access '/dev/nvidia7': No such file or directory", "/dev/nvidia0"]),
], ids=["ls-la", "ls-l-a", "sh-c", "mig-ls-l", "caps-dir-la", "missing-first"])
def test_ls_options_answer_from_the_pods_devices(g, pod, command, expected):
    result = g.run("exec", pod, "--", *command)
    assert [DATE.sub("DATE", line) for line in result.out.splitlines()[1:]] == expected
    assert result.code == (2 if "/dev/nvidia7" in command else 0)


def test_ls_with_an_option_gpusched_does_not_model_is_not_answered(g):
    assert g.run("exec", "infer-a", "--", "ls", "-R", "/dev/nvidia*").code == 126


def test_unknown_command_is_one_honest_line(g):
    result = g.run("exec", "infer-a", "--", "python", "train.py")
    assert result.code == 126
    assert result.out.splitlines()[1].startswith("gpusched runs no containers")


def test_logs_show_the_kubelet_side_life(g):
    lines = g.ok("logs", "infer-a").out.splitlines()
    assert "kubelet-side events" in lines[0] and SIMULATED.match(lines[0])
    reasons = [line.split()[1] for line in lines[1:]]
    assert reasons == ["Scheduled:", "DevicesAllocated:", "Started:"]


@pytest.mark.parametrize("args,message", [
    (("exec", "nope", "--", "env"), 'pods "nope" not found'),
    (("exec", "infer-a", "-c", "sidecar", "--", "env"), "container sidecar is not valid for pod infer-a"),
    (("exec", "infer-a"), "you must specify at least one command"),
    (("logs", "nope"), 'pods "nope" not found'),
    (("logs", "-f", "nope"), 'pods "nope" not found'),
    (("logs", "-f", "-l", "app=x"), "gpusched logs -f follows one pod: give POD, not -l SELECTOR"),
], ids=lambda v: str(v))
def test_bad_input(g, args, message):
    assert message in g.fails(*args)


FINITE = """apiVersion: v1
kind: Pod
metadata: {name: finetune, annotations: {gpusched.io/duration: 2m}}
spec:
  restartPolicy: Never
  containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}]
"""


def test_logs_follow_runs_the_clock_until_the_container_ends(tmp_path):
    """``kubectl logs -f`` streams until the container exits (the kubelet closes the stream);
    here the cluster clock follows an injected wall clock, stepped 5 s at a time by a thread,
    until the 2-minute pod has Succeeded: the followed log is then the whole log."""
    g = Gpusched(tmp_path)
    g.cluster()
    g.ok("apply", "-f", "-", stdin=FINITE)
    followed = run_stepping_wall(g, tmp_path, "logs", "-f", "finetune")
    assert (followed.returncode, followed.stderr) == (0, "")
    assert g.pods()["finetune"]["status"]["phase"] == "Succeeded"
    assert followed.stdout == g.ok("logs", "finetune").out

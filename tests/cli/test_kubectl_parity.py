"""kubectl's habits in the embedded CLI, compared with real kubectl 1.32 on the same objects.

One ``gpusched serve --virtual-clock`` holds the lab cluster; each case runs the same command
line through the ``gpusched`` console script (on the state file) and through kubectl (against the
server) and compares stdout byte for byte (every column, every padding), the exit code, and where
kubectl's wording is the same, stderr. Ages are all ``0s``: the virtual clock does not move.

Upstream behaviour these pin down (kubectl 1.32): get.go (``multipleGVKsRequested`` kind/name
NAME cells, one table per kind separated by a blank line, none with ``--no-headers``, the
"No resources found" lines), cli-runtime's tabwriter (minwidth 6, padding 3, RememberWidths in
watch), client-go util/jsonpath (range/end, filters, quoted text), custom-columns (``<none>``,
Go ``%v`` maps), sigs.k8s.io/yaml quoting, ``create ... --dry-run=client -o yaml`` objects,
the ``(dry run)`` / ``(server dry run)`` suffixes (none for taint).
"""

from __future__ import annotations

import shutil
import signal
import os
import subprocess
import threading

import pytest

from tests.conftest import CEILING_S, REPO_ROOT, gpusched_executable, run_process, wait_until
from tests.server.conftest import start_serve, stops_cleanly

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl 1.32 is not installed")
WAIT_SECONDS = CEILING_S


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    served = start_serve(tmp_path_factory.mktemp("parity"), "--virtual-clock")
    served.cli("apply", "-f", str(REPO_ROOT / "examples/cluster.yaml"),
               "-f", str(REPO_ROOT / "examples/priority-classes.yaml"),
               "-f", str(REPO_ROOT / "examples/training-job/jobs.yaml"),
               "-f", str(REPO_ROOT / "examples/inference-deployment/"))
    yield served
    stops_cleanly(served.process)


def ours(served, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return run_process([gpusched_executable(), "--state", str(served.state), *args], input=stdin, cwd=REPO_ROOT)


def theirs(served, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return run_process([KUBECTL, *args], input=stdin,
                       cwd=REPO_ROOT, env=served.kubectl_env())


def assert_same(served, *args: str, stderr: bool = False) -> str:
    mine, real = ours(served, *args), theirs(served, *args)
    assert mine.stdout.splitlines() == real.stdout.splitlines(), (mine.stderr, real.stderr)
    assert mine.returncode == real.returncode, (mine.stderr, real.stderr)
    if stderr:
        assert mine.stderr == real.stderr
    return mine.stdout


RANGE = '{range .items[*]}{.metadata.name}{"\\t"}{.spec.nodeName}{"\\n"}{end}'
GET_CASES = {
    "several-kinds": ("get", "pods,nodes"),
    "all-category": ("get", "all"),
    "all-category-all-namespaces": ("get", "all", "-A"),
    "wide-sorted": ("get", "pods", "-o", "wide", "--sort-by=.metadata.name"),
    "sort-by-number": ("get", "pc", "--sort-by=.value"),
    "show-labels": ("get", "nodes", "--show-labels"),
    "label-columns": ("get", "nodes", "-L", "gpu-type", "-L", "nvidia.com/gpu.count"),
    "no-headers-one-kind": ("get", "pods", "--no-headers"),
    "no-headers-several-kinds": ("get", "pods,deploy", "--no-headers"),
    "name": ("get", "pods,jobs", "-o", "name"),
    "kind-slash-name": ("get", "job/finetune-bert"),
    "kind-slash-name-pairs": ("get", "job/finetune-bert", "node/gpu-node-1"),
    "wide-workloads": ("get", "deploy,rs", "-o", "wide"),
    "jsonpath-range-end": ("get", "pods", "-o", f"jsonpath={RANGE}"),
    "jsonpath-filter": ("get", "nodes", "-o",
                        'jsonpath={.items[?(@.metadata.name=="gpu-node-1")].status.allocatable}'),
    "jsonpath-list": ("get", "nodes", "-o", "jsonpath={.items[*].metadata.name}"),
    "jsonpath-single-object": ("get", "node", "gpu-node-2", "-o",
                               "jsonpath={.metadata.labels.gpu-type}{\"\\n\"}"),
    "jsonpath-slice": ("get", "pods", "-o", "jsonpath={.items[-2:].metadata.name}"),
    "custom-columns": ("get", "nodes", "-o", "custom-columns=NAME:.metadata.name,"
                       "GPU:.status.allocatable.nvidia\\.com/gpu,TAINTS:.spec.taints"),
    "custom-columns-map-and-no-headers": ("get", "deploy", "--no-headers", "-o",
                                          "custom-columns=N:.metadata.name,SEL:.spec.selector.matchLabels"),
    "yaml-list": ("get", "pods", "-o", "yaml"),
    "yaml-cluster-scoped": ("get", "nodes", "-o", "yaml"),
    "json-one": ("get", "nodes", "gpu-node-1", "-o", "json"),
    "namespace-flag-before-the-command": ("-n", "kube-system", "get", "svc"),
    "unknown-flag-exits-1": ("get", "pods", "--frob"),
    "no-such-object-exits-1": ("get", "pod", "nosuch"),
}


@pytest.mark.parametrize("args", GET_CASES.values(), ids=GET_CASES.keys())
def test_get_prints_what_kubectl_prints(lab, args):
    assert_same(lab, *args)


@pytest.mark.parametrize("args", [("get", "pvc"), ("get", "pvc", "-A"), ("get", "all", "-n", "nosuch"),
                                  ("get", "pods,nodes", "-l", "x=y")],
                         ids=["namespaced", "all-namespaces", "all-in-empty-namespace", "mixed-scopes"])
def test_nothing_found_says_so_on_stderr_as_kubectl(lab, args):
    assert_same(lab, *args, stderr=True)


CREATE_CASES = {
    "namespace": ("create", "namespace", "team-x"),
    "deployment": ("create", "deployment", "web", "--image=nginx:1.25", "--replicas=2", "--port=80"),
    "job": ("create", "job", "train", "--image=busybox", "--", "sleep", "10"),
    "priorityclass": ("create", "priorityclass", "urgent", "--value=5000", "--description=now"),
    "quota": ("create", "quota", "gpus", "--hard=requests.nvidia.com/gpu=4,pods=10", "-n", "team-x"),
    "configmap": ("create", "configmap", "settings", "--from-literal=mode=fast", "--from-literal=level=2"),
}


@pytest.mark.parametrize("args", CREATE_CASES.values(), ids=CREATE_CASES.keys())
def test_create_dry_run_client_prints_kubectls_object(lab, args):
    cut = args.index("--") if "--" in args else len(args)
    line = (*args[:cut], "--dry-run=client", "-o", "yaml", *args[cut:])
    assert_same(lab, *line)


@pytest.mark.parametrize("args", [
    ("label", "node", "gpu-node-1", "team=a", "--dry-run=server"),
    ("label", "node", "gpu-node-1", "team=a", "--dry-run=client"),
    ("taint", "node", "gpu-node-1", "k=v:NoSchedule", "--dry-run=server"),
    ("delete", "pod", "-l", "app=llm-inference", "--dry-run=server"),
    ("delete", "job", "finetune-bert", "--dry-run=server"),
    ("delete", "pod", "-l", "app=none", "--dry-run=client"),
    ("apply", "-f", "examples/team-quota/1-namespace.yaml", "--dry-run=server"),
], ids=["label-server", "label-client", "taint-server", "delete-selector-server", "delete-server",
        "delete-nothing-client", "apply-folder-object-by-object-server"])
def test_dry_runs_print_kubectls_lines_and_change_nothing(lab, args):
    before = ours(lab, "get", "all,nodes,ns", "-A", "-o", "yaml").stdout
    assert_same(lab, *args)
    assert ours(lab, "get", "all,nodes,ns", "-A", "-o", "yaml").stdout == before


def test_delete_all_and_create_lines(lab):
    manifest = "".join(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\ndata: {{k: v}}\n"
                       for i in range(3))
    for namespace, run in (("mine", ours), ("real", theirs)):
        assert run(lab, "create", "namespace", namespace, "--dry-run=client", "-o", "name").stdout == \
            "namespace/" + namespace + "\n"
        assert ours(lab, "create", "namespace", namespace).stdout == f"namespace/{namespace} created\n"
        created = run(lab, "create", "-f", "-", "-n", namespace, stdin=manifest)
        assert created.stdout.splitlines() == ["configmap/c0 created", "configmap/c1 created",
                                               "configmap/c2 created"], created.stderr
    mine = ours(lab, "delete", "cm", "--all", "-n", "mine")
    real = theirs(lab, "delete", "cm", "--all", "-n", "real")
    assert mine.stdout == real.stdout == "".join(f'configmap "c{i}" deleted\n' for i in range(3))
    assert_same(lab, "get", "cm", "-n", "mine", stderr=False)


def _collect(process: subprocess.Popen) -> list[str]:
    """The process's stdout lines as they come, read on a thread (a readline that never returns
    cannot outlast the ceiling)."""
    sink: list[str] = []

    def read() -> None:
        for line in process.stdout:
            sink.append(line.rstrip("\n"))

    threading.Thread(target=read, daemon=True).start()
    return sink


def _lines(process: subprocess.Popen, sink: list[str], count: int) -> list[str]:
    wait_until(lambda: len(sink) >= count or process.poll() is not None, f"{count} lines",
               lambda: sink)
    assert len(sink) >= count, f"watch printed {sink}"
    return sink


def test_watch_prints_kubectls_lines_and_ends_on_ctrl_c(lab):
    args = ("get", "pods", "-w", "-l", "app=llm-inference")
    # The lab's serve keeps a virtual clock; a waiting CLI command would move it by the wall time
    # it waits (docs/serve.md "The clock"), and the ages kubectl prints would then depend on timing.
    mine = subprocess.Popen([gpusched_executable(), "--state", str(lab.state), *args], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO_ROOT,
                            env={**os.environ, "GPUSCHED_CLOCK": "frozen"})
    real = subprocess.Popen([KUBECTL, *args], text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=REPO_ROOT, env=lab.kubectl_env())
    try:
        got_mine, got_real = _collect(mine), _collect(real)
        _lines(mine, got_mine, 4)                # header + 3 replicas
        _lines(real, got_real, 4)
        pod = got_mine[1].split()[0]
        lab.cli("label", "pod", pod, "watched=yes")
        _lines(mine, got_mine, 5)
        _lines(real, got_real, 5)
        assert got_mine[:5] == got_real[:5]     # more lines may be arriving
    finally:
        for process in (mine, real):
            process.send_signal(signal.SIGINT)
    assert mine.wait(timeout=WAIT_SECONDS) == 130 and "Traceback" not in mine.stderr.read()
    real.wait(timeout=WAIT_SECONDS)


PDB = """apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: inf-pdb}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: llm-inference}}
"""


@pytest.mark.parametrize("args", [
    ("describe", "pc", "high"), ("describe", "configmap", "settings", "-n", "team-a"),
    ("describe", "pdb", "inf-pdb"), ("describe", "quota", "-n", "team-a"), ("describe", "ns", "default"),
    ("describe", "limits", "-n", "team-a"), ("describe", "ns", "team-a"),
], ids=["priorityclass", "configmap", "pdb", "quota", "namespace", "limitrange", "namespace-with-quota-and-limits"])
def test_describe_lays_out_as_kubectls_describe(lab, args):
    """kubectl describe.go through one tabwriter. LimitRange rows and ConfigMap data keys come
    from Go maps (describeConfigMap ranges over configMap.Data: random order in kubectl, sorted
    in gpusched), so those pages compare as sorted lines; a namespace applied without status
    prints kubectl's empty Status where gpusched says Active (what a real cluster sets)."""
    ours(lab, "apply", "-f", "examples/team-quota/1-namespace.yaml")
    ours(lab, "apply", "-f", "-", stdin=PDB)
    ours(lab, "create", "configmap", "settings", "-n", "team-a", "--from-literal=mode=fast",
         "--from-literal=note=two words")
    mine, real = ours(lab, *args), theirs(lab, *args)
    assert mine.returncode == real.returncode == 0, (mine.stderr, real.stderr)
    if args[1] == "configmap":
        assert sorted(mine.stdout.splitlines()) == sorted(real.stdout.splitlines())
        keys = [line for line in mine.stdout.splitlines() if line.endswith(":") and line[0].islower()]
        assert keys == sorted(keys)                          # gpusched's own order is fixed
    elif args[1] in ("limits", "ns") and args[-1] == "team-a":
        expected = sorted(real.stdout.replace("Status:       \n", "Status:       Active\n").splitlines())
        assert sorted(mine.stdout.splitlines()) == expected
    else:
        assert mine.stdout == real.stdout


@pytest.mark.parametrize("args", [
    ("delete", "pod", "train-resnet", "-l", "app=x"),
    ("delete", "pod", "train-resnet", "--all"),
    ("delete", "pod", "--all", "-l", "app=x"),
    ("delete", "pod"),
    ("delete",),
], ids=["resource-builder-name-with-selector", "resource-builder-all-with-names",
        "delete-validate-all-with-selector", "resource-builder-kind-without-name",
        "delete-no-resources"])
def test_delete_refusals_say_what_kubectl_says(lab, args):
    """kubectl delete's refusals before anything is deleted (cli-runtime resource/builder.go
    visitorResult; delete.go Complete, then Validate): the same first stderr line and exit
    code 1, and nothing deleted."""
    before = ours(lab, "get", "pods", "-A", "-o", "name").stdout
    mine, real = ours(lab, *args), theirs(lab, *args)
    assert (mine.returncode, mine.stderr.splitlines()[:1]) == (real.returncode, real.stderr.splitlines()[:1])
    assert mine.returncode == 1
    assert ours(lab, "get", "pods", "-A", "-o", "name").stdout == before

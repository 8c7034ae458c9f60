"""``gpusched describe`` compared with real kubectl 1.32's ``describe`` on the same objects.

One ``gpusched serve --virtual-clock`` holds the lab cluster plus the GPU lab (a DaemonSet, a
PersistentVolumeClaim bound to a provisioned PersistentVolume, the default StorageClass), a
Deployment after ``rollout restart`` (so it has an old and a new ReplicaSet) and Jobs that ran to
completion. Each case runs the same command line through the ``gpusched`` console script (on the
state file) and through kubectl (against the server), and compares stdout line by line, every
column and every padding, with one normalisation: the Age cells of the Events table.

Why ages must differ: kubectl's describers compute event ages on the client against the wall
clock (describe.go DescribeEvents -> translateTimestampSince(time.Now())), while gpusched
measures them on the virtual clock, which only ``gpusched advance`` moves; so the Age cell, and
with it the padding of the columns right of it, is the one thing that cannot agree. The Type and
Reason columns (left of Age) are compared byte for byte, From and Message cell by cell.

Each case id names the kubectl function (``k8s.io/kubectl/pkg/describe/describe.go`` at v0.32.4)
whose layout it pins down.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.conftest import REPO_ROOT, gpusched_executable, run_process
from tests.server.conftest import start_serve, stops_cleanly

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl 1.32 is not installed")
EXAMPLES = REPO_ROOT / "examples"
CELL_GAP = re.compile(r" {2,}")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    served = start_serve(tmp_path_factory.mktemp("describe"), "--virtual-clock")
    served.cli("apply", "-f", str(EXAMPLES / "cluster.yaml"), "-f", str(EXAMPLES / "priority-classes.yaml"),
               "-f", str(EXAMPLES / "training-job/jobs.yaml"), "-f", str(EXAMPLES / "inference-deployment/"),
               "-f", str(EXAMPLES / "gpu-lab/"), "-f", str(EXAMPLES / "kueue/"))
    served.cli("label", "node", "gpu-node-1", "nvidia.com/gpu=true")   # the DaemonSet's node selector
    served.cli("rollout", "restart", "deployment/llm-inference")
    served.cli("advance", "6m")                                       # finetune-bert (5m) completes
    run_process([gpusched_executable(), "--state", str(served.state), "apply", "-f", "-"], input=SHAPES, check=True)
    yield served
    stops_cleanly(served.process)


def run(served, program: list[str], *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_process([*program, *args],
                       cwd=REPO_ROOT, env=env)


def comparable(page: str) -> list:
    """The page's lines, each Events table without its Age cells: the header keeps what is left
    of Age (Type and Reason as printed, padding included), a row becomes (Type and Reason as
    printed, From, Message); tabwriter cells are at least two spaces apart, an age has one."""
    out: list = []
    age_at = None
    for line in page.splitlines():
        if line.split()[:5] == ["Type", "Reason", "Age", "From", "Message"]:
            age_at = line.index("Age")
            out.append(("header", line[:age_at]))
        elif age_at is not None and line.startswith("  "):
            if line.split()[0].startswith("----"):
                out.append("dashes")
                continue
            _age, source, message = (CELL_GAP.split(line[age_at:], 2) + ["", ""])[:3]
            out.append((line[:age_at], source, message))
        else:
            age_at = None
            out.append(line)
    return out


SHAPES = """apiVersion: v1
kind: Namespace
metadata: {name: shapes}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: scoped, namespace: shapes}
spec:
  hard: {pods: "10", requests.memory: 100G, requests.cpu: "2000m"}
  scopes: [NotTerminating, NotBestEffort]
---
apiVersion: v1
kind: LimitRange
metadata: {name: cpu, namespace: shapes}
spec:
  limits: [{type: Container, default: {cpu: "0.5"}, defaultRequest: {cpu: 250m}, max: {cpu: "4000m"}}]
---
apiVersion: v1
kind: LimitRange
metadata: {name: memory, namespace: shapes}
spec:
  limits: [{type: Container, max: {memory: 1024Mi}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: shapes, namespace: shapes, annotations: {team: "a"}}
spec:
  replicas: 1
  selector:
    matchLabels: {app: shapes}
    matchExpressions: [{key: tier, operator: In, values: [web, gpu]}]
  template:
    metadata: {labels: {app: shapes, tier: web}, annotations: {note: "x"}}
    spec:
      containers:
      - name: c
        image: busybox
        command: [sleep, "3600"]
        args: [--verbose]
        ports: [{containerPort: 80}, {containerPort: 53, protocol: UDP}]
        env:
        - {name: MODE, value: fast}
        - name: POD
          valueFrom: {fieldRef: {apiVersion: v1, fieldPath: metadata.name}}
        - name: KEY
          valueFrom: {configMapKeyRef: {name: settings, key: mode}}
        resources: {requests: {cpu: "0.5", memory: 0.5Gi}, limits: {cpu: "1500m", memory: 1024Mi}}
        volumeMounts: [{name: scratch, mountPath: /scratch, readOnly: true}, {name: cfg, mountPath: /cfg}]
      volumes:
      - {name: scratch, emptyDir: {}}
      - {name: cfg, configMap: {name: settings}}
---
apiVersion: v1
kind: Service
metadata: {name: edge, namespace: shapes}
spec:
  selector: {app: none}
  externalIPs: [192.0.2.10, 192.0.2.11]
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: alias, namespace: shapes}
spec: {type: ExternalName, externalName: db.example.com}
"""
CASES = {
    "describeDeployment-old-and-new-replicasets": ("deployment", "llm-inference"),
    "describeDeployment-ports-mounts-pvc-volume-tolerations": ("deploy", "inference"),
    "describeDeployment-every-namespace": ("deploy", "-A"),
    "describeReplicaSet-controlled-by-pods-status": ("rs", "-l", "app=inference"),
    "describeReplicaSet-scaled-to-zero-and-current": ("replicasets", "-l", "app=llm-inference"),
    "describeJob-completed-at-duration": ("job", "finetune-bert"),
    "describeJob-running-deadline": ("job", "train-resnet"),
    "describeDaemonSet-node-selector-counts": ("ds", "-n", "gpu-monitoring"),
    "describePersistentVolumeClaim-bound-used-by": ("pvc", "model-cache"),
    "describePersistentVolume-node-affinity-hostpath": ("pv",),
    "describeStorageClass-default": ("storageclass", "standard"),
    "describeService-endpoints-from-slices": ("svc", "-A"),
    "describeService-external-ips-external-name-no-endpoints": ("svc", "edge", "alias", "-n", "shapes"),
    "describeDeployment-quantities-env-ports-mounts-expressions": ("deploy", "shapes", "-n", "shapes"),
    "describeQuota-scopes-help-and-quantity-formats": ("quota", "-n", "shapes"),
    "describeNamespace-scoped-quota-one-limits-header": ("ns", "shapes"),
    "describeLimitRange-canonical-quantities": ("limits", "cpu", "-n", "shapes"),
    # describePod / describeContainers / describeContainerState / describeVolumes: running,
    # succeeded (Terminated state, Exit Code) and pending pods, a PVC volume, ports, env, mounts
    "describePod-every-pod-running-succeeded-pvc-volume": ("pod", "-A"),
    "describePod-env-field-ref-configmap-mounts-qos": ("pod", "-n", "shapes"),
    # describeNode / describeNodeLease / describeNodeResource / findNodeRoles: every node (roles,
    # long NFD annotation cut, lease, conditions, addresses, system info, pods, extended resources)
    "describeNode-every-node-conditions-system-info-allocated": ("node",),
    # genericDescriber / printUnstructuredContent / smartLabelFor: Kueue's custom resources
    # (nested mappings, lists of mappings and of scalars, quantities, a cluster-scoped object)
    "genericDescriber-clusterqueue-nested-lists": ("cq", "team-c"),
    "genericDescriber-localqueue-namespaced": ("lq", "-n", "team-a"),
    "genericDescriber-resourceflavor-taints-tolerations": ("rf", "h100"),
    "genericDescriber-workloadpriorityclass": ("wpc",),
}


@pytest.mark.parametrize("args", CASES.values(), ids=CASES.keys())
def test_describe_prints_kubectls_page(lab, args):
    mine = run(lab, [gpusched_executable(), "--state", str(lab.state)], "describe", *args)
    real = run(lab, [KUBECTL], "describe", *args, env=lab.kubectl_env())
    assert mine.returncode == real.returncode == 0, (mine.stderr, real.stderr)
    expected = real.stdout
    if args[0] == "ns":   # serve stores an applied Namespace without status.phase (kubectl: empty);
        expected = re.sub(r"^Status:( +)$", r"Status:\1Active", expected, flags=re.M)   # an API server sets Active
    if args[0] == "pod":
        expected, mine_page, shown = hide_bookkeeping(expected), without_gpu_block(mine.stdout), gpu_facts(mine.stdout)
        assert shown == bookkeeping(real.stdout)   # what the Annotations block hides, the GPU block shows
    elif args[0] == "node":
        expected, mine_page = without_pod_ages(expected), without_pod_ages(without_gpu_devices(mine.stdout))
    else:
        mine_page = mine.stdout
    assert comparable(mine_page) == comparable(expected)
    assert ("Events:" in mine.stdout) == (args[0] not in ("quota", "limits", "ns"))   # describeQuota etc. have none


HIDDEN = ("gpusched.io/assigned-gpus", "gpusched.io/assigned-devices", "gpusched.io/start-time")


def _annotation_entries(page: str):
    """Each Annotations block of a page as (line index of its title, value column, entries), an
    entry being a (key, lines) pair: its ``key: value`` line and any continuation lines."""
    lines = page.split("\n")
    blocks = []
    for start, line in enumerate(lines):
        if not line.startswith("Annotations:"):
            continue
        column = len(line) - len(line[len("Annotations:"):].lstrip())
        entries, end = [], start
        while end < len(lines) and (end == start or (lines[end][:column].strip() == "" and lines[end].strip())):
            text = lines[end][column:]
            if text.startswith("  ") and entries:
                entries[-1][1].append(text)
            elif text != "<none>":
                entries.append((text.split(":", 1)[0], [text]))
            end += 1
        blocks.append((start, end, column, entries))
    return lines, blocks


def hide_bookkeeping(page: str) -> str:
    """kubectl's page with gpusched's bookkeeping annotations taken out of the Annotations
    blocks: describe pod hides them on purpose (they are shown in its GPU block instead), so
    kubectl, which prints every annotation (describe.go printAnnotationsMultiline), lists them."""
    lines, blocks = _annotation_entries(page)
    for start, end, column, entries in reversed(blocks):
        kept = [text for key, texts in entries if key not in HIDDEN for text in texts] or ["<none>"]
        lines[start:end] = [("Annotations:" if i == 0 else "").ljust(column) + text for i, text in enumerate(kept)]
    return "\n".join(lines)


def bookkeeping(page: str) -> list[dict]:
    """Per page, the assigned GPUs and devices kubectl shows as annotations (a long value is cut
    by kubectl at 138 characters with ``...``)."""
    _, blocks = _annotation_entries(page)
    found = []
    for _start, _end, _column, entries in blocks:
        values = {key: " ".join(t.strip() for t in texts).split(":", 1)[1].strip() for key, texts in entries}
        found.append({"gpus": values.get(HIDDEN[0], "<none>"), "devices": values.get(HIDDEN[1], "<none>")})
    return found


def gpu_facts(page: str) -> list[dict]:
    """Per page, gpusched's ``GPU Assignment (gpusched):`` block, long device lists cut as kubectl
    cuts an annotation, so the two can be compared."""
    found = []
    for block in page.split("GPU Assignment (gpusched):")[1:]:
        rows = dict(line.split(":", 1) for line in block.split("\n\n")[0].splitlines()[1:])
        devices = rows.get("  Assigned Devices", " <none>").strip()
        found.append({"gpus": rows.get("  Assigned GPUs", " <none>").strip(),
                      "devices": devices[:138] + "..." if len(devices) > 138 else devices})
    return found


def without_gpu_block(page: str) -> str:
    """gpusched's page without its own GPU block (kubectl has no such block: it is compared with
    kubectl's annotations by ``gpu_facts``)."""
    return re.sub(r"\nGPU Assignment \(gpusched\):.*?(?=\n\n\n|\Z)", "", page, flags=re.S)


def without_gpu_devices(page: str) -> str:
    """gpusched's node page without its own ``GPU Devices:`` table (after Events; kubectl has none)."""
    return re.sub(r"\nGPU Devices:.*?(?=\n\n\n|\Z)", "", page, flags=re.S)


def without_pod_ages(page: str) -> str:
    """The Age cell (the last one) of each Non-terminated Pods row: kubectl measures it on the wall
    clock (describe.go describeNodeResource -> translateTimestampSince), gpusched on the virtual one."""
    out, inside = [], False
    for line in page.split("\n"):
        if line.startswith("Non-terminated Pods:"):
            inside = True
        elif not line.startswith("  "):
            inside = False
        out.append(line.rsplit(" ", 1)[0] if inside and line.startswith("  ") else line)
    return "\n".join(out)


def test_events_normalisation_keeps_everything_but_the_age():
    """The normaliser itself: a changed reason, source or message still fails the comparison."""
    page = ("Name:  x\nEvents:\n  Type    Reason  Age   From  Message\n  ----    ------  ----  ----  -------\n"
            "  Normal  Made    {age}  ctl   made x\n")
    assert comparable(page.format(age="0s ")) == comparable(page.format(age="12m (x2 over 20m)"))
    for before, after in (("Made  ", "Built "), ("Made  ", "Made "), ("ctl", "kub"), ("made x", "made y")):
        assert comparable(page.format(age="0s ")) != comparable(page.format(age="0s ").replace(before, after))


def test_pod_normalisation_hides_only_gpuscheds_bookkeeping():
    """hide_bookkeeping drops just the assigned-gpus/devices/start-time annotations (a long one
    with its continuation line), keeps the others, and the GPU block is taken out of gpusched's page."""
    page = ("Name:         p\nAnnotations:  gpusched.io/assigned-devices:\n                GPU-a,GPU-b...\n"
            "              gpusched.io/duration: 5m\n              gpusched.io/start-time: 0.0\nStatus:       Running")
    assert hide_bookkeeping(page).split("\n")[1:3] == ["Annotations:  gpusched.io/duration: 5m", "Status:       Running"]
    assert bookkeeping(page) == [{"gpus": "<none>", "devices": "GPU-a,GPU-b..."}]
    only = "Annotations:  gpusched.io/assigned-gpus: 0\nStatus:       Running"
    assert hide_bookkeeping(only).split("\n")[0] == "Annotations:  <none>"
    mine = "Name:  p\nEvents:  <none>\nGPU Assignment (gpusched):\n  Assigned GPUs:  0\n\n\nName:  q"
    assert without_gpu_block(mine) == "Name:  p\nEvents:  <none>\n\n\nName:  q"
    assert gpu_facts(mine) == [{"gpus": "0", "devices": "<none>"}]


@pytest.mark.parametrize("args", [("ds", "-n", "kube-system"), ("pvc", "-A", "-l", "x=y"), ("pv", "-l", "x=y"),
                                  ("deploy", "nosuch"), ("frob", "x")],
                         ids=["none-in-namespace", "none-anywhere", "cluster-scoped-says-namespace",
                              "not-found-exits-1", "unknown-kind-exits-1"])
def test_describe_finding_nothing_says_so_as_kubectl(lab, args):
    """kubectl describe.go (cmd) Run: nothing matched is a note on stderr and exit 0, naming the
    namespace even for cluster-scoped kinds; a named object that is missing exits 1."""
    mine = run(lab, [gpusched_executable(), "--state", str(lab.state)], "describe", *args)
    real = run(lab, [KUBECTL], "describe", *args, env=lab.kubectl_env())
    assert (mine.stdout, mine.returncode) == (real.stdout, real.returncode)
    # gpusched reads the state file, not a server: its not-found line has no "from server" part
    assert mine.stderr == real.stderr.replace("Error from server (NotFound): ", "error: ")


NODE = """apiVersion: v1
kind: Node
metadata: {name: edge-1, annotations: {rack: r7}}
status:
  capacity: {cpu: "8", memory: 32Gi, pods: "110"}
  allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
"""


def test_describe_node_hides_the_last_applied_annotation(tmp_path):
    """describe.go skipAnnotations: an applied Node's last-applied-configuration is not shown."""
    from tests.cli.runner import Gpusched
    g = Gpusched(tmp_path)
    g.ok("apply", "-f", "-", stdin=NODE)
    assert "kubectl.kubernetes.io/last-applied-configuration" in g.ok("get", "node", "edge-1", "-o", "yaml").out
    page = g.ok("describe", "node", "edge-1").lines
    assert [line for line in page if line.startswith("Annotations:")] == ["Annotations:        rack: r7"]
    assert not any("last-applied" in line for line in page)

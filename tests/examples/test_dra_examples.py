"""examples/dra/: each example's outcome through the embedded CLI (through ``gpusched serve``
with kubectl: ``tests/server/test_kubectl_dra_examples.py``, the same table). NVIDIA's
quickstart specs (``kubernetes-sigs/dra-driver-nvidia-gpu``
``demo/specs/quickstart/v1/gpu-test{1..5}.yaml``) run unchanged; the fallback, all-GPUs and
dynamic-MIG specs are gpusched's. Every case starts a fresh cluster holding
``examples/dra/embedded/nodes.yaml``, applies one example and advances the virtual clock until
the example's pods run (a template's claims are created by the resourceclaim controller after
the pod; the pod is retried after its back-off)."""

from __future__ import annotations

import importlib.util
from collections import Counter
from typing import Callable

import pytest

from tests.cli.runner import Gpusched


def dra_scheduling() -> bool:
    """Whether the DynamicResources plugin (``cluster.scheduling.dra``) and the resourceclaim
    controller (``controllers.dra.claims``) are in this tree: without them no claim is created
    or allocated, and these outcomes cannot happen."""
    return all(importlib.util.find_spec(name) is not None for name in
               ("gpusched.cluster.scheduling.dra", "gpusched.cluster.controllers.dra.claims"))


pytestmark = pytest.mark.skipif(not dra_scheduling(), reason="needs the DynamicResources plugin "
                                "and the resourceclaim controller")
NODES = "examples/dra/embedded/nodes.yaml"
STEPS = 20                   # advances of 30 s: a generous ceiling on the virtual clock


def results(claims: list[dict]) -> dict[str, list[tuple[str, str, str]]]:
    """Claim name -> its allocated (request, pool, device)."""
    return {c["metadata"]["name"]: [(r["request"], r["pool"], r["device"])
                                    for r in c["status"]["allocation"]["devices"]["results"]]
            for c in claims if (c.get("status") or {}).get("allocation")}


def reserved(claims: list[dict]) -> dict[str, list[str]]:
    return {c["metadata"]["name"]: [r["name"] for r in (c.get("status") or {}).get("reservedFor") or []]
            for c in claims}


def without_marker(lines: list[str]) -> list[str]:
    """An exec answer without its first line, which says the output is simulated."""
    return lines[1:] if lines and lines[0].startswith("[gpusched: simulated") else lines


def pods_by_name(pods: list[dict]) -> dict[str, dict]:
    return {p["metadata"]["name"]: p for p in pods}


def one_gpu_per_pod(pods, claims, exec_):
    """gpu-test1: two pods, each its own claim from the template, each one distinct GPU."""
    assert len(pods) == 2 and len(claims) == 2
    held = [r for rs in results(claims).values() for r in rs]
    assert len(held) == 2 and len({(pool, dev) for _, pool, dev in held}) == 2
    for name in pods:
        assert exec_(name, "ctr", "nvidia-smi", "-L")[0].startswith("GPU 0: ")


def claim_shared_by_containers(pods, claims, exec_):
    """gpu-test2: one pod, two containers, one claim: both containers see the same GPU."""
    (claim,) = claims
    assert reserved(claims)[claim["metadata"]["name"]] == ["pod"]
    seen = {c: exec_("pod", c, "nvidia-smi", "-L")[0] for c in ("ctr0", "ctr1")}
    assert seen["ctr0"] == seen["ctr1"] and seen["ctr0"].startswith("GPU 0: ")


def claim_shared_by_pods(pods, claims, exec_):
    """gpu-test3: one ResourceClaim reserved for both pods, which see the same GPU."""
    assert [c["metadata"]["name"] for c in claims] == ["single-gpu"]
    assert sorted(reserved(claims)["single-gpu"]) == ["pod1", "pod2"]
    assert exec_("pod1", "ctr", "nvidia-smi", "-L") == exec_("pod2", "ctr", "nvidia-smi", "-L")
    assert {p["spec"]["nodeName"] for p in pods.values()} == {results(claims)["single-gpu"][0][1]}


def mig_profiles(pods, claims, exec_):
    """gpu-test4: four pods, each four MIG devices (1g.5gb twice, 2g.10gb, 3g.20gb) of one parent
    GPU (matchAttribute parentUUID); each container sees its request's device."""
    assert len(pods) == 4
    for devices in results(claims).values():
        assert len({dev.split("-mig-")[0] for _, _, dev in devices}) == 1
        assert sorted(req for req, _, _ in devices) == ["mig-1g-5gb-0", "mig-1g-5gb-1",
                                                         "mig-2g-10gb", "mig-3g-20gb"]
    name = sorted(pods)[0]
    profiles = [exec_(name, c, "nvidia-smi", "-L")[1].split()[1] for c in ("ctr0", "ctr1", "ctr2", "ctr3")]
    assert profiles == ["1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"]


def time_slicing_and_mps(pods, claims, exec_):
    """gpu-test5: one claim of two GPUs, time-sliced and MPS-shared containers each see theirs."""
    (devices,) = results(claims).values()
    assert sorted(req for req, _, _ in devices) == ["mps-gpu", "ts-gpu"]
    ts = exec_("pod0", "ts-ctr0", "nvidia-smi", "-L")
    assert ts == exec_("pod0", "ts-ctr1", "nvidia-smi", "-L")
    assert ts != exec_("pod0", "mps-ctr0", "nvidia-smi", "-L")


def large_to_small_fallback(pods, claims, exec_):
    """gpu-fallback: four claims get an A100-80GB (gpu/large), two fall back to a T4 (gpu/small)."""
    held = [r for rs in results(claims).values() for r in rs]
    assert Counter((req, pool) for req, pool, _ in held) == {("gpu/large", "dra-a100-1"): 4,
                                                            ("gpu/small", "dra-t4-1"): 2}


def all_gpus_of_a_node(pods, claims, exec_):
    """all-gpus: allocationMode All gives the pod the node's four A100-80GB GPUs."""
    assert results(claims)["whole-node"] == [("gpus", "dra-a100-1", f"gpu-{i}") for i in range(4)]
    assert [line.split(":")[0] for line in exec_("trainer", "ctr", "nvidia-smi", "-L")] == \
        ["GPU 0", "GPU 1", "GPU 2", "GPU 3"]


def dynamic_mig(pods, claims, exec_):
    """mig-dynamic: two 3g.40gb and four 1g.10gb devices carved on the two H100s, no two sharing
    a memory slice."""
    held = [dev for rs in results(claims).values() for _, _, dev in rs]
    assert Counter(d.split("-mig-")[1].rsplit("-", 2)[0] for d in held) == {"3g40gb": 2, "1g10gb": 4}
    slices = Counter()
    for device in held:
        gpu, rest = device.split("-mig-")
        start = int(rest.rsplit("-", 1)[1])
        size = 4 if rest.startswith("3g") else 1
        slices.update((gpu, s) for s in range(start, start + size))
    assert max(slices.values()) == 1


CASES: list[tuple[str, str, Callable]] = [
    ("gpu-test1.yaml", "gpu-test1", one_gpu_per_pod),
    ("gpu-test2.yaml", "gpu-test2", claim_shared_by_containers),
    ("gpu-test3.yaml", "gpu-test3", claim_shared_by_pods),
    ("gpu-test4.yaml", "gpu-test4", mig_profiles),
    ("gpu-test5.yaml", "gpu-test5", time_slicing_and_mps),
    ("gpu-fallback.yaml", "gpu-fallback", large_to_small_fallback),
    ("all-gpus.yaml", "all-gpus", all_gpus_of_a_node),
    ("mig-dynamic.yaml", "mig-dynamic", dynamic_mig),
]
IDS = [c[0].removesuffix(".yaml") for c in CASES]


def running(pods: list[dict]) -> bool:
    return bool(pods) and all((p.get("status") or {}).get("phase") == "Running" for p in pods)


def phases(pods: list[dict]) -> str:
    return ", ".join(f"{p['metadata']['name']}={(p.get('status') or {}).get('phase')}" for p in pods)


@pytest.mark.parametrize("example,namespace,check", CASES, ids=IDS)
def test_example_outcome_through_the_embedded_cli(tmp_path, example, namespace, check):
    g = Gpusched(tmp_path)
    g.ok("apply", "-f", NODES)
    g.ok("apply", "-f", f"examples/dra/{example}")
    for _ in range(STEPS):
        pods = g.json("get", "pods", "-n", namespace)["items"]
        if running(pods):
            break
        g.ok("advance", "30s")
    assert running(pods), f"pods of {example} not running after {STEPS} steps: {phases(pods)}"
    claims = g.json("get", "resourceclaims", "-n", namespace)["items"]

    def exec_(pod: str, container: str, *argv: str) -> list[str]:
        return without_marker(g.ok("exec", "-n", namespace, pod, "-c", container, "--", *argv).lines)

    check(pods_by_name(pods), claims, exec_)

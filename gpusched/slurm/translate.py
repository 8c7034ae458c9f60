"""A Kubernetes Job or Pod manifest -> sbatch options and a batch script.

| Kubernetes                                           | sbatch                                       |
|------------------------------------------------------|----------------------------------------------|
| ``nvidia.com/gpu`` limit N                           | ``--gres=gpu[:type]:N``                      |
| ``nvidia.com/mig-1g.5gb`` limit N                    | ``--gres=gpu:1g.5gb:N``                      |
| nodeSelector / required affinity on ``gpu-type``,    | the GRES type (one model) or                 |
| ``nvidia.com/gpu.product``, ``gpusched.io/gpu-model``| ``--constraint=a|b`` (several models)        |
| cpu request                                          | ``--cpus-per-task`` (rounded up)             |
| memory request                                       | ``--mem=<MiB>M`` (rounded up)                |
| priorityClassName / spec.priority                    | ``--priority=<value>`` (needs operator/root) |
| activeDeadlineSeconds (Job or Pod)                   | ``--time=D-HH:MM:SS``                        |
| command + args                                       | the script body (shell-quoted)               |
| env (plain values)                                   | ``--export=ALL,K=V,...``                     |
| Job completions/parallelism > 1                      | ``--array=0-(completions-1)%parallelism``    |
| metadata.name                                        | ``--job-name``                               |

Everything else that would change where or how the pod runs (tolerations, preferred affinity,
pod (anti-)affinity, topology spread, other node labels, volumes, the image, fractional GPU
shares, several containers, ...) is returned as one warning line each, never dropped silently.

Neighbours: ``objects.pod`` (requests), ``devices.catalog`` (model names), ``slurm.sbatch``
(GRES names); used by ``cli.slurm_cmd``.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from typing import Any, Mapping

from gpusched.devices.catalog import lookup_model
from gpusched.errors import GpuschedError, UsageError
from gpusched.objects.pod import pod_info
from gpusched.slurm.sbatch import gres_type
from gpusched.objects.types import PodInfo

GPU_TYPE_KEYS = ("gpu-type", "nvidia.com/gpu.product", "gpusched.io/gpu-model")
_KNOWN_SPEC = {"containers", "restartPolicy", "nodeSelector", "affinity", "priorityClassName",
               "priority", "activeDeadlineSeconds", "tolerations", "topologySpreadConstraints",
               "schedulerName", "terminationGracePeriodSeconds"}


@dataclass(frozen=True, slots=True)
class SbatchRequest:
    name: str
    options: tuple[str, ...]
    script: str
    warnings: tuple[str, ...]


def _pod_of(obj: Mapping[str, Any]) -> tuple[dict[str, Any], Mapping[str, Any]]:
    """(pod dict, Job spec or {}) of a Job or Pod object."""
    kind = obj.get("kind")
    meta = obj.get("metadata") or {}
    if kind == "Pod":
        return dict(obj), {}
    if kind == "Job":
        spec = obj.get("spec") or {}
        template = spec.get("template") or {}
        pod_meta = dict(template.get("metadata") or {})
        pod_meta.setdefault("name", meta.get("name", "job"))
        pod_meta.setdefault("namespace", meta.get("namespace", "default"))
        return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
                "spec": template.get("spec") or {}}, spec
    raise UsageError(f'cannot submit a {kind or "document without kind"} to Slurm: '
                     f"give a Job or a Pod")


def format_time(seconds: int) -> str:
    """``--time`` value: ``D-HH:MM:SS``.

    >>> format_time(600), format_time(90061)
    ('0-00:10:00', '1-01:01:01')
    """
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"


def translate(obj: Mapping[str, Any], priority_values: Mapping[str, int] | None = None) -> SbatchRequest:
    """The sbatch request for a Job or Pod object (see the module docstring)."""
    pod, job_spec = _pod_of(obj)
    info = pod_info(pod)
    spec = pod.get("spec") or {}
    name = str((obj.get("metadata") or {}).get("name") or "job")
    options = [f"--job-name={name}"]
    warnings: list[str] = []
    models, selector_warnings = _gpu_models(info)
    warnings += selector_warnings
    options += _gres_options(info, models, warnings)
    cpus = max(1, math.ceil(info.requests.get("cpu", 1000) / 1000))
    options.append(f"--cpus-per-task={cpus}")
    if info.requests.get("memory"):
        options.append(f"--mem={math.ceil(info.requests['memory'] / 2**20)}M")
    priority = _priority(spec, priority_values or {}, warnings)
    if priority is not None:
        options.append(f"--priority={priority}")
    deadline = job_spec.get("activeDeadlineSeconds", spec.get("activeDeadlineSeconds"))
    if deadline is not None:
        options.append(f"--time={format_time(int(deadline))}")
    completions = int(job_spec.get("completions") or 1)
    parallelism = int(job_spec.get("parallelism") or 1)
    if completions > 1 or parallelism > 1:
        tasks = max(completions, parallelism) if "completions" not in job_spec else completions
        limit = f"%{parallelism}" if parallelism < tasks else ""
        options.append(f"--array=0-{tasks - 1}{limit}")
    containers = spec.get("containers") or []
    script, env_options = _script(containers, warnings)
    options += env_options
    warnings += _unsupported(info, spec)
    return SbatchRequest(name, tuple(options), script, tuple(warnings))


def _gpu_models(info: PodInfo) -> tuple[list[str], list[str]]:
    """GRES types allowed by the selector/affinity/annotation, and warnings for other labels."""
    warnings = []
    values: list[str] = []
    for key, value in sorted(info.node_selector.items()):
        if key in GPU_TYPE_KEYS:
            values.append(value)
        else:
            warnings.append(f"nodeSelector {key}={value}: no Slurm equivalent (ignored)")
    for term in info.required_terms or ():
        for req in term.match_expressions:
            if req.key in GPU_TYPE_KEYS and req.operator == "In":
                values += list(req.values)
            else:
                warnings.append(f"required node affinity {req.key} {req.operator} "
                                f"{','.join(req.values)}: no Slurm equivalent (ignored)")
    values += list(info.gpu_models)
    types = []
    for value in values:
        try:
            types.append(gres_type(lookup_model(value).name))
        except GpuschedError:
            warnings.append(f'GPU type "{value}": not a known GPU model (ignored)')
    return sorted(set(types)), warnings


def _gres_options(info: PodInfo, models: list[str], warnings: list[str]) -> list[str]:
    gpus = info.requests.get("nvidia.com/gpu", 0)
    mig = {k.removeprefix("nvidia.com/mig-"): v for k, v in info.requests.items()
           if k.startswith("nvidia.com/mig-")}
    if info.gpu_milli:
        warnings.append(f"fractional GPU share {info.gpu_milli} milli-GPU: Slurm has no "
                        f"shares without MPS/shard GRES; requested 1 whole GPU")
        gpus = max(gpus, 1)
    gres = []
    if gpus:
        gres.append(f"gpu:{models[0]}:{gpus}" if len(models) == 1 else f"gpu:{gpus}")
    gres += [f"gpu:{gres_type(profile)}:{count}" for profile, count in sorted(mig.items())]
    options = [f"--gres={','.join(gres)}"] if gres else []
    if len(models) > 1:
        options.append(f"--constraint={'|'.join(models)}")
    elif models and not gpus:
        options.append(f"--constraint={models[0]}")
    return options


def _priority(spec: Mapping[str, Any], values: Mapping[str, int], warnings: list[str]) -> int | None:
    if spec.get("priority") is not None:
        return int(spec["priority"])
    name = spec.get("priorityClassName")
    if not name:
        return None
    if name not in values:
        warnings.append(f"priorityClassName {name}: unknown PriorityClass (pass its manifest "
                        f"with -f); submitted without --priority")
        return None
    return int(values[name])


def _script(containers: list[Any], warnings: list[str]) -> tuple[str, list[str]]:
    if not containers:
        raise UsageError("the pod has no containers: nothing to run")
    if len(containers) > 1:
        warnings.append(f"{len(containers)} containers: Slurm runs one script; only "
                        f'"{containers[0].get("name", "")}" runs (requests are summed)')
    first = containers[0]
    words = [str(w) for w in (first.get("command") or []) + (first.get("args") or [])]
    if first.get("image"):
        warnings.append(f"image {first['image']}: Slurm runs the command on the node itself; "
                        f"the image is not used")
    if not words:
        warnings.append("no command: the image's entrypoint cannot run under Slurm; "
                        "the script runs `true`")
        words = ["true"]
    env_pairs, exports = [], []
    for var in first.get("env") or []:
        if "value" not in var:
            warnings.append(f"env {var.get('name')}: valueFrom has no Slurm equivalent (ignored)")
        elif "," in str(var["value"]):
            exports.append(f"export {var['name']}={shlex.quote(str(var['value']))}")
        else:
            env_pairs.append(f"{var['name']}={var['value']}")
    body = "\n".join(["#!/bin/sh", *exports, shlex.join(words)]) + "\n"
    return body, ([f"--export=ALL,{','.join(env_pairs)}"] if env_pairs else [])


def _unsupported(info: PodInfo, spec: Mapping[str, Any]) -> list[str]:
    warnings = [f"toleration {t.key or '*'}{'=' + t.value if t.value else ''}"
                f"{':' + t.effect if t.effect else ''}: Slurm has no taints (ignored)"
                for t in info.tolerations]
    warnings += [f"preferred node affinity (weight {p.weight}): Slurm has no preferences "
                 f"(ignored)" for p in info.preferred_terms]
    if info.pod_affinity or info.preferred_pod_affinity:
        warnings.append("pod affinity: no Slurm equivalent (ignored)")
    if info.pod_anti_affinity or info.preferred_pod_anti_affinity:
        warnings.append("pod anti-affinity: no Slurm equivalent (ignored)")
    warnings += [f"topology spread on {c.topology_key}: no Slurm equivalent (ignored)"
                 for c in info.topology_spread]
    for key in sorted(set(spec) - _KNOWN_SPEC):
        warnings.append(f"spec.{key}: no Slurm equivalent (ignored)")
    return warnings

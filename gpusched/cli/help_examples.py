"""The "Examples:" block of every command's ``--help`` (kubectl's habit), keyed by the full
command line (``gpusched slurm config``); ``cli.parser.polish`` attaches them, and a test checks
that every command and subcommand has real examples, not a pointer to ``--help``.

Neighbours: ``cli.parser``, ``cli.rollout`` (its own examples).
"""

from __future__ import annotations


def _examples(*lines: str) -> str:
    return "Examples:\n" + "\n".join(f"  {line}" for line in lines)


EXAMPLES: dict[str, str] = {
    "gpusched": _examples("gpusched apply -f examples/cluster.yaml",
                          "gpusched get pods -o wide", "gpusched explain pod train-1"),
    "gpusched apply": _examples(
        "# Apply every manifest of a folder, one object at a time (as kubectl apply -f DIR)",
        "gpusched apply -f examples/team-quota/",
        "# All or nothing: a failing object applies none of them",
        "gpusched apply --atomic -f examples/cluster.yaml -f examples/priority-classes.yaml",
        "# Check what admission would say, changing nothing",
        "gpusched apply -f pod.yaml --dry-run=server"),
    "gpusched get": _examples(
        "gpusched get pods -o wide", "gpusched get pods,nodes", "gpusched get all -A",
        "gpusched get nodes -L nvidia.com/gpu.product --show-labels",
        "gpusched get pods -o jsonpath='{range .items[*]}{.metadata.name}{\"\\t\"}{.spec.nodeName}{\"\\n\"}{end}'",
        "gpusched get pods -o custom-columns=NAME:.metadata.name,NODE:.spec.nodeName --sort-by=.metadata.name",
        "gpusched get pods -w"),
    "gpusched create": _examples(
        "gpusched create namespace team-a",
        "gpusched create deployment web --image=nginx --replicas=2",
        "gpusched create job train --image=pytorch -- python train.py",
        "gpusched create priorityclass high --value=1000",
        "gpusched create quota team-a --hard=requests.nvidia.com/gpu=4 -n team-a",
        "gpusched create configmap settings --from-literal=mode=fast",
        "gpusched create -f pod.yaml"),
    "gpusched describe": _examples("gpusched describe node gpu-node-1", "gpusched describe pod/train-1",
                                   "gpusched describe deployment llm-inference",
                                   "gpusched describe jobs -l team=nlp -n team-a",
                                   "gpusched describe pvc model-cache", "gpusched describe quota -n team-a"),
    "gpusched delete": _examples("gpusched delete pod train-1", "gpusched delete pods -l app=web",
                                 "gpusched delete pods --all -n team-a", "gpusched delete -f pod.yaml",
                                 "gpusched delete pod train-1 --dry-run=server"),
    "gpusched label": _examples("gpusched label node gpu-node-1 team=a",
                                "gpusched label node gpu-node-1 team-",
                                "gpusched label pod train-1 stage=eval --overwrite"),
    "gpusched taint": _examples("gpusched taint node gpu-node-1 dedicated=ml:NoSchedule",
                                "gpusched taint nodes -l nvidia.com/gpu=true nvidia.com/gpu=true:NoSchedule",
                                "gpusched taint node gpu-node-1 dedicated:NoSchedule-"),
    "gpusched cordon": _examples("gpusched cordon gpu-node-1"),
    "gpusched uncordon": _examples("gpusched uncordon gpu-node-1"),
    "gpusched condition": _examples("gpusched condition node gpu-node-1 Ready=False",
                                    "gpusched condition node/gpu-node-1 Ready=Unknown",
                                    "gpusched condition node gpu-node-1 Ready=True"),
    "gpusched drain": _examples("gpusched drain gpu-node-1 --ignore-daemonsets"),
    "gpusched scale": _examples("gpusched scale deployment llm-inference --replicas=5",
                                "gpusched scale job/train --replicas=4"),
    "gpusched events": _examples("gpusched events", "gpusched events -A -o yaml"),
    "gpusched top": _examples("gpusched top nodes", "gpusched top pods -A"),
    "gpusched whatif": _examples("gpusched whatif pod -f job.yaml"),
    "gpusched whatif pod": _examples("gpusched whatif pod -f job.yaml",
                                     "gpusched whatif pod -f deploy.yaml -o json"),
    "gpusched explain": _examples("gpusched explain pod train-1", "gpusched explain pod/train-1 -o json",
                                  "gpusched explain deployment/web -n team-a"),
    "gpusched advance": _examples("gpusched advance 30m", "gpusched advance 1h30m"),
    "gpusched completion": _examples("source <(gpusched completion bash)",
                                     "gpusched completion zsh > \"${fpath[1]}/_gpusched\"",
                                     "gpusched completion fish > ~/.config/fish/completions/gpusched.fish"),
    "gpusched reset": _examples("gpusched reset"),
    "gpusched demo": _examples("gpusched demo"),
    "gpusched version": _examples("gpusched version"),
    "gpusched serve": _examples("gpusched serve --port 8080",
                                "gpusched kubeconfig > kubeconfig && KUBECONFIG=kubeconfig kubectl get nodes"),
    "gpusched kubeconfig": _examples("gpusched kubeconfig --port 8080 > kubeconfig"),
    "gpusched exporter": _examples("gpusched exporter --port 9400",
                                   "curl -s localhost:9400/metrics | grep DCGM_FI_DEV_GPU_UTIL"),
    "gpusched recommend": _examples("gpusched recommend", "gpusched recommend -A --prices prices.yaml"),
    "gpusched cost": _examples("gpusched cost", "gpusched cost --by model --since 24h",
                               "gpusched cost --by priority-class --prices prices.yaml"),
    "gpusched sbatch": _examples("gpusched sbatch examples/slurm/nvidia-smi-job.sh",
                                 "gpusched sbatch --dry-run examples/slurm/until-killed.sh"),
    "gpusched squeue": _examples("gpusched squeue", "gpusched squeue --me -t PENDING,RUNNING",
                                 "gpusched squeue -p gpu"),
    "gpusched sacct": _examples("gpusched sacct"),
    "gpusched scancel": _examples("gpusched scancel 3", "gpusched scancel 3 4 5"),
    "gpusched sinfo": _examples("gpusched sinfo", "gpusched sinfo -N"),
    "gpusched slurm": _examples("gpusched slurm config --out /etc/slurm",
                                "gpusched slurm submit examples/slurm/nvidia-smi-job.sh",
                                "gpusched slurm jobs", "gpusched slurm cancel 12"),
    "gpusched slurm config": _examples("gpusched slurm config --out /etc/slurm",
                                       "gpusched slurm config -f examples/cluster.yaml --test-harness /tmp/slurm"),
    "gpusched slurm submit": _examples("gpusched slurm submit examples/slurm/nvidia-smi-job.sh",
                                       "gpusched slurm submit -f examples/training-job/jobs.yaml"),
    "gpusched slurm jobs": _examples("gpusched slurm jobs", "gpusched slurm jobs -o json"),
    "gpusched slurm cancel": _examples("gpusched slurm cancel 12"),
    "gpusched exec": _examples("gpusched exec train-1 -- nvidia-smi", "gpusched exec train-1 -- nvidia-smi -L",
                               "gpusched exec -it pod/train-1 -c trainer -- env"),
    "gpusched logs": _examples("gpusched logs train-1", "gpusched logs -l app=llm-inference -n default"),
    "gpusched scheduler": _examples(
        "gpusched scheduler --kubeconfig ~/.kube/config --scheduler-name gpusched",
        "gpusched scheduler --kubeconfig ~/.kube/config --leader-elect --lease-namespace kube-system"),
    "gpusched experiment": _examples(
        "gpusched experiment fgd --nodes openb_node_list_gpu_node.csv "
        "--pods openb_pod_list_default.csv --out results/"),
    "gpusched experiment fgd": _examples(
        "gpusched experiment fgd --nodes openb_node_list_gpu_node.csv "
        "--pods openb_pod_list_default.csv --out results/",
        "gpusched experiment fgd --nodes nodes.csv --pods pods.csv --policies fgd,bestfit "
        "--seeds 42-44 --jobs 2 --out results/"),
    "gpusched import": _examples("gpusched import alibaba --out manifests/ nodes.csv pods.csv"),
    "gpusched import alibaba": _examples(
        "gpusched import alibaba --out manifests/ openb_node_list_gpu_node.csv openb_pod_list_default.csv"),
}

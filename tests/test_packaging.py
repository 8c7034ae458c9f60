"""Packaging: the core installs without plotting or GPU libraries, each extra's absence is one
clear line, LICENSE matches pyproject, and the Dockerfile builds what deploy/ runs.

The missing-extra cases run the real console-script entry point in a real interpreter whose
sys.path holds every installed package except the extra's modules (the venv's site-packages
mirrored without them), so nothing is mocked: ``import matplotlib`` genuinely fails there.
The Dockerfile cannot be built here (no registry access); it is parsed with BuildKit's own
parser (the ``dockerfile`` package) and checked against the repository and pyproject.
"""

from __future__ import annotations

import re
import site
import subprocess
import sys
import tomllib
from pathlib import Path

import dockerfile
import pytest
import yaml

from gpusched.extras import EXTRAS
from tests.conftest import REPO_ROOT, run_process

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
# pyproject distribution name -> the module it provides (gpusched.extras names modules)
MODULE_OF = {"matplotlib": "matplotlib", "rich": "rich", "nvidia-ml-py": "pynvml",
             "kubernetes": "kubernetes"}
HIDDEN = {"experiments": ("matplotlib", "mpl_toolkits", "pylab", "rich"),
          "gpu": ("pynvml", "nvidia_ml_py"), "kube": ("kubernetes",)}


def distribution(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0]


def test_license_file_is_the_license_pyproject_declares():
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    text = (REPO_ROOT / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_extras_hold_what_gpusched_extras_names_and_the_core_does_not(extra):
    core = {distribution(r) for r in PYPROJECT["project"]["dependencies"]}
    packages = {distribution(r) for r in PYPROJECT["project"]["optional-dependencies"][extra]}
    assert {MODULE_OF[p] for p in packages} == set(EXTRAS[extra])
    assert not packages & core


def test_make_installs_every_extra_the_suite_and_demo_use():
    makefile = (REPO_ROOT / "Makefile").read_text()
    (spec,) = re.findall(r"pip install --quiet -e '\.\[([a-z,]+)\]'", makefile)
    assert set(spec.split(",")) == {"test", *EXTRAS}


def without(tmp_path: Path, extra: str) -> Path:
    """A site directory with every installed distribution but ``extra``'s modules."""
    mirror = tmp_path / f"site-without-{extra}"
    if mirror.exists():
        return mirror
    mirror.mkdir()
    (source,) = [Path(p) for p in site.getsitepackages() if Path(p, "yaml").exists()]
    for entry in source.iterdir():
        name = re.split(r"[-.]", entry.name, maxsplit=1)[0]
        if name.lower() not in HIDDEN[extra]:
            (mirror / entry.name).symlink_to(entry)
    return mirror


def run_without(tmp_path: Path, extra: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``gpusched ARGS`` (the console script's entry point) in a fresh interpreter that cannot
    import ``extra``'s modules; ``-S`` keeps the venv's own site-packages off sys.path."""
    code = ("import site, sys; site.addsitedir(sys.argv[1]); sys.path.insert(0, sys.argv[2]); "
            "from gpusched.cli.main import main; sys.exit(main(sys.argv[3:]))")
    return run_process([sys.executable, "-S", "-c", code, str(without(tmp_path, extra)),
                           str(REPO_ROOT), "--state", str(tmp_path / "state.db"), *args], cwd=tmp_path)


@pytest.mark.parametrize("extra", sorted(HIDDEN))
def test_the_mirror_hides_the_extra_and_nothing_else(tmp_path, extra):
    code = ("import importlib.util as u, site, sys; site.addsitedir(sys.argv[1]); "
            "print(*(u.find_spec(m) is not None for m in sys.argv[2:]))")
    modules = [*EXTRAS[extra], "yaml", "numpy", "starlette"]
    result = run_process([sys.executable, "-S", "-c", code, str(without(tmp_path, extra)),
                             *modules])
    assert result.stdout.split() == ["False"] * len(EXTRAS[extra]) + ["True"] * 3, result.stderr


@pytest.mark.parametrize("extra, args, line", [
    ("experiments", ("experiment", "fgd", "--nodes", "n.csv", "--pods", "p.csv", "--out", "o"),
     "error: gpusched experiment needs matplotlib, rich: pip install 'gpusched[experiments]'"),
    ("experiments", ("sweep", "sweep.yaml", "--out", "o"),
     "error: gpusched sweep needs matplotlib, rich: pip install 'gpusched[experiments]'"),
    ("kube", ("scheduler", "--once"),
     "error: gpusched scheduler needs kubernetes: pip install 'gpusched[kube]'"),
], ids=["experiment-without-experiments", "sweep-without-experiments", "scheduler-without-kube"])
def test_a_missing_extra_is_one_line_and_exit_1(tmp_path, extra, args, line):
    result = run_without(tmp_path, extra, *args)
    assert (result.returncode, result.stderr) == (1, line + "\n")
    assert result.stdout == ""


def test_exporter_without_the_gpu_extra_names_it(tmp_path):
    code = ("import site, sys; site.addsitedir(sys.argv[1]); sys.path.insert(0, sys.argv[2]); "
            "from gpusched.metrics.nvml_source import NvmlSource; print(NvmlSource().message)")
    result = run_process([sys.executable, "-S", "-c", code, str(without(tmp_path, "gpu")),
                             str(REPO_ROOT)])
    assert result.stdout == "gpusched exporter needs pynvml: pip install 'gpusched[gpu]'\n"


@pytest.mark.parametrize("extra", sorted(HIDDEN))
def test_the_core_cluster_runs_without_any_extra(tmp_path, extra):
    applied = run_without(tmp_path, extra, "apply", "-f", str(REPO_ROOT / "examples" / "cluster.yaml"))
    assert applied.returncode == 0, applied.stderr
    nodes = run_without(tmp_path, extra, "get", "nodes", "-o", "name")
    assert nodes.returncode == 0 and nodes.stdout.startswith("node/"), nodes.stderr


# ---- Dockerfile -------------------------------------------------------------------------------

COMMANDS = dockerfile.parse_file(str(REPO_ROOT / "Dockerfile"))


def stages() -> dict[str, list[dockerfile.Command]]:
    out: dict[str, list[dockerfile.Command]] = {}
    current = ""
    for command in COMMANDS:
        if command.cmd == "FROM":
            current = command.value[-1]
            out[current] = []
        out[current].append(command)
    return out


def test_dockerfile_copies_files_that_exist():
    ignored = (REPO_ROOT / ".dockerignore").read_text().split()
    copies = [c for c in COMMANDS if c.cmd == "COPY"]
    assert copies
    for copy in copies:
        for source in copy.value[:-1]:
            assert (REPO_ROOT / source).exists(), source
            assert source not in ignored, source


@pytest.mark.parametrize("target, extra", [("scheduler", "kube"), ("exporter", "gpu")])
def test_each_image_installs_its_extra_and_runs_a_console_script(target, extra):
    commands = stages()[target]
    installs = " ".join(" ".join(c.value) for c in commands if c.cmd == "RUN")
    assert f'".[{extra}]"' in installs and "experiments" not in installs
    (entrypoint,) = [c for c in commands if c.cmd == "ENTRYPOINT"]
    assert entrypoint.json and entrypoint.value[0] in PYPROJECT["project"]["scripts"]
    assert entrypoint.value[1] == target
    assert [c.value[0] for c in commands if c.cmd == "USER"] == ["10001"]


@pytest.mark.parametrize("manifest, target", [
    ("deploy/scheduler/30-deployment.yaml", "scheduler"),
    ("deploy/exporter/daemonset.yaml", "exporter")])
def test_deploy_manifests_run_the_image_of_their_target(manifest, target):
    (doc,) = [d for d in yaml.safe_load_all((REPO_ROOT / manifest).read_text()) if d]
    (container,) = doc["spec"]["template"]["spec"]["containers"]
    assert container["image"].rpartition(":")[0].endswith(f"/gpusched-{target}")
    assert container["command"][:1] == ["gpusched"] and target in container["command"]

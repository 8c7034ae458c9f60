"""The shipped rules, rule unit tests, example config and every dashboard expression pass the
real ``promtool`` (Debian's prometheus package; skipped with a reason where it is missing)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from tests.conftest import run_process

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy/prometheus/gpusched-rules.yml"
PROMTOOL = shutil.which("promtool")
pytestmark = pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed "
                                "(apt-get install prometheus; make test installs it)")


def promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return run_process([PROMTOOL, *args], cwd=cwd)


def test_rules_pass_promtool_check():
    result = promtool("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 7 rules found" in result.stdout


def test_rule_unit_tests_pass():
    result = promtool("test", "rules", "gpusched-rules.test.yml", cwd=RULES.parent)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_firing_and_a_quiet_case():
    rules = yaml.safe_load(RULES.read_text())
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"]}
    tests = yaml.safe_load((RULES.parent / "gpusched-rules.test.yml").read_text())["tests"]
    cases = [c for t in tests for c in t["alert_rule_test"]]
    assert {c["alertname"] for c in cases if c["exp_alerts"]} == alerts
    assert {c["alertname"] for c in cases if not c["exp_alerts"]} == alerts
    for group in rules["groups"]:
        for rule in group["rules"]:
            assert {"summary", "description"} <= set(rule["annotations"]), rule["alert"]


def test_a_wrong_expectation_fails(tmp_path):
    """The unit tests can fail: a changed threshold is caught."""
    broken = RULES.read_text().replace("DCGM_FI_DEV_GPU_TEMP > 85", "DCGM_FI_DEV_GPU_TEMP > 95")
    (tmp_path / "gpusched-rules.yml").write_text(broken)
    shutil.copy(RULES.parent / "gpusched-rules.test.yml", tmp_path)
    result = promtool("test", "rules", "gpusched-rules.test.yml", cwd=tmp_path)
    assert result.returncode == 1 and "GPUHighTemperature" in result.stdout + result.stderr


def test_example_prometheus_config_is_valid():
    result = promtool("check", "config", str(RULES.parent / "prometheus.yml"))
    assert result.returncode == 0, result.stdout + result.stderr


def dashboard_expressions() -> list[tuple[str, str]]:
    dashboard = json.loads((ROOT / "deploy/grafana/gpusched-dashboard.json").read_text())
    return [(panel["title"], target["expr"]) for panel in dashboard["panels"]
            for target in panel["targets"]]


def substitute(expr: str) -> str:
    """Grafana's variables -> what Grafana would send: ranges and regex matches."""
    return (expr.replace("$__rate_interval", "1m").replace("$__interval", "1m")
            .replace("$Hostname", ".*").replace("$gpu", ".*"))


def test_every_dashboard_expression_passes_promtool(tmp_path):
    exprs = dashboard_expressions()
    assert len(exprs) >= 10
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:panel_{i}", "expr": substitute(expr)}
        for i, (_, expr) in enumerate(exprs)]}]}
    path = tmp_path / "dashboard-rules.yml"
    path.write_text(yaml.safe_dump(rules))
    result = promtool("check", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr


def test_dashboard_is_importable_with_the_datasource_input_and_variables():
    dashboard = json.loads((ROOT / "deploy/grafana/gpusched-dashboard.json").read_text())
    assert dashboard["__inputs"][0]["name"] == "DS_PROMETHEUS"
    names = {v["name"] for v in dashboard["templating"]["list"]}
    assert {"DS_PROMETHEUS", "Hostname", "gpu"} <= names
    titles = " ".join(p["title"] for p in dashboard["panels"]).lower()
    for word in ("utilization", "framebuffer", "temperature", "power", "energy", "namespace",
                 "model", "pending", "fragmentation", "cost"):
        assert word in titles, word
    assert all(p["datasource"]["uid"] == "${DS_PROMETHEUS}" for p in dashboard["panels"])

"""``gpusched scheduler`` in a pod: without ``--kubeconfig`` it connects with the in-cluster
configuration, as kube-scheduler does (client-go ``rest.InClusterConfig``; the Python client's
``config.load_incluster_config``): ``https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT``,
the ServiceAccount token as the bearer token and its CA. A real TLS ``gpusched serve`` stands in
for the API server; the token and CA are its own, written where a pod's would be mounted."""

from __future__ import annotations

import base64
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from gpusched.errors import UsageError
from tests.cli.runner import Gpusched
from tests.server.conftest import start_serve, stops_cleanly

kube = pytest.importorskip("gpusched.backends.kube")
pytestmark = pytest.mark.slow


def service_account(kubeconfig: Path, into: Path) -> tuple[str, str, object]:
    """(host, port, ServiceAccount) from serve's admin kubeconfig, mounted as a pod's would be."""
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    into.mkdir()
    (into / "token").write_text(config["users"][0]["user"]["token"])
    (into / "ca.crt").write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    url = urlsplit(cluster["server"])
    return str(url.hostname), str(url.port), kube.ServiceAccount(str(into / "token"),
                                                                 str(into / "ca.crt"))


def test_in_cluster_configuration_reaches_the_api_server(tmp_path, monkeypatch):
    served = start_serve(tmp_path, "--virtual-clock", "--host", "0.0.0.0")
    try:
        admin = next(line for line in served.lines if line.startswith("kubeconfig (token"))
        host, port, account = service_account(Path(admin.split(": ", 1)[1]), tmp_path / "sa")
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
        monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
        api = kube.KubeApi(kube.connect(None, account), clock=lambda: 0.0)
        namespaces, rv = api.list("Node")
        assert namespaces == [] and int(rv) > 0
        (tmp_path / "sa" / "token").write_text("not-the-token")
        with pytest.raises(kube.ApiException) as denied:
            kube.KubeApi(kube.connect(None, account), clock=lambda: 0.0).list("Node")
        assert denied.value.status == 401
    finally:
        stops_cleanly(served.process)


def test_missing_service_account_files_are_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with pytest.raises(UsageError) as err:
        kube.connect(None, kube.ServiceAccount(str(tmp_path / "token"), str(tmp_path / "ca.crt")))
    assert str(err.value) == "in-cluster configuration: Service token file does not exist."


def test_outside_a_pod_without_kubeconfig_is_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    line = Gpusched(tmp_path).fails("scheduler", "--once")
    assert line == ("error: no --kubeconfig, and not running in a pod (KUBERNETES_SERVICE_HOST "
                    "is not set): pass --kubeconfig PATH")

"""Services: ClusterIP/NodePort allocation (pkg/registry/core/service/ipallocator, portallocator)
and the Endpoints / EndpointSlice controllers (pkg/controller/endpoint, endpointslice)."""

from __future__ import annotations

import ipaddress

import pytest
import yaml

from gpusched.errors import InvalidError

from .builders import apply, join, pod, pool


def service(name: str = "web", selector: dict | None = None, ports: list | None = None,
            **spec) -> str:
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"ports": ports or [{"name": "http", "port": 80, "targetPort": "http"}], **spec}}
    if selector is not None:
        body["spec"]["selector"] = selector
    return yaml.safe_dump(body)


def web_pod(name: str, **kw) -> str:
    body = yaml.safe_load(pod(name, labels={"app": "web"}, **kw))
    body["spec"]["containers"][0]["ports"] = [{"name": "http", "containerPort": 8080}]
    return yaml.safe_dump(body)


def test_cluster_ip_from_the_service_cidr_and_kept_on_reapply(cluster):
    apply(cluster, service(selector={"app": "web"}))
    first = cluster.get("svc", ["web"])[0]["spec"]
    assert ipaddress.ip_address(first["clusterIP"]) in ipaddress.ip_network("10.96.0.0/12")
    assert first["clusterIPs"] == [first["clusterIP"]] and first["clusterIP"] != "10.96.0.1"
    apply(cluster, service(selector={"app": "web", "tier": "front"}))     # apply's merge keeps it
    assert cluster.get("svc", ["web"])[0]["spec"]["clusterIP"] == first["clusterIP"]


@pytest.mark.parametrize("spec,message", [
    ({"clusterIP": "192.168.1.1"},
     'spec.clusterIPs: Invalid value: ["192.168.1.1"]: failed to allocate IP 192.168.1.1: the '
     "provided IP (192.168.1.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12"),
    ({"clusterIP": "10.96.0.1"},
     'spec.clusterIPs: Invalid value: ["10.96.0.1"]: failed to allocate IP 10.96.0.1: provided IP '
     "is already allocated"),
], ids=["out-of-range", "taken-by-kubernetes"])
def test_requested_cluster_ip_problems(cluster, spec, message):
    with pytest.raises(InvalidError) as err:
        apply(cluster, service(**spec))
    assert str(err.value).endswith(message)
    assert [s["metadata"]["name"] for s in cluster.get("svc")] == ["kubernetes"]


def test_cluster_ip_may_not_change(cluster):
    apply(cluster, service(clusterIP="10.96.5.5"))
    with pytest.raises(InvalidError) as err:
        apply(cluster, service(clusterIP="10.96.5.6"))
    assert str(err.value).endswith('spec.clusterIPs[0]: Invalid value: "10.96.5.6": may not '
                                   "change once set")


def test_headless_and_node_port(cluster):
    apply(cluster, join(service("headless", clusterIP="None"),
                        service("np", type="NodePort", ports=[{"port": 80}])))
    assert cluster.get("svc", ["headless"])[0]["spec"]["clusterIPs"] == ["None"]
    node_port = cluster.get("svc", ["np"])[0]["spec"]["ports"][0]["nodePort"]
    assert 30000 <= node_port <= 32767


def test_endpoints_follow_ready_pods(cluster):
    apply(cluster, join(pool("cpu", count=1, gpus=0), service(selector={"app": "web"}),
                        web_pod("a"), web_pod("b"), pod("other")))
    endpoints = cluster.get("ep", ["web"])[0]
    ips = {p["metadata"]["name"]: p["status"]["podIP"] for p in cluster.get("pods")}
    subset = endpoints["subsets"][0]
    assert sorted(a["targetRef"]["name"] for a in subset["addresses"]) == ["a", "b"]
    assert {a["ip"] for a in subset["addresses"]} == {ips["a"], ips["b"]}
    assert subset["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    slices = cluster.get("endpointslices", selector="kubernetes.io/service-name=web")
    assert len(slices) == 1 and slices[0]["addressType"] == "IPv4"
    assert all(e["conditions"]["ready"] for e in slices[0]["endpoints"])
    cluster.delete("pod", "a")
    assert [a["targetRef"]["name"] for a in cluster.get("ep", ["web"])[0]["subsets"][0]["addresses"]] \
        == ["b"]
    cluster.delete("svc", "web")
    assert cluster.get("ep") == [] and cluster.get("endpointslices") == []


def test_service_without_pods_has_no_subsets(cluster):
    apply(cluster, service(selector={"app": "nothing"}))
    assert "subsets" not in cluster.get("ep", ["web"])[0]
    assert cluster.get("endpointslices")[0]["endpoints"] == []

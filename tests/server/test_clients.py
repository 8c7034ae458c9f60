"""The official ``kubernetes`` client and kr8s list, watch and create through ``gpusched serve``."""

from __future__ import annotations

import asyncio

import pytest

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "from-client"},
       "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


@pytest.mark.slow
def test_kubernetes_client_lists_creates_and_watches(serve):
    kubernetes = pytest.importorskip("kubernetes")
    from kubernetes import client, config, watch

    api = client.CoreV1Api(config.new_client_from_config(config_file=str(serve.kubeconfig)))
    assert api.list_node().items == []
    listed = api.list_namespaced_pod("default")
    created = api.create_namespaced_pod("default", POD)
    assert created.metadata.name == "from-client" and created.metadata.uid
    events = []
    for event in watch.Watch().stream(api.list_namespaced_pod, "default",
                                      resource_version=listed.metadata.resource_version,
                                      timeout_seconds=10):
        events.append((event["type"], event["object"].metadata.name))
        break
    assert events == [("ADDED", "from-client")]
    with pytest.raises(kubernetes.client.exceptions.ApiException) as missing:
        api.read_namespaced_pod("nope", "default")
    assert missing.value.status == 404


@pytest.mark.slow
def test_kr8s_lists_creates_and_watches(serve):
    pytest.importorskip("kr8s")
    import kr8s.asyncio
    from kr8s.asyncio.objects import Pod

    async def scenario() -> tuple[list[str], str, list[tuple[str, str]]]:
        api = await kr8s.asyncio.api(kubeconfig=str(serve.kubeconfig))
        pod = await Pod(POD, api=api)
        await pod.create()
        names = [p.name async for p in api.get("pods", namespace=kr8s.ALL)]
        seen = []
        async for event_type, obj in api.watch("pods", namespace="default"):
            seen.append((event_type, obj.name))
            break
        return names, pod.metadata.uid, seen

    names, uid, seen = asyncio.run(scenario())
    assert names == ["from-client"] and uid
    assert seen == [("ADDED", "from-client")]

"""serve's change feed delivers every version of an object, as kube-apiserver's watch cache does
(``staging/src/k8s.io/apiserver/pkg/storage/cacher/watch_cache.go`` keeps each event with its own
object): two writes landing between two polls of the feed are two MODIFIED events, each with the
body of its own resourceVersion, not the latest body twice or once."""

from __future__ import annotations

import sqlite3

from gpusched.cluster.cluster import Cluster
from gpusched.cluster.apiserver.store import Store
from gpusched.server.feed import OBJECTS, ChangeFeed
from tests.cluster.builders import apply, pool


def test_two_writes_between_polls_are_two_events_with_their_own_bodies(tmp_path):
    path = tmp_path / "c.db"
    with Cluster(Store(path)) as cluster:
        apply(cluster, pool(count=1, gpus=0))
        node = cluster.get("node")[0]["metadata"]["name"]
        feed = ChangeFeed(path)          # not started: it reads only when synced
        try:
            start = feed.floor(OBJECTS)[1]
            cluster.label("node", node, {"team": "a"})
            cluster.label("node", node, {"team": "b"}, overwrite=True)
            feed.sync()
            seen = [(c.type, c.body["metadata"]["labels"].get("team"), c.body["metadata"]["resourceVersion"], c.rv)
                    for c in feed.wait(OBJECTS, start, 0) or [] if c.kind == "Node"]
            assert [(t, team) for t, team, _, _ in seen] == [("MODIFIED", "a"), ("MODIFIED", "b")], seen
            assert all(body_rv == str(rv) for _, _, body_rv, rv in seen), seen
        finally:
            feed.close()


def test_a_change_logged_without_its_body_falls_back_to_the_latest(tmp_path):
    # a state file written before the change log kept bodies (schema 3): the feed still reads it,
    # delivering the latest state once
    path = tmp_path / "c.db"
    with Cluster(Store(path)) as cluster:
        apply(cluster, pool(count=1, gpus=0))
        node = cluster.get("node")[0]["metadata"]["name"]
        feed = ChangeFeed(path)
        try:
            start = feed.floor(OBJECTS)[1]
            cluster.label("node", node, {"team": "a"})
            cluster.label("node", node, {"team": "b"}, overwrite=True)
            with sqlite3.connect(path) as conn:
                conn.execute("UPDATE changes SET body = NULL")
            feed.sync()
            seen = [(c.type, c.body["metadata"]["labels"].get("team"))
                    for c in feed.wait(OBJECTS, start, 0) or [] if c.kind == "Node"]
            assert seen == [("MODIFIED", "b")], seen
        finally:
            feed.close()

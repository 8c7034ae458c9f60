"""serve's change feed under the store's retention: a writer's compaction past the feed's cursor
makes the feed start over from the current state (open watches end, clients relist: etcd's
"required revision has been compacted"), and events whose TTL ran out leave its state."""

from __future__ import annotations

from gpusched.cluster.cluster import Cluster
from gpusched.cluster.apiserver.store import Store
from gpusched.server.feed import EVENTS, OBJECTS, ChangeFeed
from tests.cluster.builders import apply, join, pod, pool


def test_compaction_past_the_cursor_restarts_the_feed_from_the_current_state(tmp_path):
    path = tmp_path / "c.db"
    store = Store(path)
    store.changes_kept, store.compact_every = 20, 5
    with Cluster(store) as cluster:
        apply(cluster, pool(count=1, gpus=0))
        feed = ChangeFeed(path)
        try:
            node = cluster.get("node")[0]["metadata"]["name"]
            for i in range(40):
                cluster.label("node", node, {f"i{i}": "x"})
            feed.sync()
            assert feed.resets == 1
            _, objects = feed.snapshot(OBJECTS)
            labels = dict(objects)[("Node", "", node)]["metadata"]["labels"]
            assert labels["i39"] == "x"
            assert feed.floor(OBJECTS)[0] == int(cluster.get("node")[0]["metadata"]["resourceVersion"])
        finally:
            feed.close()


def test_expired_events_leave_the_feed(tmp_path):
    path = tmp_path / "c.db"
    with Cluster.open(str(path)) as cluster:
        apply(cluster, join(pool(count=1, gpus=1), pod("p", gpus=1)))
        feed = ChangeFeed(path)
        try:
            assert any(body["reason"] == "Scheduled" for _, body in feed.snapshot(EVENTS)[1])
            cluster.advance(3600)
            feed.sync()
            assert not any(body["reason"] == "Scheduled" for _, body in feed.snapshot(EVENTS)[1])
        finally:
            feed.close()


def test_an_event_written_again_lives_until_its_renewed_ttl(tmp_path):
    # kube-apiserver's --event-ttl is renewed at each write of the event (etcd lease per write):
    # the feed forgets it at the last write's TTL end, not the first's
    path = tmp_path / "c.db"
    store = Store(path)
    feed = ChangeFeed(path)

    def write(seq: int, clock: float) -> None:
        with store.immediate():
            store.upsert_event("default", "p.1", seq, {"kind": "Event", "count": seq}, clock)
            store.write_meta({"clock": str(clock)})

    def counts() -> list[int]:
        feed.sync()
        return [body["count"] for _, body in feed.snapshot(EVENTS)[1]]

    try:
        write(1, 0.0)
        assert counts() == [1]
        write(2, 1800.0)
        with store.immediate():
            store.write_meta({"clock": "4000"})      # past the first TTL end (3600)
        assert counts() == [2]
        with store.immediate():
            store.write_meta({"clock": "5400"})      # the renewed end
        assert counts() == []
    finally:
        feed.close()
        store.close()

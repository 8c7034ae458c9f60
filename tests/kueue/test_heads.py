"""A pass's heads (``gpusched.kueue.heads``): the same head per ClusterQueue as
``cycle.pick_heads`` (Kueue's ``pkg/cache/queue/manager.go`` ``Heads``: one per ClusterQueue,
highest priority then oldest; StrictFIFO keeps a blocked head, BestEffortFIFO moves past an
inadmissible one), with the queues sorted once and a cursor that only moves forward.
"""

from __future__ import annotations

import pytest

from gpusched.kueue.cycle import pick_heads
from gpusched.kueue.heads import Heads
from gpusched.kueue.inputs import queue_policy
from tests.kueue.builders import flavor_quota, make_cq
from tests.kueue.test_cycle import pending

QUEUES = {"q": [pending("old", "q", 1, at=0), pending("new", "q", 1, at=5), pending("urgent", "q", 1, at=9, priority=10)],
          "r": [pending("only", "r", 1, at=1)]}

# (id, strategy, [(decided, parked) after each cycle], the heads expected at each step)
CASES = [
    ("BestEffortFIFO moves past parked and decided", "BestEffortFIFO",
     [((), ()), (("ns/urgent",), ()), (("ns/urgent",), ("ns/old", "ns/only")), (("ns/urgent", "ns/new"), ("ns/old", "ns/only"))],
     [["ns/urgent", "ns/only"], ["ns/old", "ns/only"], ["ns/new"], []]),
    ("StrictFIFO keeps its parked head", "StrictFIFO",
     [((), ()), (("ns/urgent",), ("ns/old",)), (("ns/urgent", "ns/old"), ())],
     [["ns/urgent", "ns/only"], ["ns/old", "ns/only"], ["ns/new", "ns/only"]]),
]


@pytest.mark.parametrize("strategy, steps, want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_heads_match_pick_heads(strategy, steps, want) -> None:
    policies = {cq: queue_policy(make_cq(cq, flavor_quota("a100", gpu=4), queueingStrategy=strategy)) for cq in QUEUES}
    heads = Heads(QUEUES, policies)
    for (decided, parked), expected in zip(steps, want):
        got = [h.queued.key for h in heads.next(set(decided), set(parked))]
        open_queues = {cq: [p for p in items if p.queued.key not in decided] for cq, items in QUEUES.items()}
        assert got == [h.queued.key for h in pick_heads(open_queues, policies, frozenset(parked))] == expected

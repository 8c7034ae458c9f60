"""``get`` cells of the kinds stored for stock components, as kubectl's printers compute them
(kubernetes ``pkg/printers/internalversion/printers.go``: ``printCSIDriver``'s defaults,
``resourceClaimState``, ``printCSIStorageCapacity``'s ``<unset>``, ``printEvent``'s wide cells)."""

from __future__ import annotations

import pytest

from gpusched.cli.columns import table_rows
from gpusched.cli.columns_stock import claim_state
from gpusched.cli.output import Clock

NOW = Clock("2026-01-01T01:00:00Z")


def make(kind: str, name: str = "x", **fields) -> dict:
    return {"kind": kind, "metadata": {"name": name, "creationTimestamp": "2026-01-01T00:00:00Z"},
            **fields}


@pytest.mark.parametrize("claim,state", [
    (make("ResourceClaim"), "pending"),
    (make("ResourceClaim", status={"allocation": {"devices": {}}}), "allocated"),
    (make("ResourceClaim", status={"allocation": {"devices": {}}, "reservedFor": [{"name": "p"}]}),
     "allocated,reserved"),
    ({**make("ResourceClaim"), "metadata": {"name": "x", "deletionTimestamp": "2026-01-01T00:30:00Z"}},
     "deleted"),
], ids=["pending", "allocated", "reserved", "deleted"])
def test_resource_claim_state(claim, state):
    assert claim_state(claim) == state


# (id, kind, object, expected cells without AGE)
CELLS = [
    ("csidriver-defaults", "CSIDriver", make("CSIDriver", "d", spec={}),
     ["d", "true", "false", "false", "<unset>", "false", "<none>"]),
    ("csidriver-set", "CSIDriver",
     make("CSIDriver", "d", spec={"attachRequired": False, "podInfoOnMount": True,
                                  "tokenRequests": [{"audience": "a"}, {"audience": "b"}],
                                  "volumeLifecycleModes": ["Ephemeral"]}),
     ["d", "false", "true", "false", "a,b", "false", "Ephemeral"]),
    ("capacity-unset", "CSIStorageCapacity", make("CSIStorageCapacity", "c", storageClassName="sc"),
     ["c", "sc", "<unset>"]),
    ("statefulset-default-replicas", "StatefulSet",
     make("StatefulSet", "db", spec={}, status={"readyReplicas": 1}), ["db", "1/1"]),
    ("rc", "ReplicationController",
     make("ReplicationController", "rc", spec={"replicas": 3}, status={"replicas": 2}),
     ["rc", "3", "2", "0"]),
    ("crd-created-at", "CustomResourceDefinition", make("CustomResourceDefinition", "w.example.com"),
     ["w.example.com", "2026-01-01T00:00:00Z"]),
]


@pytest.mark.parametrize("kind,obj,cells", [c[1:] for c in CELLS], ids=[c[0] for c in CELLS])
def test_stock_kind_cells(kind, obj, cells):
    _, [row] = table_rows(kind, [obj], NOW, wide=False, with_namespace=False)
    assert row[:len(cells)] == cells


def test_event_wide_columns_stand_where_kubectl_prints_them():
    event = make("Event", "p.1", type="Warning", reason="FailedScheduling", message=" m ",
                 involvedObject={"kind": "Pod", "name": "p"}, reportingComponent="default-scheduler",
                 reportingInstance="default-scheduler-host", eventTime="2026-01-01T00:10:00.000000Z",
                 series={"count": 4, "lastObservedTime": "2026-01-01T00:50:00.000000Z"})
    header, [row] = table_rows("Event", [event], NOW, wide=True, with_namespace=False)
    assert header == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE",
                      "FIRST SEEN", "COUNT", "NAME"]
    assert row == ["10m", "Warning", "FailedScheduling", "pod/p", "",
                   "default-scheduler, default-scheduler-host", "m", "50m", "4", "p.1"]

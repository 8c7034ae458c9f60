import pytest

from gpusched.cluster.cluster import Cluster


@pytest.fixture
def cluster(tmp_path):
    with Cluster.open(str(tmp_path / "cluster.db")) as c:
        yield c


@pytest.fixture(scope="module")
def cluster_for_fuzz(tmp_path_factory):
    from .builders import apply
    from .test_properties import CLUSTER
    with Cluster.open(str(tmp_path_factory.mktemp("fuzz") / "cluster.db")) as c:
        apply(c, CLUSTER)
        yield c

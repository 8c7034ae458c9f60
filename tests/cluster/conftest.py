import pytest

from gpusched.cluster.cluster import Cluster


@pytest.fixture
def cluster(tmp_path):
    with Cluster.open(str(tmp_path / "cluster.db")) as c:
        yield c

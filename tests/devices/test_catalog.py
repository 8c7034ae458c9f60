"""The GPU catalog: required models, GFD product names, lookup by name/product/alias."""

from __future__ import annotations

import pytest

from gpusched.devices.catalog import CATALOG, family_of, lookup_model
from gpusched.errors import UsageError

REQUIRED = ["V100-16GB", "V100-32GB", "A100-40GB", "A100-80GB", "A30", "A10", "L4", "L40S", "T4",
            "H100-80GB", "H100-NVL", "H200-141GB", "B200", "G2", "G3", "P100", "V100M16", "V100M32"]
MIG_CAPABLE = {"A100-40GB", "A100-80GB", "A30", "H100-80GB", "H100-NVL", "H200-141GB", "B200"}


@pytest.mark.parametrize("name", REQUIRED)
def test_required_models(name):
    model = CATALOG[name]
    assert model.name == name and model.memory_mib > 0
    assert model.mig_capable == (name in MIG_CAPABLE)


@pytest.mark.parametrize("query,name", [
    ("a100-40gb", "A100-40GB"),
    ("NVIDIA-A100-SXM4-40GB", "A100-40GB"),
    ("nvidia-a100-sxm4-40gb", "A100-40GB"),
    ("Tesla-T4", "T4"),
    ("Tesla-V100-SXM2-16GB", "V100-16GB"),     # product shared with V100M16: non-trace wins
    ("V100M16", "V100M16"),
    ("NVIDIA-H100-80GB-HBM3", "H100-80GB"),
    ("H100", "H100-80GB"),
    ("h200", "H200-141GB"),
], ids=lambda v: v)
def test_lookup(query, name):
    assert lookup_model(query).name == name


def test_unknown_model_lists_known():
    with pytest.raises(UsageError) as err:
        lookup_model("RTX-9090")
    assert 'unknown GPU model "RTX-9090"' in str(err.value) and "A100-40GB" in str(err.value)


@pytest.mark.parametrize("cc,family", [
    ((6, 0), "pascal"), ((7, 0), "volta"), ((7, 5), "turing"), ((8, 0), "ampere"),
    ((8, 6), "ampere"), ((8, 9), "ada-lovelace"), ((9, 0), "hopper"), ((10, 0), "blackwell"),
    ((12, 0), "blackwell"), ((13, 0), "rubin"), ((4, 0), "undefined"),
], ids=lambda v: str(v))
def test_family(cc, family):
    assert family_of(*cc) == family


@pytest.mark.parametrize("name,product,memory,family", [
    ("A100-40GB", "NVIDIA-A100-SXM4-40GB", 40960, "ampere"),
    ("T4", "Tesla-T4", 15360, "turing"),
    ("H100-80GB", "NVIDIA-H100-80GB-HBM3", 81559, "hopper"),
    ("L4", "NVIDIA-L4", 23034, "ada-lovelace"),
    ("B200", "NVIDIA-B200", 183359, "blackwell"),
    ("G2", "Alibaba-G2", 20000, "undefined"),
], ids=lambda v: str(v))
def test_model_facts(name, product, memory, family):
    model = CATALOG[name]
    assert (model.product, model.memory_mib, model.family) == (product, memory, family)


def test_mig_profile_counts_per_model():
    assert CATALOG["A100-40GB"].mig.names == ("1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb",
                                              "3g.20gb", "4g.20gb", "7g.40gb")
    assert CATALOG["A30"].mig.memory_slices == 4
    assert CATALOG["H100-80GB"].mig.find("7g.80gb").sms == 132
    assert CATALOG["A100-40GB"].mig.find("1g.5gb.me").name == "1g.5gb+me"

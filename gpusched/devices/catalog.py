"""The GPU catalog: every GPU model gpusched knows, keyed by a short catalog name.

``CATALOG`` maps a catalog name (``A100-40GB``, ``T4``, ``V100M16`` ...) to a frozen ``GpuModel``
holding what GPU Feature Discovery would report for it: the product label value (the NVML name
sanitised, e.g. ``NVIDIA-A100-SXM4-40GB``), total memory in MiB, compute capability and family,
and the MIG geometry for MIG-capable parts. ``lookup_model`` resolves a catalog name, a product
label value or an alias, case-insensitively.

Memory values are the framebuffer totals nvidia-smi shows for each part (40960 for A100-40GB,
15360 for T4, ...). The Alibaba trace models keep their trace names: ``V100M16``/``V100M32`` are
V100 SXM2 16/32 GB (same product label as ``V100-16GB``/``V100-32GB``; a product lookup returns
the non-trace entry), ``P100`` is a Tesla P100 PCIe 16GB, and ``G2``/``G3`` are undisclosed
Alibaba parts: the memory is the reference simulator's 20,000 / 30,000 MiB and the compute
capability is unknown (0.0), so GFD leaves out their family and compute labels.

Neighbours: ``devices.mig_profiles`` supplies the geometries; ``devices.mig``, ``devices.gfd``,
``devices.node``, ``devices.nodepool`` read models; the scheduler and sim look models up by name.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusched.devices import mig_profiles
from gpusched.devices.mig_profiles import MigGeometry
from gpusched.errors import UsageError


def family_of(major: int, minor: int) -> str:
    """GFD's ``nvidia.com/gpu.family`` for a compute capability (nvidia-gpu-stack.md 2.1).

    >>> family_of(7, 0), family_of(7, 5), family_of(8, 9), family_of(10, 0), family_of(4, 0)
    ('volta', 'turing', 'ada-lovelace', 'blackwell', 'undefined')
    """
    by_major = {1: "tesla", 2: "fermi", 3: "kepler", 5: "maxwell", 6: "pascal", 9: "hopper",
                10: "blackwell", 12: "blackwell", 13: "rubin"}
    if major == 7:
        return "turing" if minor >= 5 else "volta"
    if major == 8:
        return "ada-lovelace" if minor == 9 else "ampere" if minor <= 8 else "undefined"
    return by_major.get(major, "undefined")


@dataclass(frozen=True, slots=True)
class GpuModel:
    """One GPU model as GFD and the device plugin see it."""

    name: str                      # catalog key, e.g. "A100-40GB"
    product: str                   # nvidia.com/gpu.product value, e.g. "NVIDIA-A100-SXM4-40GB"
    memory_mib: int                # nvidia.com/gpu.memory
    family: str                    # nvidia.com/gpu.family
    compute_major: int
    compute_minor: int
    mig: MigGeometry | None = None
    architecture: str = ""         # "Ampere", "Hopper", ...
    aliases: tuple[str, ...] = ()
    trace_model: bool = False      # a model name from the Alibaba trace (G2, V100M16, ...)
    nvml_name: str = ""            # what nvidia-smi prints, e.g. "NVIDIA A100-SXM4-80GB"

    @property
    def mig_capable(self) -> bool:
        return self.mig is not None

    @property
    def compute_capability(self) -> tuple[int, int]:
        return (self.compute_major, self.compute_minor)


def _model(name: str, product: str, memory_mib: int, cc: tuple[int, int], architecture: str,
           mig: MigGeometry | None = None, aliases: tuple[str, ...] = (),
           trace: bool = False, nvml: str = "") -> GpuModel:
    family = family_of(*cc) if cc[0] else "undefined"
    return GpuModel(name, product, memory_mib, family, cc[0], cc[1], mig, architecture, aliases,
                    trace, nvml or nvml_name_of(product))


def nvml_name_of(product: str) -> str:
    """The NVML device name behind a GFD product label (GFD turned its spaces into ``-``):
    ``NVIDIA-A100-SXM4-80GB`` -> ``NVIDIA A100-SXM4-80GB``, ``Tesla-T4`` -> ``Tesla T4``.
    Only the first ``-`` (after the vendor word) is a space for data-centre parts; names with
    more words are given explicitly in the catalog.

    >>> nvml_name_of("NVIDIA-A100-SXM4-80GB"), nvml_name_of("Tesla-V100-SXM2-16GB")
    ('NVIDIA A100-SXM4-80GB', 'Tesla V100-SXM2-16GB')
    """
    vendor, _, rest = product.partition("-")
    return f"{vendor} {rest}" if rest else vendor


_MODELS = (
    _model("V100-16GB", "Tesla-V100-SXM2-16GB", 16384, (7, 0), "Volta",
           aliases=("V100", "Tesla-V100-PCIE-16GB")),
    _model("V100-32GB", "Tesla-V100-SXM2-32GB", 32768, (7, 0), "Volta",
           aliases=("Tesla-V100-PCIE-32GB",)),
    _model("A100-40GB", "NVIDIA-A100-SXM4-40GB", 40960, (8, 0), "Ampere", mig_profiles.A100_40GB,
           aliases=("A100", "NVIDIA-A100-PCIE-40GB", "A100-SXM4-40GB")),
    _model("A100-80GB", "NVIDIA-A100-SXM4-80GB", 81920, (8, 0), "Ampere", mig_profiles.A100_80GB,
           aliases=("NVIDIA-A100-80GB-PCIe", "A100-SXM4-80GB")),
    _model("A30", "NVIDIA-A30", 24576, (8, 0), "Ampere", mig_profiles.A30, aliases=("A30-24GB",)),
    _model("A10", "NVIDIA-A10", 23028, (8, 6), "Ampere"),
    _model("L4", "NVIDIA-L4", 23034, (8, 9), "Ada Lovelace"),
    _model("L40S", "NVIDIA-L40S", 46068, (8, 9), "Ada Lovelace"),
    _model("T4", "Tesla-T4", 15360, (7, 5), "Turing"),
    _model("H100-80GB", "NVIDIA-H100-80GB-HBM3", 81559, (9, 0), "Hopper", mig_profiles.H100_80GB,
           aliases=("H100", "H100-SXM", "H100-SXM5-80GB"), nvml="NVIDIA H100 80GB HBM3"),
    _model("H100-PCIE", "NVIDIA-H100-PCIe", 81559, (9, 0), "Hopper", mig_profiles.H100_80GB,
           aliases=("H100-PCIE-80GB",), nvml="NVIDIA H100 PCIe"),
    _model("H100-NVL", "NVIDIA-H100-NVL", 95830, (9, 0), "Hopper", mig_profiles.H100_NVL,
           nvml="NVIDIA H100 NVL"),
    _model("H200-141GB", "NVIDIA-H200", 143771, (9, 0), "Hopper", mig_profiles.H200_141GB,
           aliases=("H200", "NVIDIA-H200-NVL")),
    _model("B200", "NVIDIA-B200", 183359, (10, 0), "Blackwell", mig_profiles.B200),
    _model("GB200", "NVIDIA-GB200", 189471, (10, 0), "Blackwell", mig_profiles.GB200),
    # DGX Spark: 128 GB unified memory shared with the CPU (no MIG).
    _model("GB10", "NVIDIA-GB10", 131072, (12, 1), "Blackwell"),
    _model("A10G", "NVIDIA-A10G", 23028, (8, 6), "Ampere"),
    _model("RTX-6000-ADA", "NVIDIA-RTX-6000-Ada-Generation", 49140, (8, 9), "Ada Lovelace",
           aliases=("RTX6000-Ada",), nvml="NVIDIA RTX 6000 Ada Generation"),
    _model("RTX-4090", "NVIDIA-GeForce-RTX-4090", 24564, (8, 9), "Ada Lovelace",
           aliases=("RTX4090",), nvml="NVIDIA GeForce RTX 4090"),
    # Alibaba trace models (A10 and T4 above are shared with the trace).
    _model("G2", "Alibaba-G2", 20000, (0, 0), "", trace=True, nvml="Alibaba G2"),
    _model("G3", "Alibaba-G3", 30000, (0, 0), "", trace=True, nvml="Alibaba G3"),
    _model("P100", "Tesla-P100-PCIE-16GB", 16384, (6, 0), "Pascal", trace=True),
    _model("V100M16", "Tesla-V100-SXM2-16GB", 16384, (7, 0), "Volta", trace=True),
    _model("V100M32", "Tesla-V100-SXM2-32GB", 32768, (7, 0), "Volta", trace=True),
)

CATALOG: dict[str, GpuModel] = {model.name: model for model in _MODELS}


def _index() -> dict[str, GpuModel]:
    """Lower-cased name/product/alias -> model; catalog names win, then non-trace products."""
    index: dict[str, GpuModel] = {}
    for model in _MODELS:                       # aliases and products: first (non-trace) wins
        for key in (model.product, *model.aliases):
            index.setdefault(key.lower(), model)
    for model in _MODELS:                       # catalog names always resolve to themselves
        index[model.name.lower()] = model
    return index


_INDEX = _index()


def lookup_model(name: str) -> GpuModel:
    """A model by catalog name, product label value or alias, case-insensitively.

    >>> lookup_model("a100-40gb").product, lookup_model("Tesla-T4").name, lookup_model("V100M16").name
    ('NVIDIA-A100-SXM4-40GB', 'T4', 'V100M16')
    """
    model = _INDEX.get(str(name).strip().lower())
    if model is None:
        raise UsageError(f'unknown GPU model "{name}"; known models: {", ".join(CATALOG)}')
    return model

"""The NVML path: real GPUs where they exist (skipped with NVML's reason elsewhere), the one-line
no-GPU message, and ``gpusched exporter`` serving /metrics either way."""

from __future__ import annotations

import logging
import subprocess

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpusched.metrics.nvml_source import NO_GPU_PREFIX, NvmlSource
from tests.metrics.procs import GPUSCHED, free_port, get, poll, stop


def nvml_error() -> str:
    try:
        import pynvml
        pynvml.nvmlInit()
    except Exception as error:       # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return str(error) or type(error).__name__
    return ""


NO_GPU = nvml_error()
needs_gpu = pytest.mark.skipif(bool(NO_GPU), reason=f"no NVIDIA GPU/driver on this machine: {NO_GPU}")
needs_no_gpu = pytest.mark.skipif(not NO_GPU, reason="this machine has an NVIDIA GPU")


@needs_gpu
def test_real_gpus_report_dcgm_fields_in_dcgm_units():
    import pynvml
    source = NvmlSource(hostname="gpu-host")
    samples = [s for s in source.samples() if not s.gpu_instance_profile]
    assert len(samples) == pynvml.nvmlDeviceGetCount() > 0
    for sample in samples:
        handle = pynvml.nvmlDeviceGetHandleByIndex(sample.gpu)
        values = sample.values
        print(sample.model_name, sample.pci_bus_id, dict(values))
        assert sample.uuid.startswith("GPU-") and sample.driver_version
        assert 0 <= values["DCGM_FI_DEV_GPU_UTIL"] <= 100
        assert 0 < values["DCGM_FI_DEV_POWER_USAGE"] < 2000            # W, not mW
        total = pynvml.nvmlDeviceGetMemoryInfo(handle, pynvml.nvmlMemory_v2).total >> 20
        fb = (values["DCGM_FI_DEV_FB_USED"] + values["DCGM_FI_DEV_FB_FREE"]
              + values["DCGM_FI_DEV_FB_RESERVED"])
        assert abs(fb - total) <= 2                                    # MiB, v2 struct
        assert values["DCGM_FI_DEV_SM_CLOCK"] > 0 and values["DCGM_FI_DEV_GPU_TEMP"] > 0
        assert values["DCGM_FI_DEV_XID_ERRORS"] == 0


@needs_gpu
def test_energy_counter_never_goes_back():
    source = NvmlSource(hostname="gpu-host")
    first = [s.values.get("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") for s in source.samples()]
    second = [s.values.get("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") for s in source.samples()]
    assert all(a is None or b >= a for a, b in zip(first, second))


@needs_no_gpu
def test_without_a_gpu_the_source_says_so_in_one_line(caplog):
    with caplog.at_level(logging.WARNING):
        source = NvmlSource(hostname="h")
    assert not source.available and source.samples() == []
    assert source.message == f"{NO_GPU_PREFIX}: {NO_GPU}"
    assert NO_GPU in ("NVML Shared Library Not Found", "Driver Not Loaded") or NO_GPU
    assert [r.getMessage() for r in caplog.records] == [source.message]


@pytest.mark.slow
def test_exporter_serves_metrics_and_stops_on_sigterm(tmp_path):
    port = free_port()
    proc = subprocess.Popen([*GPUSCHED, "exporter", "--port", str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == f"serving http://127.0.0.1:{port}/metrics"
        body = poll(lambda: get(f"http://127.0.0.1:{port}/metrics"), what="exporter /metrics")
        families = {f.name: f for f in text_string_to_metric_families(body.decode())}
        up = families["gpusched_exporter_nvml_up"].samples[0].value
        assert up == (0 if NO_GPU else 1)
        if not NO_GPU:
            assert "DCGM_FI_DEV_GPU_UTIL" in families
    finally:
        code = stop(proc)
    stderr = proc.stderr.read()
    assert code == 0, stderr
    if NO_GPU:
        assert f"{NO_GPU_PREFIX}: {NO_GPU}" in stderr

# Images of gpusched's two in-cluster components, one build target each:
#   docker build --target scheduler -t gpusched-scheduler .   # deploy/scheduler/ (secondary scheduler)
#   docker build --target exporter  -t gpusched-exporter  .   # deploy/exporter/ (GPU metrics)
# Both install gpusched from this checkout (no experiments extra: no plotting libraries) and run
# as an unprivileged user; the manifests under deploy/ name these images.

FROM python:3.11-slim AS base
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY gpusched ./gpusched
RUN useradd --system --uid 10001 --no-create-home gpusched

# The secondary scheduler: in a pod it connects with its ServiceAccount (in-cluster config).
FROM base AS scheduler
RUN pip install --no-compile ".[kube]" && rm -rf /src
WORKDIR /
USER 10001
ENTRYPOINT ["gpusched", "scheduler"]

# The DCGM-compatible exporter: NVML comes from the driver the NVIDIA runtime mounts.
FROM base AS exporter
RUN pip install --no-compile ".[gpu]" && rm -rf /src
WORKDIR /
USER 10001
EXPOSE 9400
ENTRYPOINT ["gpusched", "exporter"]
CMD ["--host", "0.0.0.0", "--port", "9400"]
